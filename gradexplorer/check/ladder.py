"""Which span to believe a slope across stairs over: fits (:mod:`.slopefit`) over a
ladder of spans, each :data:`LADDER` times the last, from 64 of a row's stairs either
side up to the limit of the reach.

The scatter of the points about a fit tells the spans apart. It stays the stairs'
rounding over any span that takes in many of them: a *plateau*, over which the fits
agree and the widest is known most closely. It *jumps* where a span first takes in
stairs far taller than those before (a bfloat16 term beside float32 ones: 1000x;
the shorter spans sat within one of its stairs and missed its slope), or where f is
no cubic over the span (``sin(20·x)`` across periods: a misfit that grows as the
fifth power of the span, then saturates at f's own swing, where the fit is a chord).
So the fits are cut into runs at each jump, and the widest fit of the last run that
holds a plateau of fits that explain their points counts, known no closer than its
gap to the fits either side (the one after it, a misfit's onset or taller stairs'
first sight, that fit's error apart).

>>> spans = [1e-4, 8e-4, 6.4e-3, 5.1e-2]
>>> est, err = [1.39, 1.71, 1.695, 1.692], [0.004, 0.18, 0.024, 0.002]
>>> scatter, explained = [1e-7, 4.5e-5, 4.7e-5, 4.1e-5], [True] * 4
>>> believe(est, err, scatter, explained)  # new stairs at the second span: a plateau
(1.692, 0.003)
>>> believe([-60.0, -60.8, -44.2], [13.0, 2.2, 5.0], [4e-3, 3.5e-3, 0.23], [True] * 3)
(-60.8, 11.6)
"""

from __future__ import annotations

import numpy as onp

from .problem import Problem
from .slopefit import fit_slope, jittered_offsets

__all__ = ["LADDER", "JUMP", "fit_across", "believe"]

#: The factor between the spans of successive fits.
LADDER = 8.0
#: A fit's scatter this many times the least of its run starts a new run: stairs'
#: rounding grows less than that while a wider span takes in more stairs of other
#: intermediates (6x over 256x where twenty bfloat16 terms interleave).
JUMP = 16.0
#: Within a plateau, the widest two fits' scatters differ by less than this.
FLAT = 4.0
#: A fit explains its points where their scatter about it is below this share of
#: their own spread (a chord through a swing of f explains none of it).
EXPLAINS = 0.5


def fit_across(p: Problem, v, start, limit: float, rows, height, width, snap) -> tuple:
    """The slope of f's ``rows`` along v across their stairs: fits over the ladder of
    spans from the shortest of ``start`` (per row: 64 of its stairs either side; inf:
    not fitted) up to ``limit``, each row's from its own start, and per row the span
    :func:`believe` picks. ``snap`` puts an offset on x's grid. Returns the estimates,
    their errors, and the evaluations taken."""
    live = onp.isfinite(start)
    est, err = onp.full(rows.size, onp.nan), onp.full(rows.size, onp.inf)
    if not live.any():
        return est, err, 0
    fits, nfev = [], 0
    for span in _ladder(start[live], limit):
        offsets, D, used = _pairs(p, v, span, rows, snap)
        nfev += used
        if offsets.size >= 6:  # (a grid too coarse for that many points in the span)
            fits.append((span, offsets, D, *fit_slope(offsets, D, height=height, width=width)))
    for k in onp.flatnonzero(live):
        mine = [f for f in fits if f[0] >= start[k] / 2]
        if not mine:
            continue
        span, offsets, D = mine[0][:3]
        inner = offsets <= span / 2
        half = None  # (a grid too coarse for a fit over the inner half: no gap to it)
        if inner.sum() >= 4:
            fit = fit_slope(offsets[inner], D[inner][:, [k]], height=height[[k]], width=width[k])
            half = float(fit[0][0])
        column = [(f[3][k], f[4][k], f[5][k], _explains(f[2][:, k], f[5][k])) for f in mine]
        est[k], err[k] = believe(*zip(*column), first=half)
    return est, err, nfev


def believe(est, err, scatter, explained, first: float | None = None) -> tuple[float, float]:
    """The slope and its error from fits over spans in increasing order (their
    estimates, errors, scatters, and whether each explains its points): the widest fit
    of the last run that holds a plateau (a fit whose scatter is within :data:`FLAT`
    of the one before it, both explaining their points), or the widest fit before the
    first jump where none does; known to within its error, its gap to the fit before
    it (``first``: the fit over the first span's inner half), and its gap to the fit
    after it less that fit's error, whichever is largest. NaN, with an infinite error,
    where that fit does not explain its points."""
    runs, least = [[0]], scatter[0]
    for k in range(1, len(est)):
        if not scatter[k] <= JUMP * least:
            runs.append([])
            least = scatter[k]
        runs[-1].append(k)
        least = min(least, scatter[k])
    k = runs[0][-1]  # no plateau: the widest fit before the first jump, whose gap to
    # the one before it bounds what a misfit's onset or more stairs taken in moved it
    for run in reversed(runs):
        flat = [
            q
            for q in run[1:]
            if explained[q] and explained[q - 1] and scatter[q] <= FLAT * scatter[q - 1]
        ]
        if flat:
            k = flat[-1]
            break
    if not explained[k]:  # a chord through f's swings: no slope to be had here
        return float("nan"), float("inf")
    before = est[k - 1] if k > 0 else first
    gap = abs(est[k] - before) if before is not None else 0.0
    missed = abs(est[k] - est[k + 1]) - err[k + 1] if k + 1 < len(est) else 0.0
    return float(est[k]), float(max(err[k], gap, missed))


def _explains(D, scatter) -> bool:
    """Whether a fit's points stray from it by less than :data:`EXPLAINS` of their spread."""
    spread = float(onp.std(D))
    return bool(onp.isfinite(scatter) and scatter < EXPLAINS * spread)


def _ladder(starts, limit: float) -> list:
    """Spans from the shortest of ``starts`` up to ``limit``, :data:`LADDER` apart, and
    the longest of them where the last falls short of it."""
    spans = [min(float(onp.min(starts)), limit)]
    while spans[-1] * LADDER <= limit:
        spans.append(spans[-1] * LADDER)
    if float(onp.max(starts)) > spans[-1] * 1.5:
        spans.append(min(float(onp.max(starts)), limit))
    return spans


def _pairs(p: Problem, v, span: float, rows, snap) -> tuple:
    """Jittered offsets out to ``span`` along v (on x's grid along a coordinate), half
    the differences of f's ``rows`` across x at each, and the evaluations taken."""
    offsets = onp.unique([snap(o) for o in jittered_offsets(span)])
    offsets = offsets[offsets > 0]
    X = onp.concatenate([p.x0 + offsets[:, None] * v, p.x0 - offsets[:, None] * v])
    Y = onp.asarray(p.batch(X), dtype=float)[:, rows]
    with onp.errstate(all="ignore"):
        D = (Y[: offsets.size] - Y[offsets.size :]) / 2
    return offsets, D, X.shape[0]
