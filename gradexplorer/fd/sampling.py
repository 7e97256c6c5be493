"""Where finite differences sample f: steps and directions that land exactly on
each input's grid, and the sampler that evaluates f at a stencil's points."""

from __future__ import annotations

import numpy as onp

__all__ = ["snap_directions", "exact_steps", "Sampler", "SHRINK", "WIDEN_AT_MOST"]

SHRINK = 8.0


#: How much snapping a direction to its grid may widen its step (or to a quarter of
#: the coordinate, where that is more): a coarse grid (x read through float16, ulps of
#: ~1e-3) cannot hold every shrink level exactly.
WIDEN_AT_MOST = 64.0


def snap_directions(vectors, h, spacing, levels, x0=None) -> onp.ndarray:
    """Directions whose stencil points land exactly on each coordinate's grid at
    every shrink level that grid allows: each component of ``h·d`` becomes a multiple
    of ``40·8**L`` ulps (a rounded point would add the input's own rounding to f as
    noise the estimates do not expect), L the most of ``levels`` that widen it to at
    most :data:`WIDEN_AT_MOST` times itself or a quarter of the coordinate ``x0``.
    All of them on float16's grid made it a multiple of 1.3e6 ulps, a step of
    hundreds where 0.008 was asked (exp overflowed, and the fast check passed a wrong
    rule with an allowance of 1e161); levels below 40 ulps land between its points,
    where f is flat. On float32's grid all five levels fit within a quarter of x.

    >>> h, spacing = onp.array([0.0078125]), onp.array([2.0**-52, 2.0**-10])
    >>> (h[:, None] * snap_directions(onp.array([[1.0, 1.0]]), h, spacing, 5))[0].tolist()
    [0.0078125, 0.3125]
    """
    delta = h[:, None] * vectors
    base = 40.0 * spacing[None, :]
    reach = WIDEN_AT_MOST * onp.abs(delta)
    if x0 is not None:
        reach = onp.maximum(reach, 0.25 * onp.abs(onp.asarray(x0, dtype=float))[None, :])
    with onp.errstate(invalid="ignore", over="ignore", divide="ignore"):
        fit = onp.floor(onp.log(reach / base) / onp.log(SHRINK))
        q = base * SHRINK ** onp.clip(onp.nan_to_num(fit, nan=0.0), 0, levels)
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


class Sampler:
    """Evaluates f at the stencil points of a set of directions, where f lives
    (an evaluator of :mod:`gradexplorer.fd.evaluation`: the samples come back
    in its array namespace)."""

    def __init__(self, evaluate, x0, columns, vectors, chunk):
        from .evaluation import as_evaluator

        self.ev = as_evaluator(evaluate)
        self.x0 = x0
        self.columns, self.vectors = columns, vectors
        self.chunk = chunk
        self.nfev = 0

    def __call__(self, idx: onp.ndarray, h: onp.ndarray, offsets: onp.ndarray):
        """Samples ``(len(idx), len(offsets), m)`` for directions idx at steps h."""
        out = []
        for start in range(0, idx.size, self.chunk):
            part, hp = idx[start : start + self.chunk], h[start : start + self.chunk]
            cols = None if self.columns is None else self.columns[part]
            vecs = None if self.vectors is None else self.vectors[part]
            out.append(self.ev.points(self.x0, cols, vecs, hp, offsets))
            self.nfev += part.size * offsets.size
        return out[0] if len(out) == 1 else self.ev.xp.concatenate(out, axis=0)
