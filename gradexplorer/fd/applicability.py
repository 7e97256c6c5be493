"""Can the complex step check this f? Asked before the method is chosen.

The only place fd/ asks an AD system anything: its ``record`` of one run,
through the backend seam, to name the operation that breaks the complex step.

:func:`complex_step_applicability` evaluates f once at a complex point and
answers None (it applies) or a short reason. For autograd and torch code
the one evaluation is recorded, so the operation that breaks the complex step is
named with its line: an operation that turns a perturbed complex input into a
real output (``abs``, ``real``, ``angle``, ``norm``, ``slogdet``'s log,
a cast to float) drops the perturbation, and ``conj`` flips it. The same
search names the operation when ``check_grads`` finds, by finite
differences, that f is not complex-safe (:func:`named_culprit`).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable
from typing import Any

import numpy as onp

from ..backends import bind_prepared, opened
from ..core.calls import Call, check_callable
from ..core.tree import flatten, is_container, unbox
from ..errors import ComplexStepError
from .steps import default_step

__all__ = ["complex_step_applicability", "named_culprit"]

#: An imaginary part above this fraction of the output's (or input's) scale is
#: f's own, not the perturbation's: at h = 1e-20 relative the perturbation's
#: share stays below it unless |J|·|x| exceeds 1e14·max(|f|, |x|).
NATIVE_IMAG = 1e-6
#: The complex step's default step, relative to each element's magnitude.
_BASE = 1e-20


def complex_step_applicability(
    f: Callable,
    *args: Any,
    wrt: Any = None,
    backend: str | None = None,
    precision: str | None = None,
    **kwargs: Any,
) -> str | None:
    """Whether ``check_grads(..., method="complex_step")`` can apply to f here.

    One evaluation of f at ``x + ih·d`` (a tiny imaginary step along random
    signs, every selected input at once). Cheap enough to grey out the
    method before a user picks it; it never raises for f's own failures,
    which become the reason.

    Parameters
    ----------
    f : callable
        As for :func:`gradexplorer.check_grads`.
    *args
        The point; keyword arguments after the options go to f.
    wrt : int, str, sequence of them, or None
        The inputs that would be checked (None: every float argument).
    backend, precision : str, optional
        As for :func:`gradexplorer.check_grads`.

    Returns
    -------
    str or None
        None where the complex step applies; else a short reason, such as
        ``"f takes complex input (z)"`` or ``"f is not complex-safe: absolute
        at model.py:12 drops the imaginary part"``. The check itself also
        compares the complex step with finite differences, so an f that
        bends the perturbation in a way no single evaluation shows is still
        refused there.

    Raises
    ------
    TypeError, ValueError
        For a call that :func:`check_grads` would refuse too (a bad ``wrt``,
        no float argument).

    Examples
    --------
    >>> import autograd.numpy as anp
    >>> x = anp.linspace(0.5, 1.0, 3)
    >>> complex_step_applicability(lambda x: anp.sin(x) * x, x) is None
    True
    >>> complex_step_applicability(lambda z: z**2, x + 1j)
    'f takes complex input (z)'
    >>> complex_step_applicability(lambda x: anp.abs(x) * x, x)  # doctest: +ELLIPSIS
    'f is not complex-safe: absolute at ...:1 drops the imaginary part'
    """
    check_callable(f)
    with opened(f, args, kwargs, wrt, backend=backend, precision=precision) as (system, prep):
        return _reason(bind_prepared(prep, system, constants_ok=True), system)


def named_culprit(exc: ComplexStepError, call: Call | None, system: Any) -> ComplexStepError:
    """``exc`` with the breaking operation named (autograd, torch), when it can be."""
    if call is None or not exc.reason.startswith("f is not complex-safe"):
        return exc
    try:
        culprit = _culprit_of(call, system)
    except Exception:  # naming is a courtesy: the error stands without it
        return exc
    if culprit is None:
        return exc
    return ComplexStepError(f"{exc} The operation: {culprit}.", f"f is not complex-safe: {culprit}")


def _reason(call: Call, system: Any) -> str | None:
    for s in call.specs:
        if s.complex:
            return f"f takes complex input ({s.name})"
    if not call.specs:
        return None
    leaves, scale = _complex_point(call, system)
    prefix = "" if system.capabilities.numpy_arrays else f"{system.name} backend: "
    outputs: list = []

    def run(*ls):
        outputs.append(call(*ls))

    def plain():
        outputs.clear()
        run(*[system.to_array(v) for v in leaves])
        return ()

    try:
        with _quiet() as caught:
            records = system.record(run, leaves) if system.capabilities.eager_record else plain()
    except Exception as exc:
        failure: Exception | None = exc
        if system.capabilities.eager_record:
            try:  # recording may be what failed (plain numpy code under autograd's boxes)
                with _quiet() as caught:
                    records = plain()
                failure = None
            except Exception as again:
                failure = again
        if failure is not None:
            text = str(failure).splitlines()[0] if str(failure) else ""
            return f"{prefix}f fails on complex input ({type(failure).__name__}: {text})"[:160]
    culprit = _first_breaking(records) or _cast(caught)
    if culprit is not None:
        return f"{prefix}f is not complex-safe: {culprit}"
    ys = [onp.asarray(system.to_numpy(unbox(v))) for v in flatten(outputs[-1])[0]]
    floats = [y for y in ys if y.dtype.kind in "fc"]
    if not floats:
        return None  # nothing to differentiate: check_grads says so itself
    if not any(y.dtype.kind == "c" for y in floats):
        return (
            f"{prefix}f is not complex-safe: its output is real for complex input (the "
            "imaginary part is dropped, e.g. by a cast to float)"
        )
    with onp.errstate(all="ignore"):
        re = max(float(onp.max(onp.abs(y.real), initial=0.0)) for y in floats)
        im = max(float(onp.max(onp.abs(y.imag), initial=0.0)) for y in floats)
    if im > NATIVE_IMAG * max(re, scale):
        return "f returns complex values (the complex step needs a real output)"
    return None


def _complex_point(call: Call, system: Any) -> tuple[list, float]:
    """The selected leaves at ``x + ih·d`` (h the complex step's default, d random
    signs) and the largest magnitude the steps were scaled by."""
    gen = onp.random.default_rng(0)
    leaves, scale = [], onp.finfo(float).tiny
    for s, v in zip(call.specs, call.values):
        x = onp.asarray(system.to_numpy(unbox(v)), dtype=float)
        h = default_step(x, "complex_step")
        z = x + 1j * h * gen.choice([-1.0, 1.0], size=x.shape)
        leaves.append(z if s.shape else z[()])
        scale = max(scale, float(onp.max(h, initial=0.0)) / _BASE)
    return leaves, scale


def _culprit_of(call: Call, system: Any) -> str | None:
    if not system.capabilities.eager_record:
        return None
    leaves, _ = _complex_point(call, system)
    with _quiet():
        records = system.record(call, leaves)
    return _first_breaking(records)


def _first_breaking(records) -> str | None:
    """The first operation that drops (real output) or flips (conj) the perturbation."""
    for rec in records:
        traced = [rec.args[k] for k in rec.argnums if k < len(rec.args)]
        if any(is_container(a) for a in traced):
            continue  # packing and unpacking move values; they change none
        ins = [onp.asarray(unbox(a)) for a in traced]
        if not any(a.dtype.kind == "c" and onp.any(a.imag != 0) for a in ins):
            continue
        outs = [onp.asarray(unbox(v)) for v in flatten(rec.value)[0]]
        outs = [o for o in outs if o.dtype.kind in "fc"]
        what = None
        if any(o.dtype.kind == "f" for o in outs):
            # a real value computed from a perturbed complex one cannot carry it
            what = "drops the imaginary part"
        elif len(ins) == 1 and len(outs) == 1 and _flipped(ins[0], outs[0]):
            what = "flips the sign of the imaginary part"
        if what:
            return f"{rec.name}{_site(rec)} {what}"
    return None


def _flipped(a: onp.ndarray, b: onp.ndarray) -> bool:
    return a.shape == b.shape and bool(onp.any(a.imag != 0)) and onp.array_equal(b, onp.conj(a))


def _site(rec: Any) -> str:
    frames = getattr(rec, "frames", ()) or ()
    if not frames:
        return ""
    path, line = frames[0][:2]
    return f" at {os.path.basename(str(path))}:{line}"


def _cast(caught: list) -> str | None:
    """numpy's ComplexWarning: a complex value cast to real, its imaginary part dropped
    (``float(z)``, ``math.sin(z)``, ``z.astype(float)`` on plain numpy)."""
    for w in caught:
        if w.category.__name__ == "ComplexWarning":
            where = f"{os.path.basename(w.filename)}:{w.lineno}"
            return f"a cast to real at {where} drops the imaginary part"
    return None


@contextlib.contextmanager
def _quiet():
    """Warnings and floating-point errors kept from the user while f runs on complex
    input (their consequences are what is judged); the warnings are collected."""
    with warnings.catch_warnings(record=True) as caught, onp.errstate(all="ignore"):
        warnings.simplefilter("always")
        yield caught
