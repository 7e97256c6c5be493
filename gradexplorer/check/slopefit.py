"""The slope across a staircase by least squares over many points, its error from the
scatter the points show.

A central difference across stairs is off by up to a stair's height over its step:
that bound holds however the stairs fall, and is what one difference can promise
(a rule off by 10% behind a cast to float16 passed 2 checks in 4 within it). Samples
a stair or more apart at positions drawn at random have rounding errors as good as
independent, each within a stair's height: a fit through many of them averages those
errors down, and the scatter of the points about the fit measures them. So the slope
is fitted through :data:`PAIRS` pairs ``f(x ± o·v)`` at jittered offsets ``o`` up to
the span, as ``b·o + c·o³`` (the odd part of f: even terms cancel in each pair, and
the cubic takes the curvature the step sees), and known to within :data:`SIGMAS`
standard errors of ``b`` (widened where several points share a stair), or the
worst case the stairs' height allows through the fit's weights, whichever is smaller,
plus the gap to a fit with a fifth-power term (the truncation the cubic leaves).

>>> import numpy as np
>>> offsets, D = np.linspace(0.01, 1, 16), None
>>> D = (np.round(np.sin(0.3 + offsets) * 512) - np.round(np.sin(0.3 - offsets) * 512)) / 1024
>>> est, err, _ = fit_slope(offsets, D[:, None], height=np.array([1 / 512]), width=1 / 512)
>>> bool(abs(est[0] - np.cos(0.3)) <= err[0] < 0.01)
True
"""

from __future__ import annotations

import numpy as onp

__all__ = ["PAIRS", "SIGMAS", "fit_slope", "jittered_offsets"]

#: Pairs of points the slope is fitted through (2 evaluations each).
PAIRS = 16
#: Standard errors of the fitted slope its error bar spans: the scatter is estimated
#: from 14 degrees of freedom (its 95% upper bound is ~1.5x the estimate), and the
#: points' rounding errors are independent only nearly (where a float16 grid coarsens
#: across the span, 4 fell short once: exp(f16(x @ W)) at x ~ 1e-3).
SIGMAS = 6.0
#: Fixed jitter within each of the PAIRS strata of the span: the points fall at no
#: lattice a staircase's stairs could keep step with, and the check is reproducible.
_JITTER = onp.random.default_rng(20261129).random(PAIRS)


def jittered_offsets(span: float) -> onp.ndarray:
    """:data:`PAIRS` offsets in (0, span], one drawn (once, fixed) in each of as many
    equal strata."""
    return span * (onp.arange(PAIRS) + _JITTER) / PAIRS


def fit_slope(
    offsets: onp.ndarray, D: onp.ndarray, *, height: onp.ndarray, width
) -> tuple[onp.ndarray, onp.ndarray, onp.ndarray]:
    """The slope per column of ``D`` (half the differences ``f(x + o) - f(x - o)`` at
    ``offsets`` o, (pairs, rows)), its error, and the points' scatter about the fit
    (in f's units), for stairs of ``height`` and ``width`` (per row, or one for all)."""
    t = onp.asarray(offsets, dtype=float)
    span = float(t.max())
    u = t / span  # (conditioning)
    A3 = onp.stack([u, u**3], axis=1)
    A5 = onp.stack([u, u**3, u**5], axis=1)
    with onp.errstate(all="ignore"):
        weights = onp.linalg.pinv(A3)[0]  # b = weights @ D
        b3 = weights @ D
        b5 = onp.linalg.pinv(A5)[0] @ D
        resid = D - A3 @ (onp.linalg.pinv(A3) @ D)
        scatter = onp.sqrt(onp.sum(resid**2, axis=0) / (t.size - 2))
        # points closer than a stair apart share their rounding: fewer independent ones
        shared = onp.sqrt(onp.maximum(1.0, t.size * onp.asarray(width) / span))
        stat = SIGMAS * shared * scatter * onp.sqrt(onp.sum(weights**2))
        worst = height * onp.sum(onp.abs(weights))
        # a scatter the stairs' height cannot make: the height measured is not the
        # stairs' (several interleave); the scatter alone says how far the points stray
        bounded = scatter * onp.sqrt(3.0) <= height
        noise = onp.where(bounded, onp.minimum(stat, worst), stat)
        err = noise + onp.abs(b3 - b5)
    return b3 / span, err / span, scatter
