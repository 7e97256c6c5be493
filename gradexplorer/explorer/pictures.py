"""The views matplotlib draws better than a canvas of cells: a PNG inside the pane.

Step sweep, Where, Graph, Landscape and Linear map keep one plain ``Figure`` each
(no pyplot, no ipympl) and move its artists in place with the ``update_*``
functions of :mod:`gradexplorer.display`; the picture goes to the page as PNG
bytes (a comm buffer), with where each clickable axes lies in it, so that a click
on the Landscape's plane moves the point.
"""

from __future__ import annotations

import functools
import io
import threading
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .. import display as D
from ..check.sweep import step_sweep
from ..display import plots as P
from ..errors import GradExplorerError
from .points import precision_for

__all__ = ["Pictures", "FIGSIZE", "DPI"]

DPI = 100  # a figure's inches are a hundred CSS pixels
#: No picture wider than 860 px: the output width of a notebook in a 1280-px window
#: with JupyterLab's file browser open.
FIGSIZE = {
    "Step sweep": (7.0, 5.0),
    "Where": (8.6, 5.6),
    "Graph": (8.6, 5.0),
    "Landscape": (8.6, 5.0),
    "Linear map": (8.6, 5.4),
}


def _serial(method):
    """One picture at a time: the worker's idle fill and a tab click could draw the same
    view at once, one clearing the figure the other was saving (a blank picture)."""

    @functools.wraps(method)
    def serial(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return serial


class Pictures:
    """One figure and its artists per picture view, updated in place."""

    def __init__(self) -> None:
        self.figures: dict[str, Figure] = {}
        self.artists: dict[str, Any] = {}
        self._lock = threading.RLock()

    def figure(self, name: str, fresh: bool = False) -> Figure:
        fig = self.figures.get(name)
        if fig is None:
            fig = self.figures[name] = Figure(figsize=FIGSIZE[name], dpi=DPI, layout="constrained")
            FigureCanvasAgg(fig)
        if fresh:
            fig.clear()
            fig.set_size_inches(*FIGSIZE[name])
            fig.set_layout_engine("constrained")
            self.artists.pop(name, None)
        return fig

    @_serial
    def close(self) -> None:
        for fig in self.figures.values():
            fig.clear()
        self.figures.clear()
        self.artists.clear()

    def png(self, name: str, clickable: tuple = ()) -> tuple[dict, bytes]:
        """The figure as PNG, and the spec naming its clickable axes' boxes (in the
        picture's pixels, from its top left) and limits."""
        fig = self.figures[name]
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=DPI)
        height = fig.bbox.height
        axes = []
        for label, ax in clickable:
            x0, y0, x1, y1 = ax.get_window_extent().extents
            axes.append(
                {
                    "name": label,
                    "bbox": [float(x0), float(height - y1), float(x1), float(height - y0)],
                    "xlim": [float(v) for v in ax.get_xlim()],
                    "ylim": [float(v) for v in sorted(ax.get_ylim())],
                }
            )
        spec = {"kind": "image", "width": int(round(fig.bbox.width)), "axes": axes}
        return spec, buf.getvalue()

    # ------------------------------------------------------------ the views

    @_serial
    def step_sweep(self, f, args, entry: tuple, wrt: Any, dtype: str) -> tuple[dict, bytes]:
        sweep = step_sweep(f, *args, entry=entry, wrt=wrt, precision=precision_for(dtype))
        art = self.artists.get("Step sweep")
        if art is None or not P.update_step_sweep(art, sweep):
            fig = self.figure("Step sweep", fresh=True)
            self.artists["Step sweep"] = P.draw_step_sweep(sweep, fig.add_subplot())
        return self.png("Step sweep")

    @_serial
    def where(self, f, args, argnums: tuple, dtype: str) -> tuple[dict, bytes]:
        from ..display.graph import plot_localization
        from ..locate.localize import locate

        loc = locate(f, *args, wrt=argnums, precision=precision_for(dtype))
        plot_localization(loc, self.figure("Where", fresh=True))
        self.artists["Where"] = loc
        return self.png("Where")

    @_serial
    def graph(self, f, args, slot: int, entry: tuple, mode: str, step: int) -> tuple[dict, Any]:
        """The AD sweeps of the selected entry; returns the frame and the sweeps (None
        with a note when f is too big to step through)."""
        from ..locate.sweeps import ad_sweeps

        try:
            sweeps = ad_sweeps(f, *args, wrt=slot, seed=entry[1], cotangent=entry[0])
        except (ValueError, TypeError, GradExplorerError) as exc:  # too big, several outputs
            self.artists.pop("Graph", None)
            note = f"The Graph view steps through small functions only. {exc}"
            return {"kind": "note", "text": note}, None
        step = min(step, len(sweeps.steps(mode)) - 1)
        art = self.artists.get("Graph")
        if art is None or not D.update_ad_sweep(art, sweeps, mode, step):
            art = D.plot_ad_sweep(
                sweeps, mode=mode, step=step, fig=self.figure("Graph", fresh=True)
            )
            self.artists["Graph"] = art
        art.sweeps = sweeps
        return self.png("Graph"), sweeps

    @_serial
    def landscape(self, single, x) -> tuple[dict, bytes]:
        art = self.artists.get("Landscape")
        if art is None or not D.update_landscape(art, single, x):
            art = D.plot_landscape(single, x, fig=self.figure("Landscape", fresh=True))
            self.artists["Landscape"] = art
        point = art.artists.get("point")
        clickable = (("plane", point.axes),) if art.kind == "plane" and point is not None else ()
        return self.png("Landscape", clickable)

    @_serial
    def linear_map(self, single, x) -> tuple[dict, bytes]:
        art = self.artists.get("Linear map")
        if art is None or not D.update_linear_map(art, single, x):
            art = D.plot_linear_map(single, x, fig=self.figure("Linear map", fresh=True))
            self.artists["Linear map"] = art
        return self.png("Linear map")
