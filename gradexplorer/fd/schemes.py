"""Finite-difference stencils: where f is sampled and how the samples combine.

A scheme samples f at ``x + c·h·d`` for its offsets ``c`` and forms, from
those samples, an estimate of the directional derivative, an independent
second estimate (for the truncation error) and, for Richardson, a test that
the samples follow the smooth-function model at all.

The default, ``richardson``, uses two step families with a non-dyadic ratio:
``R_A`` extrapolates central differences at h and h/2, ``R_B`` at r·h and
r·h/2 (r = 0.6). Where f is smooth both have error O(h⁴) with a known ratio,
so their difference measures the truncation error of ``R_B``; where the
stencil straddles a kink or a jump, or the steps alias an oscillation, the
families disagree and the leading differences stop scaling like h², which
the scheme reports as *inconsistent* instead of trusting the numbers.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as onp

from .fusing import fusable

__all__ = ["Scheme", "SCHEMES", "RATIO", "combine", "one_sided", "OneSided"]

#: Second step family, as a fraction of the first (non-dyadic against 1/2).
RATIO = 0.6
#: Standard deviations of noise allowed in an estimate.
NOISE_SIGMAS = 3.0
#: Standard deviations of noise a consistency test tolerates (a clear signal only).
CONSISTENCY_SIGMAS = 5.0
#: Tolerated relative departure of the h² scaling before a stencil is distrusted.
MODEL_SLACK = 0.25


@dataclass(frozen=True)
class Scheme:
    """Offsets (multiples of h) and sample weights (each divided by h).

    ``estimate``/``alternative`` are weight vectors over the offsets;
    ``trunc_factor`` scales ``|estimate - alternative|`` into the truncation
    error of ``estimate``. Richardson adds the two leading differences
    ``lead_a``/``lead_b`` whose ratio must be ``RATIO²``.
    """

    offsets: tuple
    estimate: tuple
    alternative: tuple
    trunc_factor: float
    lead_a: tuple | None = None
    lead_b: tuple | None = None

    @property
    def n(self) -> int:
        return len(self.offsets)


def _central(s: float, n: int, pos: int) -> onp.ndarray:
    """Weights of (f(x+s h) - f(x-s h)) / (2 s h) on offsets positions pos, pos+1."""
    w = onp.zeros(n)
    w[pos], w[pos + 1] = 0.5 / s, -0.5 / s
    return w


def _richardson() -> Scheme:
    r = RATIO
    offsets = (1.0, -1.0, 0.5, -0.5, r, -r, r / 2, -r / 2)
    n = len(offsets)
    D1, D2 = _central(1.0, n, 0), _central(0.5, n, 2)
    D3, D4 = _central(r, n, 4), _central(r / 2, n, 6)
    RA = (4 * D2 - D1) / 3
    RB = (4 * D4 - D3) / 3
    # T_B = (R_A - R_B) r⁴ / (1 - r⁴) when the h⁴ term dominates; doubled for safety
    factor = 2 * r**4 / (1 - r**4)
    return Scheme(offsets, tuple(RB), tuple(RA), factor, tuple(D1 - D2), tuple(D3 - D4))


SCHEMES = {
    "richardson": _richardson(),
    "central": Scheme(
        (1.0, -1.0, 2.0, -2.0), (0.5, -0.5, 0.0, 0.0), (0.0, 0.0, 0.25, -0.25), 1 / 3
    ),
    "forward": Scheme((1.0, 2.0), (1.0, 0.0), (0.0, 0.5), 1.0),
    "backward": Scheme((-1.0, -2.0), (-1.0, 0.0), (0.0, -0.5), 1.0),
}


@dataclass
class Combined:
    """One level of estimates for k directions and m outputs."""

    est: onp.ndarray  # (k, m)
    trunc: onp.ndarray  # (k, m) truncation error
    noise: onp.ndarray  # (k, m) noise error (NOISE_SIGMAS standard deviations)
    consistent: onp.ndarray  # (k, m) the samples follow the smooth model
    finite: onp.ndarray  # (k, m) every sample finite

    @property
    def err(self) -> onp.ndarray:
        return self.trunc + self.noise


def _differences(scheme: Scheme, F, y0, h):
    """Difference quotients of the samples, each formed by one subtraction of
    nearby values (exact) before any weighting, so that combining them adds
    only a few ulps of the quotients themselves."""
    off = onp.array(scheme.offsets)
    hk = h[:, None]
    if off.size >= 4 and off[1] == -off[0]:  # central pairs (x + s h, x - s h)
        return [
            (F[:, 2 * q] - F[:, 2 * q + 1]) / (2 * off[2 * q] * hk) for q in range(off.size // 2)
        ]
    return [(F[:, q] - y0[None, :]) / (off[q] * hk) for q in range(off.size)]


@fusable("scheme")
def combine(scheme: Scheme, F, y0, h, sigma, xp=onp) -> Combined:
    """Estimates from samples ``F`` (k, n_offsets, m) at steps ``h`` (k,).

    ``sigma`` (m,) or (k, m) is f's measured noise level per output; ``y0``
    (f at the point) is a sample of the one-sided schemes. ``xp`` is the array
    namespace the samples live in (numpy, or a device's: see
    :mod:`gradexplorer.fd.evaluation`); the results are in it too.
    """
    w = onp.array(scheme.estimate)
    wa = onp.array(scheme.alternative)
    hk = h[:, None]
    one_sided = len(scheme.offsets) == 2
    sig = sigma if sigma.ndim == 2 else sigma[None, :]
    eps = float(onp.finfo(float).eps)
    with _quiet(xp):
        D = _differences(scheme, F, y0, h)
        if scheme.lead_a is not None:  # richardson: D(h), D(h/2), D(rh), D(rh/2)
            est = (4 * D[3] - D[2]) / 3
            alt = (4 * D[1] - D[0]) / 3
        else:  # central: D(h), D(2h); forward / backward: slopes over h and 2h
            est, alt = D[0], D[1]
        trunc = scheme.trunc_factor * xp.abs(est - alt)
        norm = float(onp.sqrt(w @ w + (w.sum() ** 2 if one_sided else 0.0)))
        # f's noise through the weights, plus a few ulps of forming the estimate itself
        arithmetic = 8 * eps * xp.max(xp.abs(xp.stack(D)), axis=0)
        noise = NOISE_SIGMAS * sig * norm / hk + arithmetic
        finite = xp.all(xp.isfinite(F), axis=1) & xp.isfinite(est)
        consistent = finite
        if scheme.lead_a is not None:
            da, db = D[0] - D[1], D[2] - D[3]
            la, lb = onp.array(scheme.lead_a), onp.array(scheme.lead_b)
            target = RATIO**2 * da
            lead_noise = (
                CONSISTENCY_SIGMAS * sig * float(onp.sqrt(((lb - RATIO**2 * la) ** 2).sum())) / hk
                + 2 * arithmetic
            )
            # the leading differences must scale like h² wherever they stand above noise
            consistent = consistent & (
                xp.abs(db - target) <= MODEL_SLACK * xp.abs(target) + lead_noise
            )
            # and the two families must agree once the h⁴ term is accounted for
            pair_noise = (
                CONSISTENCY_SIGMAS * sig * float(onp.sqrt(((w - wa) ** 2).sum())) / hk
                + 2 * arithmetic
            )
            gap = xp.abs(est - alt)
            consistent = consistent & (gap <= xp.abs(da) + pair_noise)
            trunc = xp.where(consistent, trunc, gap + xp.abs(da))
    trunc = xp.where(finite, trunc, onp.inf)
    return Combined(est, trunc, xp.where(finite, noise, onp.inf), consistent, finite)


def _quiet(xp):
    """numpy's floating-point warnings off (other frameworks give none)."""
    return onp.errstate(all="ignore") if xp is onp else contextlib.nullcontext()


@dataclass
class OneSided:
    """The right and left derivatives a Richardson stencil's samples give, and
    where they differ: ``kink`` marks entries where f is not differentiable at
    the point (its one-sided derivatives differ beyond their errors, at both
    step families alike)."""

    right: onp.ndarray  # (k, m)
    left: onp.ndarray
    err_right: onp.ndarray
    err_left: onp.ndarray
    kink: onp.ndarray  # (k, m) bool
    #: every sample on that side finite (at a domain's edge one side is not)
    right_finite: onp.ndarray | None = None
    left_finite: onp.ndarray | None = None


#: Rows of the Richardson stencil's samples: (+h, +h/2, +rh, +rh/2) and their mirrors.
PLUS_OFFSETS, MINUS_OFFSETS = (0, 2, 4, 6), (1, 3, 5, 7)
_PLUS, _MINUS = PLUS_OFFSETS, MINUS_OFFSETS


@fusable()
def one_sided(F, y0, h, sigma, xp=onp) -> OneSided:
    """One-sided derivatives from the samples of the Richardson stencil, no new
    evaluations: each side's slopes over c·h (c = 1, 1/2, r, r/2) are
    extrapolated once (error O(h²)) in each step family.

    Where f is smooth, right and left agree to O(h³), far inside their errors.
    At a kink or a tie *at the point* (or nearer to it than the stencil
    resolves) each side is smooth, so each side's two families agree, while
    right and left differ by the same amount at both families' steps: that
    is the test (a smooth f's right-minus-left shrinks like h³ between them).
    The central estimate there is the two sides' mean, right for neither.
    """
    r = RATIO
    sig = sigma if sigma.ndim == 2 else sigma[None, :]
    hk = h[:, None]
    eps = float(onp.finfo(float).eps)
    with _quiet(xp):
        sides = []
        for rows, sign in ((_PLUS, 1.0), (_MINUS, -1.0)):
            slope = [
                sign * (F[:, q] - y0[None, :]) / (c * hk) for q, c in zip(rows, (1, 0.5, r, r / 2))
            ]
            ext_a = 2 * slope[1] - slope[0]
            ext_b = 2 * slope[3] - slope[2]
            arithmetic = 8 * eps * xp.max(xp.abs(xp.stack(slope)), axis=0)
            # weights (4, -1, -3)/(c h) on f(x + c h/2), f(x + c h), f(x), at c = r
            noise = NOISE_SIGMAS * sig * float(onp.sqrt(26.0)) / (r * hk) + arithmetic
            trunc = 2 * r**2 / (1 - r**2) * xp.abs(ext_a - ext_b)
            sides.append((ext_b, ext_a, trunc + noise, noise))
        (rb, ra, er, nr), (lb, la, el, nl) = sides
        gap_a, gap_b = ra - la, rb - lb
        same_gap = xp.abs(gap_a - gap_b) <= MODEL_SLACK * xp.abs(gap_b) + 2 * (nr + nl)
        # each side known to within a fraction of the gap (a kink at a distance
        # from the point shows as a side whose two families disagree)
        sharp = xp.maximum(er, el) <= MODEL_SLACK * xp.abs(gap_b)
        kink = same_gap & sharp & (xp.abs(gap_b) > FD_KINK_SAFETY * (er + el)) & xp.isfinite(gap_b)
        fin_r = xp.all(xp.isfinite(F[:, list(_PLUS)]), axis=1) & xp.isfinite(rb) & xp.isfinite(er)
        fin_l = xp.all(xp.isfinite(F[:, list(_MINUS)]), axis=1) & xp.isfinite(lb) & xp.isfinite(el)
    return OneSided(rb, lb, er, el, kink, fin_r, fin_l)


#: How far beyond both one-sided errors their difference must stand to be a kink.
FD_KINK_SAFETY = 2.0


def _residual_projector(offsets) -> onp.ndarray:
    """The projector onto what a degree-6 polynomial through the samples (and
    f(x) at offset 0) cannot explain: for a smooth f only f's noise is left."""
    t = onp.concatenate([[0.0], onp.asarray(offsets, dtype=float)])
    V = onp.vander(t, 7, increasing=True)
    Q, _ = onp.linalg.qr(V)
    return onp.eye(t.size) - Q @ Q.T


_PROJECTOR = _residual_projector(SCHEMES["richardson"].offsets)


@fusable()
def stencil_residual(F, y0, xp=onp):
    """f's noise as the Richardson stencil itself sees it, per direction and output.

    Rounding errors can be correlated over short distances (a sawtooth in x),
    so closely spaced probes can underestimate what samples a step apart see.
    The residual of a degree-6 fit through the 9 stencil values (2 degrees of
    freedom) estimates the noise standard deviation; NaN where the output
    does not move along the direction at all (no noise to see).
    """
    with _quiet(xp):
        G = xp.concatenate([xp.zeros_like(F[:, :1]), F - y0[None, None, :]], axis=1)
        R = xp.einsum("ab,kbm->kam", xp.asarray(_PROJECTOR, dtype=G.dtype), G)
        s = xp.sqrt(xp.sum(R * R, axis=1) / 2)
        moved = xp.any(G != 0, axis=1) & xp.isfinite(s)
    return xp.where(moved, s, onp.nan)


@fusable()
def pooled(residual, xp=onp):
    """Root mean square over directions of :func:`stencil_residual` (0 where none)."""
    with _quiet(xp):
        ok = xp.isfinite(residual)
        count = xp.maximum(xp.sum(xp.where(ok, 1.0, 0.0), axis=0), 1.0)
        ss = xp.sum(xp.where(ok, residual**2, 0.0), axis=0) / count
    return xp.sqrt(ss)
