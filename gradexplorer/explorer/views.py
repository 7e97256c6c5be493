"""What the explorer draws in each view, and its point sliders (no state of its own)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as W
import numpy as onp

from ..ad.complex import complex_blocks
from ..ad.jacobians import hessian
from ..check.sweep import step_sweep
from ..display import plots as P

__all__ = ["draw_view", "point_sliders", "point_from", "FIGSIZE", "AUTOGRAD_ONLY"]

#: Figure size (inches) of each view.
FIGSIZE = {
    "Jacobian": (6, 4.5),
    "Check": (15, 4),
    "Complex blocks": (16, 3.8),
    "Hessian": (13, 3.8),
    "Step sweep": (6.5, 4.5),
    "Where": (13, 5),
}


def point_sliders(call) -> list:
    """One slider per real coordinate of the selected inputs' leaves (Re and Im
    for complex), labelled by path: ``params[0][1][2]``, ``Re z[0]``."""
    sliders = []
    for spec, value in zip(call.specs, call.values):
        real = spec.to_real(value)
        for k, val in enumerate(real):
            span = 3 * max(abs(float(val)), 1.0)
            sliders.append(
                W.FloatSlider(
                    value=float(val),
                    min=-span,
                    max=span,
                    step=span / 200,
                    description=spec.label(k),
                    continuous_update=False,
                    readout_format=".3g",
                    style={"description_width": "initial"},
                )
            )
    return sliders


def point_from(
    call, slider_values: list, seed: int, scale: float, dtype_name: str, to_array=None
) -> tuple:
    """The point the controls describe: slider values, else a seeded normal draw times
    ``scale`` (seed 0 keeps the starting point, scaled), cast to the chosen dtype.
    ``to_array`` makes the AD system's arrays (torch tensors, jax arrays).

    Returns ``(args, kwargs)`` with the selected leaves replaced, the structure kept.
    """
    real = onp.float32 if dtype_name == "float32" else onp.float64
    values = iter(slider_values)
    rng = onp.random.default_rng(seed)
    leaves = []
    for spec, value in zip(call.specs, call.values):
        r = spec.to_real(value).astype(float)
        if slider_values:
            r = onp.array([next(values) for _ in range(r.size)])
        elif seed != 0:
            r = scale * rng.standard_normal(r.size)
        else:
            r = scale * r
        dtype = onp.result_type(real, onp.complex64) if spec.complex else real
        new = onp.asarray(spec.from_real(r)).astype(dtype)
        if spec.pytype is not None:
            new = spec.pytype(new)
        elif to_array is not None:
            new = to_array(new)
        leaves.append(new)
    return call.rebuild_plain(leaves)


#: Views that need autograd's own operators (hessian, complex_blocks).
AUTOGRAD_ONLY = ("Complex blocks", "Hessian")
#: The explorer casts the point to its dtype control: check in that precision.
NATIVE = {"precision": "native"}


def draw_view(
    name: str, fig, art, r, f: Callable, args: tuple, argnums: Any, entry: tuple, wrt: Any
):
    """Update view ``name``'s artists in place (or draw it afresh); return the artists."""
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
        b = complex_blocks(f, *args, wrt=argnums[0])
        if art is None or not P.update_complex(art, b):
            art = P.draw_complex(b, fig)
    elif name == "Hessian":
        H = hessian(f, argnums[0])(*args)
        if art is None or not P.update_hessian(art, H):
            art = P.draw_hessian(H, fig)
    elif name == "Step sweep":
        art = _draw_sweep(fig, art, f, args, entry, wrt)
    elif name == "Where":  # the graph's shape can change with the point: drawn afresh
        from ..display.graph import plot_localization
        from ..locate.localize import locate

        art = locate(f, *args, wrt=argnums, **NATIVE)
        plot_localization(art, fig)
    return art


def _draw_sweep(fig, art, f, args, entry, wrt):
    sweep = step_sweep(f, *args, entry=entry, wrt=wrt, **NATIVE)
    if art is None or set(art) != set(sweep.errors):
        fig.clear()
        return P.plot_step_sweep(f, *args, entry=entry, wrt=wrt, ax=fig.add_subplot(), **NATIVE)
    for method, line in art.items():
        line.set_ydata(onp.where(sweep.errors[method] > 0, sweep.errors[method], onp.nan))
    ax = next(iter(art.values())).axes
    ax.set_title(f"step sweep of {sweep.label} (analytic {sweep.analytic:.6g})")
    ax.relim()
    ax.autoscale_view()
    return art
