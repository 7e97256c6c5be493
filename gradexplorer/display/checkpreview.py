"""A check figure's analytic map, shown before its check ends.

A large check takes several times longer than the AD Jacobian alone. The
explorer draws the new Jacobian at once and veils the three maps that wait
for the check ("checking…"), so that no map on screen claims to be newer
than it is; the check's own redraw lifts the veils.
"""

from __future__ import annotations

from typing import Any

import numpy as onp
from matplotlib.patches import Rectangle

from .heatmap import blit_heatmap, fits_scale, update_heatmap

__all__ = ["preview_analytic", "PENDING_TEXT"]

PENDING_TEXT = "checking…"


def preview_analytic(art: Any, A: Any) -> bool:
    """Draw ``A`` on the analytic map of a check figure and veil the other maps.

    Sends only the maps' cells (a blit). Returns False, drawing nothing and
    changing nothing, when ``A`` needs more than that (another shape, or a
    colour scale that no longer fits): the check's redraw then does it all.

    >>> import numpy as np, gradexplorer as gx
    >>> from matplotlib.figure import Figure
    >>> from matplotlib.backends.backend_agg import FigureCanvasAgg
    >>> from gradexplorer.display.plots import draw_check
    >>> fig = Figure()
    >>> art = draw_check(gx.check_grads(np.sin, np.ones(3)), FigureCanvasAgg(fig).figure)
    >>> fig.canvas.draw()
    >>> preview_analytic(art, np.diag(np.cos(np.ones(3)) * 1.01)), len(art.veils)
    (True, 3)
    """
    if art.mode != "full" or len(art.heatmaps) != 4:
        return False
    first = art.heatmaps[0]
    M = onp.asarray(A, dtype=float)
    finite = onp.abs(M[onp.isfinite(M)])
    vmax = float(finite.max()) if finite.size and finite.max() > 0 else None
    if not fits_scale(first, M, vmax):
        return False
    update_heatmap(first, M, vmax=vmax)
    if first.rescaled:  # its caption changed: the check's picture must be drawn whole
        art.redraw = True
        return False
    blit_heatmap(first, send=False)
    if not art.veils:
        art.veils = [_veil(h.ax) for h in art.heatmaps[1:]]
    for h, veil in zip(art.heatmaps[1:], art.veils):
        blit_heatmap(h, send=False)  # the last check's cells, under one veil, not two
        for artist in veil:
            artist.set_visible(True)
            h.ax.draw_artist(artist)
            # never part of a full redraw: only the check's own picture lifts a veil
            artist.set_visible(False)
    art.fig.canvas.blit(art.fig.bbox)
    return True


def _veil(ax: Any) -> tuple:
    cover = Rectangle(
        (0, 0), 1, 1, transform=ax.transAxes, facecolor="white", alpha=0.6, lw=0, visible=False
    )
    ax.add_patch(cover)
    label = ax.text(
        0.5,
        0.5,
        PENDING_TEXT,
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize=12,
        color="#333333",
        visible=False,
    )
    return cover, label
