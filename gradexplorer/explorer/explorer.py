"""The live explorer: ``explore(f, *args)`` (ipywidgets; pictures from plot.py).

Controls change a small state; one ``refresh`` recomputes the check at that
state and redraws the visible view's existing artists in place. With ipympl
active the figures are live canvases (click a cell to inspect it); without
it each view is an ``Image`` widget holding a PNG of the same figure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as W
import numpy as onp
from matplotlib.figure import Figure

from .. import gallery
from ..backends import get_backend
from ..check.api import check_grads
from ..core.calls import bind_call
from ..core.outputs import output_layout
from ..display import plots as P
from ..fd.steps import METHODS
from .controls import close_tree, log_slider
from .figures import close_figure, ipympl_active, new_figure
from .html import badge_html, entry_html, error_html, worst_html
from .views import AUTOGRAD_ONLY, FIGSIZE, draw_view, point_from, point_sliders

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
    >>> ex.badge.value.count("PASSED")
    1
    >>> ex.close()
    """
    return Explorer(f, *args, wrt=wrt, **options)


class Explorer(W.VBox):
    """Jacobian / check / complex / Hessian / step-sweep views with live controls.

    The "Where" view traces f and names the first operation whose own
    derivative is wrong (:func:`gradexplorer.locate`).

    Public widgets (drive them from Python in tests): ``point_sliders``,
    ``scale``, ``seed``, ``resample``, ``method``, ``auto_step``, ``step``,
    ``rtol``, ``dtype``, ``block``, ``row``, ``col``, ``tabs``, ``badge``,
    ``worst``, ``entry_info``, ``error``, ``gallery_menu``.
    """

    def __init__(
        self,
        f: Callable | None = None,
        *args: Any,
        wrt: Any = 0,
        method: str = "richardson",
        rtol: float | None = None,
        step: float | None = None,
    ):
        super().__init__(layout=W.Layout(width="100%"))
        self.live = ipympl_active()
        self.figures: dict[str, Figure] = {}
        self.artists: dict[str, Any] = {}
        self.report = None
        self._dirty: set[str] = set()
        self._closed = False
        self._loading = False
        self.views: list[str] = []
        self._view_widgets: dict[str, W.Widget] = {}
        self.error = W.HTML("")
        self.badge = W.HTML("")
        self.worst = W.HTML("")
        self.entry_info = W.HTML("")
        self.gallery_menu = W.Dropdown(
            options=gallery.names(),
            description="example",
            layout=W.Layout(display="none" if f else "flex"),
        )
        self.method = W.Dropdown(options=list(METHODS), value=method, description="FD method")
        self.auto_step = W.Checkbox(value=step is None, description="auto step")
        self.step = log_slider("step", step or 1e-5, -12, -1, disabled=step is None)
        self.rtol = log_slider("rtol", rtol or float(onp.sqrt(onp.finfo(float).eps)), -12, -1)
        self.dtype = W.ToggleButtons(options=["float64", "float32"], description="dtype")
        self.block = W.Dropdown(description="input")
        self.scale = log_slider("scale", 1.0, -8, 8)
        self.seed = W.IntText(value=0, description="seed")
        self.resample = W.Button(description="re-sample")
        self.row = W.BoundedIntText(value=0, min=0, max=0, description="row")
        self.col = W.BoundedIntText(value=0, min=0, max=0, description="col")
        self.point_box = W.VBox()
        self.point_sliders: list[W.FloatSlider] = []
        self.tabs = W.Tab()
        for control in (
            self.method,
            self.step,
            self.rtol,
            self.block,
            self.scale,
            self.seed,
        ):
            control.observe(self._on_change, "value")
        self.auto_step.observe(self._on_auto_step, "value")
        self.dtype.observe(self._on_dtype, "value")
        self.resample.on_click(self._on_resample)
        self.row.observe(self._on_entry, "value")
        self.col.observe(self._on_entry, "value")
        self.tabs.observe(self._on_tab, "selected_index")
        self.gallery_menu.observe(self._on_gallery, "value")
        controls = W.VBox(
            [
                self.gallery_menu,
                self.point_box,
                W.HBox([self.method, self.dtype]),
                W.HBox([self.auto_step, self.step, self.rtol]),
                W.HBox([self.block, self.row, self.col]),
            ]
        )
        self.children = [
            controls,
            self.error,
            W.HBox([self.badge]),
            self.tabs,
            self.entry_info,
            self.worst,
        ]
        if f is None:
            self._load_example(self.gallery_menu.value)
        else:
            self.load(f, *args, wrt=wrt)

    # ------------------------------------------------------------ loading

    def _load_example(self, name: str) -> None:
        ex = gallery.get(name)
        self.load(ex.f, *ex.args(), wrt=ex.wrt)

    def load(self, f: Callable, *args: Any, wrt: Any = 0) -> None:
        """Explore another function (figures are reused, not recreated)."""
        self.f, self.base_args, self.wrt = f, tuple(args), wrt
        self._loading = True  # controls change during set-up: refresh once, at the end
        try:
            self._setup(f, args, wrt)
        except Exception as exc:
            self._show_error(exc, "while setting up")
            return
        finally:
            self._loading = False
        self.refresh()

    def _setup(self, f, args, wrt):
        self.system = get_backend(None, args, f)
        call = bind_call(f, args, {}, wrt, constants_ok=True, kind_of=self.system.float_kind)
        self.call = call
        self.argnums = tuple(sel.slot for sel in call.selected)
        names = [sel.name for sel in call.selected]
        with self.hold_trait_notifications():
            self.block.options = (["all inputs"] + names) if len(names) > 1 else names
            self.block.value = self.block.options[0]
        self.point_sliders = []
        if sum(s.real_size for s in call.specs) <= MAX_SLIDERS:
            self.point_sliders = point_sliders(call)
            for slider in self.point_sliders:
                slider.observe(self._on_change, "value")
            self.point_box.children = self.point_sliders
        else:
            self.point_box.children = [W.HBox([self.scale, self.seed, self.resample])]
        layout = output_layout(f(*args))
        any_complex = any(s.complex for s in layout.leaves + call.specs)
        one_array = len(call.specs) == 1 and call.selected[0].tree.is_leaf
        scalar = layout.tree.is_leaf and layout.leaves[0].shape == () and not any_complex
        views = ["Jacobian", "Check"]
        if any_complex and one_array and layout.tree.is_leaf:
            views.append("Complex blocks")
        if scalar and one_array:
            views.append("Hessian")
        views += ["Step sweep", "Where"]
        if self.system.name != "autograd":
            views = [v for v in views if v not in AUTOGRAD_ONLY]
        self._install_views(views)

    def _install_views(self, views: list[str]) -> None:
        old = set(self.figures)
        for name in old - set(views):
            self._close_figure(name)
        children = []
        for name in views:
            if name not in self.figures:
                self.figures[name] = self._new_figure(name)
            fig = self.figures[name]
            children.append(fig.canvas if self.live else W.Image(format="png"))
            if self.live:
                fig.canvas.mpl_connect("button_press_event", self._on_click)
        self.views = views
        self.artists = {}
        self._view_widgets = dict(zip(views, children))
        self.tabs.children = children
        for k, name in enumerate(views):
            self.tabs.set_title(k, name)
        self.tabs.selected_index = 0

    def _new_figure(self, name: str) -> Figure:
        return new_figure(FIGSIZE[name], self.live)

    # ------------------------------------------------------------ state

    def current_args(self) -> tuple:
        """The point the controls describe, in the chosen dtype."""
        args, _ = point_from(
            self.call,
            [s.value for s in self.point_sliders],
            self.seed.value,
            self.scale.value,
            self.dtype.value,
            None if self.system.name == "autograd" else self.system.to_array,
        )
        return tuple(args)

    def _selected_wrt(self):
        if self.block.value == "all inputs" or len(self.argnums) == 1:
            return self.argnums if len(self.argnums) > 1 else self.argnums[0]
        names = list(self.block.options)[1:]
        return self.argnums[names.index(self.block.value)]

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
        self._show_entry()
        self._dirty.add("Step sweep")
        self._redraw_visible()

    def _on_tab(self, change=None) -> None:
        self._redraw_visible()

    def _on_gallery(self, change) -> None:
        self._load_example(change["new"])

    def _on_click(self, event) -> None:
        if event.inaxes is None or event.xdata is None or self.report is None:
            return
        m, n = self.report.shape
        col, row = int(round(event.xdata)), int(round(event.ydata))
        if 0 <= row < m and 0 <= col < n:
            with self.hold_trait_notifications():
                self.row.value, self.col.value = row, col

    # ------------------------------------------------------------ compute and draw

    def refresh(self) -> None:
        """Recompute the check at the controls' state and redraw the visible view."""
        if self._closed or self._loading:
            return
        try:
            args = self.current_args()
            self.report = check_grads(
                self.f,
                *args,
                wrt=self._selected_wrt(),
                mode="full",
                precision="native",  # the dtype control chose the precision
                method=self.method.value,
                rtol=self.rtol.value,
                step=None if self.auto_step.value else self.step.value,
            )
            self.args = args
        except Exception as exc:
            self._show_error(exc)
            return
        self.error.value = ""
        m, n = self.report.shape
        self.row.max, self.col.max = max(m - 1, 0), max(n - 1, 0)
        self._update_text()
        self._dirty = set(self.views)
        self._redraw_visible()

    def _redraw_visible(self) -> None:
        if self.report is None or self.tabs.selected_index is None:
            return
        name = self.views[self.tabs.selected_index]
        if name not in self._dirty:
            return
        try:
            fresh = self._draw(name)
        except Exception as exc:
            self._show_error(exc, f"while drawing the {name} view")
            return
        self._dirty.discard(name)
        fig = self.figures[name]
        art = self.artists.get(name)
        if self.live and isinstance(art, P.Heatmap) and not art.rescaled and not fresh:
            P.blit_heatmap(art)  # only the image changed: send it, not a redrawn figure
        elif self.live:
            fig.canvas.draw_idle()
        else:
            self._view_widgets[name].value = P.figure_png(fig)

    def _draw(self, name: str) -> bool:
        before = self.artists.get(name)
        self._draw_view(name)
        fresh = self.artists[name] is not before
        if fresh:  # drawn afresh: lay out once, then keep it
            P.freeze_layout(self.figures[name])
        return fresh

    def _draw_view(self, name: str) -> None:
        wrt = self._selected_wrt()
        if isinstance(wrt, tuple):  # the sweep differentiates one input: the entry's own
            wrt = wrt[self.report.cols.locate(self.col.value)[0]]
        entry = (self.row.value, self.report.cols.locate(self.col.value)[2])
        self.artists[name] = draw_view(
            name,
            self.figures[name],
            self.artists.get(name),
            self.report,
            self.f,
            self.args,
            self.argnums,
            entry,
            wrt,
        )

    # ------------------------------------------------------------ text

    def _update_text(self) -> None:
        self.badge.value = badge_html(self.report)
        self.worst.value = worst_html(self.report)
        self._show_entry()

    def _show_entry(self) -> None:
        r = self.report
        if r is not None and r.analytic is not None:
            i, j = min(self.row.value, r.shape[0] - 1), min(self.col.value, r.shape[1] - 1)
            self.entry_info.value = entry_html(r, i, j)

    def _show_error(self, exc: BaseException, where: str = "") -> None:
        self.error.value = error_html(exc, where)

    # ------------------------------------------------------------ lifetime

    def _close_figure(self, name: str) -> None:
        close_figure(self.figures.pop(name, None), self.live)

    def close(self) -> None:
        """Release the figures and the widgets."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        for name in list(self.figures):
            self._close_figure(name)
        self.artists.clear()
        owned = [v for v in vars(self).values() if isinstance(v, W.Widget)]
        for w in owned + self.point_sliders + list(self._view_widgets.values()):
            close_tree(w)
        super().close()
