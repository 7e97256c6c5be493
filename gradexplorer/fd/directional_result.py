"""What one call of the adaptive finite differences reports: estimates, errors and
a reason per entry (:class:`Directional`), made from the step levels' state by
:func:`finish`: errors floored at what float64 resolves, outputs too erratic to
resolve, entries never settled, kinks and domain edges."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as onp

from .noise import NoiseModel
from .reasons import Unresolvable

__all__ = ["Directional", "finish", "resolution_floor", "dust_outputs", "HOPELESS"]

#: Noise above this fraction of f itself, at every probed scale, leaves nothing to resolve.
HOPELESS = 1e-3


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


def dust_outputs(noise: NoiseModel) -> onp.ndarray:
    """Outputs whose noise, comparable to themselves, is negligible beside f's largest
    output (:data:`HOPELESS` of it): round-off dust around zero (an imaginary part
    that is 0, a difference of large intermediates), not an output that is erratic
    at a size of its own."""
    largest = float(onp.max(noise.scale, initial=0.0))
    return noise.coarse <= HOPELESS * largest


def finish(est, err, noise_err, has, nonfinite, y_bad, h, sample, nm, noise, sides) -> Directional:
    with onp.errstate(invalid="ignore"):  # an infinite rel at a 0 estimate stays nan
        err = resolution_floor(est, err + nm.rel * onp.abs(est))
    reason = onp.zeros(est.shape, onp.int8)
    # noise comparable to f itself leaves nothing to resolve — unless f is round-off
    # dust around zero (an imaginary part that is 0 in exact arithmetic): noise
    # negligible beside f's largest output, and an estimate that bounds the derivative
    # far below the Jacobian's scale. Not an output that is erratic at its own size
    # (sin(5e14)): its small FD error beside a large entry of another row bounds nothing
    with onp.errstate(invalid="ignore"):
        calm = onp.isfinite(err) & onp.isfinite(est) & has & ~(nm.rel > HOPELESS)
        scale = float(onp.max(onp.abs(est[calm]), initial=0.0))
    dust = dust_outputs(noise)[None, :] & (err <= HOPELESS * scale)
    # (an output with structure finer than the step is hopeless only if it is still
    # erratic at the finest scale probed: there shrinking has nothing left to find)
    with onp.errstate(invalid="ignore", divide="ignore"):
        erratic_fine = noise.fine > HOPELESS * noise.scale
    erratic = (nm.rel > HOPELESS) | (nm.structured & erratic_fine[None, :])
    hopeless = erratic & ~dust
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
