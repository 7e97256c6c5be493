"""One view of the explorer in the page: an anywidget that draws what the kernel sends.

The kernel sends numbers, not pictures: a JSON ``spec`` (what to draw), float32
arrays as comm buffers in slots ``b0``..``b5`` (never JSON lists), and, for the
views matplotlib draws better, a PNG. The page (``static/pane.js``, a plain ES
module shipped in the package: no build step, nothing fetched from a CDN) colours
the cells with matplotlib's own colormaps, sent once as lookup tables. A slot that
did not change is not sent again: a frame costs the numbers that changed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import numpy as onp
import traitlets as T

from ..display.scales import CMAPS, lut

__all__ = ["Pane", "SLOTS", "f32"]

STATIC = Path(__file__).with_name("static")
SLOTS = ("b0", "b1", "b2", "b3", "b4", "b5")


def f32(M: Any) -> bytes:
    """A matrix as the page reads it: C-ordered float32 bytes.

    >>> len(f32(onp.ones((2, 3))))
    24
    """
    return onp.ascontiguousarray(onp.asarray(M, dtype=onp.float32)).tobytes()


class Pane(anywidget.AnyWidget):
    """The page's side of one view. ``show(spec, slots, png)`` sends a frame: only the
    traits whose value changed go to the page, in one message.

    >>> p = Pane(view="Jacobian")
    >>> p.show({"kind": "note", "text": "why not"})
    >>> p.spec["text"], sorted(p.luts) == sorted(set(CMAPS.values()))
    ('why not', True)
    """

    _esm = STATIC / "pane.js"
    _css = STATIC / "pane.css"

    view = T.Unicode("").tag(sync=True)
    spec = T.Dict({"kind": "pending", "text": "drawing…"}).tag(sync=True)
    labels = T.Dict().tag(sync=True)
    luts = T.Dict().tag(sync=True)
    png = T.Bytes(b"").tag(sync=True)
    tile = T.Dict().tag(sync=True)
    b0 = T.Bytes(b"").tag(sync=True)
    b1 = T.Bytes(b"").tag(sync=True)
    b2 = T.Bytes(b"").tag(sync=True)
    b3 = T.Bytes(b"").tag(sync=True)
    b4 = T.Bytes(b"").tag(sync=True)
    b5 = T.Bytes(b"").tag(sync=True)

    def __init__(self, view: str = "", on_message: Callable | None = None, **kwargs: Any):
        super().__init__(view=view, **kwargs)
        self.luts = {name: lut(name) for name in sorted(set(CMAPS.values()))}
        self._on_message = on_message
        self.on_msg(self._handle)

    def show(
        self,
        spec: dict,
        slots: dict | None = None,
        png: bytes | None = None,
        labels: dict | None = None,
    ) -> None:
        """Send a frame: the spec, the arrays by slot (bytes), a picture, the labels."""
        with self.hold_sync():
            for name, data in (slots or {}).items():
                if getattr(self, name) != data:
                    setattr(self, name, data)
            if png is not None and png != self.png:
                self.png = png
            if labels is not None and labels != self.labels:
                self.labels = labels
            if spec != self.spec:
                self.spec = spec

    def _handle(self, _widget: Any, content: dict, buffers: list) -> None:
        if self._on_message is not None:
            self._on_message(self, content, buffers)
