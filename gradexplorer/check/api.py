"""check_grads: every Jacobian entry judged against its own finite-difference error.

The function is first turned into a map between real vectors (nested
arguments opened into leaves, complex leaves realified, inputs concatenated),
so one checker covers structured parameters, several outputs, complex
functions and second derivatives alike. The full check lives in
``fullcheck``, the fast one (projections and group testing) in ``fastcheck``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as onp

from ..backends import opened
from ..core.guards import keeping_random_state
from ..core.tree import Leaf
from ..fd.executors import opened_executor
from ..fd.steps import METHODS
from .extended import check_extended
from .fast import fast_check
from .full import full_check
from .judging import validate_tolerance
from .options import DEFAULT_MAX_NAMED, Options, choose_mode, compile_backend
from .problem import Problem, as_rng, build_problem, on_device
from .report import Blocks, CheckReport, Outcome

__all__ = [
    "check_grads", "check_problem", "as_rng", "Problem", "second_order_problem",
]  # fmt: skip

_MODES = ("auto", "full", "fast")


def check_grads(
    f: Callable,
    *args: Any,
    wrt: Any = None,
    order: int = 1,
    mode: str = "auto",
    atol: float | None = None,
    rtol: float | None = None,
    rng: Any = None,
    method: str = "richardson",
    step: Any = None,
    reseed: int | None = None,
    backend: str | None = None,
    precision: str | None = None,
    max_named: int = DEFAULT_MAX_NAMED,
    compiled: bool | str = False,
    opcheck: bool = True,
    executor: Any = None,
    **kwargs: Any,
) -> CheckReport:
    """Check f's derivatives against finite differences, entry by entry.

    Parameters
    ----------
    f : callable
        Written with ``autograd.numpy``. Arguments and outputs may be nested
        lists / tuples / dicts of float or complex arrays.
    *args
        The point (keyword arguments after the options go to f, held constant
        unless ``wrt`` names them).
    wrt : int, str, sequence of them, or None
        Inputs to check. None checks every positional argument that holds a
        float or complex value; the others (ints, strings, objects) are listed
        in ``report.not_checked`` with the reason.
    order : {1, 2}
        2 also checks second derivatives: the derivative of the VJP with
        respect to the point (the Hessian of u·f; of f itself when f is
        scalar) and with respect to its cotangent u, so that a wrong rule
        used inside a backward pass fails.
    mode : {"auto", "full", "fast"}
        ``full`` builds both Jacobians; ``fast`` compares random projections
        and, on failure, locates the wrong entries by group testing without
        building them (and falls back to the full check where group testing
        cannot finish and the full check is affordable). ``auto`` picks fast
        for large problems; ``report.mode_reason`` says which and why.
    atol, rtol : float, optional
        Added to each entry's allowance: ``|a - n| <= 2·FD error + rtol·|value|
        + atol``. Defaults: ``atol = 0`` and ``rtol = 256·eps`` of the entry's
        precision (round-off of the analytic side); the FD error is estimated
        per entry.
    rng : Generator, RandomState or int, optional
        For the random projections, cotangents and noise probes.
    method : str
        The finite-difference method (see :func:`numeric_jacobian`).
    step : float, array or structure like the inputs, optional
        Base steps instead of the per-dtype, per-element default.
    reseed : int, optional
        Re-seed the global random generators before every call of f —
        numpy's, Python's and torch's (CPU and CUDA) — the way to check an
        objective that draws random numbers inside (dropout, a sampled
        variational bound). A jax function takes its key as an argument: a
        key passed in is constant by nature, so no reseeding is needed.
    backend : {"autograd", "torch", "jax"}, optional
        The AD system f is written for (default: recognised from the
        arguments: torch tensors, jax arrays or a torch ``nn.Module`` f,
        else numpy for autograd). For a module, ``wrt`` names parameters
        (``"fc1.weight"``, or a submodule ``"fc1"``); None checks them all.
    precision : {None, "float64", "native"}
        The precision of the check. None: float64 for torch and jax (float32,
        float16 and bfloat16 inputs are promoted on copies, as torch's
        gradcheck asks for double), the inputs' own for numpy. "native" checks
        in the inputs' precision; :func:`check_precision` judges a
        low-precision gradient against float64 instead.
    compiled : bool or str
        Also check ``torch.compile(f)``: its Jacobian (from the same unit
        cotangents) is compared with eager's entry by entry, each judged
        against the same finite differences, and ``report.compiled`` (a
        :class:`~gradexplorer.check.compiled.CompiledComparison`) names the
        side that is wrong at each entry: the compiled gradient (eager right:
        the check fails there), both, or eager. True compiles with inductor,
        falling back to ``"aot_eager"`` (and saying so) where inductor fails;
        a string names the torch.compile backend. Full mode only; a compile
        error raises :class:`~gradexplorer.CompileError`.
    opcheck : bool
        Run ``torch.library.opcheck`` (schema, autograd registration, fake
        kernel, AOT dispatch) on every torch.library custom operator f calls,
        on its arguments at this point; ``report.opcheck`` holds the
        findings, and a failing one fails the check.
    executor : None, int, concurrent.futures.Executor or map-like callable
        Spread f's evaluations over workers (see :func:`numeric_jacobian`):
        ``executor=4`` for four local processes, a dask client's
        ``get_executor()``, the builtin ``map``; f's inputs must be on the CPU.

    Returns
    -------
    CheckReport
        ``outcome`` is PASSED, FAILED, or INCONCLUSIVE when entries finite
        differences could not resolve may hide a wrong block.

    Examples
    --------
    >>> import autograd.numpy as anp
    >>> check_grads(lambda x: anp.sin(x) * x, anp.linspace(0.1, 1.0, 4)).passed
    True
    >>> params = {"W": anp.ones((2, 3)), "b": anp.zeros(2)}
    >>> r = check_grads(lambda p, x: anp.sum(anp.tanh(p["W"] @ x + p["b"])), params, anp.ones(3))
    >>> r.passed, list(r.column_blocks)
    (True, ["p['W']", "p['b']", 'x'])
    >>> check_grads(lambda x: anp.tanh(x), anp.ones(3), executor=map).passed
    True
    """
    _validate(order=order, mode=mode, method=method, reseed=reseed, max_named=max_named)
    if not isinstance(opcheck, bool):
        raise TypeError(f"opcheck must be True or False; got {opcheck!r:.40}.")
    atol, rtol = validate_tolerance(atol, "atol"), validate_tolerance(rtol, "rtol")
    compile_as = compile_backend(compiled)
    gen = as_rng(rng)
    with (
        keeping_random_state(reseed is not None),
        opened_executor(executor) as executor,
        opened(f, args, kwargs, wrt, backend=backend, precision=precision) as (system, prep),
    ):
        p = build_problem(
            prep.f, prep.args, prep.kwargs, prep.wrt, reseed=reseed, backend=system,
            read_precision=False,
        )  # fmt: skip
        p.extra_notes.extend(prep.notes)
        p.step = step
        p.steps(method)  # validates step now, with a clear message
        opts = Options(method, atol, rtol, gen, 1, max_named=max_named)
        return check_extended(
            p, opts, check_problem, mode=mode, order=order, compiled=compile_as,
            opcheck=opcheck, executor=executor,
        )  # fmt: skip


def _validate(*, order: int, mode: str, method: str, reseed: Any, max_named: Any) -> None:
    """check_grads' options that need no call of f, each with what was expected."""
    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2; got {order!r}.")
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {list(_MODES)}; got {mode!r}.")
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}; got {method!r}.")
    if reseed is not None and not isinstance(reseed, (int, onp.integer)):
        raise TypeError(f"reseed must be an int seed or None; got {reseed!r:.40}.")
    if not isinstance(max_named, (int, onp.integer)) or max_named < 1:
        raise ValueError(f"max_named must be an int >= 1; got {max_named!r:.40}.")


def check_problem(p: Problem, opts: Options, *, mode: str = "auto", order: int = 1) -> CheckReport:
    """Check a built :class:`Problem` (in its backend's session): the first
    order, and the second when asked, in the mode chosen for its size."""
    chosen, why = choose_mode(mode, p.n, p.m)
    return _check_orders(p, chosen, replace(opts, mode_reason=why), order)


def _check_orders(p: Problem, mode: str, opts: Options, order: int) -> CheckReport:
    first = _check_problem(p, mode, opts)
    if order == 1:
        return first
    q = second_order_problem(p, opts.gen)
    q.step = None
    method = "richardson" if opts.method == "complex_step" else opts.method
    try:
        second = _check_problem(q, mode, replace(opts, method=method, order=2))
    except Exception as exc:
        raise _not_differentiable(exc) from exc
    outcomes = {first.outcome, second.outcome}
    outcome = (
        Outcome.FAILED
        if Outcome.FAILED in outcomes
        else Outcome.INCONCLUSIVE
        if Outcome.INCONCLUSIVE in outcomes
        else Outcome.PASSED
    )
    why = second.inconclusive or (first.inconclusive and f"first order: {first.inconclusive}")
    return replace(second, first_order=first, outcome=outcome, inconclusive=why)


def _not_differentiable(exc: Exception) -> Exception:
    """order=2 differentiates the backward pass: name the rule that cannot be."""
    from ..errors import GradExplorerError

    if isinstance(exc, GradExplorerError):
        return exc
    notes = [n for n in getattr(exc, "__notes__", []) if "raised by the VJP of" in n]
    op = notes[0].split("raised by the VJP of ")[-1].rstrip(")") if notes else "an operation"
    return TypeError(
        f"order=2 differentiates f's backward pass, but the VJP of {op} cannot be "
        f"differentiated ({type(exc).__name__}: {exc}). Write that rule with autograd.numpy "
        "(no np.asarray, float() or in-place writes on the cotangent), give it a VJP of its "
        "own with gx.defvjp, or check order=1 only."
    )


def _check_problem(p: Problem, mode: str, opts: Options) -> CheckReport:
    report = fast_check(p, opts) if mode == "fast" else full_check(p, opts)
    return replace(report, device=p.device, copies=p.evaluator.copies)


def second_order_problem(p: Problem, gen: onp.random.Generator) -> Problem:
    """The problem ``(x, u) -> vjp_F(x)(u)``: its Jacobian holds the Hessian of
    u·F (columns x) and the transposed Jacobian Jᵀ (columns u, the cotangent).

    For a scalar f, u starts at 1, so the x block is f's own Hessian.
    """
    m = p.m
    scalar = m == 1
    u0 = onp.ones(1) if scalar else gen.standard_normal(m)
    F, backend = p.F, p.backend
    np = backend.np
    k = len(p.vs)

    def G(*ws):
        tr = backend.vjp(F, ws[:k])
        return np.concatenate([np.ravel(g) for g in tr.backward(ws[k])])

    def evaluate_one(x: onp.ndarray) -> onp.ndarray:
        parts = q.split(x)
        try:
            return onp.asarray(backend.to_numpy(G(*parts)), dtype=float)
        except Exception:
            if onp.array_equal(x, q.x0):
                raise
            # outside f's domain there (a probe far from x: odeint's times out of
            # order): NaN, as the first order's points are
            return onp.full(q.m, onp.nan)

    prefix = "dy" if scalar and len(p.rows.sides) == 1 else "d(u·y)"
    rows = tuple(
        Leaf(f"{prefix}/d{s.name}", s.shape, s.complex, s.dtype, s.wrt, s.path)
        for s in p.cols.sides
    )
    cot = Leaf("u", (m,), False, "float64", "u", ())
    q = Problem(
        G,
        list(p.vs) + [backend.to_array(u0, like=p.vs[0] if p.vs else None)],
        Blocks(tuple(p.cols.sides) + (cot,)),
        Blocks(rows),
        p.name,
        evaluate_one,
        None,
        None,
        None,
        p.reseed,
        p.not_checked,
        backend=backend,
    )
    on_device(q, q.vs)
    q.extra_notes = list(p.extra_notes) + [
        "order 2 checks the VJP's derivatives: columns "
        + ", ".join(s.name for s in p.cols.sides)
        + (" give the Hessian" if scalar else " give the Hessian of u·y for a random u")
        + ", column block u (the cotangent) gives Jᵀ through the backward pass."
    ]
    return q
