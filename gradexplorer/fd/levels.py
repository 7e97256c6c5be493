"""The machinery of :func:`~gradexplorer.fd.directional.directional_derivatives`:
its result, and the step levels of one call, a stage per method.

A :class:`StepLevels` evaluates f at the base step, then at smaller steps (8x
per level) where an entry is inconsistent or dominated by truncation, then at
larger ones where an entry is known only to its noise, and turns what it has
into a :class:`Directional`: estimates, errors, and a reason per entry that
could not be resolved.
"""

from __future__ import annotations

import numpy as onp

from .directional_result import HOPELESS, Directional, finish, resolution_floor
from .entry_state import EntryNoise, Sides, kinked
from .evaluation import Crossing
from .fusing import fusable
from .merging import merge_level
from .noise import QUANTUM_STD, NoiseModel
from .quantum import direction_quantum
from .reasons import Unresolvable
from .sampling import SHRINK, Sampler, exact_steps, snap_directions
from .schemes import (
    MINUS_OFFSETS,
    MODEL_SLACK,
    PLUS_OFFSETS,
    SCHEMES,
    combine,
    one_sided,
    pooled,
    stencil_residual,
)

__all__ = [
    "Directional", "StepLevels", "resolution_floor", "BALANCE", "DEEP_SHRINK", "SMOOTH_ULPS",
    "HOPELESS", "POOR", "POOR_ULPS",
]  # fmt: skip

#: An entry's truncation error may exceed its noise error this much and still be settled.
BALANCE = 4.0
#: Stencil residuals below this many ulps of f count as rounding, never as structure.
SMOOTH_ULPS = 1e3
#: Below this relative accuracy an entry dominated by noise tries larger steps
#: (or below this many ulps of its direction's precision, for float32 and below).
POOR = 1e-6
POOR_ULPS = 1e3
#: A smaller step whose truncation error is this many times its noise error sees f rough.
ROUGH = 8.0
#: How much smaller each level's coordinate step is: not a power of two. The offsets are
#: multiples of h/10, so an oscillation far faster than the step can alias onto a slower,
#: smooth-looking one at a level (for ~1 level in 20); with steps 8x apart the next level
#: aliases onto the *same* slow one for 1 in 8 of those, and the two agree. Directions
#: (vectors snapped to their grid for 8x levels) keep 8.
COLUMN_SHRINK = 7.93
#: Shrink levels allowed where f looked smooth only at the finest noise probe
#: (an oscillation far faster than the step: 8**8 is about that probe's scale, and one
#: level more).
DEEP_SHRINK = 9


class StepLevels:
    """One call of :func:`~gradexplorer.fd.directional.directional_derivatives`, a
    stage per method: the base level, smaller steps where entries do not settle,
    larger ones where they are known only to their noise, and the result. Holds
    the running estimates per entry (``est``, ``err``, ``noise_err``), which of
    them are trustworthy (``has``) and settled, and the step levels."""

    def __init__(
        self, evaluate, x0, y0, noise, steps, *, columns, vectors, method, adapt, max_shrink,
        chunk, spacing, coord_eps, out_eps,
    ):  # fmt: skip
        self.scheme = SCHEMES[method]
        self.offsets = onp.array(self.scheme.offsets)
        if vectors is not None and spacing is not None:
            vectors = snap_directions(
                vectors, onp.asarray(steps, dtype=float), spacing, max_shrink, x0
            )
        self.k = k = columns.size if columns is not None else vectors.shape[0]
        if not isinstance(noise, NoiseModel):
            sig = onp.where(onp.isfinite(noise), noise, 0.0)
            noise = NoiseModel(sig, sig, onp.zeros(y0.size), onp.abs(y0))
        if chunk is None:
            chunk = max(1, int(2**24 // max(1, x0.size * self.offsets.size * 8)))
        self.sample = Sampler(evaluate, x0, columns, vectors, chunk)
        self.ev, self.xp = self.sample.ev, self.sample.ev.xp
        self.dev = Crossing(self.ev)
        self.x0, self.y0, self.y0_x = x0, y0, self.dev.put(y0)
        self.columns, self.spacing, self.noise = columns, spacing, noise
        self.h = onp.asarray(steps, dtype=float).copy()
        self.richardson = method == "richardson"
        self.adaptive = self.richardson and adapt
        self.dir_eps = _direction_eps(coord_eps, columns, vectors, k)
        self.F0 = self.sample(onp.arange(k), self.h, self.offsets)
        if self.adaptive and noise.structured.any():
            # shrink one level past the scale where f's probes calmed down (a structure at
            # that scale is only partly resolved there); the finest probe's scale is deeper
            max_shrink = max(max_shrink, DEEP_SHRINK if noise.max_depth >= 2 else max_shrink + 1)
        self.max_shrink = max_shrink
        self.nm = EntryNoise(noise, self.dir_eps, self.adaptive)
        self.nm.include_batch_spread(self.ev.batch_spread)
        self.q = self._quantum(out_eps)
        self.sides = Sides(k, y0.size) if self.adaptive else None

    def _quantum(self, out_eps) -> onp.ndarray:
        """Per entry, the staircase f's output moves on along the direction."""
        probed = None if self.noise.quantum is None else self.noise.quantum[None, :]
        if out_eps is not None:
            # the stencil spans more of f than the noise probes: where its samples along
            # a direction lie on a coarse grid, that grid is the entry's rounding floor
            q = self.dev.get(direction_quantum(self.F0, self.y0_x, out_eps, xp=self.xp))
            if probed is not None:
                # but a grid the probes' random spacings saw finer is the output's own: the
                # stencil's steps, whole multiples of 40 ulps, put a linear f's samples on a
                # grid 4-8x coarser (x itself, on float32's grid, read as moving by 8 ulps)
                q = onp.where(probed > 0, onp.fmin(q, probed), q)
            self.nm.raise_floor(QUANTUM_STD * q)
        else:
            q = onp.zeros((self.k, self.y0.size))
        if probed is not None:
            q = onp.fmax(q, probed)
        return q

    def judged(self, F, hv, idx, sigma_probe, track_sides=True, own=False):
        """combine() with the stencil's own view of f: samples that a smooth
        curve through them cannot explain beyond f's probed noise (or far
        above f's precision) mean f is not smooth at this step. With ``own``
        (steps grown past where f's noise was probed), each entry's noise is at
        least what its own stencil shows. Computed where the samples are; only
        the per-entry results come back."""
        dev, xp, y0_x = self.dev, self.xp, self.y0_x
        hx, sig_p = dev.put(hv), dev.put(sigma_probe[idx])
        if not self.richardson:
            return dev.fields(combine(self.scheme, F, y0_x, hx, sig_p, xp))
        resid = stencil_residual(F, y0_x, xp)
        # (an output on a staircase rounds to its stairs, not to many ulps of its own: a
        # residual of 1000 stairs is structure, sin's across a step of 1.2 periods)
        ulps = onp.where(self.q[idx] > 0, 0.0, SMOOTH_ULPS * self.nm.floor[idx])
        limit = dev.put(onp.maximum(8 * sigma_probe[idx], ulps))
        smooth = ~(resid > limit)
        sigma = xp.fmax(sig_p, pooled(xp.where(smooth, resid, onp.nan), xp)[None, :])
        if own:
            # f's rounding at samples a grown step away can exceed what the probes saw at
            # x (float32 inside f: a softmax's entry 2.4x larger 25% of x away, its
            # rounding too); pooled over directions, one input's own rise is diluted
            sigma = xp.fmax(sigma, xp.where(smooth & xp.isfinite(resid), resid, 0.0))
            sigma = xp.fmax(sigma, self._far_floor(F, idx))
        lvl = combine(self.scheme, F, y0_x, hx, sigma, xp)
        lvl.consistent = lvl.consistent & smooth
        lvl = dev.fields(lvl)
        if self.sides is not None and track_sides:  # a kink *at the point*: never at grown steps
            seen = dev.fields(one_sided(F, y0_x, hx, sigma, xp))
            self.sides.update(idx, seen, lvl.consistent)
            self.sides.update_edge(idx, seen, lvl.finite)
        return lvl

    def _far_floor(self, F, idx) -> onp.ndarray:
        """The rounding floor at samples a grown step away: as large, relative to
        their size, as around the point (x^3 - x in float32 is 11 at 1.6 from x =
        -0.8, where it is 0.29: its rounding there is 40x what the probes saw)."""
        with onp.errstate(all="ignore"):
            rel = self.nm.floor[idx] / onp.maximum(self.noise.scale, onp.finfo(float).tiny)
        rel = self.dev.put(onp.where(onp.isfinite(rel), rel, 0.0))
        return rel * _largest(F, self.xp)  # where the samples are

    def first_level(self, balance: float) -> None:
        """The base step's estimates; settled where consistent and (unless balance is
        inf) not dominated by truncation."""
        self.balance = balance
        self.first = first = self.judged(self.F0, self.h, onp.arange(self.k), self.nm.level0)
        self.est, self.err = first.est.copy(), first.err.copy()
        self.noise_err = first.noise.copy()
        self.kept_h = onp.broadcast_to(self.h[:, None], self.est.shape).copy()
        self.ok = first.consistent & ~self.nm.structured
        # an entry at a kink is confirmed at a smaller step (a kink merely near the
        # point leaves the stencil as it shrinks)
        good = (first.trunc <= balance * first.noise) | onp.isinf(balance)
        self.settled = self.ok & good & ~kinked(self.sides)
        self.has = self.ok.copy()  # a trustworthy (consistent) estimate exists
        #: the kept estimate is unconfirmed and contradicted: a smaller step found f rough
        #: (and none since found it smooth), or another consistent level disagreed with it
        self.refuted = onp.zeros(self.est.shape, bool)
        self.nonfinite = ~first.finite
        self.y_bad = ~onp.isfinite(self.y0)

    def unrefined(self) -> Directional:
        """The result of a scheme that does not adapt its steps."""
        trusted = self.ok if self.richardson else self.first.finite
        return self._finish(self.err, trusted, self.h)

    def _rescale(self, hv, active, factor) -> None:
        hv[active] *= factor
        if self.columns is not None and self.spacing is not None:
            cols = self.columns[active]
            hv[active] = exact_steps(self.x0[cols], hv[active], self.spacing[cols])

    def _level(self, active, hv, track_sides=True, own=False):
        """The samples at steps hv for the active directions, judged; after level 0,
        structured entries are judged with their fine-scale noise."""
        F = self.sample(active, hv[active], self.offsets)
        self.nm.include_batch_spread(self.ev.batch_spread)
        return F, self.judged(F, hv[active], active, self.nm.later, track_sides, own)

    def shrink(self) -> None:
        """Smaller steps (8x per level) where an entry is inconsistent or
        truncation-dominated, until two consistent levels agree."""
        self.hs = hs = self.h.copy()
        for _ in range(self.max_shrink):
            active = onp.flatnonzero(~onp.all(self.settled | self.y_bad[None, :], axis=1))
            if active.size == 0:
                break
            self._shrunk(hs, active)
        # a first consistent level after inconsistent ones, at the last step tried, is
        # confirmed by one more (an oscillation's samples can look smooth at one level)
        unconfirmed = self.has & ~self.settled & ~self.y_bad[None, :]
        active = onp.flatnonzero(onp.any(unconfirmed, axis=1))
        if active.size:
            self._shrunk(hs, active, confirming=True)

    def _shrunk(self, hs, active, confirming: bool = False) -> None:
        """One smaller step level for the active directions, merged. A level that only
        confirms (past the last) refutes in the leading digit alone: there, at the
        deepest steps, rounding the noise model underrates can pass for truncation."""
        self._rescale(hs, active, 1 / (SHRINK if self.columns is None else COLUMN_SHRINK))
        _, lvl = self._level(active, hs)
        was_refuted = self.refuted[active]
        # a smaller step, dominated by truncation, whose estimate differs from the kept one
        # beyond both errors, or beyond the kept error and in the leading digit (an
        # oscillation's random samples: an error as large as themselves): f is not smooth
        # at the kept step. No mere flicker of the smoothness test where noise and
        # truncation meet, or near the rounding floor, where the estimates stay close
        kept, kept_err = self.est[active], self.err[active]
        gap = onp.abs(lvl.est - kept)
        apart = gap > 0.5 * onp.abs(kept)
        if not confirming:
            apart |= gap > lvl.err + kept_err
        rough = ~lvl.consistent & (lvl.trunc > ROUGH * lvl.noise) & (gap > kept_err) & apart
        # (an estimate that replaces a refuted one stays unproven until a level agrees)
        refuted = was_refuted | (self.has[active] & rough)
        clash = merge_level(
            lvl, active, self.est, self.err, self.noise_err, self.has, self.settled,
            self.nonfinite, hs[active], self.kept_h, was_refuted,
        )  # fmt: skip
        self.settled[active] |= self.sides.confirmed[active]
        self.refuted[active] = (refuted | clash) & ~self.settled[active]

    def grow(self, grow_to, levels: int) -> None:
        """Larger steps where an entry is settled on noise alone but poorly known (or
        its step is far below what the array's scale allows)."""
        xp = self.xp
        # f exactly flat at every step so far (each sample equals f(x)): a derivative of
        # 0, or a stair of a rounding staircase wider than the steps; a larger step tells
        flat = self.dev.get(xp.all(self.F0 == self.y0_x[None, None, :], axis=1)) & (self.est == 0)
        self.stair = onp.zeros(self.est.shape, bool)
        limit = onp.zeros(self.k) if grow_to is None else onp.asarray(grow_to, dtype=float)
        hg = self.h.copy()
        self._curv = self._curv_h = None  # f'' per entry at the last step seen (lazily)
        for _ in range(levels):
            active = self._worth_growing(hg, limit)
            if active.size == 0:
                break
            self._rescale(hg, active, SHRINK)
            self._grown(active, hg, flat)

    def _worth_growing(self, hg, limit) -> onp.ndarray:
        est, err, has, first = self.est, self.err, self.has, self.first
        scale = onp.max(onp.abs(onp.where(has, est, 0.0)), axis=1, initial=0.0)
        # "poorly known" relative to what the direction's precision can give at best
        poor_rel = onp.maximum(POOR, POOR_ULPS * self.dir_eps)[:, None]
        poor = has & (err > poor_rel * onp.maximum(onp.abs(est), scale[:, None]))
        noisy = first.noise >= first.trunc
        # a step far below what the array's scale allows: its noise error can fall 8x
        room = (hg * SHRINK <= limit)[:, None]
        grow = (poor | room) & noisy & self.settled & ~self.nm.structured & ~self.sides.kink
        return onp.flatnonzero(onp.any(grow, axis=1))

    def _grown(self, active, hg, flat) -> None:
        """Fold one larger-step level into the estimates (in place): taken where it is
        consistent, sharper and agrees; a flat entry that moves on both sides is a stair."""
        est, err, kink = self.est, self.err, self.sides.kink
        F, lvl = self._level(active, hg, track_sides=False, own=True)
        better = lvl.consistent & (lvl.err < err[active]) & (lvl.trunc <= BALANCE * lvl.noise)
        better &= self._same_curvature(F, active, hg)
        # at a kink, or where f has structure finer than the step (stairs, a fast
        # oscillation), a larger step sees across the structure, not the derivative
        better &= ~kink[active] & ~self.nm.structured[active]
        gap = onp.abs(lvl.est - est[active])
        agree = gap <= lvl.err + err[active]
        take = better & agree
        # flat at small steps, moving on both sides at a larger one, and no trustworthy
        # estimate there: the zero was a stair of a staircase, not the derivative (a
        # plateau ending on one side, a relu's dead zone or a sign, moves on one side)
        moves = [
            self.dev.get(self.xp.any(F[:, list(side)] != self.y0_x[None, None, :], axis=1))
            for side in (PLUS_OFFSETS, MINUS_OFFSETS)
        ]
        # (a trustworthy estimate at a still larger step settles it after all)
        stair = self.stair
        stair[active] = (stair[active] | (flat[active] & moves[0] & moves[1])) & ~take
        flat[active] &= ~(moves[0] | moves[1])
        sub_est, sub_err = est[active], err[active]
        est[active] = onp.where(take, lvl.est, sub_est)
        err[active] = onp.where(take, lvl.err, sub_err)
        self.noise_err[active] = onp.where(take, lvl.noise, self.noise_err[active])
        self.kept_h[active] = onp.where(take, hg[active][:, None], self.kept_h[active])
        # a consistent larger step that disagrees shows the old error was too small
        err[active] = onp.where(better & ~agree, onp.maximum(sub_err, gap), err[active])

    def _curvature(self, F, h) -> onp.ndarray:
        """Per entry, f'' from the samples at ±h (the stencil's first two offsets)."""
        y0 = self.y0_x[None, :]
        hk = self.dev.put(onp.asarray(h, dtype=float)[:, None])
        with self.ev.errstate():
            return self.dev.get((F[:, 0, :] + F[:, 1, :] - 2 * y0) / (hk * hk))

    def _same_curvature(self, F, active, hg) -> onp.ndarray:
        """Where a larger step sees the curvature the smaller one saw (to within noise
        and a quarter): f is one smooth curve across both. Beyond structure of f's own
        (an oscillation, sin(x) sampled 60 apart) every difference averages to ~0 and
        agrees with itself at both step families, a consistent, sharp and wrong slope;
        its curvature is then far from the one seen at the smaller step."""
        if self._curv is None:  # the base level's, made only where a step grows
            self._curv, self._curv_h = self._curvature(self.F0, self.h), self.h.copy()
        curv = self._curvature(F, hg[active])
        old, h_old = self._curv[active], self._curv_h[active]
        sigma = self.nm.level0[active]
        with onp.errstate(all="ignore"):
            noise = 3.0 * onp.sqrt(6.0) * sigma * (1 / hg[active] ** 2 + 1 / h_old**2)[:, None]
            gap = onp.abs(curv - old)
            same = gap <= noise + MODEL_SLACK * onp.maximum(onp.abs(curv), onp.abs(old))
        self._curv[active], self._curv_h[active] = curv, hg[active]
        return same | ~onp.isfinite(gap)

    def finished(self) -> Directional:
        """The result after shrinking and growing; flat stairs are unresolvable."""
        out = self._finish(onp.where(self.stair, onp.inf, self.err), self._trusted(), self.hs)
        out.reason[self.stair & onp.isinf(out.err)] = Unresolvable.STAIRCASE
        out.quantum = self.q
        return out

    def _trusted(self) -> onp.ndarray:
        """Estimates to report: consistent ones, less those no other level confirmed
        where a smaller step found f rough or another consistent level disagreed in the
        leading digit (and no staircase explains it). The offsets are multiples of h/10,
        so the samples of an oscillation far faster than the step lie on a slower
        sinusoid, smooth at this step, for ~1 step level in 20: sin(c x) at c = 2.5e11
        gave -1479 +- 0.9 for 3.9e10 from such a level, amid inconsistent ones."""
        lone = self.refuted & ~self.settled & (self.q == 0)
        return self.has & ~lone

    def _finish(self, err, has, h) -> Directional:
        return finish(
            self.est, err, self.noise_err, has, self.nonfinite, self.y_bad, h, self.sample,
            self.nm, self.noise, self.sides,
        )  # fmt: skip


@fusable()
def _largest(F, xp=onp):
    """Per direction and output, the largest finite |f| among the samples."""
    return xp.max(xp.where(xp.isfinite(F), xp.abs(F), 0.0), axis=1)


def _direction_eps(coord_eps, columns, vectors, k) -> onp.ndarray:
    if coord_eps is None:
        return onp.zeros(k)
    coord_eps = onp.asarray(coord_eps, dtype=float)
    if columns is not None:
        return coord_eps[columns]
    moving = vectors != 0
    return onp.max(onp.where(moving, coord_eps[None, :], 0.0), axis=1, initial=0.0)
