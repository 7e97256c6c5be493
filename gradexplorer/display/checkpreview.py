"""A check figure's analytic map, shown before its check ends.

A large check takes several times longer than the AD Jacobian alone. The
explorer draws the new Jacobian at once and labels the three maps that wait
for the check ("checking…"), so that no map on screen claims to be newer
than it is; the check's own redraw removes the labels. A label in an opaque
box, not a veil over the whole map: the frame sent is the new map and three
small boxes, a tenth of the pixels (a large check's maps do not compress).
"""

from __future__ import annotations

from typing import Any

import numpy as onp

from .heatmap import blit_heatmap, update_heatmap
from .values import max_abs

__all__ = ["preview_analytic", "PENDING_TEXT"]

PENDING_TEXT = "checking…"


def preview_analytic(art: Any, A: Any) -> bool:
    """Draw ``A`` on the analytic map of a check figure and label the other maps.

    Sends only the maps' cells (a blit). Returns False and draws nothing when
    ``A`` needs more than that (another shape, a colour scale that no longer
    fits, a caption that changes): the check's picture is then drawn whole.

    >>> import numpy as np, gradexplorer as gx
    >>> from matplotlib.figure import Figure
    >>> from matplotlib.backends.backend_agg import FigureCanvasAgg
    >>> from gradexplorer.display.plots import draw_check
    >>> fig = Figure()
    >>> art = draw_check(gx.check_grads(np.sin, np.ones(3)), FigureCanvasAgg(fig).figure)
    >>> fig.canvas.draw()
    >>> preview_analytic(art, np.diag(np.cos(np.ones(3)) * 1.01)), len(art.pending_labels)
    (True, 3)
    """
    if art.mode != "full" or len(art.heatmaps) != 4:
        return False
    first = art.heatmaps[0]
    M = onp.asarray(A, dtype=float)
    if not update_heatmap(first, M, vmax=max_abs(M), keep_scale=True):
        return False
    if first.rescaled:  # its caption changed: the check's picture must be drawn whole
        art.redraw = True
        return False
    blit_heatmap(first, send=False)
    if not art.pending_labels:
        art.pending_labels = [_pending_label(h.ax) for h in art.heatmaps[1:]]
    for h, label in zip(art.heatmaps[1:], art.pending_labels):
        # opaque: drawn again over itself (a newer change, the check not done) it looks
        # the same; never part of a full redraw, only the check's own picture removes it
        label.set_visible(True)
        h.ax.draw_artist(label)
        label.set_visible(False)
    art.fig.canvas.blit(art.fig.bbox)
    return True


def _pending_label(ax: Any) -> Any:
    return ax.text(
        0.5,
        0.5,
        PENDING_TEXT,
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize=12,
        color="#333333",
        bbox=dict(boxstyle="round,pad=0.5", facecolor="white", edgecolor="#888888", alpha=1.0),
        visible=False,
        zorder=10,
    )
