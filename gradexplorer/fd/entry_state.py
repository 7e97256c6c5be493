"""Per-entry state of the adaptive finite differences: each entry's noise model
(its rounding floor, the noise its stencil sees) and, where f has a kink at
the point, its one-sided derivatives across step levels."""

from __future__ import annotations

import numpy as onp

from .noise import NoiseModel

__all__ = ["EntryNoise", "Sides", "kinked"]


class EntryNoise:
    """The noise model per entry (direction × output): an entry's floor is the
    rounding of the lower of its output's and its input's precision."""

    def __init__(self, noise: NoiseModel, dir_eps: onp.ndarray, adaptive: bool):
        from .noise import NOISY, STRUCTURE

        scale = noise.scale[None, :]
        self.floor = onp.fmax(noise.floor[None, :], 0.3 * dir_eps[:, None] * scale)
        coarse, fine = noise.coarse[None, :], noise.fine[None, :]
        self.level0 = onp.fmax(onp.fmax(coarse, fine), self.floor)
        self.resolved = onp.fmax(fine, self.floor)
        tiny = onp.finfo(float).tiny
        noisy = coarse > NOISY * onp.maximum(self.floor, tiny)
        structured = noisy & (coarse > STRUCTURE * self.resolved)
        self.structured = structured if adaptive else onp.zeros_like(structured)
        with onp.errstate(all="ignore"):
            rel = coarse / onp.maximum(scale, tiny)
        # f's derivative is no better defined than f itself where f is noisy; where
        # f merely has structure finer than the first step, the steps shrink past it
        self.rel = onp.where(noisy & ~self.structured & onp.isfinite(rel), rel, 0.0)
        self.later = onp.where(self.structured, self.resolved, self.level0)
        self.batch_spread = None  # the batch rounding spread the floor holds already

    def include_batch_spread(self, spread: onp.ndarray | None) -> None:
        """Samples from a batch that rounds its rows by their position carry that
        spread (per output, measured by the evaluator) as noise: it floors every
        entry's noise."""
        if spread is not None and spread is not self.batch_spread:
            self.raise_floor(spread[None, :])
            self.batch_spread = spread

    def raise_floor(self, floor: onp.ndarray) -> None:
        """A finer-measured rounding floor per entry (a staircase along a direction)."""
        self.floor = onp.fmax(self.floor, floor)
        self.level0 = onp.fmax(self.level0, floor)
        self.resolved = onp.fmax(self.resolved, floor)
        self.later = onp.fmax(self.later, floor)


class Sides:
    """Per entry, the one-sided derivatives where the stencil saw a kink at the
    point, kept across step levels: a kink seen at two successive levels with
    the same one-sided values is confirmed; a smaller step that finds f smooth
    clears it (the kink was near the point, not at it)."""

    def __init__(self, k: int, m: int):
        nan = onp.full((k, m), onp.nan)
        self.right, self.left, self.err = nan.copy(), nan.copy(), nan.copy()
        self.kink = onp.zeros((k, m), bool)
        self.confirmed = onp.zeros((k, m), bool)
        #: where f is not finite (or raises) on one side only: the other side's estimate
        self.edge_est, self.edge_err = nan.copy(), onp.full((k, m), onp.inf)

    def update_edge(self, idx: onp.ndarray, seen, finite: onp.ndarray) -> None:
        """Keep, where a level's samples are not all finite but one side's are, the
        sharper one-sided estimate from the finite side (a domain's edge)."""
        if seen.right_finite is None:
            return
        for side, ok, err in (
            (seen.right, seen.right_finite, seen.err_right),
            (seen.left, seen.left_finite, seen.err_left),
        ):
            take = ~finite & ok & (err < self.edge_err[idx])
            self.edge_est[idx] = onp.where(take, side, self.edge_est[idx])
            self.edge_err[idx] = onp.where(take, err, self.edge_err[idx])

    def update(self, idx: onp.ndarray, seen, consistent: onp.ndarray) -> None:
        was = self.kink[idx]
        with onp.errstate(invalid="ignore"):
            err = onp.maximum(seen.err_right, seen.err_left)
            same = (onp.abs(seen.right - self.right[idx]) <= err + self.err[idx]) & (
                onp.abs(seen.left - self.left[idx]) <= err + self.err[idx]
            )
        self.confirmed[idx] |= was & seen.kink & same
        for name, new in (("right", seen.right), ("left", seen.left), ("err", err)):
            arr = getattr(self, name)
            arr[idx] = onp.where(seen.kink, new, arr[idx])
        smooth = consistent & ~seen.kink
        self.kink[idx] = (was & ~smooth) | seen.kink


def kinked(sides: Sides | None) -> onp.ndarray | bool:
    return False if sides is None else sides.kink
