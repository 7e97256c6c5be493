"""A check's picture cut into files: the Jacobians, |difference| and violation
heatmaps as separate PNGs (for test-run results one opens one at a time).

They are cut from one :func:`~gradexplorer.display.plots.draw_check` figure,
so each carries the same outlines of the failing entries, the same star on
the worst and the same shared scale of analytic and numeric as the whole.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as onp
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.image import imsave
from matplotlib.transforms import Bbox

from .heatmap import figure_png
from .plots import draw_check

__all__ = ["check_pictures", "PANELS"]

#: The pictures of a full-mode check, by file stem: which heatmaps of
#: draw_check's 2 x 2 grid each holds (analytic, numeric | |diff|, violation).
PANELS = {"jacobian": (0, 1), "diff": (2,), "violation": (3,)}
#: The figure the panels are cut from, in inches.
_FIGSIZE = (13.0, 9.0)
#: Padding around a cut panel, in inches (room for the colour bar's labels).
_PAD = 0.08


def check_pictures(report: Any, dpi: int = 110) -> dict[str, bytes]:
    """PNG bytes by name: ``jacobian`` (analytic beside numeric), ``diff`` and
    ``violation`` for a full-mode report; ``located`` (the entries group
    testing found) for a fast-mode one.

    >>> import autograd.numpy as anp, gradexplorer as gx
    >>> pngs = check_pictures(gx.check_grads(anp.sin, anp.ones(2)))
    >>> sorted(pngs), pngs["diff"][:4]
    (['diff', 'jacobian', 'violation'], b'\\x89PNG')
    """
    if dpi <= 0:
        raise ValueError(f"dpi must be > 0; got {dpi}")
    # wider than a notebook's figure: a file is opened on its own, and cells wide
    # enough for their values keep the written numbers apart
    if report.analytic is None:  # fast mode: one picture of the located entries
        return {"located": figure_png(draw_check(report).fig, dpi=dpi)}
    art = draw_check(report, Figure(figsize=_FIGSIZE, layout="constrained"))
    fig = art.fig
    fig.set_dpi(dpi)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # once: every panel is cut from these pixels
    renderer = canvas.get_renderer()
    pixels = onp.asarray(canvas.buffer_rgba())
    pad = _PAD * dpi
    out = {}
    for name, which in PANELS.items():
        boxes = []
        for k in which:
            h = art.heatmaps[k]
            boxes += [h.ax.get_tightbbox(renderer), h.colorbar.ax.get_tightbbox(renderer)]
        out[name] = _cut_png(pixels, Bbox.union(boxes).padded(pad))
    return out


def _cut_png(pixels: onp.ndarray, box: Bbox) -> bytes:
    """The pixels inside box (display coordinates: y up from the bottom) as PNG."""
    height, width = pixels.shape[:2]
    x0, x1 = max(int(box.x0), 0), min(int(onp.ceil(box.x1)), width)
    top, bottom = max(int(height - box.y1), 0), min(int(onp.ceil(height - box.y0)), height)
    buf = io.BytesIO()
    imsave(buf, pixels[top:bottom, x0:x1], format="png")
    return buf.getvalue()
