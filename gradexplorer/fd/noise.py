"""How noisy is f itself? A per-output noise level, measured (ECnoise).

Round-off in f is rarely one ulp of its output: cancellation (intermediates far
larger than the result), iterative solvers that stop at a tolerance and
adaptive ODE integrators all make f noisier than ``eps·|f|``. Finite
differences divide that noise by the step, so an error estimate that assumes
``eps·|f|`` is confidently wrong. Following Moré and Wild ("Estimating
computational noise", SIAM J. Sci. Comput. 2011), f is sampled at a few
closely spaced points along random directions; high-order differences of the
samples cancel the smooth part and leave the noise, whose standard deviation
they estimate.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> noisy = lambda X: np.sin(X) + 1e-9 * rng.standard_normal(X.shape)
>>> sigma, nfev = estimate_noise(noisy, np.array([0.3]), np.array([1e-3]), rng=0)
>>> bool(3e-10 < sigma[0] < 3e-9), nfev
(True, 16)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as onp

__all__ = ["estimate_noise", "NOISE_POINTS", "NoiseModel", "probe_noise"]

#: Samples per direction (the centre included): differences up to order 6.
NOISE_POINTS = 9
_ORDERS = range(1, 7)
_GAMMA = {k: math.factorial(k) ** 2 / math.factorial(2 * k) for k in _ORDERS}


def _sigma_from_samples(F: onp.ndarray) -> onp.ndarray:
    """Noise std per output from samples ``F`` shaped (points, m) along one line.

    For each order k the k-th differences of pure noise of std σ have variance
    ``C(2k, k)·σ²``; σ_k estimates σ from them. Low orders still carry the
    smooth part; once the differences are noise, σ_k stops falling. The
    estimate is the smallest σ_k of orders 3..6 (the noise floor they reach),
    never below the order-6 value's third (sampling spread of few points).
    """
    estimates = []
    D = F.copy()
    for k in _ORDERS:
        D = onp.diff(D, axis=0)
        estimates.append(onp.sqrt(_GAMMA[k] * onp.mean(D * D, axis=0)))
    S = onp.array(estimates)  # (orders, m)
    return onp.min(S[2:], axis=0)


def estimate_noise(
    evaluate: Callable[[onp.ndarray], onp.ndarray],
    x0: onp.ndarray,
    spacing: onp.ndarray,
    *,
    directions: int = 2,
    rng: int | onp.random.Generator | None = 0,
    y0: onp.ndarray | None = None,
    magnitude: bool = False,
) -> tuple[onp.ndarray, int]:
    """Per-output noise level σ of f near ``x0`` and the evaluations it took.

    Parameters
    ----------
    evaluate : callable
        Maps points ``(k, N)`` to values ``(k, m)``.
    x0 : ndarray
        The point ``(N,)``.
    spacing : ndarray
        Per-coordinate sample spacing ``(N,)``: small enough that f's smooth
        part is negligible in 4th–6th differences, large enough to stay clear
        of the inputs' own rounding.
    directions : int
        Random sign directions sampled; the larger estimate per output is kept.

    Returns
    -------
    (sigma, nfev)
        ``sigma[i]`` is the estimated standard deviation of output i's noise
        (NaN where samples were not finite). With ``magnitude``, a third
        result: the largest ``|f_i|`` among the samples.
    """
    gen = rng if isinstance(rng, onp.random.Generator) else onp.random.default_rng(rng)
    half = NOISE_POINTS // 2
    t = onp.arange(-half, half + 1, dtype=float)
    points, lines = [], []
    for _ in range(directions):
        p = gen.choice([-1.0, 1.0], size=x0.size) * spacing
        line = x0[None, :] + t[:, None] * p[None, :]
        lines.append(len(points))
        points.extend(line[k] for k in range(NOISE_POINTS) if k != half)
    vals = onp.asarray(evaluate(onp.asarray(points)), dtype=float)
    if y0 is None:
        y0 = onp.asarray(evaluate(x0[None]), dtype=float)[0]
    m = y0.size
    sigma = onp.zeros(m)
    per_line = NOISE_POINTS - 1
    for d in range(directions):
        block = vals[d * per_line : (d + 1) * per_line]
        F = onp.insert(block, half, y0, axis=0).reshape(NOISE_POINTS, m)
        with onp.errstate(all="ignore"):
            s = _sigma_from_samples(F)
        s = onp.where(onp.all(onp.isfinite(F), axis=0), s, onp.nan)
        sigma = onp.fmax(sigma, s) if d else s
    if magnitude:
        with onp.errstate(all="ignore"):
            mag = onp.nanmax(onp.where(onp.isfinite(vals), onp.abs(vals), onp.nan), axis=0)
        mag = onp.fmax(onp.where(onp.isfinite(mag), mag, 0.0), onp.abs(onp.nan_to_num(y0)))
        return sigma, len(points), mag
    return sigma, len(points)


#: Probe spacings relative to the FD base step: coarse (what a stencil sees)
#: and fine (what is left once the step resolves f's structure).
COARSE, FINE = 2.0**-5, 2.0**-15
#: Noise this many times the output's own rounding makes f "noisy".
NOISY = 1e3
#: Coarse noise this many times the fine noise is structure, not noise.
STRUCTURE = 64.0


@dataclass(frozen=True)
class NoiseModel:
    """f's noise per output, probed at two spacings.

    ``coarse`` is what samples a step apart see; ``fine`` what closely spaced
    samples see; ``floor`` the rounding of the output itself. Where coarse
    noise stands far above fine noise, f has *structure* finer than the step
    (an oscillation the step aliases, or a solver's jitter): steps must shrink
    until f looks smooth. Where f is noisy (far above its precision), its
    derivative is no better defined than f itself: ``rel`` (coarse noise over
    f's magnitude) joins each entry's error as a relative term.
    """

    coarse: onp.ndarray
    fine: onp.ndarray
    floor: onp.ndarray
    scale: onp.ndarray

    @property
    def level0(self) -> onp.ndarray:
        return onp.fmax(onp.fmax(self.coarse, self.fine), self.floor)

    @property
    def resolved(self) -> onp.ndarray:
        return onp.fmax(self.fine, self.floor)

    @property
    def noisy(self) -> onp.ndarray:
        return self.coarse > NOISY * onp.maximum(self.floor, onp.finfo(float).tiny)

    @property
    def structured(self) -> onp.ndarray:
        return self.noisy & (self.coarse > STRUCTURE * self.resolved)

    @property
    def rel(self) -> onp.ndarray:
        with onp.errstate(all="ignore"):
            r = self.coarse / onp.maximum(self.scale, onp.finfo(float).tiny)
        return onp.where(self.noisy & onp.isfinite(r), r, 0.0)

    @classmethod
    def quiet(cls, m: int) -> NoiseModel:
        z = onp.zeros(m)
        return cls(z, z, z, onp.ones(m))

    def take(self, idx) -> NoiseModel:
        return NoiseModel(self.coarse[idx], self.fine[idx], self.floor[idx], self.scale[idx])


def probe_noise(
    evaluate: Callable[[onp.ndarray], onp.ndarray],
    x0: onp.ndarray,
    y0: onp.ndarray,
    steps: onp.ndarray,
    spacing: onp.ndarray,
    out_eps,
    *,
    rng=0,
    directions: int = 2,
) -> tuple[NoiseModel, int]:
    """f's :class:`NoiseModel` near x0, from probes at two spacings."""
    gen = rng if isinstance(rng, onp.random.Generator) else onp.random.default_rng(rng)
    coarse, n1, mag = estimate_noise(
        evaluate,
        x0,
        onp.maximum(steps * COARSE, 64 * spacing),
        rng=gen,
        y0=y0,
        magnitude=True,
        directions=directions,
    )
    fine, n2 = estimate_noise(
        evaluate,
        x0,
        onp.maximum(steps * FINE, 64 * spacing),
        rng=gen,
        y0=y0,
        directions=directions,
    )
    # rounding scales with |f| around the point, not at it: outputs that cross
    # zero at x are not "noisy" because y(x) happens to be 0
    with onp.errstate(all="ignore"):
        floor = 0.3 * onp.asarray(out_eps, dtype=float) * mag
    # an output cannot move by less than the smallest subnormal: below that it is flat
    floor = onp.maximum(floor, onp.finfo(float).smallest_subnormal)
    coarse = onp.where(onp.isfinite(coarse), coarse, 0.0)
    fine = onp.where(onp.isfinite(fine), fine, 0.0)
    return NoiseModel(coarse, fine, floor * onp.ones_like(mag), mag), n1 + n2
