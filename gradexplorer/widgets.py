"""The live explorer: ``explore(f, *args)`` (ipywidgets; pictures from plot.py).

Controls change a small state; one ``refresh`` recomputes the check at that
state and redraws the visible view's existing artists in place. With ipympl
active the figures are live canvases (click a cell to inspect it); without
it each view is an ``Image`` widget holding a PNG of the same figure.
"""

from __future__ import annotations

import html
import time
import traceback
from collections.abc import Callable
from typing import Any

import ipywidgets as W
import matplotlib
import numpy as onp
from matplotlib.figure import Figure

from . import gallery
from . import plot as P
from ._args import param_label, resolve_wrt
from .check import check_grads
from .complex import complex_blocks
from .fd import METHODS
from .jacobians import hessian
from .sweep import step_sweep

__all__ = ["explore", "Explorer"]

MAX_SLIDERS = 6


def _ipympl_active() -> bool:
    backend = matplotlib.get_backend().lower()
    return "ipympl" in backend or backend.endswith("widget")


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
        self.live = _ipympl_active()
        self.figures: dict[str, Figure] = {}
        self.artists: dict[str, Any] = {}
        self.report = None
        self._dirty: set[str] = set()
        self._last_refresh = 0.0
        self._closed = False
        self._loading = False
        self.views: list[str] = []
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
        self.step = W.FloatLogSlider(
            value=step or 1e-5,
            base=10,
            min=-12,
            max=-1,
            description="step",
            continuous_update=False,
            disabled=step is None,
        )
        self.rtol = W.FloatLogSlider(
            value=rtol or 1.5e-8,
            base=10,
            min=-12,
            max=-1,
            description="rtol",
            continuous_update=False,
        )
        self.dtype = W.ToggleButtons(options=["float64", "float32"], description="dtype")
        self.block = W.Dropdown(description="input")
        self.scale = W.FloatLogSlider(
            value=1.0, base=10, min=-8, max=8, description="scale", continuous_update=False
        )
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
            self.dtype,
            self.block,
            self.scale,
            self.seed,
        ):
            control.observe(self._on_change, "value")
        self.auto_step.observe(self._on_auto_step, "value")
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
        self.refresh(force=True)

    def _setup(self, f, args, wrt):
        argnums, _ = resolve_wrt(f, wrt, len(args))
        self.argnums = argnums
        names = [param_label(f, i) for i in argnums]
        with self.hold_trait_notifications():
            self.block.options = (["all inputs"] + names) if len(names) > 1 else names
            self.block.value = self.block.options[0]
        sizes = [onp.size(args[i]) * (2 if onp.iscomplexobj(args[i]) else 1) for i in argnums]
        self.point_sliders = []
        if sum(sizes) <= MAX_SLIDERS:
            for i in argnums:
                x = onp.asarray(args[i])
                for k, v in enumerate(x.ravel()):
                    for part, val in (
                        (("Re ", v.real), ("Im ", v.imag)) if onp.iscomplexobj(x) else (("", v),)
                    ):
                        span = 3 * max(abs(float(val)), 1.0)
                        s = W.FloatSlider(
                            value=float(val),
                            min=-span,
                            max=span,
                            step=span / 200,
                            description=f"{part}{param_label(f, i)}"
                            f"{'' if x.ndim == 0 else f'[{k}]'}",
                            continuous_update=False,
                            readout_format=".3g",
                        )
                        s.observe(self._on_change, "value")
                        self.point_sliders.append(s)
            self.point_box.children = self.point_sliders
        else:
            self.point_box.children = [W.HBox([self.scale, self.seed, self.resample])]
        y = f(*args)
        any_complex = onp.iscomplexobj(y) or any(onp.iscomplexobj(args[i]) for i in argnums)
        scalar = onp.ndim(y) == 0 and not isinstance(y, (list, tuple)) and not any_complex
        views = ["Jacobian", "Check"]
        if any_complex:
            views.append("Complex blocks")
        if scalar and len(argnums) == 1:
            views.append("Hessian")
        views += ["Step sweep", "Where"]
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
        size = {
            "Jacobian": (6, 4.5),
            "Check": (15, 4),
            "Complex blocks": (16, 3.8),
            "Hessian": (13, 3.8),
            "Step sweep": (6.5, 4.5),
            "Where": (13, 5),
        }[name]
        if self.live:
            import matplotlib.pyplot as plt

            with plt.ioff():
                fig = plt.figure(figsize=size, layout="constrained")
            fig.canvas.header_visible = False
            return fig
        return Figure(figsize=size, layout="constrained")

    # ------------------------------------------------------------ state

    def current_args(self) -> tuple:
        """The point the controls describe, in the chosen dtype."""
        args = list(self.base_args)
        dtype = onp.float32 if self.dtype.value == "float32" else onp.float64
        cdtype = onp.complex64 if dtype is onp.float32 else onp.complex128
        if self.point_sliders:
            values = iter(s.value for s in self.point_sliders)
            for i in self.argnums:
                x = onp.asarray(args[i])
                if onp.iscomplexobj(x):
                    flat = [complex(next(values), next(values)) for _ in range(x.size)]
                else:
                    flat = [next(values) for _ in range(x.size)]
                args[i] = onp.asarray(flat).reshape(x.shape)
        elif self.seed.value != 0 or self.scale.value != 1.0:
            rng = onp.random.default_rng(self.seed.value)
            for i in self.argnums:
                x = onp.asarray(args[i])
                new = rng.standard_normal(x.shape)
                if onp.iscomplexobj(x):
                    new = new + 1j * rng.standard_normal(x.shape)
                args[i] = self.scale.value * new if self.seed.value != 0 else self.scale.value * x
        for i in self.argnums:
            x = onp.asarray(args[i])
            args[i] = x.astype(cdtype if onp.iscomplexobj(x) else dtype)
        return tuple(args)

    def _selected_wrt(self):
        if self.block.value == "all inputs" or len(self.argnums) == 1:
            return self.argnums if len(self.argnums) > 1 else self.argnums[0]
        names = list(self.block.options)[1:]
        return self.argnums[names.index(self.block.value)]

    # ------------------------------------------------------------ events

    def _on_change(self, change=None) -> None:
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

    def refresh(self, force: bool = False) -> None:
        """Recompute the check at the controls' state and redraw the visible view."""
        if self._closed or self._loading:
            return
        self._last_refresh = time.perf_counter()
        try:
            args = self.current_args()
            self.report = check_grads(
                self.f,
                *args,
                wrt=self._selected_wrt(),
                mode="full",
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
            self._draw(name)
        except Exception as exc:
            self._show_error(exc, f"while drawing the {name} view")
            return
        self._dirty.discard(name)
        fig = self.figures[name]
        if self.live:
            fig.canvas.draw_idle()
        else:
            self._view_widgets[name].value = P.figure_png(fig)

    def _draw(self, name: str) -> None:
        before = self.artists.get(name)
        self._draw_view(name)
        if self.artists[name] is not before:  # drawn afresh: lay out once, then keep it
            P.freeze_layout(self.figures[name])

    def _draw_view(self, name: str) -> None:
        fig, art, r = self.figures[name], self.artists.get(name), self.report
        if name == "Jacobian":
            if art is None or not P.update_heatmap(art, r.analytic):
                fig.clear()
                art = P.plot_jacobian(
                    r.analytic,
                    fig.add_subplot(),
                    title="Jacobian (AD)",
                    row_label=r.row_label,
                    col_label=r.col_label,
                    row_blocks=r.row_blocks,
                    col_blocks=r.column_blocks,
                )
        elif name == "Check":
            if art is None or not P.update_check(art, r):
                art = P.draw_check(r, fig)
        elif name == "Complex blocks":
            b = complex_blocks(self.f, *self.args, wrt=self.argnums[0])
            if art is None or not P.update_complex(art, b):
                art = P.draw_complex(b, fig)
        elif name == "Hessian":
            H = hessian(self.f, self.argnums[0])(*self.args)
            if art is None or not P.update_hessian(art, H):
                art = P.draw_hessian(H, fig)
        elif name == "Step sweep":
            art = self._draw_sweep(fig, art)
        elif name == "Where":  # the graph's shape can change with the point: drawn afresh
            from .locate import locate
            from .plot_graph import plot_localization

            loc = locate(self.f, *self.args, wrt=self.argnums)
            plot_localization(loc, fig)
            art = loc
        self.artists[name] = art

    def _draw_sweep(self, fig, art):
        wrt = self._selected_wrt()
        if isinstance(wrt, tuple):  # the sweep differentiates one input: the entry's own
            wrt = wrt[self.report.cols.locate(self.col.value)[0]]
        local_col = self.report.cols.locate(self.col.value)[2]
        entry = (self.row.value, local_col)
        sweep = step_sweep(self.f, *self.args, entry=entry, wrt=wrt)
        if art is None or set(art) != set(sweep.errors):
            fig.clear()
            return P.plot_step_sweep(self.f, *self.args, entry=entry, wrt=wrt, ax=fig.add_subplot())
        for method, line in art.items():
            line.set_ydata(onp.where(sweep.errors[method] > 0, sweep.errors[method], onp.nan))
        ax = next(iter(art.values())).axes
        ax.set_title(f"step sweep of {sweep.label} (analytic {sweep.analytic:.6g})")
        ax.relim()
        ax.autoscale_view()
        return art

    # ------------------------------------------------------------ text

    def _update_text(self) -> None:
        r = self.report
        color = "#1a7f37" if r.passed else "#b42318"
        verdict = "PASSED" if r.passed else f"FAILED: {len(r.mismatches)} wrong entries"
        self.badge.value = (
            f'<span style="background:{color};color:white;padding:3px 10px;border-radius:4px;'
            f'font-weight:bold">{verdict}</span> <span style="color:#555">'
            f"{r.shape[0]} x {r.shape[1]}, {r.method}, {r.dtype}, {r.nfev} evaluations</span>"
        )
        rows = (r.mismatches or r.worst)[:8]
        head = "wrong entries" if r.mismatches else "closest to failing"
        body = "".join(
            f"<tr><td>{html.escape(e.label)}</td><td>{e.analytic:.6g}</td><td>{e.numeric:.6g}"
            f"</td><td>{e.abs_err:.2e}</td><td>{e.fd_error:.1e}</td><td>{html.escape(e.verdict)}"
            "</td></tr>"
            for e in rows
        )
        self.worst.value = (
            f"<b>{head}</b><table><tr><th>entry</th><th>analytic</th><th>numeric</th>"
            f"<th>|diff|</th><th>FD error</th><th>verdict</th></tr>{body}</table>"
        )
        self._show_entry()

    def _show_entry(self) -> None:
        r = self.report
        if r is None or r.analytic is None:
            return
        i, j = min(self.row.value, r.shape[0] - 1), min(self.col.value, r.shape[1] - 1)
        a, n, e, v = r.analytic[i, j], r.numeric[i, j], r.fd_error[i, j], r.violation[i, j]
        label = f"{r.row_label(i)} / {r.col_label(j)}"
        self.entry_info.value = (
            f"<b>{html.escape(label)}</b>: analytic {a:.10g}, numeric {n:.10g}, "
            f"|diff| {abs(a - n):.3e}, FD error ± {e:.2e}, violation {v:.3g} "
            f"({'fails' if v > 1 else 'ok'})"
        )

    def _show_error(self, exc: BaseException, where: str = "") -> None:
        tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
        self.error.value = (
            '<div style="border:1px solid #b42318;background:#fdecea;color:#b42318;'
            f'padding:6px;font-family:monospace">Error{(" " + where) if where else ""}: '
            f"{html.escape(tb)}</div>"
        )

    # ------------------------------------------------------------ lifetime

    def _close_figure(self, name: str) -> None:
        fig = self.figures.pop(name, None)
        if fig is not None and self.live:
            import matplotlib.pyplot as plt

            plt.close(fig)

    def close(self) -> None:
        """Release the figures and the widgets."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        for name in list(self.figures):
            self._close_figure(name)
        self.artists.clear()
        for w in (
            self.method,
            self.auto_step,
            self.step,
            self.rtol,
            self.dtype,
            self.block,
            self.scale,
            self.seed,
            self.resample,
            self.row,
            self.col,
            self.tabs,
            self.badge,
            self.worst,
            self.entry_info,
            self.error,
            self.gallery_menu,
            *self.point_sliders,
        ):
            w.close()
        super().close()
