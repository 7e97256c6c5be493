"""Does f move in quanta? The rounding staircase of an output, measured exactly.

An output computed through a large intermediate (``(1e10 + sin x) - 1e10``),
a lower-precision accumulator (a float32 sum inside a float64 function) or a
small difference of large terms takes only values on a grid far coarser than
its own precision: ``ulp(1e10)`` instead of ``ulp(sin x)``. Between two grid
points f is flat, so differences over steps narrower than a stair are exactly
zero, and over a few stairs they carry the grid's rounding. Such an output's
rounding floor is the grid's spacing, not its own ulp.

Every float is a dyadic rational, and so is every difference of two samples:
the smallest power of two dividing all the differences bounds the grid's
spacing from below and, with a handful of samples, equals it.

>>> import numpy as np
>>> x = 0.3 + np.array([1.0, -0.5, 0.6, -0.3, 2.0, -1.0, 1.2, -0.6]) * 1e-4
>>> F = ((1e10 + np.sin(x)) - 1e10)[None, :, None]   # (directions, samples, outputs)
>>> y0 = np.array([(1e10 + np.sin(0.3)) - 1e10])
>>> q = output_quantum(F, y0, 2.0**-52)
>>> float(q[0]) == 2.0**-19                          # ulp(1e10)
True
>>> float(output_quantum(np.sin(x)[None, :, None], np.sin([0.3]), 2.0**-52)[0])
0.0
"""

from __future__ import annotations

import contextlib

import numpy as onp

from .fusing import fusable

__all__ = ["output_quantum", "direction_quantum", "lowest_bit", "COARSE_BITS"]

#: A grid this many times the output's own ulp (2 bits) is a staircase, not rounding.
COARSE_BITS = 4.0
#: Samples handled at once (the bit arithmetic makes a few copies of them).
BLOCK = 1 << 21


def lowest_bit(d, xp=onp):
    """The largest power of two dividing each float (0 for 0, NaN for non-finite).

    >>> lowest_bit(onp.array([3.0, 0.75, 0.0, 5 * 2.0**-60])) * [1, 1, 1, 2.0**60]
    array([1.  , 0.25, 0.  , 1.  ])
    """
    finite = xp.isfinite(d)
    mant, exp = xp.frexp(xp.where(finite, xp.abs(d), 0.0))
    # a float64 mantissa has 53 bits: as an exact integer, its lowest set bit
    whole = xp.astype_int64(mant * 2.0**53) if xp is not onp else (mant * 2.0**53).astype(onp.int64)
    low = whole & -whole
    low = xp.astype_float64(low) if xp is not onp else low.astype(float)
    out = xp.ldexp(low, exp - 53)
    return xp.where(finite, out, onp.nan)


def direction_quantum(samples, y0, out_eps, xp=onp):
    """:func:`output_quantum` along each direction alone: ``samples`` ``(k, points,
    m)`` gives ``(k, m)``. An output that adds a smooth term to a quantized one
    lies on the grid only along directions that leave the smooth term fixed.
    ``xp``: the namespace the samples live in (the result is in it too).
    """
    k, points, m = samples.shape
    if not k:
        return xp.zeros((0, m))
    if xp is onp:
        return _screened(samples, y0, out_eps)
    # a few blocks of directions at a time: the bit arithmetic takes several copies
    per_block = max(1, BLOCK // max(1, points * m))
    return xp.concatenate(
        [_grid(samples[s : s + per_block], y0, out_eps, xp) for s in range(0, k, per_block)]
    )


def _screened(F, y0, out_eps) -> onp.ndarray:
    """:func:`direction_quantum` on the host, its bit arithmetic only on the entries
    that may lie on a grid: an entry needs two moving samples, and one whose first
    sample moved by less than :data:`COARSE_BITS` of its own ulps is on none (the
    grid is at most that move's lowest bit). The same numbers, a fraction of the
    work where f moves smoothly."""
    k, points, m = F.shape
    eps = onp.broadcast_to(onp.asarray(out_eps, dtype=float), (m,))
    with onp.errstate(all="ignore"):
        diff = F - y0[None, None, :]
        moving = onp.count_nonzero((diff != 0) & onp.isfinite(diff), axis=1) >= 2
        first = diff[:, 0, :]
        mag = onp.maximum(
            onp.where(onp.isfinite(F[:, 0, :]), onp.abs(F[:, 0, :]), 0.0),
            onp.where(onp.isfinite(y0), onp.abs(y0), 0.0)[None, :],
        )
        fine = (first != 0) & (lowest_bit(first) < COARSE_BITS * eps[None, :] * mag)
    out = onp.zeros((k, m))
    ki, mi = onp.nonzero(moving & ~fine)
    per_block = max(1, BLOCK // max(1, points))
    for s in range(0, ki.size, per_block):
        a, b = ki[s : s + per_block], mi[s : s + per_block]
        # each candidate entry as an output of its own: samples (1, points, c)
        out[a, b] = _grid(F[a, :, b].T[None], y0[b], eps[b], onp)[0]
    return out


def output_quantum(samples, y0, out_eps, xp=onp):
    """Per output, the spacing of the grid its values lie on, where that grid is
    at least :data:`COARSE_BITS` times coarser than the output's own ulp (else 0).

    Parameters
    ----------
    samples : ndarray
        f's values near the point, ``(..., m)``: any number of leading axes.
    y0 : ndarray
        f at the point, ``(m,)``.
    out_eps : float or ndarray
        The eps of each output's own precision.
    xp : namespace
        Where the samples live (numpy, or a device's array functions).

    Returns
    -------
    ndarray
        ``(m,)``: the quantum of each output that moves in quanta, 0 elsewhere
        (including outputs that did not move at all: no grid to see).
    """
    m = y0.shape[0]
    return _grid(xp.reshape(samples, (1, -1, m)), y0, out_eps, xp)[0]


@fusable()
def _grid(F, y0, out_eps, xp=onp):
    """The quantum per direction and output of samples ``(k, points, m)``."""
    quiet = onp.errstate(all="ignore") if xp is onp else contextlib.nullcontext()
    with quiet:
        diff = F - y0[None, None, :]  # exact for nearby values (Sterbenz)
        bits = lowest_bit(diff, xp)
        moved = xp.isfinite(bits) & (bits > 0)
        q = xp.min(xp.where(moved, bits, onp.inf), axis=1)
        mag = xp.max(xp.where(xp.isfinite(F), xp.abs(F), 0.0), axis=1)
        mag = xp.maximum(mag, xp.where(xp.isfinite(y0), xp.abs(y0), 0.0)[None, :])
        own = (onp.asarray(out_eps, dtype=float) if xp is onp else xp.asarray(out_eps)) * mag
        # two moves at least: a single difference can share trailing zeros by chance
        enough = xp.sum(xp.where(moved, 1.0, 0.0), axis=1) >= 2
        coarse = enough & xp.isfinite(q) & (q >= COARSE_BITS * own) & (own > 0)
    return xp.where(coarse, q, 0.0)
