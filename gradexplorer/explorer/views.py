"""What the explorer draws in each view, and its point sliders (no state of its own)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ipywidgets as W
import numpy as onp

from .. import display as D
from ..ad.complex import complex_blocks
from ..ad.jacobians import hessian
from ..check.sweep import step_sweep
from ..display import plots as P
from ..errors import GradExplorerError
from ..locate.sweeps import ad_sweeps

__all__ = [
    "draw_view", "draw_note", "point_sliders", "point_from", "not_applicable", "shape_of",
    "VIEWS", "FIGSIZE", "AUTOGRAD_ONLY",
]  # fmt: skip

#: The views, always all of them (a view that does not apply says why): a tab set
#: that never changes keeps its tabs and titles stable when the function changes.
VIEWS = (
    "Jacobian",
    "Check",
    "Complex",
    "Hessian",
    "Step sweep",
    "Where",
    "Graph",
    "Landscape",
    "Linear map",
)

#: Figure size (inches, at 100 dpi) of each view: none wider than 860 px, the output
#: width of a notebook in a 1280-px window with JupyterLab's file browser open.
FIGSIZE = {
    "Jacobian": (7.0, 5.2),
    "Check": (8.6, 6.6),
    "Complex": (8.6, 6.4),
    "Hessian": (8.6, 6.8),
    "Step sweep": (7.0, 5.0),
    "Where": (8.6, 5.6),
    "Graph": (8.6, 5.0),
    "Landscape": (8.6, 5.0),
    "Linear map": (8.6, 5.4),
}
NOTE_SIZE = (8.6, 1.3)


@dataclass(frozen=True)
class Shape:
    """What the views need to know of f at a point to say whether they apply."""

    system: str
    complex_io: bool
    one_array: bool
    single_output: bool
    out_shape: tuple
    in_size: int = 0  # real coordinates of the one array input
    out_size: int = 0  # real coordinates of the output


def shape_of(system: str, call, layout) -> Shape:
    return Shape(
        system,
        any(s.complex for s in layout.leaves + call.specs),
        len(call.specs) == 1 and call.selected[0].tree.is_leaf,
        layout.tree.is_leaf,
        tuple(layout.leaves[0].shape) if layout.tree.is_leaf else (),
        sum(s.real_size for s in call.specs),
        sum(s.real_size for s in layout.leaves),
    )


def not_applicable(name: str, s: Shape) -> str | None:
    """Why view ``name`` does not apply to f (None when it does).

    >>> not_applicable("Hessian", Shape("autograd", False, True, True, (3,)))[:60]
    'The Hessian view needs a real scalar output; this f returns '
    """
    if name == "Complex":
        if not s.complex_io:
            return (
                "f is real here: its Jacobian has no Re/Im blocks. The Complex view shows "
                "complex functions (the gallery's holomorphic / conj examples)."
            )
        if not (s.one_array and s.single_output):
            return "The Complex view takes f with one array input and one array output."
    if name == "Hessian":
        if s.complex_io or not s.single_output or s.out_shape != ():
            shape = s.out_shape if s.single_output else "several outputs"
            return (
                f"The Hessian view needs a real scalar output; this f returns "
                f"{'shape ' if s.single_output else ''}{shape}. Its second derivatives are "
                "the Jacobian of its gradient: try the Jacobian view on a scalar f."
            )
        if not s.one_array:
            return "The Hessian view takes f with one array input (choose it with wrt=)."
    if name == "Graph" and (s.complex_io or not s.single_output):
        return (
            "The Graph view steps through the sweeps of a real function with one array "
            "output (complex values have two tangents a node); try the gallery's sin or l2_norm."
        )
    if name == "Landscape" and (
        s.complex_io or not s.one_array or not s.single_output or s.out_shape != ()
    ):
        return (
            "The Landscape view draws a real scalar f of one array input (R^n -> R): its "
            "contours, gradient and curvature. Try the gallery's rosenbrock or logsumexp."
        )
    if name == "Linear map" and (not s.one_array or s.in_size < 2 or s.out_size < 2):
        return (
            "The Linear map view shows how J maps a small circle of inputs: it needs one "
            "array input and at least two real input and output coordinates (R^2 -> R^2, "
            "or a complex entry). Try the gallery's polar or a complex example."
        )
    if name in AUTOGRAD_ONLY and s.system != "autograd":
        return (
            f"The {name} view uses autograd's own operators; for {s.system} functions the "
            "Check view shows the same derivatives (complex ones as Re/Im blocks)."
        )
    return None


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
AUTOGRAD_ONLY = ("Complex", "Hessian", "Landscape", "Linear map")
#: Views whose plot functions place their axes in inches (no layout engine to freeze).
SELF_PLACED = ("Where", "Graph")
#: The explorer casts the point to its dtype control: check in that precision.
NATIVE = {"precision": "native"}


def draw_note(fig, text: str) -> tuple:
    """A view that does not apply: its figure, made short, says why."""
    fig.clear()
    fig.set_size_inches(*NOTE_SIZE)
    fig.text(
        0.5, 0.5, textwrap.fill(text, 95), ha="center", va="center", fontsize=11, color="#333333"
    )  # fmt: skip
    return ("note", text)


def draw_view(
    name: str,
    fig,
    art,
    r,
    f: Callable,
    args: tuple,
    argnums: Any,
    entry: tuple,
    wrt: Any,
    input_name: str = "x",
    single: Callable | None = None,
    sweep: tuple = ("forward", 0),
):
    """Update view ``name``'s artists in place (or draw it afresh); return the artists."""
    if isinstance(art, tuple) or tuple(fig.get_size_inches()) == NOTE_SIZE:
        art = None  # it was a note (perhaps another f's): the view's own size comes back
        fig.clear()
        fig.set_size_inches(*FIGSIZE[name])
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
                **P.axis_labels(r),
            )
    elif name == "Check":
        if art is None or not P.update_check(art, r):
            art = P.draw_check(r, fig)
    elif name == "Complex":
        b = complex_blocks(f, *args, wrt=argnums[0])
        if art is None or not P.update_complex(art, b):
            art = P.draw_complex(b, fig)
    elif name == "Hessian":
        H = hessian(f, argnums[0])(*args)
        if art is None or not P.update_hessian(art, H):
            art = P.draw_hessian(H, fig, name=input_name)
    elif name == "Step sweep":
        sweep = step_sweep(f, *args, entry=entry, wrt=wrt, **NATIVE)
        if art is None or not P.update_step_sweep(art, sweep):
            fig.clear()
            art = P.draw_step_sweep(sweep, fig.add_subplot())
    elif name == "Graph":
        try:
            sweeps = ad_sweeps(f, *args, wrt=argnums[0], seed=entry[1], cotangent=entry[0])
        except (ValueError, TypeError, GradExplorerError) as exc:  # too big, several outputs
            return draw_note(fig, f"The Graph view steps through small functions only. {exc}")
        mode, step = sweep
        step = min(step, len(sweeps.steps(mode)) - 1)
        if art is None or not D.update_ad_sweep(art, sweeps, mode, step):
            art = D.plot_ad_sweep(sweeps, mode=mode, step=step, fig=fig)
        art.sweeps = sweeps
    elif name == "Landscape":
        x = args[argnums[0]]
        if art is None or not D.update_landscape(art, single, x):
            fig.clear()
            art = D.plot_landscape(single, x, fig=fig)
    elif name == "Linear map":
        x = args[argnums[0]]
        if art is None or not D.update_linear_map(art, single, x):
            fig.clear()
            art = D.plot_linear_map(single, x, fig=fig)
    elif name == "Where":  # the graph's shape can change with the point: drawn afresh
        from ..display.graph import plot_localization
        from ..locate.localize import locate

        art = locate(f, *args, wrt=argnums, **NATIVE)
        plot_localization(art, fig)
    return art


def along(explorer: Any, slot: int) -> Callable:
    """f as a function of its one explored input, the others held at the current point
    (one object per loaded f: the teaching views redraw in place while it is the same)."""
    f = explorer.f

    def along(x):
        args = list(getattr(explorer, "args", explorer.base_args))
        args[slot] = x
        return f(*args)

    along.__name__ = getattr(f, "__name__", "f")
    return along
