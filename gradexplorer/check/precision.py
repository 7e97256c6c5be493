"""check_precision: is a low-precision gradient as good as its precision allows?

"Switch to double" is the usual answer to a float32 gradient that fails a
check; it says nothing about the float32 kernel itself. Here the float32
(float16, bfloat16) backward is compared with the same function's backward in
float64, and each entry is judged against the error the low precision makes
unavoidable:

- the reference's own conditioning: the float64 Jacobian at inputs moved by
  one unit of the low precision's rounding (``x·(1 ± eps)``) differs from
  itself by what no algorithm working from rounded data can avoid;
- rounding of the result at the scale of its block (the output leaf x input
  leaf it belongs to): a backward pass forms each entry from terms of the
  block's size, so errors of a few eps of that size are round-off (torch's own
  float32 ``sigmoid`` backward returns 0 for an entry of 2e-9 next to entries
  of 0.25, and is right to within float32).

Errors are shown in units of the low precision's eps times the block's
scale. The float64 gradient itself is checked against finite differences
first: a precision verdict means nothing for a wrong derivative.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as onp

from ..backends import bind_prepared, get_backend
from ..core.calls import check_callable
from ..core.guards import keeping_random_state
from ..core.tree import dtype_name
from .precision_report import PrecisionEntry, PrecisionReport
from .problem import Problem, as_rng, build_problem, traceable
from .rules import flat, reverse_rows, rows_rule
from .verdicts import Verdict, failing_verdict

__all__ = ["check_precision", "ROUNDOFF_UNITS", "CONDITIONING_SAFETY", "SAMPLES", "ORACLE_FACTOR"]

#: Round-off allowed, in eps of the low precision times the block's scale.
ROUNDOFF_UNITS = 32.0
#: The conditioning spread is measured from a few samples: this covers the rest.
CONDITIONING_SAFETY = 4.0
#: Perturbed inputs sampled to measure the reference's conditioning.
SAMPLES = 4
#: With an oracle: how many times the oracle's error an entry may have (FlashAttention's 2).
ORACLE_FACTOR = 2.0

_LOW = ("float16", "bfloat16", "float32", "complex32", "complex64")


def check_precision(
    f: Callable,
    *args: Any,
    wrt: Any = None,
    rng: Any = None,
    backend: str | None = None,
    samples: int = SAMPLES,
    reference: Callable | None = None,
    reference_factor: float = ORACLE_FACTOR,
    **kwargs: Any,
) -> PrecisionReport:
    """Judge a float32 / float16 / bfloat16 gradient against the same function in float64.

    Parameters
    ----------
    f : callable
        A function of torch tensors, jax arrays or numpy arrays (autograd),
        or a torch ``nn.Module``; its inputs in the low precision to judge.
    *args
        The point, in the low precision (it is exactly representable in
        float64, so both runs see the same point).
    wrt : int, str, sequence, or None
        As in :func:`check_grads` (a module's parameters by name).
    rng : Generator, RandomState or int, optional
        For the conditioning samples and the reference check.
    backend : {"autograd", "torch", "jax"}, optional
        Default: from the arguments.
    samples : int
        Perturbed inputs used to measure the reference's conditioning.
    reference : callable, optional
        An oracle, as FlashAttention's tests use one: a plain implementation
        of the same function, run in the same low precision. Each entry of
        f's gradient may then err up to ``reference_factor`` times the oracle's
        largest error in the entry's block (against float64), and
        one eps of the block's scale at least.
        Without it, the allowance is the precision's round-off and the
        problem's measured conditioning.
    reference_factor : float
        How many times the oracle's error an entry may have (default 2).

    Returns
    -------
    PrecisionReport
        ``analytic`` (the low-precision Jacobian) and ``reference`` (the
        float64 one), ``eps_units`` (the error in eps of
        the low precision times the block's scale), ``violation`` (> 1: worse
        than the precision allows), ``mismatches``, ``reference_check`` (the
        float64 gradient against finite differences).

    Examples
    --------
    >>> import numpy as np, autograd.numpy as anp
    >>> x = np.linspace(-3, 3, 5).astype(np.float32)
    >>> r = check_precision(lambda x: anp.tanh(x) * x, x)
    >>> r.passed, r.low_dtype
    (True, 'float32')
    """
    check_callable(f)
    if reference is not None:
        check_callable(reference, "reference")
    if not (isinstance(reference_factor, (int, float)) and 0 < reference_factor < onp.inf):
        raise ValueError(
            f"reference_factor must be a positive number (how many times the oracle's error "
            f"an entry may have); got {reference_factor!r}."
        )
    gen = as_rng(rng)
    system = get_backend(backend, list(args) + list(kwargs.values()), f)
    with keeping_random_state(False):
        with system.session("native"):
            low = system.prepare(f, tuple(args), dict(kwargs), wrt, "native")
            call_low = bind_prepared(
                low,
                system,
                constants_ok=True,
                any_precision=True,
            )
        dtypes = [dtype_name(v) for v in call_low.values]
        if not any(d in _LOW for d in dtypes):
            raise TypeError(
                f"check_precision judges a lower precision against float64, but the inputs "
                f"are {', '.join(sorted(set(dtypes)))}. Pass them in the precision to judge "
                "(x.float(), x.half(), x.astype(np.float32)); check_grads checks float64."
            )
        with system.session("float64"):
            high = system.prepare(f, tuple(args), dict(kwargs), wrt, "float64")
            p = build_problem(high.f, high.args, high.kwargs, high.wrt, backend=system)
            J, spread, ref_check = _reference(p, dtypes, gen, max(1, int(samples)))
            y0 = p.evaluate_one(p.x0)  # in the session: jax in 64-bit mode
        with system.session("native"):
            analytic, out_dtype = _low_jacobian(p, call_low, dtypes, system)
            oracle = None
            if reference is not None:
                plain = system.prepare(reference, tuple(args), dict(kwargs), wrt, "native")
                call_plain = bind_prepared(plain, system, constants_ok=True, any_precision=True)
                oracle = Oracle(_low_jacobian(p, call_plain, dtypes, system)[0], reference_factor)

    def judged(A):
        return _judge(p, A, J, y0, spread, dtypes, out_dtype, ref_check, samples, oracle)

    return _naming_matmul_mode(judged(analytic), system, p, call_low, dtypes, judged)


def _naming_matmul_mode(report, system, p, call_low, dtypes, judged) -> PrecisionReport:
    """The report, with the reduced-precision matmul mode named where it decides
    the verdict (``decided_by`` and a note)."""
    mode = _deciding_matmul_mode(report, system, p, call_low, dtypes, judged)
    if mode is None:
        return report
    note = _mode_note(mode, getattr(system, "matmul_settings", ""))
    return replace(report, decided_by=mode, notes=report.notes + (note,))


def _deciding_matmul_mode(report, system, p, call_low, dtypes, judged) -> str | None:
    """The reduced-precision matmul mode (TF32) under which the float32 gradient
    failed and without which it passes, if any."""
    if not report.mismatches or not system.capabilities.matmul_modes:
        return None
    if "float32" not in {_real_of(d) for d in dtypes}:
        return None
    mode = system.reduced_matmuls(call_low.values)
    if mode is None:
        return None
    with system.session("native"), system.full_float32():
        again, _ = _low_jacobian(p, call_low, dtypes, system)
    # it decides only if the verdict turns: a float64 gradient that fails its own
    # check fails the report whatever the matmuls do
    return mode if judged(again).passed else None


def _mode_note(mode: str, settings: str) -> str:
    where = f" ({settings})" if settings else ""
    return (
        f"{mode} decides this verdict: float32 matrix products and convolutions on the "
        f"device ran in {mode}{where}. With them in full float32 every entry is within "
        f"what float32 allows. Switch {mode} off to check the kernel in float32, or accept "
        f"{mode}'s error."
    )


@dataclass(frozen=True)
class Oracle:
    """A plain low-precision implementation's Jacobian, and how many times its
    error an entry may have."""

    jacobian: onp.ndarray
    factor: float

    def allowed(self, J: onp.ndarray, unit: onp.ndarray, rows, cols) -> onp.ndarray:
        """Per entry: ``factor`` times the oracle's largest error in the entry's block
        (output leaf x input leaf), at least one eps of the block's scale. Per block,
        not per entry: two implementations round each entry differently, so one
        entry's ratio is chance, while the worst over a block measures the precision."""
        with onp.errstate(invalid="ignore"):
            err = onp.abs(self.jacobian - J)
        out = onp.array(unit, dtype=float)
        for rs in rows.slices.values():
            for cs in cols.slices.values():
                block = err[rs, cs]
                finite = block[onp.isfinite(block)]
                worst = float(finite.max()) if finite.size else 0.0
                out[rs, cs] = onp.fmax(unit[rs, cs], self.factor * worst)
        return out


def _rows(p: Problem, leaves) -> onp.ndarray:
    tr = p.backend.vjp(p.F, leaves)
    dtype = onp.asarray(p.backend.to_numpy(tr.value)).dtype

    def rule(u):
        return flat(tr.backward(p.backend.to_array(onp.asarray(u, dtype))), p.backend)

    return reverse_rows(rule, p.m, rows_rule(tr, p.backend, dtype))


def _reference(p: Problem, dtypes, gen, samples):
    """The float64 Jacobian, its spread over inputs perturbed at the low
    precision's rounding, and the float64 gradient's own check."""
    from .api import check_problem
    from .options import Options

    x0 = p.x0
    J = _rows(p, p.vs)
    eps = onp.concatenate([onp.full(s.real_size, _eps(d)) for s, d in zip(p.cols.sides, dtypes)])
    spread = onp.zeros_like(J)
    for _ in range(samples):
        # each coordinate moves by one rounding, up or down (a random smaller move
        # could leave an entry looking perfectly conditioned by chance)
        moved = x0 * (1.0 + eps * (gen.integers(0, 2, x0.size) * 2.0 - 1.0))
        with onp.errstate(invalid="ignore"):
            spread = onp.fmax(spread, onp.abs(_rows(p, p.split(moved)) - J))
    check = check_problem(p, Options("richardson", None, None, gen))
    return J, spread, check


def _eps(dtype: str) -> float:
    from ..core.tree import Leaf

    return Leaf("x", (), dtype.startswith("complex"), dtype).eps


def _low_jacobian(p: Problem, call_low, dtypes, system):
    """The Jacobian of the low-precision backward at the same point."""
    F = traceable(call_low, p.F.layout, None, system)
    # cast where the leaves live (a CUDA tensor's low-precision copy stays on CUDA)
    leaves = [system.cast(v, _real_of(d)) for v, d in zip(p.vs, dtypes)]
    tr = system.vjp(F, leaves)
    out_dtype = dtype_name(tr.value)

    def rule(u):
        cot = system.cast(onp.asarray(u, dtype=float), out_dtype)
        grads = tr.backward(cot)
        return onp.concatenate(
            [onp.ravel(onp.asarray(system.to_numpy(g), dtype=float)) for g in grads]
        )

    # a low precision numpy lacks (bfloat16) is made by the backend's cast
    stacked = rows_rule(
        tr, system, None, lambda U: system.cast(onp.asarray(U, dtype=float), out_dtype)
    )
    return reverse_rows(rule, p.m, stacked), out_dtype


def _largest(dtype: str) -> float:
    known = {"bfloat16": 3.3895e38, "float16": 65504.0, "float32": 3.4028e38}
    return known.get(dtype, float(onp.finfo(float).max))


def _col_largest(cols, dtypes) -> onp.ndarray:
    return onp.concatenate(
        [onp.full(s.real_size, _largest(_real_of(d))) for s, d in zip(cols.sides, dtypes)]
    )


def _real_of(dtype: str) -> str:
    return {"complex32": "float16", "complex64": "float32", "complex128": "float64"}.get(
        dtype, dtype
    )


def _judge(p, A, J, y0, spread, dtypes, out_dtype, ref_check, samples, oracle) -> PrecisionReport:
    rows, cols = p.rows, p.cols
    col_eps = onp.concatenate([onp.full(s.real_size, _eps(d)) for s, d in zip(cols.sides, dtypes)])
    row_eps = onp.full(rows.size, _eps(_real_of(out_dtype)))
    eps = onp.maximum(row_eps[:, None], col_eps[None, :])
    scale = onp.zeros_like(J)
    for rs in rows.slices.values():
        for cs in cols.slices.values():
            block = J[rs, cs]
            finite = onp.abs(block[onp.isfinite(block)])
            scale[rs, cs] = finite.max() if finite.size else 0.0
    unit = eps * onp.where(scale > 0, scale, onp.finfo(float).tiny)
    # where the true value itself exceeds the low precision's range, inf is its answer
    # (a gradient entry lives in its input's cotangent, in that input's precision);
    # where f's own value overflows, a backward pass multiplies by inf and NaN follows
    top = _col_largest(cols, dtypes)[None, :]
    with onp.errstate(invalid="ignore"):
        overflow = bool(onp.any(onp.abs(y0) >= _largest(_real_of(out_dtype))))
    beyond = ~onp.isfinite(A) & ((onp.abs(J) >= top) | overflow)
    with onp.errstate(invalid="ignore", over="ignore", divide="ignore"):
        err = onp.abs(A - J)
        err = onp.where(onp.isfinite(A), err, onp.inf)
        allowed = ROUNDOFF_UNITS * unit + CONDITIONING_SAFETY * spread
        if oracle is not None:
            allowed = oracle.allowed(J, unit, rows, cols)
        violation = onp.where(beyond, onp.nan, err / allowed)
        units = err / unit
        allowed_units = allowed / unit
    failing = onp.argwhere(violation > 1)
    order = onp.argsort(
        -onp.nan_to_num(violation, nan=-1.0, posinf=onp.finfo(float).max), axis=None
    )

    def entry(i, j):
        _, rside, ri = rows.locate(int(i))
        _, cside, cj = cols.locate(int(j))
        v = float(violation[i, j])
        verdict = failing_verdict(float(A[i, j]), float(J[i, j])) if v > 1 else Verdict.RIGHT
        return PrecisionEntry(
            rows.label(i) + " / " + cols.label(j),
            int(i),
            int(j),
            float(A[i, j]),
            float(J[i, j]),
            float(err[i, j]),
            float(units[i, j]),
            float(allowed_units[i, j]),
            v,
            rside.index(ri),
            cside.index(cj),
            verdict,
        )

    mism = sorted((entry(i, j) for i, j in failing), key=lambda e: -e.violation)
    worst = [entry(*onp.unravel_index(t, J.shape)) for t in order[:10]]
    notes = []
    if not ref_check.passed:
        notes.append(
            "the float64 gradient itself fails its finite-difference check (see "
            ".reference_check): the derivative is wrong, not only imprecise; fix that first."
        )
    with onp.errstate(invalid="ignore", over="ignore", divide="ignore"):
        cond = float(onp.nanmax(spread / unit, initial=0.0))
    if beyond.any():
        notes.append(
            f"{int(beyond.sum())} entries are not finite because f's value or derivative is "
            f"beyond {_real_of(out_dtype)}'s range (it is in float64 too): inf is the best the "
            "precision can give there, so they are not judged."
        )
    if cond > ROUNDOFF_UNITS:
        notes.append(
            f"the problem is ill-conditioned in {_real_of(dtypes[0])}: rounding the inputs "
            f"alone moves the float64 Jacobian by up to {cond:.0f} eps of its scale; those "
            "entries are allowed that much."
        )
    if oracle is not None:
        notes.append(
            f"judged against the oracle given as reference=: each entry may err up to "
            f"{oracle.factor:g} times the oracle's largest error in its block (output x "
            "input), and one eps of the block's scale at least."
        )
    low = sorted(set(dtypes) | {out_dtype}, key=_eps, reverse=True)
    return PrecisionReport(
        passed=not mism and ref_check.passed,
        low_dtype=low[0],
        eps=float(eps.max()),
        analytic=A,
        reference=J,
        abs_err=err,
        eps_units=units,
        allowed_units=allowed_units,
        violation=violation,
        worst=tuple(worst),
        mismatches=tuple(mism),
        rows=rows,
        cols=cols,
        reference_check=ref_check,
        notes=tuple(notes) + tuple(p.extra_notes),
        function=p.name,
        samples=samples,
    )
