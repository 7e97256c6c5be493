"""The slope across a staircase's stairs, where f is exactly flat at x and yet
moves within reach.

f that rounds an intermediate to a narrow format and goes on in float64
(``exp(h(x).half().double())``, a float64 loss of a half model's output) is a
staircase in x whose stairs are a few float16 ulps of h wide, and whose values
lie on no coarse grid (:mod:`gradexplorer.fd.quantum` sees none). Its derivative
at x is 0, and says nothing of the smooth function AD differentiates; the finite
differences shrink onto the stair and read 0. The slope over many stairs does
say it: over a step ``SPAN`` stairs wide, each sample is within one stair's
height of the smooth function, so the central difference is off by at most a
stair's height over the step, besides its truncation (what a step twice as wide
shows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as onp

from ..fd.sampling import exact_steps
from .kinks import reach_limit
from .problem import Problem

__all__ = ["Across", "across_stairs", "across_stairs_columns", "SPAN"]

#: Stairs the step of the difference across them spans (its error: 1/SPAN of the slope).
SPAN = 64.0
#: ... and at least this many (a wider stair leaves the entry unresolved).
FEWEST = 8.0


@dataclass(frozen=True)
class Across:
    """The slope across stairs of one entry: the central difference ``est`` over
    ``step`` (``SPAN`` stairs of ``width``), known to within ``err``."""

    est: float
    err: float
    step: float
    width: float


def across_stairs(p: Problem, cells: dict, y0: onp.ndarray) -> tuple[dict, int]:
    """``{(i, j): Across}`` for the cells ``{(i, j): reach}`` (f flat over x ± reach
    along input j, or just short of it) whose stairs end within reach of x on both
    sides (:func:`~.kinks.reach_limit`), None for those whose stairs are too wide to
    span :data:`FEWEST` of them within it; and the evaluations it took. A cell where
    f does not move within reach is left out: it is flat there. The stair's width is
    where f first changes, doubling the step from the reach; its height, the change
    there."""
    out: dict = {}
    nfev = 0
    by_column: dict[int, list] = {}
    for (i, j), reach in cells.items():
        by_column.setdefault(int(j), []).append((int(i), float(reach)))
    for j, rows_reach in by_column.items():
        rows = onp.array([i for i, _ in rows_reach])
        width, height, used = _stair(p, j, rows, min(r for _, r in rows_reach), y0)
        nfev += used
        found = onp.isfinite(width)
        if not found.any():
            continue
        widest = float(onp.max(width[found]))
        step = min(SPAN * widest, 0.5 * float(reach_limit(p.x0[[j]])[0]))
        if step < FEWEST * widest:  # stairs too wide for a slope over many of them
            out.update({(int(i), j): None for i in rows[found]})
            continue
        step = float(exact_steps(p.x0[[j]], onp.array([step]), p.spacing()[[j]])[0])
        est, err = _central(p, j, step, rows)
        nfev += 4
        err = err + height / step
        for k, i in enumerate(rows):
            if found[k] and onp.isfinite(est[k]) and onp.isfinite(err[k]):
                out[(int(i), j)] = Across(float(est[k]), float(err[k]), step, float(width[k]))
    return out, nfev


def across_stairs_columns(p: Problem, columns, est, err, y0, rows=None):
    """FD columns ``est``, ``err`` (``(len(columns), m)``) with every exact 0 (in
    ``rows``, a mask; default all) replaced by the slope across f's stairs where f
    moves within reach (:func:`across_stairs`); inf error where its stairs are too
    wide. New arrays, the cells now unresolved, and the evaluations it took."""
    est, err = onp.array(est, dtype=float), onp.array(err, dtype=float)
    mask = onp.ones(est.shape[1], bool) if rows is None else rows
    base = p.steps("forward")
    cells = {
        (int(i), int(columns[t])): 32.0 * float(base[columns[t]])
        for t, i in onp.argwhere((est == 0) & mask[None, :])
    }
    if not cells:
        return est, err, set(), 0
    measured, nfev = across_stairs(p, cells, y0)
    pos = {int(j): t for t, j in enumerate(columns)}
    wide = set()
    for (i, j), across in measured.items():
        if across is None:
            err[pos[j], i] = onp.inf
            wide.add((i, j))
        else:
            est[pos[j], i], err[pos[j], i] = across.est, across.err
    return est, err, wide, nfev


def _stair(p: Problem, j: int, rows, reach: float, y0) -> tuple[onp.ndarray, ...]:
    """Per row: the step at which f first changes along input j, on the side where
    that is farther (the stair's width from x), and the largest change seen then (its
    height); NaN width where it does not change as far as the flat reach is followed
    (:func:`~.kinks.reach_limit`)."""
    x0, spacing = p.x0, p.spacing()
    limit = float(reach_limit(x0[[j]])[0])
    first = onp.full((rows.size, 2), onp.nan)
    height = onp.zeros((rows.size, 2))
    h, nfev = 2.0 * reach, 0
    while h <= limit and onp.isnan(first).any():
        step = float(exact_steps(x0[[j]], onp.array([h]), spacing[[j]])[0])
        X = onp.repeat(x0[None], 2, axis=0)
        X[0, j] += step
        X[1, j] -= step
        Y = onp.asarray(p.batch(X), dtype=float)[:, rows].T  # (rows, sides)
        nfev += 2
        moved = onp.isnan(first) & (Y != y0[rows][:, None]) & onp.isfinite(Y)
        first = onp.where(moved, step, first)
        height = onp.where(moved, onp.abs(Y - y0[rows][:, None]), height)
        h *= 2.0
    return first.max(axis=1), height.max(axis=1), nfev


def _central(p: Problem, j: int, step: float, rows) -> tuple[onp.ndarray, onp.ndarray]:
    """The central difference over ``step`` along input j, and its truncation (its
    gap to the one over twice the step)."""
    X = onp.repeat(p.x0[None], 4, axis=0)
    for r, offset in enumerate((step, -step, 2 * step, -2 * step)):
        X[r, j] += offset
    Y = onp.asarray(p.batch(X), dtype=float)[:, rows]
    with onp.errstate(all="ignore"):
        d1 = (Y[0] - Y[1]) / (2 * step)
        d2 = (Y[2] - Y[3]) / (4 * step)
    return d1, onp.abs(d1 - d2)
