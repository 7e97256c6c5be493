"""Small widget helpers of the explorer's controls."""

from __future__ import annotations

import ipywidgets as W

__all__ = ["log_slider", "close_tree"]


def log_slider(description: str, value: float, lo: int, hi: int, **kw) -> W.FloatLogSlider:
    return W.FloatLogSlider(
        value=value, base=10, min=lo, max=hi, description=description, continuous_update=False, **kw
    )


def close_tree(widget: W.Widget) -> None:
    for child in getattr(widget, "children", ()):
        close_tree(child)
    widget.close()
