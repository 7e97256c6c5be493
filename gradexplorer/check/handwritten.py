"""check_vjp and check_jvp: a derivative rule written by hand, for a plain
numpy function, checked entry by entry without any AD system.

The same per-entry report as :func:`check_grads` (heatmaps, worst entries,
fast mode with localization); the rule's conventions are jax's (see
:mod:`gradexplorer.backends.rules`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..backends import get_backend
from ..backends.rules import RuleBackend
from ..core.calls import check_callable
from ..core.guards import keeping_random_state
from ..fd.steps import METHODS
from .fast import fast_check
from .full import full_check
from .judging import validate_tolerance
from .options import Options, choose_mode
from .problem import as_rng, build_problem
from .report import CheckReport

__all__ = ["check_vjp", "check_jvp"]


def check_vjp(
    f: Callable,
    f_vjp: Callable,
    *args: Any,
    wrt: Any = None,
    mode: str = "auto",
    atol: float | None = None,
    rtol: float | None = None,
    rng: Any = None,
    method: str = "richardson",
    step: Any = None,
    reseed: int | None = None,
    f_jvp: Callable | None = None,
    **kwargs: Any,
) -> CheckReport:
    """Check a hand-written VJP rule of a plain numpy function against finite differences.

    Parameters
    ----------
    f : callable
        Plain numpy code (no AD system needed): the function the rule is for.
    f_vjp : callable
        ``f_vjp(*args) -> (y, pullback)``, where ``pullback(y_bar)`` returns
        one cotangent per positional argument (a tuple; a bare array for a
        single argument), each shaped like its argument, as ``jax.vjp`` does.
    *args
        The point; keyword arguments after the options go to f and the rule,
        held constant.
    wrt, mode, atol, rtol, rng, method, step, reseed
        As in :func:`check_grads`.
    f_jvp : callable, optional
        A JVP rule for the same f (``f_jvp(primals, tangents) -> (y, y_dot)``),
        checked in forward mode in the same report.

    Returns
    -------
    CheckReport
        Entries of the Jacobian the rule implies; a rule that is not linear in
        its cotangent (a forgotten ``g *``) is named as such.

    Examples
    --------
    >>> import numpy as np
    >>> def f(x):
    ...     return np.sin(x) * x
    >>> def f_vjp(x):
    ...     return f(x), lambda g: (g * (np.cos(x) * x + np.sin(x)),)
    >>> check_vjp(f, f_vjp, np.linspace(0.1, 1.0, 4)).passed
    True
    >>> bad = lambda x: (f(x), lambda g: (g * np.cos(x) * x,))  # forgot the product rule
    >>> check_vjp(f, bad, np.linspace(0.1, 1.0, 4)).passed
    False
    """
    check_callable(f_vjp, "f_vjp")
    if f_jvp is not None:
        check_callable(f_jvp, "f_jvp")
    rules = RuleBackend(vjp_rule=f_vjp, jvp_rule=f_jvp, arrays=_framework_of(args, kwargs))
    return _check_rule(f, rules, args, kwargs, wrt, mode, atol, rtol, rng, method, step, reseed)


def check_jvp(
    f: Callable,
    f_jvp: Callable,
    *args: Any,
    wrt: Any = None,
    mode: str = "auto",
    atol: float | None = None,
    rtol: float | None = None,
    rng: Any = None,
    method: str = "richardson",
    step: Any = None,
    reseed: int | None = None,
    **kwargs: Any,
) -> CheckReport:
    """Check a hand-written JVP rule of a plain numpy function against finite differences.

    Parameters
    ----------
    f : callable
        Plain numpy code: the function the rule is for.
    f_jvp : callable
        ``f_jvp(primals, tangents) -> (y, y_dot)`` as a jax ``custom_jvp`` rule:
        ``primals`` and ``tangents`` are tuples of the positional arguments
        (tangents are zeros for arguments not in ``wrt``, None for leaves that
        are not floats).
    *args
        The point; keyword arguments after the options go to f and the rule.
    wrt, mode, atol, rtol, rng, method, step, reseed
        As in :func:`check_grads`.

    Returns
    -------
    CheckReport
        The Jacobian is built column by column from the rule; a rule that is
        not linear in its tangent is named as such.

    Examples
    --------
    >>> import numpy as np
    >>> def f(x, y):
    ...     return x * np.exp(y)
    >>> def f_jvp(primals, tangents):
    ...     (x, y), (dx, dy) = primals, tangents
    ...     return f(x, y), dx * np.exp(y) + x * np.exp(y) * dy
    >>> check_jvp(f, f_jvp, np.ones(3), np.zeros(3)).passed
    True
    """
    check_callable(f_jvp, "f_jvp")
    rules = RuleBackend(jvp_rule=f_jvp, arrays=_framework_of(args, kwargs))
    return _check_rule(f, rules, args, kwargs, wrt, mode, atol, rtol, rng, method, step, reseed)


def _framework_of(args: tuple, kwargs: dict) -> Any:
    """The backend whose arrays the point is (torch tensors, jax arrays), or
    None for numpy: rules get and return the point's own kind of array."""
    system = get_backend(None, list(args) + list(kwargs.values()))
    return None if system.capabilities.numpy_arrays else system


def _check_rule(f, rules, args, kwargs, wrt, mode, atol, rtol, rng, method, step, reseed):
    check_callable(f)
    if mode not in ("auto", "full", "fast"):
        raise ValueError(f"mode must be one of ['auto', 'full', 'fast']; got {mode!r}.")
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}; got {method!r}.")
    atol = validate_tolerance(atol, "atol")
    rtol = validate_tolerance(rtol, "rtol")
    gen = as_rng(rng)
    with keeping_random_state(reseed is not None):
        p = build_problem(f, args, kwargs, wrt, reseed=reseed, backend=rules)
        p.step = step
        p.steps(method)
        chosen, why = choose_mode(mode, p.n, p.m)
        name = "JVP" if rules.vjp_rule is None else "VJP"
        p.extra_notes.append(
            f"a hand-written {name} rule checked"
            + (" (the Jacobian built column by column from it)" if name == "JVP" else "")
            + (" with its JVP rule in forward mode" if rules.jvp_rule and name == "VJP" else "")
            + "."
        )
        opts = Options(method, atol, rtol, gen, 1, rule_name=f"{name} rule", mode_reason=why)
        report = fast_check(p, opts) if chosen == "fast" else full_check(p, opts)
    return replace(report, checker="check_jvp" if name == "JVP" else "check_vjp")
