"""Does f read its float64 input through float32, only or partly? The precision f reads x in.

Much numpy code takes float64 arrays and computes in float32
(``np.sin(x.astype(np.float32))``). Such an f is flat across each
coordinate's float32 cell (the float64s that round to one float32) and jumps
between cells, so a difference step that is not a whole number of float32
ulps is rounded before f sees it: ``(f(x+h) - f(x-h)) / 2h`` then carries an
error ``|f'|·ulp32(x) / h``, a noise proportional to the derivative, which no
probe of f's own rounding sees (sin(3x)'s derivative 2.94 read as 0 once a
step shrank below the cell). Steps that are whole float32 ulps of x land on
f's own grid and have no such error: the spacing f reads x in is float32's.
Such steps see f around x rounded to float32, ``c``, and a rule's value at x0
differs from its value there by ``f''·(c - x0)``, a few float32 ulps of the
slope: the check is made at ``c``, where f takes the same value as at x0 (or,
where f reads x only partly through float32, ``sin(x32) + x**2``, a value
within a float32 ulp of x of it: below that scale f's float32 part is flat,
and its derivative there is not the one any rule gives).

>>> import numpy as np
>>> x0 = np.array([0.3, -1.7, 2.5])
>>> eps = np.full(3, 2.0**-52)
>>> reads_in_float32(lambda X: np.sin(X.astype(np.float32)).astype(float), x0, eps)
('only', 5)
>>> reads_in_float32(lambda X: np.sin(X.astype(np.float32)).astype(float) + X**2, x0, eps)
('partly', 7)
>>> reads_in_float32(np.sin, x0, eps)
('', 7)
>>> point, spacing = float32_point(x0, eps)
>>> bool(np.all(point == x0.astype(np.float32))), float(spacing[2]) == 2.0**-22
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as onp

from .fusing import fusable

__all__ = [
    "FLOAT32_EPS", "float32_cells", "float32_point", "on_narrow_grid", "reads_float32",
    "reads_in_float32",
]  # fmt: skip

#: A coordinate's precision finer than float32's may be read through float32.
FLOAT32_EPS = float(onp.finfo(onp.float32).eps)


@fusable()
def on_narrow_grid(vals, y0, xp=onp):
    """Per output, whether f's values (and f at the point) are all float32 numbers:
    f computed in float32 (or narrower) and returned wider."""
    vals = xp.concatenate([vals, y0[None, :]], axis=0)
    finite = xp.isfinite(vals)
    narrow = vals.astype(onp.float32).astype(vals.dtype) if xp is onp else xp.round_float32(vals)
    same = narrow == vals
    return xp.all(same | ~finite, axis=0)


def float32_cells(x0: onp.ndarray) -> onp.ndarray:
    """x0 with every coordinate just inside the low and the high edge of its float32
    cell (the float64s that round to x0's float32), then just outside them.

    >>> cells = float32_cells(onp.array([1.0]))[:, 0]
    >>> [float(onp.float32(c)) for c in cells] == [1.0, 1.0, 1 - 2.0**-24, 1 + 2.0**-23]
    True
    """
    with onp.errstate(all="ignore"):  # beyond float32's range: inf, refused by the callers
        c = x0.astype(onp.float32)
        below, above = (onp.nextafter(c, onp.float32(s * onp.inf)).astype(float) for s in (-1, 1))
        low, high = (below + c) / 2, (c + above) / 2  # exact: float32s halved in float64
        pad = 4 * onp.spacing(onp.fmax(onp.abs(low), onp.abs(high)))
        return onp.stack([low + pad, high - pad, low - pad, high + pad])


def _same(Y: onp.ndarray, y0: onp.ndarray) -> onp.ndarray:
    """Per sample and output, whether f's value is f(x0)'s (NaN where f(x0) is NaN)."""
    return (Y == y0[None, :]) | (onp.isnan(Y) & onp.isnan(y0)[None, :])


def reads_float32(ev: Callable, x0: onp.ndarray, y0: onp.ndarray) -> onp.ndarray:
    """Per output, whether f reads x only through its rounding to float32 (or
    narrower): the same across each coordinate's cell, different just beyond it."""
    rows = float32_cells(x0)
    if not onp.isfinite(rows).all():
        return onp.zeros(y0.shape, bool)
    same = _same(onp.asarray(ev(rows), dtype=float), y0)
    return same[0] & same[1] & ~(same[2] & same[3])


def reads_in_float32(
    evaluate: Callable[[onp.ndarray], onp.ndarray], x0: onp.ndarray, coord_eps: onp.ndarray
) -> tuple[str, int]:
    """How f reads its coordinates finer than float32 — ``"only"`` through their
    float32 rounding, ``"partly"`` so, or ``""`` not at all — and the evaluations spent.

    ``"only"`` where every output of f is the same at x0 and across the float32 cells
    of all those coordinates (moved together to both edges), and some output differs
    just beyond them: such an f takes the same value at x0 rounded to float32.
    ``"partly"`` where some output jumps across both edges of the cells by far more
    than it moves over the same distance mid-cell (``sin(x32) + x**2``). Either way,
    steps that are whole float32 ulps from x0 rounded to float32 are steps f sees exactly.
    """
    finer = onp.asarray(coord_eps) < FLOAT32_EPS
    if x0.size == 0 or not finer.any() or not onp.isfinite(x0).all():
        return "", 0
    cells = onp.where(finer[None, :], float32_cells(x0), x0[None, :])
    if not onp.isfinite(cells).all():  # beyond float32's range: not read in float32
        return "", 0
    Y = onp.asarray(evaluate(onp.concatenate([x0[None, :], cells])), dtype=float)
    same = _same(Y[1:], Y[0])
    if same[:2].all() and not same[2:].all():
        return "only", Y.shape[0]
    jumps, more = _jumps_at_edges(evaluate, cells, Y)
    return ("partly" if jumps else ""), Y.shape[0] + more


def _jumps_at_edges(evaluate, cells, Y) -> tuple[bool, int]:
    """f reads x partly through float32 (``sin(x32) + x**2``): some output changes
    across both edges of the cells (2 pads each) by far more than over the next 2 pads
    inside either edge, where only its float64 part moves (f's own rounding, or an
    oscillation far faster than a cell, is as large there as across the edges)."""
    pad2 = cells[0] - cells[2]  # 2 pads per coordinate (0 where x is not finer)
    inner = onp.stack([cells[0] + pad2, cells[1] - pad2])
    Z = onp.asarray(evaluate(inner), dtype=float)
    with onp.errstate(all="ignore"):
        calm = onp.fmax(onp.abs(Z[0] - Y[1]), onp.abs(Z[1] - Y[2]))
        edges = onp.fmin(onp.abs(Y[1] - Y[3]), onp.abs(Y[4] - Y[2]))
        rounding = 64 * onp.finfo(float).eps * onp.abs(Y[0])
        jumps = onp.isfinite(edges) & onp.isfinite(calm) & (edges > 8 * calm + rounding)
    return bool(jumps.any()), 2


def float32_point(x0: onp.ndarray, coord_eps: onp.ndarray) -> tuple[onp.ndarray, onp.ndarray]:
    """x0 with its coordinates finer than float32 rounded to float32, and each
    coordinate's ulp there in the precision f reads it in (for an f that
    :func:`reads_in_float32`)."""
    finer = onp.asarray(coord_eps) < FLOAT32_EPS
    narrow = x0.astype(onp.float32)
    point = onp.where(finer, narrow.astype(float), x0)
    spacing = onp.spacing(onp.abs(narrow)).astype(float)
    return point, onp.where(finer, spacing, onp.spacing(onp.abs(x0)))
