"""Colour scales and cell words shared by the static pictures and the explorer's page.

The ``plot_*`` functions (matplotlib) and the explorer (a canvas in the browser)
draw the same matrices; both take their colour scale, colormap and the words for
NaN / infinities from here, so that a map looks the same in a paper and live.
A :class:`Scale` is plain numbers (JSON for the page); :func:`to_norm` makes
matplotlib's norm of it and :func:`lut` the 256 colours of its colormap.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

import numpy as onp

__all__ = [
    "Scale",
    "scale_for",
    "to_norm",
    "lut",
    "cell_text",
    "nonfinite_words",
    "CMAPS",
    "BAD_COLOR",
    "SELECTION_COLOR",
    "MISMATCH_COLOR",
    "LOG_DEPTH",
]

#: Colormap of each kind of map: signed values diverge around 0 (colour-blind safe),
#: errors and violations are sequential, a residual whose 0 must look like 0 is white at 0.
CMAPS = {"signed": "RdBu_r", "log": "viridis", "violation": "cividis", "magnitude": "Purples"}
BAD_COLOR = "#9e9e9e"  # NaN / inf cells
SELECTION_COLOR = "#ff00ff"  # pure magenta: in none of the colormaps above
MISMATCH_COLOR = "#ff9900"  # a wrong entry's outline, on a dark rim
#: Error maps span six decades below their largest value; smaller errors take the
#: bottom colour (their values still written in the cells).
LOG_DEPTH = 1e-6


@dataclass(frozen=True)
class Scale:
    """A colour scale as numbers: ``kind`` (see :data:`CMAPS`), ``vmin``/``vmax``, and
    whether it is logarithmic (signed scales are centred: ``vmin == -vmax``)."""

    kind: str
    vmin: float
    vmax: float
    log: bool
    cmap: str

    def to_json(self) -> dict:
        return asdict(self)


def scale_for(M: Any, kind: str = "signed", vmax: float | None = None) -> Scale:
    """The colour scale of matrix ``M`` drawn as ``kind``; ``vmax`` shares a bound.

    >>> scale_for(onp.array([[1.0, -3.0]]))
    Scale(kind='signed', vmin=-3.0, vmax=3.0, log=False, cmap='RdBu_r')
    >>> s = scale_for(onp.array([[1e-3, 1.0]]), "violation"); (s.vmin, s.vmax, s.log)
    (0.001, 10.0, True)
    """
    M = onp.asarray(M, dtype=float)
    finite = M[onp.isfinite(M)]
    if kind == "signed":
        half = float(onp.max(onp.abs(finite), initial=0.0)) if vmax is None else float(vmax)
        half = half or 1.0
        return Scale(kind, -half, half, False, CMAPS[kind])
    if kind == "magnitude":
        top = float(onp.max(onp.abs(finite), initial=0.0)) if vmax is None else float(vmax)
        return Scale(kind, 0.0, top or 1.0, False, CMAPS[kind])
    if kind not in ("log", "violation"):
        raise ValueError(f"kind is one of {sorted(CMAPS)}; got {kind!r}.")
    positive = finite[finite > 0]
    lo = float(positive.min()) if positive.size else 1e-16
    hi = float(positive.max()) if positive.size else 1.0
    if kind == "violation":
        lo, hi = min(lo, 1e-3), max(hi, 10.0)  # the pass/fail line (1) inside the scale
    else:
        lo = max(lo, hi * LOG_DEPTH)
    if hi <= lo:
        hi = lo * 10
    return Scale(kind, lo, hi, True, CMAPS[kind])


def to_norm(scale: Scale) -> Any:
    """matplotlib's norm for ``scale``.

    >>> float(to_norm(scale_for(onp.array([2.0, -1.0])))(2.0))
    1.0
    """
    from matplotlib import colors

    if scale.log:
        return colors.LogNorm(vmin=scale.vmin, vmax=scale.vmax)
    if scale.kind == "signed":
        return colors.CenteredNorm(vcenter=0.0, halfrange=scale.vmax)
    return colors.Normalize(vmin=scale.vmin, vmax=scale.vmax)


@cache
def lut(cmap: str, n: int = 256) -> bytes:
    """The colormap's ``n`` colours as RGBA bytes (the page indexes them as matplotlib
    does: ``int(t * n)``, clipped), then the bad colour: ``4 * (n + 1)`` bytes.

    >>> len(lut("viridis")), lut("RdBu_r")[-4:]
    (1028, b'\\x9e\\x9e\\x9e\\xff')
    """
    import matplotlib
    from matplotlib import colors

    table = matplotlib.colormaps[cmap].resampled(n)(onp.arange(n))
    bad = onp.array([colors.to_rgba(BAD_COLOR)])
    return (onp.round(onp.vstack([table, bad]) * 255)).astype(onp.uint8).tobytes()


def cell_text(v: float) -> str:
    """A cell's value in three significant digits; NaN and infinities in words.

    >>> [cell_text(v) for v in (0.123456, -1e-9, float("nan"), float("-inf"))]
    ['0.123', '-1e-09', 'NaN', '-inf']
    """
    if onp.isnan(v):
        return "NaN"
    if onp.isposinf(v):
        return "+inf"
    if onp.isneginf(v):
        return "-inf"
    return f"{v:.3g}"


def nonfinite_words(M: Any) -> str:
    """How many cells are NaN / +inf / -inf, in words (drawn grey, named in a caption).

    >>> nonfinite_words(onp.array([onp.nan, onp.inf, 1.0, onp.nan]))
    '2 NaN, 1 +inf'
    """
    M = onp.asarray(M, dtype=float)
    parts = []
    for name, mask in (("NaN", onp.isnan(M)), ("+inf", onp.isposinf(M)), ("-inf", onp.isneginf(M))):
        if mask.any():
            parts.append(f"{int(mask.sum())} {name}")
    return ", ".join(parts)
