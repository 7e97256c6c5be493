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

from .cellimage import cell_image
from .celltext import add_cell_value, cell_text
from .values import MAX_CELLS, as_matrix, pool_max_abs

__all__ = [
    "Heatmap",
    "plot_jacobian",
    "update_heatmap",
    "blit_heatmap",
    "pool_max_abs",
    "figure_png",
    "freeze_layout",
]


ANNOTATE_MAX = 12  # matrices up to 12 x 12 get their values written in the cells


SIGNED_CMAP = "RdBu_r"


ERROR_CMAP = "viridis"
#: Error maps span six decades below their largest value (this ratio); smaller errors take
#: the bottom colour (the colour bar's arrow), their values still written in the cells.
LOG_DEPTH = 1e-6


VIOLATION_CMAP = "cividis"


MAGNITUDE_CMAP = "Purples"


SELECTION_COLOR = "#ff00ff"  # pure magenta: in none of the colormaps above


TICK_FONT = 8  # points: 11 px at 100 dpi, readable when projected


BAD_COLOR = "#9e9e9e"


def _nonfinite_words(M: onp.ndarray) -> str:
    parts = []
    for name, mask in (("NaN", onp.isnan(M)), ("+inf", onp.isposinf(M)), ("-inf", onp.isneginf(M))):
        if mask.any():
            parts.append(f"{int(mask.sum())} {name}")
    return ", ".join(parts)


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
    rescaled: bool = True  # did the last update change the colour scale or the caption?


def _norm(M: onp.ndarray, kind: str, symlog: bool = False, vmax: float | None = None):
    finite = M[onp.isfinite(M)]
    if kind == "signed":
        half = float(onp.max(onp.abs(finite), initial=0.0)) if vmax is None else vmax
        half = half or 1.0
        if symlog:
            nonzero = onp.abs(finite[finite != 0])
            lin = float(onp.percentile(nonzero, 10)) if nonzero.size else half * 1e-3
            return colors.SymLogNorm(linthresh=max(lin, half * 1e-12), vmin=-half, vmax=half)
        return colors.CenteredNorm(vcenter=0.0, halfrange=half)
    if kind == "magnitude":
        top = float(onp.max(onp.abs(finite), initial=0.0)) if vmax is None else vmax
        return colors.Normalize(vmin=0.0, vmax=top or 1.0)
    positive = finite[finite > 0]
    lo = float(positive.min()) if positive.size else 1e-16
    hi = float(positive.max()) if positive.size else 1.0
    if kind == "violation":
        lo, hi = min(lo, 1e-3), max(hi, 10.0)  # keep the pass/fail line (1) inside the scale
    else:
        # round-off spans many decades and moves by several from point to point: a
        # scale that followed its smallest value was redrawn at almost every move
        lo = max(lo, hi * LOG_DEPTH)
    if hi <= lo:
        hi = lo * 10
    return colors.LogNorm(vmin=lo, vmax=hi)


def _cmap(kind: str):
    name = {
        "signed": SIGNED_CMAP,
        "log": ERROR_CMAP,
        "violation": VIOLATION_CMAP,
        "magnitude": MAGNITUDE_CMAP,
    }[kind]
    return matplotlib.colormaps[name].with_extremes(bad=BAD_COLOR)


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
    norm = _with_headroom(_norm(P, kind, symlog, vmax))
    # extent keeps the axes in the original index coordinates when pooled
    image = cell_image(
        ax,
        _display(P, kind, norm),
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
                h.texts.append(add_cell_value(ax, j, i, "", fontsize=8))
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
    words = _nonfinite_words(M)
    if words:
        parts.append(f"grey: {words}")
    h.caption = "; ".join(parts)
    h.ax.set_xlabel(h.xlabel + (f"\n{h.caption}" if h.caption else ""))


def update_heatmap(
    h: Heatmap,
    J: Any,
    out_ndim: int | None = None,
    vmax: float | None = None,
    *,
    keep_scale: bool = False,
) -> bool:
    """Redraw an existing heatmap with new values (same shape): ``set_data``
    and ``set_norm``, no new artists. Returns False, changing nothing, when the
    shape changed (the caller then draws afresh) or, with ``keep_scale``, when
    the values no longer fit the colour scale.
    """
    M = as_matrix(J, out_ndim)
    if M.shape != h.shape:
        return False
    P, norm = _pooled_and_norm(h, M, vmax)
    # a colour scale that still fits is kept: the colourbar need not be redrawn
    fits = _scale_fits(h.image.norm, norm)
    if keep_scale and not fits:
        return False
    h.rescaled = not fits
    if h.rescaled:
        h.image.set_norm(_with_headroom(norm))
    h.image.set_data(_display(P, h.kind, h.image.norm))
    caption = h.caption
    _update_texts(h, M)
    h.rescaled = h.rescaled or h.caption != caption
    return True


def _pooled_and_norm(h: Heatmap, M: onp.ndarray, vmax: float | None) -> tuple:
    cells = max(-(-M.shape[0] // h.block[0]), -(-M.shape[1] // h.block[1]))
    P, _ = pool_max_abs(M, cells)
    return P, _norm(P, h.kind, h.symlog, vmax)


def _scale_fits(old: Any, new: Any) -> bool:
    """New data lies within the old scale and uses at least a quarter of it."""
    if type(old) is not type(new):
        return False
    if isinstance(new, colors.CenteredNorm):
        return new.halfrange <= old.halfrange <= 4 * new.halfrange
    if isinstance(new, colors.LogNorm):
        # errors at round-off level jump by decades from point to point: a log scale
        # keeps three spare decades above rather than redraw on every move
        return old.vmin <= new.vmin and new.vmax <= old.vmax <= 1e3 * new.vmax
    if type(new) is colors.Normalize:
        return new.vmax <= old.vmax <= 4 * new.vmax
    return False


def _with_headroom(norm: Any) -> Any:
    """Widen a changed scale a little, so that the next small change still fits."""
    if isinstance(norm, colors.CenteredNorm):
        return colors.CenteredNorm(vcenter=norm.vcenter, halfrange=1.25 * norm.halfrange)
    if isinstance(norm, colors.LogNorm):
        return colors.LogNorm(vmin=norm.vmin / 10, vmax=norm.vmax * 10)
    if type(norm) is colors.Normalize:
        return colors.Normalize(vmin=0.0, vmax=1.25 * norm.vmax)
    return norm


def blit_heatmap(h: Heatmap, send: bool = True) -> None:
    """Redraw only the image and its cell values (the scale and labels are unchanged);
    ``send=False`` leaves sending the picture to the caller (several maps, one blit)."""
    h.ax.draw_artist(h.image)
    for t in h.texts:
        h.ax.draw_artist(t)
    for mark in (h.selection, h.crosshair):
        if mark is not None and mark.get_visible():
            h.ax.draw_artist(mark)
    if not send:
        return
    h.ax.figure.canvas.blit(h.ax.bbox)


def freeze_layout(fig: Figure) -> None:
    """Lay the figure out once, then keep those positions.

    Constrained layout costs more than the drawing itself; values change on
    every update, the layout need not.
    """
    if not isinstance(fig.canvas, FigureCanvasAgg) and not hasattr(fig.canvas, "draw_idle"):
        FigureCanvasAgg(fig)
    fig.set_layout_engine("constrained")
    fig.draw_without_rendering()
    fig.set_layout_engine("none")


def figure_png(fig: Figure, dpi: int = 100) -> bytes:
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
