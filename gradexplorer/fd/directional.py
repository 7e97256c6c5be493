"""Directional derivatives by finite differences, with error estimates that
are honest: adaptive steps, measured noise, and "unresolvable" when the
numbers cannot be trusted.

For each direction the chosen scheme (:mod:`gradexplorer.schemes`) is
evaluated at a base step. An entry whose samples are consistent with a
smooth function and whose truncation error does not dominate its noise is
settled at once. Otherwise the step shrinks (8x per level) until two
consistent levels agree; an entry dominated by noise and known only poorly
tries larger steps. Entries that never settle get an infinite error and a
reason: they are *unresolvable*, neither right nor wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as onp

from .entry_state import EntryNoise, Sides, kinked
from .evaluation import Crossing
from .noise import QUANTUM_STD, NoiseModel
from .quantum import direction_quantum
from .reasons import Unresolvable
from .sampling import SHRINK, Sampler, exact_steps, snap_directions
from .schemes import (
    MINUS_OFFSETS,
    PLUS_OFFSETS,
    SCHEMES,
    combine,
    one_sided,
    pooled,
    stencil_residual,
)

__all__ = [
    "Directional", "directional_derivatives", "exact_steps", "REASONS", "resolution_floor",
    "Unresolvable", "DEEP_SHRINK",
]  # fmt: skip

#: Why an entry is unresolvable, in words, by code (see :class:`Unresolvable`).
REASONS = {int(code): code.text for code in Unresolvable}

#: An entry's truncation error may exceed its noise error this much and still be settled.
BALANCE = 4.0
#: Stencil residuals below this many ulps of f count as rounding, never as structure.
SMOOTH_ULPS = 1e3
#: Noise above this fraction of f itself, at every probed scale, leaves nothing to resolve.
HOPELESS = 1e-3
#: Below this relative accuracy an entry dominated by noise tries larger steps
#: (or below this many ulps of its direction's precision, for float32 and below).
POOR = 1e-6
POOR_ULPS = 1e3
#: Shrink levels allowed where f looked smooth only at the finest noise probe
#: (an oscillation far faster than the step: 8**8 is about that probe's scale, and one
#: level more).
DEEP_SHRINK = 9


@dataclass
class Directional:
    """Estimates of ``J @ d_k`` for k directions: ``(k, m)`` arrays."""

    est: onp.ndarray
    err: onp.ndarray
    reason: onp.ndarray
    noise_bound: onp.ndarray  # the noise part of err
    steps: onp.ndarray  # the last step used per direction
    nfev: int
    vectors: onp.ndarray | None = None  # the directions as used (snapped to the grid)
    #: where f is not differentiable at the point (reason KINK): its right and left
    #: derivatives along each direction and their errors (NaN elsewhere)
    right: onp.ndarray | None = None
    left: onp.ndarray | None = None
    side_err: onp.ndarray | None = None
    #: per entry: the quantum of the staircase f's output moves on along the
    #: direction (0 where it moves smoothly)
    quantum: onp.ndarray | None = None


def directional_derivatives(
    evaluate: Callable[[onp.ndarray], onp.ndarray],
    x0: onp.ndarray,
    y0: onp.ndarray,
    noise: NoiseModel | onp.ndarray,
    steps: onp.ndarray,
    *,
    columns: onp.ndarray | None = None,
    vectors: onp.ndarray | None = None,
    method: str = "richardson",
    adapt: bool = True,
    max_shrink: int = 5,
    max_grow: int = 2,
    chunk: int | None = None,
    spacing: onp.ndarray | None = None,
    balance: float | None = None,
    coord_eps: onp.ndarray | None = None,
    grow_to: onp.ndarray | None = None,
    out_eps: onp.ndarray | float | None = None,
) -> Directional:
    """Estimate ``J @ d`` for each direction, with per-entry error estimates.

    Parameters
    ----------
    evaluate : callable
        Points ``(p, N)`` to values ``(p, m)``.
    x0, y0 : ndarray
        The point and f's value there.
    noise : NoiseModel or ndarray
        f's noise per output (:func:`gradexplorer.noise.probe_noise`), or a
        plain standard deviation per output.
    steps : ndarray
        Base step per direction (already exact for coordinate directions).
    columns : int ndarray, optional
        Coordinate directions ``e_j`` (Jacobian columns).
    vectors : ndarray, optional
        Arbitrary directions ``(k, N)`` instead.
    method : str
        A key of :data:`gradexplorer.schemes.SCHEMES`.
    adapt : bool
        Shrink/grow steps until estimates settle (Richardson only).
    spacing : ndarray, optional
        Per-coordinate ulps: coordinate steps stay exact as they shrink or grow.
    balance : float, optional
        How far truncation may exceed noise in a settled entry (default
        :data:`BALANCE`); ``inf`` settles any consistent estimate at once,
        honest but not as sharp (for tests that only steer a search).
    grow_to : ndarray, optional
        Per direction, the largest step worth trying where an entry is known
        only to its noise (a step made tiny by a tiny coordinate, in an array
        whose other elements show f's real scale).
    coord_eps : ndarray, optional
        The precision of each input coordinate: an entry's noise floor is the
        rounding of the lower of its output's and its direction's precision
        (a float32 input judged in float32 beside a float64 one).
    out_eps : float or ndarray, optional
        The precision of each output: given, a coarse grid the stencil's samples
        lie on (a rounding staircase) raises that output's rounding floor.

    Where the samples show f not differentiable at the point (right and left
    derivatives that differ, :func:`~gradexplorer.fd.schemes.one_sided`), the
    entry's reason is :attr:`Unresolvable.KINK`: its estimate is the two
    sides' mean, its error half their gap (so the interval holds both), and
    ``right``, ``left`` give them.
    """
    scheme = SCHEMES[method]
    offsets = onp.array(scheme.offsets)
    if vectors is not None and spacing is not None:
        vectors = snap_directions(vectors, onp.asarray(steps, dtype=float), spacing, max_shrink)
    k = columns.size if columns is not None else vectors.shape[0]
    m = y0.size
    if not isinstance(noise, NoiseModel):
        sig = onp.where(onp.isfinite(noise), noise, 0.0)
        noise = NoiseModel(sig, sig, onp.zeros(m), onp.abs(y0))
    if chunk is None:
        chunk = max(1, int(2**24 // max(1, x0.size * offsets.size * 8)))
    sample = Sampler(evaluate, x0, columns, vectors, chunk)
    ev, xp = sample.ev, sample.ev.xp
    dev = Crossing(ev)
    y0_x = dev.put(y0)
    h = onp.asarray(steps, dtype=float).copy()
    all_idx = onp.arange(k)
    richardson = method == "richardson"
    dir_eps = _direction_eps(coord_eps, columns, vectors, k)
    F0 = sample(all_idx, h, offsets)
    if richardson and adapt and noise.structured.any():
        # shrink one level past the scale where f's probes calmed down (a structure at
        # that scale is only partly resolved there); the finest probe's scale is deeper
        max_shrink = max(max_shrink, DEEP_SHRINK if noise.max_depth >= 2 else max_shrink + 1)
    nm = EntryNoise(noise, dir_eps, richardson and adapt)
    nm.include_batch_spread(ev.batch_spread)
    if out_eps is not None:
        # the stencil spans more of f than the noise probes: where its samples along
        # a direction lie on a coarse grid, that grid is the entry's rounding floor
        q = dev.get(direction_quantum(F0, y0_x, out_eps, xp=xp))
        nm.raise_floor(QUANTUM_STD * q)
    else:
        q = onp.zeros((k, m))
    if noise.quantum is not None:
        q = onp.fmax(q, noise.quantum[None, :])
    sides = Sides(k, m) if richardson and adapt else None

    def judged(F, hv, idx, sigma_probe, track_sides=True):
        """combine() with the stencil's own view of f: samples that a smooth
        curve through them cannot explain beyond f's probed noise (or far
        above f's precision) mean f is not smooth at this step. Computed where
        the samples are; only the per-entry results come back."""
        hx, sig_p = dev.put(hv), dev.put(sigma_probe[idx])
        if not richardson:
            return dev.fields(combine(scheme, F, y0_x, hx, sig_p, xp))
        resid = stencil_residual(F, y0_x, xp)
        limit = dev.put(onp.maximum(8 * sigma_probe[idx], SMOOTH_ULPS * nm.floor[idx]))
        smooth = ~(resid > limit)
        sigma = xp.fmax(sig_p, pooled(xp.where(smooth, resid, onp.nan), xp)[None, :])
        lvl = combine(scheme, F, y0_x, hx, sigma, xp)
        lvl.consistent = lvl.consistent & smooth
        lvl = dev.fields(lvl)
        if sides is not None and track_sides:  # a kink *at the point*: never at grown steps
            seen = dev.fields(one_sided(F, y0_x, hx, sigma, xp))
            sides.update(idx, seen, lvl.consistent)
            sides.update_edge(idx, seen, lvl.finite)
        return lvl

    structured = nm.structured
    first = judged(F0, h, all_idx, nm.level0)
    est, err = first.est.copy(), first.err.copy()
    noise_err = first.noise.copy()
    ok = first.consistent & ~structured
    balance = BALANCE if balance is None else balance
    # an entry at a kink is confirmed at a smaller step (a kink merely near the
    # point leaves the stencil as it shrinks)
    settled = ok & ((first.trunc <= balance * first.noise) | onp.isinf(balance)) & ~kinked(sides)
    has = ok.copy()  # a trustworthy (consistent) estimate exists
    nonfinite = ~first.finite
    y_bad = ~onp.isfinite(y0)
    if not adapt or not richardson:
        trusted = ok if richardson else first.finite
        return _finish(est, err, noise_err, trusted, nonfinite, y_bad, h, sample, nm, noise, sides)

    def rescale(hv, active, factor):
        hv[active] *= factor
        if columns is not None and spacing is not None:
            cols = columns[active]
            hv[active] = exact_steps(x0[cols], hv[active], spacing[cols])

    def level(active, hv, grown=False):
        # after level 0, structured entries are judged with their fine-scale noise
        F = sample(active, hv[active], offsets)
        nm.include_batch_spread(ev.batch_spread)
        return judged(F, hv[active], active, nm.later, track_sides=not grown)

    # --- shrink where an entry is inconsistent or truncation-dominated
    hs = h.copy()
    for _ in range(max_shrink):
        active = onp.flatnonzero(~onp.all(settled | y_bad[None, :], axis=1))
        if active.size == 0:
            break
        rescale(hs, active, 1 / SHRINK)
        _merge(level(active, hs), active, est, err, noise_err, has, settled, nonfinite)
        settled[active] |= sides.confirmed[active]
    # --- grow where an entry is settled on noise alone but poorly known
    hg = h.copy()
    # f exactly flat at every step so far (each sample equals f(x)): a derivative of
    # 0, or a stair of a rounding staircase wider than the steps; a larger step tells
    flat = dev.get(xp.all(F0 == y0_x[None, None, :], axis=1)) & (est == 0)
    stair = onp.zeros(est.shape, bool)
    limit = onp.zeros(k) if grow_to is None else onp.asarray(grow_to, dtype=float)
    # an estimate that only steers a search (balance=inf) is not refined further
    for _ in range(0 if onp.isinf(balance) else max_grow + 1):
        scale = onp.max(onp.abs(onp.where(has, est, 0.0)), axis=1, initial=0.0)
        # "poorly known" relative to what the direction's precision can give at best
        poor_rel = onp.maximum(POOR, POOR_ULPS * dir_eps)[:, None]
        poor = has & (err > poor_rel * onp.maximum(onp.abs(est), scale[:, None]))
        noisy = first.noise >= first.trunc
        # a step far below what the array's scale allows: its noise error can fall 8x
        room = (hg * SHRINK <= limit)[:, None]
        grow = (poor | room) & noisy & settled & ~structured & ~sides.kink
        active = onp.flatnonzero(onp.any(grow, axis=1))
        if active.size == 0:
            break
        rescale(hg, active, SHRINK)
        F = sample(active, hg[active], offsets)
        nm.include_batch_spread(ev.batch_spread)
        lvl = judged(F, hg[active], active, nm.later, track_sides=False)
        better = lvl.consistent & (lvl.err < err[active]) & (lvl.trunc <= BALANCE * lvl.noise)
        better &= ~sides.kink[active]
        gap = onp.abs(lvl.est - est[active])
        agree = gap <= lvl.err + err[active]
        take = better & agree
        # flat at small steps, moving on both sides at a larger one, and no trustworthy
        # estimate there: the zero was a stair of a staircase, not the derivative (a
        # plateau ending on one side, a relu's dead zone or a sign, moves on one side)
        moves = [
            dev.get(xp.any(F[:, list(side)] != y0_x[None, None, :], axis=1))
            for side in (PLUS_OFFSETS, MINUS_OFFSETS)
        ]
        moved = moves[0] | moves[1]
        # (a trustworthy estimate at a still larger step settles it after all)
        stair[active] = (stair[active] | (flat[active] & moves[0] & moves[1])) & ~take
        flat[active] &= ~moved
        sub_est, sub_err = est[active], err[active]
        est[active] = onp.where(take, lvl.est, sub_est)
        err[active] = onp.where(take, lvl.err, sub_err)
        noise_err[active] = onp.where(take, lvl.noise, noise_err[active])
        # a consistent larger step that disagrees shows the old error was too small
        err[active] = onp.where(better & ~agree, onp.maximum(sub_err, gap), err[active])
    err = onp.where(stair, onp.inf, err)
    out = _finish(est, err, noise_err, has, nonfinite, y_bad, hs, sample, nm, noise, sides)
    out.reason[stair & onp.isinf(out.err)] = Unresolvable.STAIRCASE
    out.quantum = q
    return out


def _direction_eps(coord_eps, columns, vectors, k) -> onp.ndarray:
    if coord_eps is None:
        return onp.zeros(k)
    coord_eps = onp.asarray(coord_eps, dtype=float)
    if columns is not None:
        return coord_eps[columns]
    moving = vectors != 0
    return onp.max(onp.where(moving, coord_eps[None, :], 0.0), axis=1, initial=0.0)


def _merge(lvl, active, est, err, noise, has, settled, nonfinite) -> None:
    """Fold one smaller-step level into the running estimates (in place)."""
    prev_est, prev_err, prev_has = est[active], err[active], has[active]
    gap = onp.abs(lvl.est - prev_est)
    agree = prev_has & lvl.consistent & (gap <= lvl.err + prev_err)
    # a consistent new level replaces an estimate it contradicts or improves on
    take = lvl.consistent & (~prev_has | ~agree | (lvl.err < prev_err))
    take &= ~settled[active]
    new_est = onp.where(take, lvl.est, prev_est)
    new_err = onp.where(take, lvl.err, prev_err)
    # two consistent levels that disagree: the kept one is no surer than their gap
    clash = prev_has & lvl.consistent & ~agree & ~settled[active]
    new_err = onp.where(clash, onp.maximum(new_err, gap), new_err)
    est[active], err[active] = new_est, new_err
    noise[active] = onp.where(take, lvl.noise, noise[active])
    has[active] = prev_has | lvl.consistent
    # settled once two consistent levels agree (a first consistent level after
    # inconsistent ones needs a second to confirm it)
    settled[active] |= agree
    nonfinite[active] &= ~lvl.finite


def resolution_floor(est: onp.ndarray, err: onp.ndarray) -> onp.ndarray:
    """Errors no smaller than the float64 format can resolve (infinite ones stay).

    An estimate is a float64 number, so it is known to no better than its own
    rounding, half an ulp: ``eps/2·|est|``. And below the smallest normal float
    (``tiny``, 2.2e-308) numbers lose significant bits and differences become
    steps of the subnormal grid, so an error computed there (``6.7e-320``) is
    not a measurement but round-off of round-off: ``tiny`` is the floor. Both
    floors are far below any allowance that matters (the checker adds 256 ulps
    of the value), so no verdict moves except entries made of subnormal dust.
    """
    with onp.errstate(invalid="ignore", over="ignore"):
        floor = onp.maximum(0.5 * onp.finfo(float).eps * onp.abs(est), onp.finfo(float).tiny)
    return onp.where(onp.isnan(floor), err, onp.fmax(err, floor))


def _finish(est, err, noise_err, has, nonfinite, y_bad, h, sample, nm, noise, sides) -> Directional:
    err = resolution_floor(est, err + nm.rel * onp.abs(est))
    reason = onp.zeros(est.shape, onp.int8)
    # noise comparable to f itself leaves nothing to resolve — unless f is round-off
    # dust around zero (an imaginary part that is 0 in exact arithmetic): there the
    # estimate still bounds the derivative far below the Jacobian's scale
    with onp.errstate(invalid="ignore"):
        calm = onp.isfinite(err) & onp.isfinite(est) & has & ~(nm.rel > HOPELESS)
        scale = float(onp.max(onp.abs(est[calm]), initial=0.0))
    hopeless = (nm.rel > HOPELESS) & ~(err <= HOPELESS * scale)
    reason[hopeless] = Unresolvable.ERRATIC
    err = onp.where(hopeless, onp.inf, err)
    unresolved = ~has & ~hopeless
    reason[unresolved] = onp.where(
        nonfinite[unresolved], Unresolvable.NOT_FINITE_NEARBY, Unresolvable.NEVER_SETTLED
    )
    err = onp.where(unresolved, onp.inf, err)
    right = left = side_err = None
    if sides is not None and sides.kink.any():
        kink = sides.kink & sides.confirmed & ~hopeless  # seen at two step levels alike
        right, left, side_err = sides.right, sides.left, sides.err
        with onp.errstate(invalid="ignore"):
            est = onp.where(kink, 0.5 * (right + left), est)
            err = onp.where(kink, 0.5 * onp.abs(right - left) + side_err, err)
        reason[kink] = Unresolvable.KINK
    if sides is not None:
        # at a domain's edge (f not finite, or raising, on one side of x): one-sided
        edge = (reason == Unresolvable.NOT_FINITE_NEARBY) & onp.isfinite(sides.edge_err)
        est = onp.where(edge, sides.edge_est, est)
        err = onp.where(edge, sides.edge_err, err)
        reason[edge] = Unresolvable.RESOLVED
    reason[:, y_bad] = Unresolvable.NOT_FINITE_AT_POINT
    err = onp.where(y_bad[None, :], onp.inf, err)
    return Directional(
        est,
        err,
        reason,
        noise_err,
        h,
        sample.nfev,
        sample.vectors,
        right,
        left,
        side_err,
        noise.quantum,
    )
