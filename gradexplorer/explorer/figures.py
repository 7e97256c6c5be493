"""The explorer's figures: live ipympl canvases, or plain Figures shown as PNG."""

from __future__ import annotations

from typing import Any

import matplotlib
from matplotlib.figure import Figure

__all__ = ["ipympl_active", "new_figure", "close_figure"]


def ipympl_active() -> bool:
    backend = matplotlib.get_backend().lower()
    return "ipympl" in backend or backend.endswith("widget")


def new_figure(size: tuple, live: bool) -> Figure:
    """A figure for one view: an ipympl canvas when live (made without showing it)."""
    if live:
        import matplotlib.pyplot as plt

        with plt.ioff():
            fig = plt.figure(figsize=size, layout="constrained")
        fig.canvas.header_visible = False
        return fig
    return Figure(figsize=size, layout="constrained")


def close_figure(fig: Any, live: bool) -> None:
    """Release a view's figure (pyplot keeps live ones until closed)."""
    if fig is not None and live:
        import matplotlib.pyplot as plt

        plt.close(fig)
