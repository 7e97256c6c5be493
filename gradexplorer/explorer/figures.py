"""The explorer's figures: live ipympl canvases, or plain Figures shown as PNG.

Live figures are made without pyplot (an ipympl ``Canvas`` on a plain
``Figure``): pyplot would keep every explorer's figures alive, warn after 20
of them, and show them a second time at the end of the cell.
"""

from __future__ import annotations

import base64
import functools
import io
import threading
import time
from collections.abc import Callable
from typing import Any

import ipywidgets as W
import matplotlib
import numpy as np
from matplotlib.figure import Figure

from .controls import close_tree
from .png import encode_png

__all__ = ["ipympl_active", "new_figure", "close_figure", "DPI"]

#: 100 dpi: a figure's inches are a hundred CSS pixels, so sizes can be planned in pixels.
DPI = 100
#: Seconds without a new frame before a live canvas stores its picture for saving.
KEEP_PICTURE_AFTER = 0.3
#: Seconds a background thread pauses after sending a frame, so the kernel's IOPub
#: thread can take the GIL and put the frame on the wire before the computation goes on.
HAND_OVER = 0.001


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
    """ipympl's canvas, encoding its frames for speed rather than size, and keeping its
    last picture in the widget's state (what a saved notebook shows when reopened).

    Every update is sent as a PNG of the changed pixels, encoded for speed rather
    than size (:func:`~gradexplorer.explorer.png.encode_png`; the page is on this
    machine or a local network).

    ipympl's page records the picture it showed *before* each frame as the state to
    save: a canvas drawn once was saved blank. So once frames stop for a moment,
    the canvas sends its last frame as that state itself.
    """
    from ipympl.backend_nbagg import Canvas
    from ipywidgets import DOMWidget
    from PIL import Image

    class FastCanvas(Canvas):
        def send_binary(self, data: bytes) -> None:
            super().send_binary(data)
            if not self.syncing_data_url:  # else ipympl keeps the state itself
                self._keep_picture_soon()
            if threading.current_thread() is not threading.main_thread():
                # the frame only leaves the kernel when the IOPub thread gets the GIL;
                # a check going on in this thread held it for 15-20 ms per frame
                time.sleep(HAND_OVER)

        def _keep_picture_soon(self) -> None:
            timer = getattr(self, "_picture_timer", None)
            if timer is not None:
                timer.cancel()
            self._picture_timer = threading.Timer(KEEP_PICTURE_AFTER, self.keep_picture)
            self._picture_timer.daemon = True
            self._picture_timer.start()

        def keep_picture(self) -> None:
            """Store the picture on the page as the widget state a saved notebook keeps."""
            frame = self._last_buff
            if self.comm is None or frame.ndim != 2 or not frame.size:  # closed, or no frame
                return
            with io.BytesIO() as png:
                rgba = frame.view(np.uint8).reshape((*frame.shape, 4))
                Image.fromarray(rgba).save(png, format="png", compress_level=6)
                encoded = base64.b64encode(png.getvalue()).decode("ascii")
            # as the page stores it; ipympl's own send_state leaves it out once live
            self._data_url = "data:image/png;base64," + encoded
            DOMWidget.send_state(self, key="_data_url")

        def close(self) -> None:
            timer = getattr(self, "_picture_timer", None)
            if timer is not None:
                timer.cancel()
            super().close()

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
            return encode_png(output.view(np.uint8).reshape((*output.shape, 4)), level=1)

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
        # ipympl's toolbar is a widget of its own, with its layout: a canvas closes
        # neither, and the page would be sent both again on every reload
        toolbar = getattr(fig.canvas, "toolbar", None)
        if isinstance(toolbar, W.Widget):
            close_tree(toolbar)
        fig.canvas.close()
    fig.clear()
