"""The selected entry of a heatmap: a magenta outline, and a zoomed window around it."""

from __future__ import annotations

from typing import Any

import numpy as onp

from .heatmap import SELECTION_COLOR, Heatmap, plot_jacobian  # noqa: F401

__all__ = ["mark_selection", "zoom_heatmap"]


def mark_selection(h: Heatmap, row: int, col: int) -> Any:
    """Outline entry (row, col) in magenta (one artist, moved on later calls).

    >>> h = plot_jacobian(onp.eye(3))
    >>> mark_selection(h, 2, 1).get_xy()
    (0.5, 1.5)
    """
    from matplotlib.patches import Rectangle

    xy = (col - 0.5, row - 0.5)
    if h.selection is None or h.selection.axes is None:
        h.selection = h.ax.add_patch(
            Rectangle(xy, 1, 1, fill=False, edgecolor=SELECTION_COLOR, lw=2.5, zorder=5)
        )
    else:
        h.selection.set_xy(xy)
    # a cell of a large map is a pixel or two: keep the outline visible at any size, and
    # point at it with a crosshair that stops short of the cell
    large = max(h.shape) > 32
    h.selection.set_linewidth(3.5 if large else 2.5)
    m, n = h.shape
    gap = max(m, n) / 40
    xs = [-0.5, col - gap, onp.nan, col + gap, n - 0.5, onp.nan, col, col, onp.nan, col, col]
    ys = [row, row, onp.nan, row, row, onp.nan, -0.5, row - gap, onp.nan, row + gap, m - 0.5]
    if h.crosshair is None or h.crosshair.axes is None:
        (h.crosshair,) = h.ax.plot(
            xs, ys, color=SELECTION_COLOR, lw=1.0, alpha=0.8, zorder=5, scalex=False, scaley=False
        )
    h.crosshair.set_data(xs, ys)
    h.crosshair.set_visible(large)
    return h.selection


def zoom_heatmap(h: Heatmap, center: tuple | None, half: int = 8) -> None:
    """Show a (2 half + 1)-cell window around ``center`` = (row, col), or the whole map."""
    m, n = h.shape
    if center is None:
        h.ax.set_xlim(-0.5, n - 0.5)
        h.ax.set_ylim(m - 0.5, -0.5)
        return
    i, j = center
    r0, c0 = max(0, min(i - half, m - 2 * half - 1)), max(0, min(j - half, n - 2 * half - 1))
    h.ax.set_xlim(c0 - 0.5, min(n, c0 + 2 * half + 1) - 0.5)
    h.ax.set_ylim(min(m, r0 + 2 * half + 1) - 0.5, r0 - 0.5)
