"""Finite-difference schemes and their error estimates.

Every method evaluates f at offsets ``x + c·h·d`` and combines the values
linearly; a second, lower-order combination of the same values estimates the
truncation error, and the weights bound the round-off error. Richardson
directions whose differences do not shrink like h² are redone with smaller
steps until two estimates agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as onp

__all__ = ["SCHEMES", "directional_derivatives", "eps_of"]


# Rounding in f itself is rarely a single ulp: allow several.
_ROUNDOFF_ULPS = 16.0


# Two estimates agree when they differ by less than this many times their errors.
FD_AGREEMENT = 4.0


@dataclass(frozen=True)
class _Scheme:
    offsets: tuple  # multiples of h at which f is evaluated (0 is the base point)
    weights: tuple  # estimate = Σ w·f(x + c h d) / h
    weights_low: tuple  # a lower-order estimate from the same values
    trunc_factor: float  # truncation error ≈ factor · |estimate - low|


def _richardson() -> _Scheme:
    D1 = onp.array([0.5, -0.5, 0, 0, 0, 0])
    D2 = onp.array([0, 0, 1.0, -1.0, 0, 0])
    D4 = onp.array([0, 0, 0, 0, 2.0, -2.0])
    R2 = (64 * D4 - 20 * D2 + D1) / 45  # two Richardson levels: error O(h^6)
    R1 = (4 * D4 - D2) / 3  # one level: error O(h^4)
    return _Scheme((1, -1, 0.5, -0.5, 0.25, -0.25), tuple(R2), tuple(R1), 1.0)


SCHEMES = {
    "forward": _Scheme((0, 1, 2), (-1.0, 1.0, 0.0), (-0.5, 0.0, 0.5), 1.0),
    "backward": _Scheme((0, -1, -2), (1.0, -1.0, 0.0), (0.5, 0.0, -0.5), 1.0),
    "central": _Scheme((1, -1, 2, -2), (0.5, -0.5, 0, 0), (0, 0, 0.25, -0.25), 1 / 3),
    "richardson": _richardson(),
}


def eps_of(dtype: Any) -> float:
    return float(onp.finfo(onp.dtype(dtype)).eps)


def directional_derivatives(
    evaluate: Callable,
    x0: onp.ndarray,
    directions: Callable[[int], onp.ndarray] | None,
    k: int,
    steps: onp.ndarray,
    method: str,
    y0: onp.ndarray,
    out_dtype: Any,
    chunk: int | None = None,
    retries: int = 6,
) -> tuple[onp.ndarray, onp.ndarray, int]:
    """Estimate ``J @ d_i`` for k directions with a method's scheme.

    ``directions(i)`` gives direction i (length N), or None for the unit
    vectors e_0..e_{k-1} (Jacobian columns); ``steps[i]`` is its step.
    Returns ``(estimates (k, m), errors (k, m), nfev)``.

    With Richardson, a direction whose differences do not shrink like h² (the
    step is too large for how fast f varies) gets a pessimistic error and is
    redone with 16x smaller steps until two successive estimates agree within
    their errors (at most ``retries`` times).
    """
    scheme = SCHEMES[method]
    offsets = onp.array(scheme.offsets, dtype=float)
    live = offsets != 0
    w, wl = onp.array(scheme.weights), onp.array(scheme.weights_low)
    m = y0.size
    est = onp.empty((k, m))
    err = onp.empty((k, m))
    eps = max(eps_of(out_dtype), eps_of(x0.dtype))
    tiny = float(onp.finfo(onp.result_type(out_dtype, onp.float16)).smallest_subnormal)
    chunk = chunk or max(1, int(2**25 // max(1, x0.size * live.sum() * 8)))
    nfev = 0
    off_model = onp.zeros((k, m), bool)
    for start in range(0, k, chunk):
        idx = range(start, min(k, start + chunk))
        cs = offsets[live]
        if directions is None:
            pts = onp.repeat(x0[None], len(idx) * cs.size, axis=0)
            cols = onp.repeat(onp.arange(start, start + len(idx)), cs.size)
            pts[onp.arange(len(pts)), cols] += (onp.tile(cs, len(idx)) * steps[cols]).astype(
                x0.dtype
            )
        else:
            pts = onp.asarray(
                [x0 + c * steps[i] * directions(i) for i in idx for c in cs], dtype=x0.dtype
            )
        vals = onp.asarray(evaluate(pts), dtype=float)
        nfev += len(pts)
        vals = vals.reshape(len(idx), int(live.sum()), m)
        full = onp.empty((len(idx), offsets.size, m))
        full[:, live] = vals
        full[:, ~live] = y0
        h = steps[list(idx)][:, None]
        e = onp.einsum("l,klm->km", w, full) / h
        low = onp.einsum("l,klm->km", wl, full) / h
        trunc = scheme.trunc_factor * onp.abs(e - low)
        # |f| + the smallest step f can take: underflowing outputs are not exact zeros
        magnitude = onp.abs(full) + tiny / eps
        roundoff = _ROUNDOFF_ULPS * eps * onp.einsum("l,klm->km", onp.abs(w), magnitude) / h
        if method == "richardson":
            penalty = _non_asymptotic_penalty(full, h, roundoff)
            trunc = onp.maximum(trunc, penalty)
            off_model[start : start + len(idx)] = penalty > 0
        est[start : start + len(idx)] = e
        err[start : start + len(idx)] = trunc + roundoff
    bad = ~onp.isfinite(est)
    err[bad] = onp.inf
    suspect = onp.any(off_model, axis=1)
    if method == "richardson" and retries > 0 and suspect.any():  # noqa: SIM102
        nfev += _refine(
            evaluate,
            x0,
            directions,
            steps,
            y0,
            out_dtype,
            est,
            err,
            retries,
            onp.flatnonzero(suspect & onp.all(onp.isfinite(est), axis=1)),
        )
    if retries < 0:  # internal: also report which directions were off the h² model
        return est, err, nfev, off_model
    return est, err, nfev


def _non_asymptotic_penalty(full, h, roundoff):
    """Where D(h)-D(h/2) is not about 4x D(h/2)-D(h/4), the h² model fails:
    return the spread of the three differences as the error instead of 0."""
    D1 = (full[:, 0] - full[:, 1]) / (2 * h)
    D2 = (full[:, 2] - full[:, 3]) / h
    D4 = 2 * (full[:, 4] - full[:, 5]) / h
    d1, d2 = D1 - D2, D2 - D4
    # only where the differences stand clearly above round-off noise can the h² model be judged
    off_model = (onp.abs(d1 - 4 * d2) > 0.25 * onp.abs(d1) + 8 * roundoff) & (
        onp.abs(d1) > 64 * roundoff
    )
    return onp.where(off_model, onp.abs(d1) + onp.abs(d2), 0.0)


def _refine(evaluate, x0, directions, steps, y0, out_dtype, est, err, retries, suspect) -> int:
    """Shrink the step for suspect directions until successive estimates agree.

    An estimate whose claimed error did not cover the change to the next,
    smaller step was unreliable: the newer one replaces it, and the change
    itself becomes part of the error until two steps agree. Entries that never
    settle get an infinite error: finite differences cannot resolve them (f is
    too ill-conditioned or oscillates too fast at this point).
    """
    nfev = 0
    pending = onp.ones((suspect.size, est.shape[1]), bool)
    h = steps.astype(float).copy()
    for _ in range(retries):
        if suspect.size == 0:
            break
        h[suspect] /= 16
        if directions is None:
            dirs = lambda t, s=suspect: onp.eye(1, x0.size, s[t], dtype=x0.dtype)[0]  # noqa: E731
        else:
            dirs = lambda t, s=suspect: directions(s[t])  # noqa: E731
        e2, r2, n, off_model = directional_derivatives(
            evaluate, x0, dirs, suspect.size, h[suspect], "richardson", y0, out_dtype, retries=-1
        )
        nfev += n
        old_e, old_r = est[suspect], err[suspect]
        gap = onp.abs(e2 - old_e)
        agree = gap <= FD_AGREEMENT * (r2 + old_r)
        take_new = ~agree | (r2 < old_r)
        est[suspect] = onp.where(take_new, e2, old_e)
        # the kept estimate is no surer than its distance to the other one
        err[suspect] = onp.where(
            agree, onp.maximum(onp.minimum(r2, old_r), gap), onp.maximum(r2, gap)
        )
        # settled: consistent with the previous step and itself on the h² model
        settled = agree & ~off_model
        keep = ~onp.all(settled, axis=1)
        suspect, pending = suspect[keep], settled[keep]
    if suspect.size:
        err[suspect] = onp.where(pending, err[suspect], onp.inf)
    return nfev
