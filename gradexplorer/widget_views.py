"""What the explorer draws in each view, and its point sliders (no state of its own)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as W
import numpy as onp

from . import plot as P
from ._args import param_label
from .complex import complex_blocks
from .jacobians import hessian
from .sweep import step_sweep

__all__ = ["draw_view", "point_sliders", "point_from", "FIGSIZE"]

#: Figure size (inches) of each view.
FIGSIZE = {
    "Jacobian": (6, 4.5),
    "Check": (15, 4),
    "Complex blocks": (16, 3.8),
    "Hessian": (13, 3.8),
    "Step sweep": (6.5, 4.5),
    "Where": (13, 5),
}


def point_sliders(f: Callable, args: tuple, argnums: tuple) -> list:
    """One slider per real coordinate of the selected inputs (Re and Im for complex)."""
    sliders = []
    for i in argnums:
        x = onp.asarray(args[i])
        for k, v in enumerate(x.ravel()):
            parts = (("Re ", v.real), ("Im ", v.imag)) if onp.iscomplexobj(x) else (("", v),)
            for part, val in parts:
                span = 3 * max(abs(float(val)), 1.0)
                sliders.append(
                    W.FloatSlider(
                        value=float(val),
                        min=-span,
                        max=span,
                        step=span / 200,
                        description=f"{part}{param_label(f, i)}{'' if x.ndim == 0 else f'[{k}]'}",
                        continuous_update=False,
                        readout_format=".3g",
                    )
                )
    return sliders


def point_from(
    base_args: tuple, argnums: tuple, slider_values: list, seed: int, scale: float, dtype_name: str
) -> tuple:
    """The point the controls describe: slider values, else a seeded normal draw times
    ``scale`` (seed 0 keeps the starting point, scaled), cast to the chosen dtype."""
    args = list(base_args)
    dtype = onp.float32 if dtype_name == "float32" else onp.float64
    cdtype = onp.complex64 if dtype is onp.float32 else onp.complex128
    if slider_values:
        values = iter(slider_values)
        for i in argnums:
            x = onp.asarray(args[i])
            if onp.iscomplexobj(x):
                flat = [complex(next(values), next(values)) for _ in range(x.size)]
            else:
                flat = [next(values) for _ in range(x.size)]
            args[i] = onp.asarray(flat).reshape(x.shape)
    elif seed != 0 or scale != 1.0:
        rng = onp.random.default_rng(seed)
        for i in argnums:
            x = onp.asarray(args[i])
            new = rng.standard_normal(x.shape)
            if onp.iscomplexobj(x):
                new = new + 1j * rng.standard_normal(x.shape)
            args[i] = scale * (new if seed != 0 else x)
    for i in argnums:
        x = onp.asarray(args[i])
        args[i] = x.astype(cdtype if onp.iscomplexobj(x) else dtype)
    return tuple(args)


def draw_view(
    name: str, fig, art, r, f: Callable, args: tuple, argnums: tuple, entry: tuple, wrt: Any
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
        from .locate import locate
        from .plot_graph import plot_localization

        art = locate(f, *args, wrt=argnums)
        plot_localization(art, fig)
    return art


def _draw_sweep(fig, art, f, args, entry, wrt):
    sweep = step_sweep(f, *args, entry=entry, wrt=wrt)
    if art is None or set(art) != set(sweep.errors):
        fig.clear()
        return P.plot_step_sweep(f, *args, entry=entry, wrt=wrt, ax=fig.add_subplot())
    for method, line in art.items():
        line.set_ydata(onp.where(sweep.errors[method] > 0, sweep.errors[method], onp.nan))
    ax = next(iter(art.values())).axes
    ax.set_title(f"step sweep of {sweep.label} (analytic {sweep.analytic:.6g})")
    ax.relim()
    ax.autoscale_view()
    return art
