"""The explorer's figures: live ipympl canvases, or plain Figures shown as PNG.

Live figures are made without pyplot (an ipympl ``Canvas`` on a plain
``Figure``): pyplot would keep every explorer's figures alive, warn after 20
of them, and show them a second time at the end of the cell.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from typing import Any

import matplotlib
import numpy as np
from matplotlib.figure import Figure

__all__ = ["ipympl_active", "new_figure", "close_figure", "DPI"]

#: 100 dpi: a figure's inches are a hundred CSS pixels, so sizes can be planned in pixels.
DPI = 100


def ipympl_active() -> bool:
    backend = matplotlib.get_backend().lower()
    return "ipympl" in backend or backend.endswith("widget")


class ViewFigure(Figure):
    """A view's figure: cleared for a fresh drawing, it lays out again (constrained);
    once laid out the explorer freezes it, so that updates in place skip the layout."""

    def clear(self, keep_observers: bool = False) -> None:
        super().clear(keep_observers)
        self.set_layout_engine("constrained")


def new_figure(size: tuple, live: bool, lock: Any = None) -> Figure:
    """A figure for one view: an ipympl canvas when live, with no toolbar (it covered
    tick labels), header or footer. ``lock`` (a lock) is held while the canvas renders
    on the front end's request, so that a computation drawing from another thread
    never changes artists under it."""
    fig = ViewFigure(figsize=size, dpi=DPI, layout="constrained")
    if live:
        from ipympl.backend_nbagg import FigureManager

        canvas = _fast_canvas_class()(fig)
        FigureManager(canvas, 0)
        # the canvas's size, known from the start: left at (0, 0) the page would learn it
        # in a round trip queued behind every other output, and cells would grow seconds
        # after they were shown (clicks on a tab bar then land where it was)
        canvas._size = (int(round(fig.bbox.width)), int(round(fig.bbox.height)))
        canvas.toolbar_visible = False
        canvas.header_visible = False
        canvas.footer_visible = False
        canvas.resizable = False
        if lock is not None:
            canvas.manager.handle_json = _locked(canvas.manager.handle_json, lock)
    return fig


@functools.cache
def _fast_canvas_class() -> type:
    """ipympl's canvas, encoding its frames for speed rather than size.

    Every update is sent as a PNG of the changed pixels; PIL's default compression
    spent 35-60 ms on a 256x256 Check view's frame, level 1 a third of that for a
    frame ~1.3x larger (the page is on this machine or a local network).
    """
    from ipympl.backend_nbagg import Canvas
    from PIL import Image

    class FastCanvas(Canvas):
        def get_diff_image(self) -> bytes | None:
            if not self._png_is_old:
                return None
            pixels = np.asarray(self.get_renderer().buffer_rgba())
            frame = pixels.view(np.uint32).squeeze(2)  # one integer per pixel
            full = (
                self._force_full
                or frame.shape != self._last_buff.shape
                or bool((pixels[:, :, 3] != 255).any())  # cannot overlay transparency
            )
            self.set_image_mode("full" if full else "diff")
            output = frame if full else np.where(frame != self._last_buff, frame, 0)
            self._last_buff = frame.copy()
            self._force_full = False
            self._png_is_old = False
            with io.BytesIO() as png:
                rgba = output.view(np.uint8).reshape((*output.shape, 4))
                Image.fromarray(rgba).save(png, format="png", compress_level=1)
                return png.getvalue()

    return FastCanvas


def _locked(handler: Callable, lock: Any) -> Callable:
    def handle(content):
        with lock:
            return handler(content)

    return handle


def close_figure(fig: Any, live: bool) -> None:
    """Release a view's figure (its canvas widget, when live)."""
    if fig is None:
        return
    if live and hasattr(fig.canvas, "close"):
        fig.canvas.close()
    fig.clear()
