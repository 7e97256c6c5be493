"""Whether samples of f that look like noise hide stairs: jumps, confirmed by halving.

Stairs sampled at spacings wider than their stairs look like noise beside f's smooth
part: each sample is off the smooth function by its own rounding, up to a stair's
height. Where several intermediates round on grids of their own (attention scores cast
to float16: the scores of one row of the softmax each on its own float16 grid), the
stairs are of several heights and widths, and no test of the samples' pattern (equal
neighbours, changes all alike) sees them. An oscillation finer than the spacing looks
the same, yet its derivative is what AD gives, not the slope across it. What tells them
apart is at x's scale, not the samples': an interval where f moved more than its trend
holds a *jump*, whose change stays as the interval is halved onto it, where a smooth f's
change shrinks with the interval. Samples that look like noise (two intervals off f's
trend or more: one is a lone jump, as a ``where`` makes) and hold a jump say that f goes
on in stairs.

>>> import numpy as np
>>> from types import SimpleNamespace
>>> def f(X):  # two intermediates, each rounded on its own grid, beside a smooth term
...     x = X[:, :1]
...     return np.round(np.sin(5 * x) * 256) / 256 + np.round(np.exp(x) * 300) / 300 + x
>>> p = SimpleNamespace(x0=np.array([0.2]), batch=f)
>>> offsets = 2e-4 * np.arange(1, 10)
>>> Y = f(p.x0 + offsets[:, None])
>>> looks_noisy(Y, offsets), jumps_within(p, np.ones(1), 1.0, offsets, Y, [0], float)[0]
(array([ True]), array([ True]))
>>> g = lambda X: X[:, :1] + 1e-3 * np.sin(1e4 * X[:, :1])  # an oscillation: no jumps
>>> q = SimpleNamespace(x0=np.array([0.2]), batch=g)
>>> jumps_within(q, np.ones(1), 1.0, offsets, g(q.x0 + offsets[:, None]), [0], float)[0]
array([False])
"""

from __future__ import annotations

import numpy as onp

__all__ = ["HALVINGS", "above_rounding", "looks_noisy", "jumps_within", "values_rounding"]

#: Halvings of an interval onto the jump it holds.
HALVINGS = 12
#: Over the last this many halvings a jump's change stays (within 2x), where a smooth
#: f's shrinks 16x.
LAST = 4
#: Intervals whose change is off the trend by at least this share of the most any is:
#: two such look into (fewer: at most one edge within the samples, no stairs seen yet).
SHARE = 0.25
#: The changes of f the samples show are noise-like where their third differences are
#: at least this share of their second ones (a smooth f's shrink with the spacing).
ROUGHER = 0.5


def values_rounding(Y: onp.ndarray) -> onp.ndarray:
    """Per column, what float64's rounding of f's values can move them by, 64x over."""
    return 64.0 * onp.finfo(float).eps * onp.max(onp.abs(Y), axis=0)


def _excess(offsets, Y: onp.ndarray) -> tuple[onp.ndarray, onp.ndarray]:
    """Per row of samples ``Y`` (points, rows) at ``offsets``: the median slope between
    neighbours (f's trend), and each interval's change off it."""
    gaps = onp.diff(onp.asarray(offsets, dtype=float))[:, None]
    with onp.errstate(all="ignore"):
        trend = onp.median(onp.diff(Y, axis=0) / gaps, axis=0)
        return trend, onp.nan_to_num(onp.diff(Y, axis=0) - trend * gaps)


def above_rounding(Y: onp.ndarray, offsets) -> onp.ndarray:
    """Per column of samples ``Y`` (points, rows) at ``offsets``: whether some interval
    moved off f's trend by more than float64's rounding of f's values could (16x
    over): samples a few ulps apart show nothing a halving could confirm."""
    return onp.max(onp.abs(_excess(offsets, Y)[1]), axis=0) > 16.0 * values_rounding(Y)


def looks_noisy(Y: onp.ndarray, offsets) -> onp.ndarray:
    """Per column of samples ``Y`` (points, rows) at nearly even ``offsets``: whether
    their changes look like noise, not like a smooth function's (whose successive
    differences shrink by the spacing over its scale), above f's own rounding, with two
    intervals or more off f's trend (:data:`SHARE`)."""
    with onp.errstate(all="ignore"):
        d2 = onp.max(onp.abs(onp.diff(Y, 2, axis=0)), axis=0)
        d3 = onp.max(onp.abs(onp.diff(Y, 3, axis=0)), axis=0)
        off = onp.abs(_excess(offsets, Y)[1])
        several = onp.sum(off >= SHARE * off.max(axis=0), axis=0) >= 2
        return several & (d3 >= ROUGHER * d2) & (d2 > 16.0 * values_rounding(Y))


def jumps_within(p, v, sign: float, offsets, Y, rows, snap) -> tuple[onp.ndarray, int]:
    """Per row (of ``rows``, f's samples ``Y`` (points, rows) at ``offsets`` along
    ``sign``·v): whether the interval that changes most above f's trend, or the one
    that changes most below it, holds a jump (over the last :data:`LAST` of
    :data:`HALVINGS` halvings onto it, its change stays, where a smooth f's would
    shrink as the interval); and the evaluations taken. ``snap`` puts an offset on x's
    grid; an interval the grid will not let shrink holds no jump it can confirm."""
    t = onp.asarray(offsets, dtype=float)
    rows = onp.asarray(rows)
    trend, excess = _excess(t, Y)
    # the trend is the smooth part's slope where few intervals hold an edge, and takes
    # in the stairs' rise where most do (then the intervals off it hold none): the
    # intervals that change most above it and most below it, one holds an edge
    pick = onp.stack([onp.argmax(excess, axis=0), onp.argmin(excess, axis=0)])
    cols = onp.broadcast_to(onp.arange(rows.size), pick.shape)
    lo, hi = t[pick], t[pick + 1]
    y_lo, y_hi = Y[pick, cols], Y[pick + 1, cols]
    changes, nfev = [], 0
    for _ in range(HALVINGS):
        mid = onp.vectorize(snap, otypes=[float])((lo + hi) / 2)
        live = (mid > lo) & (mid < hi)
        if not live.any():
            break
        points, where = onp.unique(mid[live], return_inverse=True)
        X = p.x0 + sign * points[:, None] * v
        Ym = onp.asarray(p.batch(X), dtype=float)[:, rows]
        nfev += points.size
        y_mid = onp.array(y_lo)
        y_mid[live] = Ym[where, cols[live]]
        with onp.errstate(all="ignore"):
            left = onp.abs(y_mid - y_lo - trend * (mid - lo))
            right = onp.abs(y_hi - y_mid - trend * (hi - mid))
        go_left = live & (left >= right)
        go_right = live & ~go_left
        hi, y_hi = onp.where(go_left, mid, hi), onp.where(go_left, y_mid, y_hi)
        lo, y_lo = onp.where(go_right, mid, lo), onp.where(go_right, y_mid, y_lo)
        changes.append(onp.where(live, onp.fmax(left, right), onp.nan))
    if len(changes) <= LAST:
        return onp.zeros(rows.size, bool), nfev
    last, earlier = _last_live(onp.array(changes))
    with onp.errstate(all="ignore"):
        stays = last >= 0.5 * earlier
        shrunk = (hi - lo) <= (t[pick + 1] - t[pick]) * 2.0**-8
        held = shrunk & stays & (last > 16.0 * values_rounding(Y))
    return held.any(axis=0), nfev


def _last_live(changes: onp.ndarray) -> tuple[onp.ndarray, onp.ndarray]:
    """Per interval, its last change and the one :data:`LAST` halvings before, among
    the halvings it took (NaN where fewer): x's grid may stop one interval's halvings
    before another's (float32's, 2e-7 wide at x = 2.5)."""
    taken = onp.isfinite(changes)
    count = taken.sum(axis=0)
    # (position of each interval's k-th live halving: the live ones sorted first)
    order = onp.argsort(~taken, axis=0, kind="stable")
    live = onp.take_along_axis(changes, order, axis=0)
    pad = onp.full((1,) + changes.shape[1:], onp.nan)
    live = onp.concatenate([live, pad])
    last = onp.take_along_axis(live, onp.where(count > 0, count - 1, -1)[None], axis=0)[0]
    before = onp.where(count > LAST, count - 1 - LAST, -1)
    return last, onp.take_along_axis(live, before[None], axis=0)[0]
