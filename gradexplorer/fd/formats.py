"""The narrow binary floating formats f may compute in, as grids of float64 numbers.

numpy has float32 and float16 but no bfloat16, and rounding through a dtype
says nothing of a format's cells (the float64s that round to one of its
numbers). A :class:`Format` is described by its digits and exponent range, so
rounding, spacing and cells are float64 arithmetic, exact for every format
here (each value and each cell's edge has at most 25 significant bits).

>>> import numpy as onp
>>> x = onp.array([0.1, -3.7, 1e-6, 70000.0])
>>> bool(onp.all(FLOAT16.round(x)[:3] == x[:3].astype(onp.float16))), float(FLOAT16.round(x)[3])
(True, inf)
>>> [float(v) for v in BFLOAT16.round(onp.array([1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8]))]
[1.0, 1.015625]
>>> [fmt.name for fmt in FORMATS], [float(fmt.eps) for fmt in FORMATS]
(['float32', 'float16', 'bfloat16'], [1.1920928955078125e-07, 0.0009765625, 0.0078125])
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as onp

__all__ = ["BFLOAT16", "FLOAT16", "FLOAT32", "FORMATS", "Format", "format_named", "values_format"]


@dataclass(frozen=True)
class Format:
    """A binary floating format: ``digits`` significant bits (the leading one
    included), normal numbers down to ``2**min_exp``, finite up to ``largest``."""

    name: str
    digits: int
    min_exp: int
    largest: float

    @property
    def eps(self) -> float:
        """The spacing of its numbers just above 1."""
        return 2.0 ** (1 - self.digits)

    def quantum(self, a: onp.ndarray) -> onp.ndarray:
        """The spacing of its numbers at magnitudes ``a`` (from a, upwards)."""
        a = onp.abs(onp.asarray(a, dtype=float))
        exponent = onp.where(a > 0, onp.frexp(a)[1] - 1, self.min_exp)  # (frexp(0) is 0)
        return onp.ldexp(1.0, onp.maximum(exponent, self.min_exp) - (self.digits - 1))

    def round(self, x: onp.ndarray) -> onp.ndarray:
        """x rounded to this format (to nearest, ties to even; inf beyond its range)."""
        x = onp.asarray(x, dtype=float)
        with onp.errstate(all="ignore"):
            q = self.quantum(onp.where(onp.isfinite(x), x, 1.0))
            r = onp.where(onp.isfinite(x), onp.rint(x / q) * q, x)  # x / q: exact, a power of 2
            return onp.where(onp.abs(r) > self.largest, onp.copysign(onp.inf, x), r)

    def holds(self, x: onp.ndarray) -> onp.ndarray:
        """Whether each value is one of this format's numbers (NaN and inf are)."""
        x = onp.asarray(x, dtype=float)
        return (self.round(x) == x) | ~onp.isfinite(x)

    def neighbours(self, c: onp.ndarray) -> tuple[onp.ndarray, onp.ndarray]:
        """The numbers of this format just below and just above each of its numbers c."""
        a = onp.abs(c)
        up = self.quantum(a)  # away from zero
        down = onp.where(a > 0, self.quantum(a * (1 - 2.0 ** -(self.digits + 1))), up)
        below = c - onp.where(c > 0, down, up)
        above = c + onp.where(c < 0, down, up)
        return below, above

    def cell(self, x: onp.ndarray) -> tuple[onp.ndarray, onp.ndarray]:
        """The edges of the float64 interval that rounds to x's number in this format
        (its midpoints with the neighbours: exact in float64)."""
        c = self.round(x)
        below, above = self.neighbours(c)
        return (below + c) / 2, (c + above) / 2


FLOAT32 = Format("float32", 24, -126, float(onp.finfo(onp.float32).max))
FLOAT16 = Format("float16", 11, -14, 65504.0)
BFLOAT16 = Format("bfloat16", 8, -126, 3.3895313892515355e38)
#: From the finest to the coarsest: the formats f may read or compute in below float64.
FORMATS = (FLOAT32, FLOAT16, BFLOAT16)


def format_named(name: str) -> Format:
    """The format of a dtype's name (``"float16"``)."""
    for fmt in FORMATS:
        if fmt.name == name:
            return fmt
    raise ValueError(f"expected one of {[f.name for f in FORMATS]}, got {name!r}")


def values_format(values: onp.ndarray, coarser_than: float = 0.0) -> Format | None:
    """The narrow format some numbers were rounded to: the coarsest of float32, float16
    and bfloat16 holding every finite nonzero value, whose eps is above
    ``coarser_than``, and one of whose last three bits some value fills (None: none).
    A float64 value is a float32 number by chance once in 2^29; values that leave the
    last bits empty are simpler numbers (1.0, ±2, round(3g)), no format's.

    >>> values_format(onp.array([0.5, -1.0078125])).name
    'bfloat16'
    >>> values_format(onp.array([0.3, -1.1])), values_format(onp.array([1.0, -3.0]))
    (None, None)
    """
    vals = onp.ravel(onp.asarray(values, dtype=float))
    vals = vals[onp.isfinite(vals) & (vals != 0)]
    if not vals.size:
        return None
    found = None
    for fmt in FORMATS:  # from the finest: the last that holds them is the coarsest
        if fmt.eps > coarser_than and fmt.holds(vals).all():
            found = fmt
    if found is not None and replace(found, digits=found.digits - 3).holds(vals).all():
        return None
    return found
