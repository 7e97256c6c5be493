"""Folding a smaller step's level into the running estimates of
:class:`~gradexplorer.fd.levels.StepLevels` (in place): which level an entry keeps,
when two consistent levels confirm or refute each other, and the noise a smaller
step measures that the kept estimates must carry too."""

from __future__ import annotations

import numpy as onp

__all__ = ["merge_level", "noise_seen_finer"]


def merge_level(
    lvl, active, est, err, noise, has, settled, nonfinite, h_new, kept_h, refuted
) -> onp.ndarray:
    """Fold one smaller-step level into the running estimates (in place); returns
    where two consistent levels clashed in their leading digit (neither settled). A kept
    estimate already ``refuted`` (inconsistent levels since) is replaced by a
    disagreeing consistent level without a clash: it carries no weight."""
    noise_seen_finer(lvl, active, err, noise, has, h_new, kept_h)
    prev_est, prev_err, prev_has = est[active], err[active], has[active]
    gap = onp.abs(lvl.est - prev_est)
    agree = prev_has & lvl.consistent & (gap <= lvl.err + prev_err)
    # a consistent new level replaces an estimate it contradicts or improves on
    take = lvl.consistent & (~prev_has | ~agree | (lvl.err < prev_err))
    take &= ~settled[active]
    new_est = onp.where(take, lvl.est, prev_est)
    new_err = onp.where(take, lvl.err, prev_err)
    # two consistent levels that disagree: the kept one is no surer than their gap
    clash = prev_has & lvl.consistent & ~agree & ~settled[active] & ~refuted
    new_err = onp.where(clash, onp.maximum(new_err, gap), new_err)
    est[active], err[active] = new_est, new_err
    noise[active] = onp.where(take, lvl.noise, noise[active])
    kept_h[active] = onp.where(take, h_new[:, None], kept_h[active])
    has[active] = prev_has | lvl.consistent
    # settled once two consistent levels agree (a first consistent level after
    # inconsistent ones needs a second to confirm it)
    settled[active] |= agree
    nonfinite[active] &= ~lvl.finite
    # levels that disagree in their leading digit refute each other (an oscillation's
    # aliased levels); a gap far below the estimates only widens the error
    with onp.errstate(invalid="ignore"):
        return clash & (gap > 0.5 * onp.maximum(onp.abs(lvl.est), onp.abs(prev_est)))


def noise_seen_finer(lvl, active, err, noise, has, h_new, kept_h) -> None:
    """A smaller step's smooth stencil measures f's noise from more samples than the
    probes did; where it measures more, the kept estimates (made at larger steps)
    carry that noise too: an FD noise error scales as sigma / step."""
    with onp.errstate(all="ignore"):
        implied = lvl.noise * h_new[:, None] / kept_h[active]
        more = has[active] & lvl.consistent & onp.isfinite(implied) & (implied > noise[active])
        # where() evaluates both branches: an inf kept error beside an inf noise is nan
        # in the branch it does not take
        err[active] = onp.where(more, err[active] + (implied - noise[active]), err[active])
    noise[active] = onp.where(more, implied, noise[active])
