"""One heatmap of a matrix, drawn once and updated in place (matplotlib only).

- signed values: a diverging colormap centred on 0 (RdBu, colour-blind safe);
- errors: log scale, sequential colormaps (viridis / cividis); magnitudes
  that must show 0 as 0 (a residual): a linear scale from 0, white at 0;
- NaN / +inf / -inf: drawn grey and named in words (cell text or caption);
- large matrices: pooled in blocks keeping the entry of largest |value|, so a
  single bad entry is never averaged away; the block size is in the caption.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

import matplotlib
import numpy as onp
from matplotlib import colors
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .scales import (
    BAD_COLOR,
    CMAPS,
    SELECTION_COLOR,
    cell_text,
    nonfinite_words,
    scale_for,
    to_norm,
)
from .values import MAX_CELLS, as_matrix, pool_max_abs

__all__ = [
    "Heatmap",
    "plot_jacobian",
    "update_heatmap",
    "pool_max_abs",
    "figure_png",
    "SELECTION_COLOR",
]


ANNOTATE_MAX = 12  # matrices up to 12 x 12 get their values written in the cells
TICK_FONT = 8  # points: 11 px at 100 dpi, readable when projected


@dataclass
class Heatmap:
    """The artists of one heatmap, kept so that updates reuse them."""

    ax: Any
    image: Any
    colorbar: Any
    texts: list = field(default_factory=list)
    caption: str = ""
    xlabel: str = ""
    separators: list = field(default_factory=list)
    kind: str = "signed"  # "signed", "log", "violation" or "magnitude"
    block: tuple = (1, 1)
    shape: tuple = (0, 0)
    symlog: bool = False
    selection: Any = None  # the outline of the selected entry
    crosshair: Any = None  # lines pointing at it on a large map


def _norm(M: onp.ndarray, kind: str, symlog: bool = False, vmax: float | None = None):
    scale = scale_for(M, kind, vmax)
    if symlog and kind == "signed":
        finite = M[onp.isfinite(M)]
        nonzero = onp.abs(finite[finite != 0])
        half = scale.vmax
        lin = float(onp.percentile(nonzero, 10)) if nonzero.size else half * 1e-3
        return colors.SymLogNorm(linthresh=max(lin, half * 1e-12), vmin=-half, vmax=half)
    return to_norm(scale)


def _cmap(kind: str):
    return matplotlib.colormaps[CMAPS[kind]].with_extremes(bad=BAD_COLOR)


def _display(M: onp.ndarray, kind: str, norm) -> onp.ndarray:
    """Non-finite cells are masked (drawn grey); on log scales exact zeros sit
    at the bottom of the scale, since "no error" is not "no value"."""
    shown = onp.where(onp.isfinite(M), M, onp.nan)
    if kind in ("log", "violation"):
        shown = onp.where(shown > 0, shown, onp.where(onp.isnan(shown), onp.nan, norm.vmin))
    return shown  # NaN cells take the colormap's "bad" colour


def _new_axes(ax, fig, figsize=(5, 4)):
    if ax is not None:
        return ax
    fig = fig or Figure(figsize=figsize, layout="constrained")
    return fig.add_subplot()


def plot_jacobian(
    J: Any,
    ax: Any = None,
    *,
    row_label: Any = None,
    col_label: Any = None,
    row_blocks: dict | None = None,
    col_blocks: dict | None = None,
    out_ndim: int | None = None,
    kind: str = "signed",
    symlog: bool = False,
    title: str | None = None,
    xlabel: str = "input x[j]",
    ylabel: str = "output y[i]",
    max_cells: int = MAX_CELLS,
    vmax: float | None = None,
) -> Heatmap:
    """Heatmap of a Jacobian (rows = outputs, columns = inputs).

    Parameters
    ----------
    J : array or FDResult
        2-D, or ``out.shape + in.shape`` (``out_ndim`` says where to split).
    ax : matplotlib Axes, optional
    row_label, col_label : callable, optional
        ``i -> "y[2, 1]"`` for tick labels of small matrices.
    row_blocks, col_blocks : dict of slices, optional
        Separator lines between stacked outputs / concatenated inputs.
    kind : {"signed", "log", "violation", "magnitude"}
        ``"magnitude"``: a linear scale from 0 (white), for residuals whose
        zero must look like zero.
    symlog : bool
        Symmetric log colour scale for wide dynamic ranges.

    Returns
    -------
    Heatmap

    Examples
    --------
    >>> h = plot_jacobian(onp.array([[1.0, -2.0], [onp.nan, onp.inf]]))
    >>> [t.get_text() for t in h.texts]
    ['1', '-2', 'NaN', '+inf']
    """
    M = as_matrix(J, out_ndim)
    ax = _new_axes(ax, None)
    P, block = pool_max_abs(M, max_cells)
    # room for the next point's values from the start: the first move of an explorer
    # redrew the whole figure for a scale a few percent too small
    norm = _norm(P, kind, symlog, vmax)
    # extent keeps the axes in the original index coordinates when pooled
    image = ax.imshow(
        _display(P, kind, norm),
        interpolation="nearest",
        aspect="auto",
        cmap=_cmap(kind),
        norm=norm,
        extent=(-0.5, M.shape[1] - 0.5, M.shape[0] - 0.5, -0.5),
    )
    cbar = ax.figure.colorbar(
        image, ax=ax, shrink=0.9, extend="min" if kind == "log" else "neither"
    )
    if kind == "violation":
        cbar.ax.axhline(1.0, color="red", lw=2)
        cbar.set_label("violation (>1 fails)")
    h = Heatmap(ax, image, cbar, kind=kind, block=block, shape=M.shape, symlog=symlog)
    _decorate(h, M, P, row_label, col_label, row_blocks, col_blocks, xlabel, ylabel, title)
    return h


def _decorate(h, M, P, row_label, col_label, row_blocks, col_blocks, xlabel, ylabel, title):
    ax = h.ax
    h.xlabel = xlabel
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    m, n = M.shape
    if h.block == (1, 1) and m <= 24 and n <= 24:
        ax.set_xticks(range(n))
        ax.set_yticks(range(m))
        if col_label:
            ax.set_xticklabels([col_label(j) for j in range(n)], rotation=90, fontsize=TICK_FONT)
        if row_label:
            ax.set_yticklabels([row_label(i) for i in range(m)], fontsize=TICK_FONT)
    ax.tick_params(labelsize=TICK_FONT)
    h.colorbar.ax.tick_params(labelsize=TICK_FONT)
    for blocks, line in ((row_blocks, ax.axhline), (col_blocks, ax.axvline)):
        for sl in list((blocks or {}).values())[1:]:
            h.separators.append(line(sl.start - 0.5, color="black", lw=1.2))
    if m <= ANNOTATE_MAX and n <= ANNOTATE_MAX and h.block == (1, 1):
        for i in range(m):
            for j in range(n):
                h.texts.append(ax.text(j, i, "", ha="center", va="center", fontsize=8))
    _update_texts(h, M)


def _update_texts(h: Heatmap, M: onp.ndarray) -> None:
    """Cell values in contrasting ink, and the caption under the x label."""
    if h.texts:
        shown = _display(M, h.kind, h.image.norm).ravel()
        rgba = h.image.cmap(h.image.norm(onp.ma.masked_invalid(shown)))
        luminance = rgba[:, :3] @ onp.array([0.299, 0.587, 0.114])
        for t, v, lum in zip(h.texts, M.ravel(), luminance):
            t.set_text(cell_text(v))
            t.set_color("white" if lum < 0.45 else "black")
    parts = []
    if h.block != (1, 1):
        parts.append(
            f"{M.shape[0]} x {M.shape[1]} in {h.block[0]}x{h.block[1]} blocks:\n"
            "each shows its largest-magnitude entry"
        )
    words = nonfinite_words(M)
    if words:
        parts.append(f"grey: {words}")
    h.caption = "; ".join(parts)
    h.ax.set_xlabel(h.xlabel + (f"\n{h.caption}" if h.caption else ""))


def update_heatmap(
    h: Heatmap, J: Any, out_ndim: int | None = None, vmax: float | None = None
) -> bool:
    """Redraw an existing heatmap with new values (same shape): ``set_data`` and
    ``set_norm``, no new artists. Returns False, changing nothing, when the shape
    changed (the caller then draws afresh)."""
    M = as_matrix(J, out_ndim)
    if M.shape != h.shape:
        return False
    cells = max(-(-M.shape[0] // h.block[0]), -(-M.shape[1] // h.block[1]))
    P, _ = pool_max_abs(M, cells)
    h.image.set_norm(_norm(P, h.kind, h.symlog, vmax))
    h.image.set_data(_display(P, h.kind, h.image.norm))
    _update_texts(h, M)
    return True


def figure_png(fig: Figure, dpi: int = 100) -> bytes:
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
