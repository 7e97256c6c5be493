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

from .noise import NoiseModel
from .schemes import SCHEMES, combine, pooled, stencil_residual

__all__ = [
    "Directional", "directional_derivatives", "exact_steps", "REASONS", "resolution_floor",
]  # fmt: skip

#: Why an entry is unresolvable (codes in ``Directional.reason``).
REASONS = {
    0: "",
    1: "f is not finite at the point",
    2: "f is not finite (overflow or NaN) within the smallest step",
    3: (
        "finite differences never settled: a kink or jump within the step, an oscillation "
        "faster than the step, or f's own noise"
    ),
    4: "f is too uneven here for finite differences to pin this entry down",
    5: (
        "f varies erratically at every scale probed (an oscillation far faster than any "
        "step, or noise comparable to f itself): no finite difference resolves it"
    ),
}

SHRINK = 8.0
#: An entry's truncation error may exceed its noise error this much and still be settled.
BALANCE = 4.0
#: Stencil residuals below this many ulps of f count as rounding, never as structure.
SMOOTH_ULPS = 1e3
#: Noise above this fraction of f itself, at every probed scale, leaves nothing to resolve.
HOPELESS = 1e-3
#: Below this relative accuracy an entry dominated by noise tries larger steps.
POOR = 1e-6


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


def snap_directions(vectors, h, spacing, levels) -> onp.ndarray:
    """Directions whose every stencil point, at every shrink level, lands exactly
    on each coordinate's grid: each component of ``h·d`` becomes a multiple of
    ``40·8**levels`` ulps (a rounded point would add the input's own rounding
    to f as noise the estimates do not expect)."""
    q = 40.0 * SHRINK**levels * spacing[None, :]
    delta = h[:, None] * vectors
    with onp.errstate(invalid="ignore", over="ignore"):
        n = onp.round(onp.abs(delta) / q)
        snapped = onp.sign(delta) * onp.maximum(n, 1.0) * q
    snapped = onp.where((delta != 0) & onp.isfinite(snapped), snapped, delta)
    return snapped / h[:, None]


def exact_steps(x0: onp.ndarray, h: onp.ndarray, spacing: onp.ndarray) -> onp.ndarray:
    """Round steps to multiples of 40 ulps of each coordinate, so that every
    offset of every scheme (h, h/2, 0.6h, 0.3h, 2h) lands exactly on a
    representable number of that coordinate's precision."""
    q = 40.0 * spacing
    with onp.errstate(invalid="ignore", over="ignore"):
        n = onp.maximum(1.0, onp.round(h / q))
        out = n * q
    return onp.where(onp.isfinite(out) & (out > 0), out, h)


class _Sampler:
    """Evaluates f at the stencil points of a set of directions."""

    def __init__(self, evaluate, x0, columns, vectors, chunk):
        self.evaluate, self.x0 = evaluate, x0
        self.columns, self.vectors = columns, vectors
        self.chunk = chunk
        self.nfev = 0

    def __call__(self, idx: onp.ndarray, h: onp.ndarray, offsets: onp.ndarray) -> onp.ndarray:
        """Samples ``(len(idx), len(offsets), m)`` for directions idx at steps h."""
        n_off = offsets.size
        out = []
        for start in range(0, idx.size, self.chunk):
            part, hp = idx[start : start + self.chunk], h[start : start + self.chunk]
            delta = onp.outer(hp, offsets).ravel()  # (p * n_off,)
            pts = onp.repeat(self.x0[None], part.size * n_off, axis=0)
            if self.columns is not None:
                cols = onp.repeat(self.columns[part], n_off)
                pts[onp.arange(pts.shape[0]), cols] += delta
            else:
                dirs = onp.repeat(self.vectors[part], n_off, axis=0)
                pts += delta[:, None] * dirs
            vals = onp.asarray(self.evaluate(pts), dtype=float)
            self.nfev += pts.shape[0]
            out.append(vals.reshape(part.size, n_off, -1))
        return onp.concatenate(out, axis=0)


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
    sample = _Sampler(evaluate, x0, columns, vectors, chunk)
    h = onp.asarray(steps, dtype=float).copy()
    all_idx = onp.arange(k)
    richardson = method == "richardson"
    nm = _EntryNoise(noise, _direction_eps(coord_eps, columns, vectors, k), richardson and adapt)

    def judged(F, hv, idx, sigma_probe):
        """combine() with the stencil's own view of f: samples that a smooth
        curve through them cannot explain beyond f's probed noise (or far
        above f's precision) mean f is not smooth at this step."""
        if not richardson:
            return combine(scheme, F, y0, hv, sigma_probe[idx])
        resid = stencil_residual(F, y0)
        limit = onp.maximum(8 * sigma_probe[idx], SMOOTH_ULPS * nm.floor[idx])
        smooth = ~(resid > limit)
        sigma = onp.fmax(sigma_probe[idx], pooled(onp.where(smooth, resid, onp.nan))[None, :])
        lvl = combine(scheme, F, y0, hv, sigma)
        lvl.consistent &= smooth
        return lvl

    structured = nm.structured
    first = judged(sample(all_idx, h, offsets), h, all_idx, nm.level0)
    est, err = first.est.copy(), first.err.copy()
    noise_err = first.noise.copy()
    ok = first.consistent & ~structured
    balance = BALANCE if balance is None else balance
    settled = ok & (first.trunc <= balance * first.noise)
    has = ok.copy()  # a trustworthy (consistent) estimate exists
    nonfinite = ~first.finite
    y_bad = ~onp.isfinite(y0)
    if not adapt or not richardson:
        trusted = ok if richardson else first.finite
        return _finish(est, err, noise_err, trusted, nonfinite, y_bad, h, sample, nm)

    def rescale(hv, active, factor):
        hv[active] *= factor
        if columns is not None and spacing is not None:
            cols = columns[active]
            hv[active] = exact_steps(x0[cols], hv[active], spacing[cols])

    def level(active, hv):
        # after level 0, structured entries are judged with their fine-scale noise
        return judged(sample(active, hv[active], offsets), hv[active], active, nm.later)

    # --- shrink where an entry is inconsistent or truncation-dominated
    hs = h.copy()
    for _ in range(max_shrink):
        active = onp.flatnonzero(~onp.all(settled | y_bad[None, :], axis=1))
        if active.size == 0:
            break
        rescale(hs, active, 1 / SHRINK)
        _merge(level(active, hs), active, est, err, noise_err, has, settled, nonfinite)
    # --- grow where an entry is settled on noise alone but poorly known
    hg = h.copy()
    limit = onp.zeros(k) if grow_to is None else onp.asarray(grow_to, dtype=float)
    for _ in range(max_grow + 1):
        scale = onp.max(onp.abs(onp.where(has, est, 0.0)), axis=1, initial=0.0)
        poor = has & (err > POOR * onp.maximum(onp.abs(est), scale[:, None]))
        noisy = first.noise >= first.trunc
        # a step far below what the array's scale allows: its noise error can fall 8x
        room = (hg * SHRINK <= limit)[:, None]
        active = onp.flatnonzero(onp.any((poor | room) & noisy & settled & ~structured, axis=1))
        if active.size == 0:
            break
        rescale(hg, active, SHRINK)
        lvl = level(active, hg)
        better = lvl.consistent & (lvl.err < err[active]) & (lvl.trunc <= BALANCE * lvl.noise)
        gap = onp.abs(lvl.est - est[active])
        agree = gap <= lvl.err + err[active]
        take = better & agree
        sub_est, sub_err = est[active], err[active]
        est[active] = onp.where(take, lvl.est, sub_est)
        err[active] = onp.where(take, lvl.err, sub_err)
        noise_err[active] = onp.where(take, lvl.noise, noise_err[active])
        # a consistent larger step that disagrees shows the old error was too small
        err[active] = onp.where(better & ~agree, onp.maximum(sub_err, gap), err[active])
    return _finish(est, err, noise_err, has, nonfinite, y_bad, hs, sample, nm)


def _direction_eps(coord_eps, columns, vectors, k) -> onp.ndarray:
    if coord_eps is None:
        return onp.zeros(k)
    coord_eps = onp.asarray(coord_eps, dtype=float)
    if columns is not None:
        return coord_eps[columns]
    moving = vectors != 0
    return onp.max(onp.where(moving, coord_eps[None, :], 0.0), axis=1, initial=0.0)


class _EntryNoise:
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


def _finish(est, err, noise_err, has, nonfinite, y_bad, h, sample, nm) -> Directional:
    err = resolution_floor(est, err + nm.rel * onp.abs(est))
    reason = onp.zeros(est.shape, onp.int8)
    hopeless = nm.rel > HOPELESS
    reason[hopeless] = 5
    err = onp.where(hopeless, onp.inf, err)
    unresolved = ~has & ~hopeless
    reason[unresolved] = onp.where(nonfinite[unresolved], 2, 3)
    reason[:, y_bad] = 1
    err = onp.where(unresolved | y_bad[None, :], onp.inf, err)
    return Directional(est, err, reason, noise_err, h, sample.nfev, sample.vectors)
