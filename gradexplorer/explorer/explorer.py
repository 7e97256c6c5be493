"""The live explorer: ``explore(f, *args)``. The kernel computes; the page draws.

Controls are ipywidgets; each view is a :class:`~gradexplorer.explorer.pane.Pane`
(anywidget) that draws, in the browser, the numbers the kernel sends. A change of a
control computes one check (in a background thread inside a kernel) and sends the
visible view's numbers; the other views follow when the kernel is idle, so that the
saved notebook keeps every view's last picture.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import ipywidgets as W

from .. import gallery
from ..backends import get_backend
from ..core.calls import bind_call
from ..core.outputs import output_layout
from .computing import Computing
from .controls import close_tree, label_methods, make_controls
from .drawing import ViewDrawing
from .html import SAVED_NOTE, STYLE, status_html
from .notices import Notices
from .pane import Pane
from .pictures import Pictures
from .points import along, point_from, point_sliders
from .registry import VIEW_NAMES, VIEWS, pending_spec, shape_of
from .rerun import file_under_cell
from .snapshot import Snapshot
from .worker import Cancelled, Worker, in_kernel

__all__ = ["explore", "Explorer"]

MAX_SLIDERS = 6


def explore(f: Callable | None = None, *args: Any, wrt: Any = None, **options: Any) -> Explorer:
    """Open the gradient explorer on ``f`` at ``args`` (a gallery menu when f is None).

    Parameters
    ----------
    f : callable, optional
        Written with ``autograd.numpy`` (or torch / jax); None opens a dropdown of
        :mod:`gradexplorer.gallery` examples.
    *args
        The starting point.
    wrt : int, str, sequence of them, or None
        Inputs to explore. None, as in ``check_grads``: every argument that holds
        a float or complex value (one verdict with ``check_grads`` on the same f
        and point); the others are held constant.
    **options
        ``method``, ``rtol`` (None: the checker's own, as ``check_grads``), ``step``.

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


class Explorer(Computing, ViewDrawing, Notices, W.VBox):
    """Jacobian / Check / Complex / Hessian / Step sweep / Where / Graph / Landscape /
    Linear map views with live controls.

    The tabs are always the same; a view that does not apply to f says why. Inside a
    kernel a change computes in a background thread: the Jacobian is shown first, the
    check follows, and a newer change cancels a computation still running (``wait()``
    blocks until it is drawn). After an error the last good pictures stay, dimmed and
    marked stale, until a point that works comes back.

    Public widgets (drive them from Python in tests): ``point_sliders``, ``scale``,
    ``seed``, ``resample``, ``method``, ``auto_step``, ``step``, ``own_rtol``, ``rtol``,
    ``dtype``, ``block``, ``row``, ``col``, ``zoom``, ``tabs``, ``panes``, ``badge``,
    ``status``, ``worst``, ``entry_info``, ``error``, ``note``, ``gallery_menu``.
    """

    def __init__(
        self,
        f: Callable | None = None,
        *args: Any,
        wrt: Any = None,
        method: str = "richardson",
        rtol: float | None = None,
        step: float | None = None,
        asynchronous: bool | None = None,
    ):
        super().__init__(layout=W.Layout(width="100%"))
        self.add_class("gx-explorer")
        self.asynchronous = in_kernel() if asynchronous is None else asynchronous
        self._lock = threading.RLock()
        self._view_locks = {name: threading.Lock() for name in VIEW_NAMES}
        self.pictures = Pictures()
        self.report = None
        self.generation = 0
        self.published = 0  # reports published: a view computed from an older one is stale
        self.stale = False
        self._check_seconds = 0.0  # the last check's time: worth a Jacobian shown first?
        self._dirty: set[str] = set()
        self._closed = False
        self._loading = False
        self.views: list[str] = list(VIEW_NAMES)
        self._notes: dict[str, str | None] = {}
        self._labels_cache: tuple = (None, None)
        self.view_f: Callable | None = None
        for name, widget in make_controls(
            gallery.names(), f is not None, method=method, rtol=rtol, step=step
        ).items():
            setattr(self, name, widget)
        self.note = W.HTML("")
        self.note.add_class("gx-note-line")
        self.status.value = status_html("busy", 0)
        self.point_box = W.VBox()
        self.point_sliders: list[W.FloatSlider] = []
        self.panes = {
            name: Pane(view=name, on_message=self._on_pane, spec=pending_spec(name))
            for name in VIEW_NAMES
        }
        self.tabs = W.Tab(children=list(self.panes.values()), titles=VIEW_NAMES, selected_index=0)
        for control in (self.method, self.step, self.rtol, self.block, self.scale, self.seed):
            control.observe(self._on_change, "value")
        self.own_rtol.observe(self._on_own_rtol, "value")
        self.auto_step.observe(self._on_auto_step, "value")
        self.dtype.observe(self._on_change, "value")
        self.resample.on_click(self._on_resample)
        self._sampling = W.HBox([self.scale, self.seed, self.resample])  # for many inputs
        self.row.observe(self._on_entry, "value")
        self.col.observe(self._on_entry, "value")
        self.zoom.observe(self._on_entry, "value")
        self.sweep_mode.observe(self._on_sweep, "value")
        self.sweep_step.observe(self._on_sweep, "value")
        self.tabs.observe(self._on_tab, "selected_index")
        self.gallery_menu.observe(self._on_gallery, "value")
        controls = W.VBox(
            [
                self.gallery_menu,
                self.point_box,
                W.HBox([self.method, self.dtype]),
                W.HBox([self.auto_step, self.step, self.step_note]),
                W.HBox([self.own_rtol, self.rtol, self.rtol_note]),
                W.HBox([self.block, self.row, self.col, self.zoom]),
            ]
        )
        self.children = [
            W.HTML(STYLE),
            W.HTML(SAVED_NOTE),
            controls,
            self.error,
            W.HBox([self.badge, self.status]),
            self.note,
            self.tabs,
            self.sweep_box,  # below the tabs: showing it never moves the tab bar
            self.entry_info,
            self.worst,
        ]
        self.snapshot = Snapshot(self)
        self._worker = (
            Worker(self._compute, idle=self.fill_one, idle_after=IDLE_AFTER)
            if self.asynchronous
            else None
        )
        file_under_cell(self)  # a cell run again replaces its output: close the old explorers
        if f is None:
            self._load_example(self.gallery_menu.value)
        else:
            self.load(f, *args, wrt=wrt)

    def _ipython_display_(self) -> None:
        """The widget, and below it an output holding every view's last picture: what a
        saved notebook shows without widget state (after an autosave) and nbconvert."""
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)
        self.snapshot.display()

    # ------------------------------------------------------------ loading

    def _load_example(self, name: str) -> None:
        ex = gallery.get(name)
        self.load(ex.f, *ex.args(), wrt=ex.wrt)

    def load(self, f: Callable, *args: Any, wrt: Any = None) -> None:
        """Explore another function (the panes and tabs are kept)."""
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
        self.pictures.close()
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
            self.point_sliders = point_sliders(call, self.system.to_numpy)
            for slider in self.point_sliders:
                slider.observe(self._on_change, "value")
            self.point_box.children = self.point_sliders
        else:
            self.point_box.children = [self._sampling]
        self.shape = shape_of(self.system, call, output_layout(f(*args)))
        self._notes = {v.name: v.note(self.shape) for v in VIEWS}
        label_methods(self.method, self.f, self.base_args, self.argnums)
        self.single = along(self, self.argnums[0])

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
            self.system.to_numpy,
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

    def _on_own_rtol(self, change) -> None:
        self.rtol.disabled = not change["new"]
        self.rtol_note.value = (
            "" if change["new"] else '<span style="color:#555">checker\'s default</span>'
        )
        self.refresh()

    def _on_auto_step(self, change) -> None:
        self.step.disabled = change["new"]
        self.refresh()

    def _on_resample(self, _button=None) -> None:
        self.seed.value = self.seed.value + 1  # observed: refreshes

    def _on_entry(self, change=None) -> None:
        with self._lock:
            self._show_entry()
            self._selection_moved()

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

    def _on_pane(self, pane: Pane, content: dict, buffers: list) -> None:
        """A message from the page: a cell clicked, a window zoomed into, a click on
        the Landscape's plane, a view's picture for the saved notebook."""
        kind = content.get("type")
        if kind == "select" and self.report is not None:
            m, n = self.report.shape
            row, col = int(content["row"]), int(content["col"])
            if 0 <= row < m and 0 <= col < n:
                with self.hold_trait_notifications():
                    self.row.value, self.col.value = row, col
        elif kind == "tile":
            self._send_tile(pane, content)
        elif kind == "click" and content.get("axes") == "plane":
            self.move_point(float(content["x"]), float(content["y"]))
        elif kind == "picture" and buffers:
            self.snapshot.keep(pane.view, content.get("key"), bytes(buffers[0]))

    def move_point(self, x: float, y: float) -> None:
        """Move a two-coordinate point (a click on the Landscape's plane): one refresh."""
        if len(self.point_sliders) != 2:
            return
        self._loading = True
        try:
            self.point_sliders[0].value = x
        finally:
            self._loading = False
        self.point_sliders[1].value = y

    # ------------------------------------------------------------ compute

    def refresh(self) -> None:
        """Recompute at the controls' state and redraw the visible view (in the
        background inside a kernel: the newest change wins, older ones are cancelled)."""
        if self._closed or self._loading:
            return
        self.generation += 1
        generation = self.generation
        try:
            request = (generation, self.current_args(), self._settings())
        except Exception as exc:
            self.status.value = status_html("idle", generation)
            self._fail(exc, "while reading the controls")
            return
        if self._worker is not None:
            # the check starts while the status is sent; under the lock, so that its
            # "idle" (set under it too) cannot come before this "busy"
            with self._lock:
                self._worker.submit(request)
                self.status.value = status_html("busy", generation)
        else:
            self.status.value = status_html("busy", generation)
            try:
                self._compute(request)
            except Cancelled:
                pass

    def wait(self, timeout: float | None = 60) -> bool:
        """Block until the newest change is computed and drawn (False on timeout)."""
        return True if self._worker is None else self._worker.wait(timeout)

    # ------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Release the panes, the widgets and the background thread."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        if sys.is_finalizing():  # collected at exit: nothing to release, imports fail
            return
        if getattr(self, "_worker", None) is not None:
            self._worker.stop()
        self.pictures.close()
        owned = [v for v in vars(self).values() if isinstance(v, W.Widget)]
        for w in [*self.children, *owned, *self.point_sliders, *self.panes.values()]:
            close_tree(w)
        self.layout.close()
        super().close()


#: Seconds without a change before the views nobody looks at are computed (for the
#: saved pictures): long enough that a user moving a slider never waits for them.
IDLE_AFTER = 2.0
