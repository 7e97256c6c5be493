"""The one door from a result up to its picture.

Results (``CheckReport``, ``FDResult``, ``ComplexBlocks``, ``Localization``)
live below the display layer; their ``plot()`` and ``_repr_png_`` hand
themselves to :func:`render`, imported lazily, so that ``import gradexplorer``
loads no matplotlib and every other import points down.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

__all__ = ["render"]


def render(result: Any, fig: Any = None, *, png: bool = False) -> Any:
    """Draw a result (on ``fig`` or a new Figure); PNG bytes with ``png=True``.

    >>> import autograd.numpy as anp, gradexplorer as gx
    >>> render(gx.check_grads(anp.sin, anp.ones(2)), png=True)[:4]
    b'\\x89PNG'
    """
    from .heatmap import figure_png, plot_jacobian

    kind = type(result).__name__
    if kind == "CheckReport":
        from .plots import plot_check

        figure = plot_check(result, fig=fig)
    elif kind == "PrecisionReport":
        from .precision import plot_precision

        figure = plot_precision(result, fig=fig)
    elif kind == "FDResult":
        figure = fig or Figure(figsize=(5, 4), layout="constrained")
        plot_jacobian(result, figure.add_subplot(), title=f"{result.method} finite differences")
    elif kind == "ComplexBlocks":
        from .plots import draw_complex

        figure = draw_complex(result, fig).fig
    elif kind == "Localization":
        from .graph import plot_localization

        figure = plot_localization(result, fig)
    else:
        raise TypeError(f"render draws gradexplorer results; got a {kind}.")
    return figure_png(figure) if png else figure
