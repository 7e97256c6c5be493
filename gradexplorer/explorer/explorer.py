"""The live explorer: ``explore(f, *args)`` (ipywidgets; pictures from plot.py).

Controls change a small state; one ``refresh`` recomputes the check at that
state and redraws the visible view's existing artists in place. With ipympl
active the figures are live canvases (click a cell to inspect it); without
it each view is an ``Image`` widget holding a PNG of the same figure.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import ipywidgets as W
import numpy as onp
from matplotlib.figure import Figure

from .. import gallery
from ..backends import get_backend
from ..core.calls import bind_call
from ..core.outputs import output_layout
from .computing import Computing
from .controls import close_tree, label_methods, make_controls
from .drawing import ViewDrawing
from .figures import close_figure, ipympl_active, new_figure
from .html import (
    SAVED_NOTE,
    STYLE,
    entry_html,
    error_html,
    point_text,
    stale_badge_html,
    status_html,
)
from .rerun import file_under_cell
from .views import (
    FIGSIZE,
    VIEWS,
    along,
    not_applicable,
    point_from,
    point_sliders,
    shape_of,
)
from .worker import Cancelled, Worker

__all__ = ["explore", "Explorer"]

MAX_SLIDERS = 6


def explore(f: Callable | None = None, *args: Any, wrt: Any = 0, **options: Any) -> Explorer:
    """Open the gradient explorer on ``f`` at ``args`` (a gallery menu when f is None).

    Parameters
    ----------
    f : callable, optional
        Written with ``autograd.numpy``; None opens a dropdown of
        :mod:`gradexplorer.gallery` examples.
    *args
        The starting point.
    wrt : int, str or sequence
        Inputs to explore.
    **options
        ``method``, ``rtol``, ``step`` starting values.

    Returns
    -------
    Explorer
        An ipywidgets ``VBox``: display it in a notebook.

    Examples
    --------
    >>> import autograd.numpy as anp
    >>> ex = explore(lambda x: anp.sin(x) * x, anp.linspace(0, 1, 3))
    >>> ex.badge.value.count("PASSED"), ex.tabs.titles[:3]
    (1, ('Jacobian', 'Check', 'Complex'))
    >>> ex.close()
    """
    return Explorer(f, *args, wrt=wrt, **options)


class Explorer(Computing, ViewDrawing, W.VBox):
    """Jacobian / Check / Complex / Hessian / Step sweep / Where views with live controls.

    The tabs are always the same six; a view that does not apply to f says why. With
    ipympl active, a change computes in a background thread: the Jacobian is shown
    first, the check follows, and a newer change cancels a computation still running
    (``wait()`` blocks until it is drawn). After an error the last good pictures stay,
    dimmed and marked stale, until a point that works comes back.

    Public widgets (drive them from Python in tests): ``point_sliders``,
    ``scale``, ``seed``, ``resample``, ``method``, ``auto_step``, ``step``,
    ``rtol``, ``dtype``, ``block``, ``row``, ``col``, ``zoom``, ``tabs``, ``badge``,
    ``status``, ``worst``, ``entry_info``, ``error``, ``gallery_menu``.
    """

    def __init__(
        self,
        f: Callable | None = None,
        *args: Any,
        wrt: Any = 0,
        method: str = "richardson",
        rtol: float | None = None,
        step: float | None = None,
        asynchronous: bool | None = None,
    ):
        super().__init__(layout=W.Layout(width="100%"))
        self.add_class("gx-explorer")
        self.live = ipympl_active()
        self.asynchronous = self.live if asynchronous is None else asynchronous
        self._lock = threading.RLock()
        self.figures: dict[str, Figure] = {}
        self.artists: dict[str, Any] = {}
        self.report = None
        self.generation = 0
        self.stale = False
        self._check_seconds = 0.0  # the last check's time: worth a Jacobian shown first?
        self._dirty: set[str] = set()
        self._closed = False
        self._loading = False
        self.views: list[str] = list(VIEWS)
        self._notes: dict[str, str | None] = {}
        for name, widget in make_controls(
            gallery.names(), f is not None, method=method, rtol=rtol, step=step
        ).items():
            setattr(self, name, widget)
        self.status.value = status_html("busy", 0)
        self.point_box = W.VBox()
        self.point_sliders: list[W.FloatSlider] = []
        self.tabs = W.Tab()
        for control in (self.method, self.step, self.rtol, self.block, self.scale, self.seed):
            control.observe(self._on_change, "value")
        self.auto_step.observe(self._on_auto_step, "value")
        self.dtype.observe(self._on_dtype, "value")
        self.resample.on_click(self._on_resample)
        self._sampling = W.HBox([self.scale, self.seed, self.resample])  # for many inputs
        self.row.observe(self._on_entry, "value")
        self.col.observe(self._on_entry, "value")
        self.zoom.observe(self._on_entry, "value")
        self.sweep_mode.observe(self._on_sweep, "value")
        self.sweep_step.observe(self._on_sweep, "value")
        self.tabs.observe(self._on_tab, "selected_index")
        self.gallery_menu.observe(self._on_gallery, "value")
        self._install_views()
        controls = W.VBox(
            [
                self.gallery_menu,
                self.point_box,
                W.HBox([self.method, self.dtype]),
                W.HBox([self.auto_step, self.step, self.step_note, self.rtol]),
                W.HBox([self.block, self.row, self.col, self.zoom]),
            ]
        )
        self.children = [
            W.HTML(STYLE),
            W.HTML(SAVED_NOTE),
            controls,
            self.error,
            W.HBox([self.badge, self.status]),
            self.tabs,
            self.sweep_box,  # below the tabs: showing it never moves the tab bar
            self.entry_info,
            self.worst,
        ]
        self._worker = Worker(self._compute) if self.asynchronous else None
        file_under_cell(self)  # a cell run again replaces its output: close the old explorers
        if f is None:
            self._load_example(self.gallery_menu.value)
        else:
            self.load(f, *args, wrt=wrt)

    # ------------------------------------------------------------ loading

    def _load_example(self, name: str) -> None:
        ex = gallery.get(name)
        self.load(ex.f, *ex.args(), wrt=ex.wrt)

    def load(self, f: Callable, *args: Any, wrt: Any = 0) -> None:
        """Explore another function (the figures and tabs are kept)."""
        self.f, self.base_args, self.wrt = f, tuple(args), wrt
        self._loading = True  # controls change during set-up: refresh once, at the end
        try:
            self._setup(f, args, wrt)
        except Exception as exc:
            self._fail(exc, "while setting up")
            return
        finally:
            self._loading = False
        self.report = None
        self.artists = {}
        self.refresh()

    def _setup(self, f, args, wrt):
        self.system = get_backend(None, args, f)
        call = bind_call(f, args, {}, wrt, constants_ok=True, kind_of=self.system.float_kind)
        self.call = call
        self.argnums = tuple(sel.slot for sel in call.selected)
        self.input_names = [sel.name for sel in call.selected]
        names = self.input_names
        with self.hold_trait_notifications():
            self.block.options = (["all inputs"] + names) if len(names) > 1 else names
            self.block.value = self.block.options[0]
            self.row.value = self.col.value = 0
        for old in self.point_sliders:  # the last function's: models on the page too
            close_tree(old)
        self.point_sliders = []
        if sum(s.real_size for s in call.specs) <= MAX_SLIDERS:
            self.point_sliders = point_sliders(call)
            for slider in self.point_sliders:
                slider.observe(self._on_change, "value")
            self.point_box.children = self.point_sliders
        else:
            self.point_box.children = [self._sampling]
        self.shape = shape_of(self.system.name, call, output_layout(f(*args)))
        self._notes = {name: not_applicable(name, self.shape) for name in VIEWS}
        label_methods(self.method, self.f, self.base_args, self.argnums)
        self._single = along(self, self.argnums[0])

    def _install_views(self) -> None:
        children = []
        for name in VIEWS:
            fig = self.figures[name] = new_figure(FIGSIZE[name], self.live, self._lock)
            children.append(fig.canvas if self.live else W.Image(format="png"))
            if self.live:
                fig.canvas.mpl_connect("button_press_event", self._on_click)
        self._view_widgets = dict(zip(VIEWS, children))
        self.tabs.children = children
        self.tabs.titles = VIEWS
        self.tabs.selected_index = 0

    # ------------------------------------------------------------ state

    def current_args(self) -> tuple:
        """The point the controls describe, in the chosen dtype."""
        args, _ = point_from(
            self.call,
            [s.value for s in self.point_sliders],
            self.seed.value,
            self.scale.value,
            self.dtype.value,
            None if self.system.capabilities.numpy_arrays else self.system.to_array,
        )
        return tuple(args)

    def _selected_wrt(self):
        if self.block.value == "all inputs" or len(self.argnums) == 1:
            return self.argnums if len(self.argnums) > 1 else self.argnums[0]
        names = list(self.block.options)[1:]
        return self.argnums[names.index(self.block.value)]

    def _is_current(self, generation: int) -> bool:
        return generation == self.generation and not self._closed

    # ------------------------------------------------------------ events

    def _on_change(self, change=None) -> None:
        self.refresh()

    def _on_dtype(self, change) -> None:
        # the tolerance follows the precision (sqrt(eps)); the user may move it after
        self._loading = True
        try:
            self.rtol.value = float(onp.sqrt(onp.finfo(change["new"]).eps))
        finally:
            self._loading = False
        self.refresh()

    def _on_auto_step(self, change) -> None:
        self.step.disabled = change["new"]
        self.refresh()

    def _on_resample(self, _button=None) -> None:
        self.seed.value = self.seed.value + 1  # observed: refreshes

    def _on_entry(self, change=None) -> None:
        with self._lock:
            self._show_entry()
            self._dirty.update(("Step sweep", "Graph"))  # they follow the selected entry
            self._mark_selection()
            zoomed = change is not None and change.get("owner") is self.zoom
            self._redraw_visible(selection_moved=True, limits_changed=zoomed)

    def _on_tab(self, change=None) -> None:
        self.sweep_box.layout.display = "flex" if self._visible() == "Graph" else "none"
        with self._lock:
            self._redraw_visible()

    def _on_sweep(self, change=None) -> None:
        with self._lock:
            self._dirty.add("Graph")
            self._redraw_visible()

    def _on_gallery(self, change) -> None:
        self._load_example(change["new"])

    def _on_click(self, event) -> None:
        if event.inaxes is None or event.xdata is None or self.report is None:
            return
        art = self.artists.get(self._visible())
        if getattr(art, "kind", None) == "plane" and len(self.point_sliders) == 2:
            if event.inaxes is art.artists["point"].axes:  # a click moves the point there
                self._loading = True  # one refresh, for both coordinates
                try:
                    self.point_sliders[0].value = float(event.xdata)
                finally:
                    self._loading = False
                self.point_sliders[1].value = float(event.ydata)
            return
        m, n = self.report.shape
        col, row = int(round(event.xdata)), int(round(event.ydata))
        if 0 <= row < m and 0 <= col < n:
            with self.hold_trait_notifications():
                self.row.value, self.col.value = row, col

    # ------------------------------------------------------------ compute

    def refresh(self) -> None:
        """Recompute at the controls' state and redraw the visible view (in the
        background when live: the newest change wins, older ones are cancelled)."""
        if self._closed or self._loading:
            return
        self.generation += 1
        generation = self.generation
        self.status.value = status_html("busy", generation)
        try:
            request = (generation, self.current_args(), self._settings())
        except Exception as exc:
            self._fail(exc, "while reading the controls")
            return
        if self._worker is not None:
            self._worker.submit(request)
        else:
            try:
                self._compute(request)
            except Cancelled:
                pass

    def wait(self, timeout: float | None = 60) -> bool:
        """Block until the newest change is computed and drawn (False on timeout)."""
        return True if self._worker is None else self._worker.wait(timeout)

    # ------------------------------------------------------------ text

    def _show_entry(self) -> None:
        r = self.report
        if r is not None and r.analytic is not None:
            i, j = min(self.row.value, r.shape[0] - 1), min(self.col.value, r.shape[1] - 1)
            self.entry_info.value = entry_html(r, i, j)

    def _show_error(self, exc: BaseException, where: str = "") -> None:
        self.error.value = error_html(exc, where)

    def _fail(self, exc: BaseException, where: str, args: tuple | None = None) -> None:
        """Show the error, naming the point; keep the last pictures, dimmed and marked."""
        point = point_text(self.input_names, [args[s] for s in self.argnums]) if args else ""
        self.error.value = error_html(exc, where or (f"at {point}" if point else ""))
        if self.report is not None:
            self._set_stale(True)
            self.badge.value = stale_badge_html(point_text(self.input_names, self._last_point()))
        else:
            self.badge.value = stale_badge_html("")

    def _last_point(self) -> list:
        return [self.args[s] for s in self.argnums] if getattr(self, "args", None) else []

    def _set_stale(self, stale: bool) -> None:
        self.stale = stale
        if stale:
            self.tabs.add_class("gx-stale")
        else:
            self.tabs.remove_class("gx-stale")

    # ------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Release the figures, the widgets and the background thread."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        if sys.is_finalizing():  # collected at exit: nothing to release, imports fail
            return
        if getattr(self, "_worker", None) is not None:
            self._worker.stop()
        for name in list(self.figures):
            close_figure(self.figures.pop(name), self.live)
        self.artists.clear()
        owned = [v for v in vars(self).values() if isinstance(v, W.Widget)]
        for w in [*self.children, *owned, *self.point_sliders, *self._view_widgets.values()]:
            close_tree(w)
        self.layout.close()
        super().close()
