"""A rule's exact part against f's slope on one stair.

Across the stairs of a cast (``x² + 0.6·f16(100 + 2·x)``: stairs 0.03 wide) the
slope is fitted through the few stairs within reach and known only to 5-40%; stairs
too wide for that leave their entries open. Both hide a wrong rule: x²'s rule 10% off
passed there within a 13% bar. But the rule splits into what it sends through
roundings (:func:`~.rounded.rounded_parts`) and the rest, its *exact part*, and f
splits the same way on one stair: its rounded terms stand still there, so its slope
within a stair is the exact part's. A central difference with steps far inside a
stair reads that slope to round-off, and a rule whose exact part disagrees is wrong,
however loosely the slope across the stairs is known.
"""

from __future__ import annotations

import numpy as onp

from ..fd.formats import FLOAT32
from ..fd.reasons import Unresolvable
from ..fd.sampling import exact_steps
from .analytic import Reverse
from .estimates import Estimates
from .judging import FD_SAFETY, RTOL_ULPS, Judgement, tolerances
from .loose import VAGUE_SHARE
from .options import Options
from .problem import Problem
from .rounded import ROUNDED_ROWS, rounded_splits
from .verdicts import Verdict, failing_verdict

__all__ = ["settle_exact_parts", "slopes_on_stair", "exact_notes", "ON_STAIR", "STAIR_COLUMNS"]

#: Steps within a stair: these shares of the narrowest stairs seen along the input,
#: the smaller read where an edge within the steps is rare (the stairs of many
#: rounded terms interleave), the larger where f's own grid is coarse against the
#: smaller (a float32 output: 6e-5 at 200); each entry keeps the sharper.
ON_STAIR = (1 / 1024, 1 / 32)
#: Inputs whose entries are looked at on a stair, at most (8 evaluations each).
STAIR_COLUMNS = 64


def settle_exact_parts(
    p: Problem, est: Estimates, jd: Judgement, rev: Reverse, A: onp.ndarray, opts: Options
) -> tuple[int, int]:
    """Entries passed across stairs within a bar wider than
    :data:`~.loose.VAGUE_SHARE` of their value, or left open on stairs, of a rule
    that rounds (``rev.suspect``, ``rev.narrow``): wrong where the rule's exact part
    disagrees with f's slope on a stair (:func:`slopes_on_stair`) by more than both
    errors allow, however the rule splits (all its roundings, or only those coarser
    than float32's, whose stairs the steps may span, or none). Each split's exact part
    is judged to the precision it keeps (float64's, float32's, or the whole rule's
    allowance), not to the rounding split off. The rest keep their verdict. Returns
    the derivative passes and the evaluations taken."""
    if not (rev.suspect.any() or rev.narrow is not None):
        return 0, 0
    cells = _loose_or_open(jd, A)
    rows = onp.flatnonzero(cells.any(axis=1))[:ROUNDED_ROWS]
    if not rows.size:
        return 0, 0
    counts = cells[rows].sum(axis=0)
    most = min(STAIR_COLUMNS, int((counts > 0).sum()))
    cols = onp.sort(onp.argsort(-counts, kind="stable")[:most])
    splits, passes = rounded_splits(rev.vjp, A.shape[0], rows, rev.y.dtype)
    floor = onp.fmax(est.noise.resolved, _row_eps(p) * onp.abs(est.y0))
    slope, err, nfev = _sharper_slopes(p, cols, _stair_widths(p, jd, cells, cols), floor)
    atol, rtol = tolerances(p.eps_matrix(), opts.atol, opts.rtol)
    jitter = onp.zeros(A.shape[1]) if rev.jitter is None else 2.0 * rev.jitter
    for k, i in enumerate(rows):
        for c, j in enumerate(cols):
            if not (cells[i, j] and onp.isfinite(err[i, c])):
                continue
            ij = (int(i), int(j))
            own = (atol + float(jitter[j]), float(rtol[ij]))
            parts = [(float(R[k, j]), float(e[k, j]), prec) for (R, e), prec in zip(splits, KEPT)]
            _judge_exact(jd, est, ij, A, parts, (float(slope[i, c]), float(err[i, c])), own)
    return passes, nfev


def _loose_or_open(jd: Judgement, A: onp.ndarray) -> onp.ndarray:
    """Entries left open on stairs (but those whose rounded part was split off
    already), and those passed across stairs within a loose bar."""
    cells = (jd.verdicts == Verdict.UNRESOLVABLE.code) & (jd.reasons == Unresolvable.STAIRCASE)
    for ij in jd.rounded:
        cells[ij] = False
    for ij, across in jd.across.items():
        loose = FD_SAFETY * across.err > VAGUE_SHARE * abs(float(onp.real(A[ij])))
        if across.measured and loose and jd.verdicts[ij] == Verdict.RIGHT.code:
            cells[ij] = True
    return cells


def _stair_widths(p: Problem, jd: Judgement, cells: onp.ndarray, cols) -> onp.ndarray:
    """Per input, the narrowest stairs measured along it (NaN where none were)."""
    widths = onp.full(len(cols), onp.nan)
    for c, j in enumerate(cols):
        seen = [
            a.width
            for (i, jj), a in jd.across.items()
            if jj == j and cells[i, j] and onp.isfinite(a.width) and a.width > 0
        ]
        if seen:
            widths[c] = min(seen)
    return widths


def _sharper_slopes(p: Problem, cols, widths, floor) -> tuple:
    """:func:`slopes_on_stair` at each of :data:`ON_STAIR`'s shares of ``widths``;
    per entry, the one with the smaller error, where the two agree within their
    errors; where they do not, known no better than their disagreement (stairs far
    narrower than the width measured, a float32 term's beside float16's, evenly
    crossed at the step and twice it, read their slope across as if on a stair).
    Where no width is known (stairs too wide to measure, or f flat as far as it was
    followed), at the Richardson step alone: within a stair of unknown width, only a
    step as short as the differences' own is known to lie."""
    known = onp.isfinite(widths)
    reads, nfev = [], 0
    for share in ON_STAIR if known.any() else ON_STAIR[:1]:
        steps = onp.where(known, share * widths, p.steps("richardson")[cols])
        steps = exact_steps(p.x0[cols], steps, p.spacing()[cols])
        slope, err, used = slopes_on_stair(p, cols, steps, floor)
        reads.append((slope, err))
        nfev += used
    (slope, err), rest = reads[0], reads[1:]
    for other, other_err in rest:
        with onp.errstate(invalid="ignore"):
            gap = onp.abs(slope - other)
            apart = gap > FD_SAFETY * (err + other_err)
            slope = onp.where(other_err < err, other, slope)
            err = onp.where(apart, gap + onp.fmax(err, other_err), onp.fmin(err, other_err))
    return slope, err, nfev


def slopes_on_stair(p: Problem, cols, steps, floor) -> tuple:
    """f's slope along each input of ``cols`` by central differences at ``steps``;
    per output and input (``(m, len(cols))``), with its error: twice their
    disagreement with differences at twice the steps (a stair's edge within the
    steps moves the one by half the stair's height over the step, the other by a
    quarter) and f's rounding over the step (``floor``, per output). And the
    evaluations taken (4 per input, in one batch).

    >>> import autograd.numpy as anp
    >>> from gradexplorer.check.problem import build_problem
    >>> p = build_problem(lambda x: x**2 + anp.floor(10 * x), (onp.array([0.33]),), {}, 0)
    >>> slope, err, _ = slopes_on_stair(p, [0], onp.array([2.0**-14]), onp.array([1e-16]))
    >>> round(float(slope[0, 0]), 9), bool(err[0, 0] < 1e-8)
    (0.66, True)
    """
    cols, steps = onp.asarray(cols, int), onp.asarray(steps, float)
    offsets = onp.array([1.0, -1.0, 2.0, -2.0])
    X = onp.repeat(p.x0[None, :], 4 * len(cols), axis=0)
    for c, j in enumerate(cols):
        X[4 * c : 4 * c + 4, j] += offsets * steps[c]
    Y = onp.asarray(p.batch(X), dtype=float).reshape(len(cols), 4, -1)
    with onp.errstate(all="ignore"):
        d1 = (Y[:, 0] - Y[:, 1]).T / (2 * steps)
        d2 = (Y[:, 2] - Y[:, 3]).T / (4 * steps)
        err = 2 * onp.abs(d1 - d2) + 2 * onp.asarray(floor, float)[:, None] / steps
    return d1, onp.where(onp.isfinite(d1), err, onp.inf), 4 * len(cols)


def _row_eps(p: Problem) -> onp.ndarray:
    return onp.concatenate([onp.full(s.real_size, s.eps) for s in p.rows.sides])


#: The precision each split's exact part keeps (:func:`~.rounded.rounded_splits`):
#: nothing split off, the whole rule's allowance (None); every rounding, float64's;
#: only those coarser than float32's, float32's.
KEPT = (None, 0.0, RTOL_ULPS * FLOAT32.eps)


def _judge_exact(jd: Judgement, est: Estimates, ij, A, parts, on_stair, own):
    """Entry ij wrong where the rule sends a measurable part through roundings, and
    no split ``(r, err, precision)`` of it leaves an exact part that agrees with f's
    slope ``on_stair`` (with its error), to within the precision it keeps (``own``:
    the check's atol and rtol there)."""
    a, (slope, err) = float(onp.real(A[ij])), on_stair
    fits = []
    for r, r_err, kept in parts:
        size = max(abs(a), abs(slope + r))
        if kept is None:  # (the verdict's own allowance)
            allowance = float(jd.allowance[ij]) + float(jd.rtol[ij]) * size
        else:
            allowance = own[0] + max(own[1], kept) * size
        bar = FD_SAFETY * (err + r_err) + allowance
        if not onp.isfinite(bar):
            continue
        off = abs(a - r - slope)
        fits.append((off / bar if bar > 0 else onp.inf * off, r, r_err, abs(r) > bar))
    if not any(measurable for *_, measurable in fits):
        return
    if min(f[0] for f in fits) <= 1:
        if FD_SAFETY * err <= VAGUE_SHARE * abs(a):  # (checked sharply, not vacuously)
            jd.exact_ok.add(ij)
        return
    V, r, r_err, _ = min(fits)
    est.N[ij], jd.E[ij], jd.V[ij] = slope + r, err + r_err, V
    jd.verdicts[ij] = failing_verdict(a, slope + r).code
    jd.reasons[ij] = 0
    jd.exact_off[ij] = (a - r, slope, err)


def exact_notes(p: Problem, jd: Judgement) -> list[str]:
    """What the report says of entries whose exact part :func:`settle_exact_parts`
    found wrong."""
    if not jd.exact_off:
        return []
    (i, j), (exact, slope, err) = min(jd.exact_off.items())
    count = len(jd.exact_off)
    return [
        f"{count} entr{'y is' if count == 1 else 'ies are'} wrong in the part of their rule "
        f"that passes no rounding ({p.rows.label(i)} / {p.cols.label(j)}, ...: {exact:.6g}, "
        f"where f's slope within one stair is {slope:.6g} ± {err:.1g}). Across the stairs of "
        "f's rounded terms the slope is known too loosely to see it, but within one stair "
        "those terms stand still, and f's slope there is the rest of the rule's. (A "
        "straight-through estimator, a rule for stairs that passes no rounding, beside "
        "a cast, looks the same.)"
    ]
