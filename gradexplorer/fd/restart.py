"""A second descent, from the array's typical step, for directions whose step a
tiny element made far too small.

An element's default step is relative to its own magnitude, which is right for
f whose structure scales with it (``log(p)`` at ``p = 1e-13``). But an element
far below the rest of its array (``-2.2e-16`` beside ``1.04``, a subnormal-sized
``8e-72``) then gets a step that f loses in rounding as soon as it mixes the
element with the others (``cumsum``, a matrix product): the column is known only
to its noise, or reads as a staircase. The growing levels climb 8x per level and
stop after a few; they cannot bridge 10^15. Here such a direction starts over at
the step a zero would get (the typical element's), shrinks until two levels
agree, and its entries take that estimate where it is settled, sharper, and
agrees with what the small steps saw (where they disagree the small steps are
kept, no surer than the gap).

>>> import numpy as onp
>>> far_directions(onp.array([1e-18, 1e-3]), onp.array([2e-3, 2e-3]), levels=3).tolist()
[True, False]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as onp

from .levels import POOR, POOR_ULPS, Directional
from .reasons import Unresolvable
from .sampling import SHRINK

__all__ = ["far_directions", "poorly_known", "restart_far"]

#: Reasons a larger step can cure: the small steps' samples were lost in rounding.
_CURABLE = (Unresolvable.RESOLVED, Unresolvable.NEVER_SETTLED, Unresolvable.STAIRCASE)


def far_directions(steps: onp.ndarray, grow_to: onp.ndarray, levels: int) -> onp.ndarray:
    """Directions whose step stays below the typical one after every growing level."""
    return onp.asarray(steps, dtype=float) * float(SHRINK) ** levels < grow_to


def poorly_known(out: Directional, dir_eps: onp.ndarray) -> onp.ndarray:
    """Entries (k, m) a larger step could sharpen: unresolved for want of resolution,
    or resolved to worse than ``POOR`` of their row's scale; never kinks (a larger
    step sees across them). Outputs with structure finer than the step are not
    excluded: the descent treats them as it treats a typical element's column."""
    curable = onp.isin(out.reason, [int(r) for r in _CURABLE])
    with onp.errstate(invalid="ignore"):
        known = onp.isfinite(out.err) & onp.isfinite(out.est)
        scale = onp.max(onp.abs(onp.where(known, out.est, 0.0)), axis=1, initial=0.0)
        poor_rel = onp.maximum(POOR, POOR_ULPS * dir_eps)[:, None]
        poor = ~known | (out.err > poor_rel * onp.maximum(onp.abs(out.est), scale[:, None]))
    return curable & poor


def restart_far(
    out: Directional,
    active: onp.ndarray,
    descend: Callable[[onp.ndarray], tuple[Directional, onp.ndarray]],
) -> Directional:
    """``out`` with the entries of directions ``active`` replaced where a descent
    from the typical step (``descend(active) -> (result, settled)``) does better.

    Taken where the new estimate is settled (two consistent levels agree) and
    either the old one had no finite error, or the new error is smaller and the
    two agree within their errors. A settled new estimate that disagrees leaves
    the old one, its error widened to the gap.
    """
    if active.size == 0:
        return out
    new, settled = descend(active)
    old_est, old_err = out.est[active], out.err[active]
    with onp.errstate(invalid="ignore"):
        sure = settled & (new.reason == Unresolvable.RESOLVED) & onp.isfinite(new.err)
        gap = onp.abs(new.est - old_est)
        open_ = ~onp.isfinite(old_err) | (out.reason[active] != Unresolvable.RESOLVED)
        agree = gap <= new.err + old_err
        take = sure & (open_ | (agree & (new.err < old_err)))
        widen = sure & ~take & ~open_ & ~agree
    out.est[active] = onp.where(take, new.est, old_est)
    out.err[active] = onp.where(take, new.err, onp.where(widen, onp.fmax(old_err, gap), old_err))
    out.reason[active] = onp.where(take, int(Unresolvable.RESOLVED), out.reason[active])
    out.noise_bound[active] = onp.where(take, new.noise_bound, out.noise_bound[active])
    if out.quantum is not None and new.quantum is not None:
        out.quantum[active] = onp.where(take, new.quantum, out.quantum[active])
    moved = onp.any(take, axis=1)
    out.steps[active[moved]] = new.steps[moved]
    out.nfev += new.nfev
    return out
