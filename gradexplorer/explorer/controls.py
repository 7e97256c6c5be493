"""Small widget helpers of the explorer's controls."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import ipywidgets as W

from ..fd.steps import METHODS

__all__ = ["log_slider", "close_tree", "make_controls", "label_methods"]


def log_slider(description: str, value: float, lo: int, hi: int, **kw) -> W.FloatLogSlider:
    return W.FloatLogSlider(
        value=value, base=10, min=lo, max=hi, description=description, continuous_update=False, **kw
    )


def close_tree(widget: W.Widget) -> None:
    """Close a widget, its children, and their layouts and styles (models of their own)."""
    for child in getattr(widget, "children", ()):
        close_tree(child)
    for part in ("layout", "style"):
        owned = getattr(widget, part, None)
        if isinstance(owned, W.Widget):
            owned.close()
    widget.close()


def make_controls(
    examples: list, f_given: bool, *, method: str, rtol: float | None, step: float | None
) -> dict:
    """The explorer's widgets by name (its public attributes), with their tooltips.

    >>> sorted(make_controls(["a"], True, method="central", rtol=None, step=None))[:3]
    ['auto_step', 'badge', 'block']
    """
    menu = not f_given
    w = SimpleNamespace()
    w.error = W.HTML("")
    w.error.add_class("gx-error")
    w.badge = W.HTML("")
    w.badge.add_class("gx-badge")
    w.status = W.HTML("")
    w.status.add_class("gx-status")
    w.worst = W.HTML("")
    w.entry_info = W.HTML("")
    wide = {"description_width": "initial"}
    w.gallery_menu = W.Dropdown(
        options=examples,
        description="example",
        layout=W.Layout(display="flex" if menu else "none"),
    )
    w.method = W.Dropdown(options=list(METHODS), value=method, description="FD method")
    w.auto_step = W.Checkbox(
        value=step is None,
        description="auto step",
        tooltip="a step per coordinate, scaled to its magnitude (recommended)",
        style=wide,
    )
    w.step = log_slider("step", step or 1e-5, -12, 1, disabled=step is None)
    w.step_note = W.HTML("")
    # one verdict: by default the checker's own tolerance (check_grads' rtol=None), so that
    # explore and check_grads agree on the same f and point; a looser one is a visible choice
    w.own_rtol = W.Checkbox(
        value=rtol is not None,
        description="rtol",
        tooltip="off: the checker's own tolerance, as check_grads uses; on: the slider's",
        style=wide,
        layout=W.Layout(width="70px"),
    )
    w.rtol = log_slider("", rtol or 1e-8, -14, -1, disabled=rtol is None)
    w.rtol.tooltip = "relative tolerance added to each entry's FD error"
    w.rtol_note = W.HTML(
        "" if rtol is not None else '<span style="color:#555">checker\'s default</span>'
    )
    w.dtype = W.ToggleButtons(
        options=["float64", "float32"],
        description="precision",
        tooltips=["check in float64", "evaluate f and its derivative in float32"],
        style={"description_width": "initial", "button_width": "80px"},
    )
    w.block = W.Dropdown(description="input")
    w.scale = log_slider("scale", 1.0, -8, 8)
    w.scale.tooltip = "multiplies the point: explore tiny or huge inputs"
    w.seed = W.IntText(
        value=0,
        description="seed",
        tooltip="0: the starting point (times scale); another seed: a random normal point",
        layout=W.Layout(width="160px"),
    )
    w.resample = W.Button(
        description="re-sample", tooltip="draw a new random point (the next seed)"
    )
    w.row = W.BoundedIntText(value=0, min=0, max=0, description="row")
    w.col = W.BoundedIntText(value=0, min=0, max=0, description="col")
    w.zoom = W.Checkbox(
        value=False,
        description="zoom to entry",
        tooltip="show the 17 x 17 cells around the selected entry",
        style=wide,
    )
    w.sweep_mode = W.ToggleButtons(
        options=["forward", "reverse"],
        description="AD sweep",
        tooltips=["tangents flow from input x[col]", "adjoints flow back from output y[row]"],
        style={"description_width": "initial", "button_width": "80px"},
    )
    w.sweep_step = W.IntSlider(
        value=0, min=0, max=0, description="AD step", tooltip="one operation of the sweep a step"
    )
    w.sweep_box = W.HBox([w.sweep_mode, w.sweep_step], layout=W.Layout(display="none"))
    return vars(w)


def label_methods(menu: W.Dropdown, f: Callable, args: tuple, argnums: tuple) -> None:
    """Say in the FD menu, before it is chosen, why the complex step cannot apply."""
    reason = complex_step_reason(f, args, argnums)
    menu.complex_step_reason = reason  # the explorer checks with richardson if chosen anyway
    value = menu.value
    menu.options = [
        (f"complex_step (n/a: {reason})" if m == "complex_step" and reason else m, m)
        for m in METHODS
    ]
    menu.value = "richardson" if value == "complex_step" and reason else value


def complex_step_reason(f: Callable, args: tuple, argnums: tuple) -> str | None:
    """Why the complex step cannot check f here (None: it can)."""
    try:
        from ..fd import complex_step_applicability
    except ImportError:  # not available: let the check itself say
        return None
    try:
        return complex_step_applicability(f, *args, wrt=argnums if len(argnums) > 1 else argnums[0])
    except Exception as exc:  # the check will report it properly
        return f"{type(exc).__name__}"
