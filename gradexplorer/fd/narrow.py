"""Does f read its float64 input through float32 (or float16, bfloat16), only or partly?

Much numpy code takes float64 arrays and computes in float32
(``np.sin(x.astype(np.float32))``), and mixed-precision torch or jax code in
float16 or bfloat16 (``x.half()``). Such an f is flat across each
coordinate's cell in that format (the float64s that round to one of its
numbers) and jumps between cells, so a difference step that is not a whole
number of the format's ulps is rounded before f sees it:
``(f(x+h) - f(x-h)) / 2h`` then carries an error ``|f'|·ulp(x) / h``, a noise
proportional to the derivative, which no probe of f's own rounding sees
(sin(3x)'s derivative 2.94 read as 0 once a step shrank below the cell).
Steps that are whole ulps of x in that format land on f's own grid and have no
such error. Such steps see f around x rounded to the format, ``c``, and a
rule's value at x0 differs from its value there by ``f''·(c - x0)``, a few
ulps of the slope: the check is made at ``c``, where f takes the same value
as at x0 (or, where f reads x only partly through float32, ``sin(x32) +
x**2``, a value within a float32 ulp of x of it: below that scale f's float32
part is flat, and its derivative there is not the one any rule gives).

>>> import numpy as np
>>> x0 = np.array([0.3, -1.7, 2.5])
>>> eps = np.full(3, 2.0**-52)
>>> read_format(lambda X: np.sin(X.astype(np.float32)).astype(float), x0, eps)
(Reading(format='float32', only=True), 5)
>>> read_format(lambda X: np.sin(X.astype(np.float32)).astype(float) + X**2, x0, eps)
(Reading(format='float32', only=False), 13)
>>> read_format(lambda X: np.sin(X.astype(np.float16)).astype(float), x0, eps)
(Reading(format='float16', only=True), 13)
>>> read_format(lambda X: np.sin(X.astype(np.float16)).astype(float) + X**2, x0, eps)
(Reading(format='float16', only=False), 25)
>>> read_format(np.sin, x0, eps)
(None, 19)
>>> point, spacing = narrow_point(x0, eps, FLOAT16)
>>> bool(np.all(point == x0.astype(np.float16))), float(spacing[2]) == 2.0**-9
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as onp

from .formats import BFLOAT16, FLOAT16, FLOAT32, FORMATS, Format
from .fusing import fusable

__all__ = [
    "FLOAT32_EPS", "Reading", "float32_cells", "float32_point", "format_cells", "narrow_point",
    "output_eps", "read_format", "reads_float32",
]  # fmt: skip

#: A coordinate's precision finer than float32's may be read through float32.
FLOAT32_EPS = FLOAT32.eps


@fusable()
def output_eps(vals, y0, xp=onp):
    """Per output, the eps of the coarsest format (float32, float16, bfloat16) that
    holds all of f's values and f at the point (0 where none does): f computed in it
    and returned wider."""
    vals = xp.concatenate([vals, y0[None, :]], axis=0)
    finite = xp.isfinite(vals)
    eps = xp.zeros_like(vals[0])
    for fmt in FORMATS:  # eps grows along them
        narrow = fmt.round(vals) if xp is onp else xp.round_to(vals, fmt.name)
        held = xp.all((narrow == vals) | ~finite, axis=0)
        eps = xp.where(held, fmt.eps, eps)
    return eps


@dataclass(frozen=True)
class Reading:
    """How f reads its float64 coordinates: through their rounding to ``format``,
    ``only`` so (f is the same across each cell) or partly (f jumps at the cells' edges)."""

    fmt: Format = field(repr=False)
    only: bool

    @property
    def format(self) -> str:
        return self.fmt.name

    def __repr__(self) -> str:
        return f"Reading(format={self.format!r}, only={self.only})"


def format_cells(x0: onp.ndarray, fmt: Format = FLOAT32) -> onp.ndarray:
    """x0 with every coordinate just inside the low and the high edge of its cell in
    ``fmt`` (the float64s that round to one of its numbers), then just outside them.
    Just: by 4 float64 ulps for float32; by 4 float32 ulps for the narrower formats,
    which frameworks reach through float32 (a float64 within a float32 ulp of an edge
    may round to either side of it).

    >>> cells = format_cells(onp.array([1.0]))[:, 0]
    >>> [float(onp.float32(c)) for c in cells] == [1.0, 1.0, 1 - 2.0**-24, 1 + 2.0**-23]
    True
    >>> cells = format_cells(onp.array([1.0]), FLOAT16)[:, 0]
    >>> [float(onp.float16(c)) for c in cells] == [1.0, 1.0, 1 - 2.0**-11, 1 + 2.0**-10]
    True
    """
    with onp.errstate(all="ignore"):  # beyond the format's range: inf, refused by the callers
        low, high = fmt.cell(x0)
        edge = onp.fmax(onp.abs(low), onp.abs(high))
        pad = 4 * (onp.spacing(edge) if fmt is FLOAT32 else FLOAT32.quantum(edge))
        return onp.stack([low + pad, high - pad, low - pad, high + pad])


def float32_cells(x0: onp.ndarray) -> onp.ndarray:
    """:func:`format_cells` in float32."""
    return format_cells(x0, FLOAT32)


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


def read_format(
    evaluate: Callable[[onp.ndarray], onp.ndarray], x0: onp.ndarray, coord_eps: onp.ndarray
) -> tuple[Reading | None, int]:
    """The format f reads its coordinates finer than float32 in (float32, float16 or
    bfloat16; None: none of them), and the evaluations spent.

    Only through float32 where every output of f is the same at x0 and across the
    float32 cells of all those coordinates (moved together to both edges), and some
    output differs just beyond them: such an f takes the same value at x0 rounded to
    float32 (5 evaluations). Partly where some output jumps across either edge of the
    cells by far more than it moves over the same distance mid-cell (``sin(x32) +
    x**2``), here and in the next cell (13). An f the same just beyond its float32
    cells too is asked the same of the cells of bfloat16 and float16 (13 in all); one
    that neither is flat nor jumps there, whether it jumps at theirs (19 in all: what a
    float64 f costs; 25 where it does, confirmed in the next cell). Either way, steps
    that are whole ulps of that format from x0 rounded to it are steps f sees exactly.
    """
    finer = onp.asarray(coord_eps) < FLOAT32.eps
    if x0.size == 0 or not finer.any() or not onp.isfinite(x0).all():
        return None, 0
    cells = onp.where(finer[None, :], float32_cells(x0), x0[None, :])
    if not onp.isfinite(cells).all():  # beyond float32's range: not read in float32
        return None, 0
    Y = onp.asarray(evaluate(onp.concatenate([x0[None, :], cells])), dtype=float)
    same = _same(Y[1:], Y[0])
    if same[:2].all() and not same[2:].all():
        return Reading(FLOAT32, True), Y.shape[0]
    if same.all():  # flat over float32's cells and beyond: a coarser format's?
        coarse, more = _coarser_reading(evaluate, x0, finer, Y[0])
        return coarse, Y.shape[0] + more
    pad2 = cells[0] - cells[2]  # 2 pads per coordinate (0 where x is not finer)
    Z = onp.asarray(evaluate(onp.stack([cells[0] + pad2, cells[1] - pad2])), dtype=float)
    nfev = Y.shape[0] + 2
    if _jumps_at_edges(Y[0], Y[1:], Z):
        confirmed, more = _jumps_next_cell(evaluate, x0, finer, Y[0], FLOAT32)
        if confirmed:
            return Reading(FLOAT32, False), nfev + more
        nfev += more
    coarse, more = _coarser_partly(evaluate, x0, finer, Y[0])
    return coarse, nfev + more


def _coarser_cells(x0, finer) -> list[tuple[Format, onp.ndarray]]:
    """bfloat16's and float16's cells of the coordinates finer than float32 (as
    :func:`format_cells`), where they are finite (float16's range ends at 65504)."""
    out = []
    for fmt in (BFLOAT16, FLOAT16):
        cells = onp.where(finer[None, :], format_cells(x0, fmt), x0[None, :])
        if onp.isfinite(cells).all():
            out.append((fmt, cells))
    return out


def _coarser_reading(evaluate, x0, finer, y0) -> tuple[Reading | None, int]:
    """Reading only through bfloat16 or float16 (the coarser first): f the same across
    the format's cells, different just beyond them (one call for both)."""
    found = _coarser_cells(x0, finer)
    if not found:
        return None, 0
    same = _same(onp.asarray(evaluate(onp.concatenate([c for _, c in found])), dtype=float), y0)
    for k, (fmt, _) in enumerate(found):
        inside, outside = same[4 * k : 4 * k + 2], same[4 * k + 2 : 4 * k + 4]
        if inside.all() and not outside.all():
            return Reading(fmt, True), 4 * len(found)
    return None, 4 * len(found)


def _coarser_partly(evaluate, x0, finer, y0) -> tuple[Reading | None, int]:
    """Reading partly through bfloat16 or float16 (``model(x.half()) + 1e-3·|x|²``):
    jumps at the edges of the format's cells (each format's edges are numbers of the
    other, where it does not jump); 12 evaluations in one call, 6 more to confirm."""
    found = _coarser_cells(x0, finer)
    if not found:
        return None, 0
    Y = onp.asarray(evaluate(onp.concatenate([_edge_rows(c) for _, c in found])), dtype=float)
    nfev = Y.shape[0]
    for k, (fmt, _) in enumerate(found):
        if _jumps_at_edges(y0, Y[6 * k : 6 * k + 4], Y[6 * k + 4 : 6 * k + 6]):
            confirmed, more = _jumps_next_cell(evaluate, x0, finer, y0, fmt)
            nfev += more
            if confirmed:
                return Reading(fmt, False), nfev
    return None, nfev


def _jumps_next_cell(evaluate, x0, finer, y0, fmt: Format) -> tuple[bool, int]:
    """The jumps confirmed in the next cell up (6 evaluations): an f erratic at the
    pads' scale (sin(1e8·x), its values there as good as random) passes one test in
    ~100 (3 of 300 such checks turned inconclusive), not two."""
    nxt = onp.where(finer, fmt.neighbours(fmt.round(x0))[1], x0)
    cells = onp.where(finer[None, :], format_cells(nxt, fmt), x0[None, :])
    if not onp.isfinite(cells).all():
        return False, 0
    Z = onp.asarray(evaluate(_edge_rows(cells)), dtype=float)
    return _jumps_at_edges(y0, Z[:4], Z[4:]), Z.shape[0]


def _edge_rows(cells: onp.ndarray) -> onp.ndarray:
    """:func:`format_cells`' four rows and two more, 2 pads further inside each edge."""
    pad2 = cells[0] - cells[2]  # 2 pads per coordinate (0 where x is not finer)
    return onp.concatenate([cells, onp.stack([cells[0] + pad2, cells[1] - pad2])])


#: How far, in its own ulps, a float64 f's round-off may move a value that is a
#: small difference of larger terms (tanh(x @ w) at 0.04 from terms ~2 moved by 128
#: ulps between two nearby points); a narrow reading's jumps are far larger (the
#: format's ulp times the narrow part's share of f: 2^-24 relative for a float32 part).
ROUND_OFF_ULPS = 2**12


def _jumps_at_edges(y0, at_cells, inner) -> bool:
    """f reads x partly through a narrow format (``sin(x32) + x**2``): some output
    changes across an edge of the cells (``at_cells``: just inside the low and the high
    edge, then just outside them, 2 pads apart) by far more than over the next 2 pads
    inside either edge (``inner``), where only its wider part moves (f's own rounding,
    or an oscillation far faster than a cell, is as large there as across the edges).
    Either edge: a narrow part computed from many coordinates at once (a loss, moved
    by all of them) can round to the same value across one (1 point in 4 of a float16
    model's loss), and :func:`_jumps_next_cell` confirms it."""
    with onp.errstate(all="ignore"):
        calm = onp.fmax(onp.abs(inner[0] - at_cells[0]), onp.abs(inner[1] - at_cells[1]))
        edges = onp.fmax(onp.abs(at_cells[0] - at_cells[2]), onp.abs(at_cells[3] - at_cells[1]))
        rounding = ROUND_OFF_ULPS * onp.finfo(float).eps * onp.abs(y0)
        jumps = onp.isfinite(edges) & onp.isfinite(calm) & (edges > 8 * calm + rounding)
    return bool(jumps.any())


def narrow_point(
    x0: onp.ndarray, coord_eps: onp.ndarray, fmt: Format = FLOAT32
) -> tuple[onp.ndarray, onp.ndarray]:
    """x0 with its coordinates finer than float32 rounded to ``fmt``, and each
    coordinate's ulp there in the format f reads it in (for an f that reads
    them in ``fmt``: :func:`read_format`)."""
    finer = onp.asarray(coord_eps) < FLOAT32.eps
    point = onp.where(finer, fmt.round(x0), x0)
    return point, onp.where(finer, fmt.quantum(point), onp.spacing(onp.abs(x0)))


def float32_point(x0: onp.ndarray, coord_eps: onp.ndarray) -> tuple[onp.ndarray, onp.ndarray]:
    """:func:`narrow_point` in float32."""
    return narrow_point(x0, coord_eps, FLOAT32)
