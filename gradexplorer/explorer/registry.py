"""The explorer's views, one :class:`View` object per tab.

A view says when it applies to f (and why not, in words shown in its place), what it
computes and sends (:class:`Frame`: numbers for the page to draw, or a matplotlib
picture), and whether it follows the selected entry. The explorer knows no view by
name beyond this table: tabs, notes, drawing and the saved pictures all come from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..ad.complex import complex_blocks
from ..ad.jacobians import hessian
from . import maps

__all__ = ["View", "Frame", "Shape", "VIEWS", "VIEW_NAMES", "shape_of", "view", "pending_spec"]


@dataclass(frozen=True)
class Frame:
    """What one view sends: a spec for the page, float32 arrays by slot, a picture,
    labels (sent only when they change)."""

    spec: dict
    slots: dict = field(default_factory=dict)
    png: bytes | None = None
    labels: dict | None = None


@dataclass(frozen=True)
class Shape:
    """What the views need to know of f at a point to say whether they apply."""

    operators: bool  # the backend runs gradexplorer's AD operators (hessian, complex blocks)
    system: str  # the AD system's name, for the words of a note only
    complex_io: bool
    one_array: bool
    single_output: bool
    out_shape: tuple
    in_size: int = 0  # real coordinates of the selected inputs
    out_size: int = 0  # real coordinates of the output


def shape_of(backend: Any, call: Any, layout: Any) -> Shape:
    return Shape(
        bool(backend.capabilities.operators),
        backend.name,
        any(s.complex for s in layout.leaves + call.specs),
        len(call.specs) == 1 and call.selected[0].tree.is_leaf,
        layout.tree.is_leaf,
        tuple(layout.leaves[0].shape) if layout.tree.is_leaf else (),
        sum(s.real_size for s in call.specs),
        sum(s.real_size for s in layout.leaves),
    )


@dataclass(frozen=True)
class View:
    """One tab: its name, why it does not apply (None: it does), how it computes its
    frame from the explorer's state, and what makes it out of date."""

    name: str
    why_not: Callable[[Shape], str | None]
    compute: Callable[[Any], Frame]
    needs_operators: bool = False
    follows_selection: bool = False  # redrawn when the selected entry moves

    def note(self, s: Shape) -> str | None:
        """Why this view does not apply to f (None when it does)."""
        reason = self.why_not(s)
        if reason is None and self.needs_operators and not s.operators:
            reason = (
                f"The {self.name} view uses gradexplorer's AD operators, which the {s.system} "
                "backend does not run yet; the Check view shows the same derivatives "
                "(complex ones as Re/Im blocks)."
            )
        return reason


# ------------------------------------------------------------------ when a view applies


def _always(s: Shape) -> None:
    return None


def _complex(s: Shape) -> str | None:
    if not s.complex_io:
        return (
            "f is real here: its Jacobian has no Re/Im blocks. The Complex view shows "
            "complex functions (the gallery's holomorphic / conj examples)."
        )
    if not (s.one_array and s.single_output):
        return "The Complex view takes f with one array input and one array output."
    return None


def _scalar_of_one_array(name: str) -> Callable[[Shape], str | None]:
    def why_not(s: Shape) -> str | None:
        if s.complex_io or not s.single_output or s.out_shape != ():
            shape = s.out_shape if s.single_output else "several outputs"
            return (
                f"The {name} view needs a real scalar output; this f returns "
                f"{'shape ' if s.single_output else ''}{shape}. "
                + (
                    "Its second derivatives are the Jacobian of its gradient: try the "
                    "Jacobian view on a scalar f."
                    if name == "Hessian"
                    else "It draws a real scalar f of one array input (R^n -> R): its "
                    "contours, gradient and curvature. Try the gallery's rosenbrock."
                )
            )
        if not s.one_array:
            return f"The {name} view takes f with one array input (choose it with wrt=)."
        return None

    return why_not


def _graph(s: Shape) -> str | None:
    if s.complex_io or not s.single_output:
        return (
            "The Graph view steps through the sweeps of a real function with one array "
            "output (complex values have two tangents a node); try the gallery's sin or l2_norm."
        )
    return None


def _linear_map(s: Shape) -> str | None:
    if not s.one_array or s.in_size < 2 or s.out_size < 2:
        return (
            "The Linear map view shows how J maps a small circle of inputs: it needs one "
            "array input and at least two real input and output coordinates (R^2 -> R^2, "
            "or a complex entry). Try the gallery's polar or a complex example."
        )
    return None


# ------------------------------------------------------------------ what a view sends


def _jacobian(ex: Any) -> Frame:
    r = ex.report
    spec, slots = maps.jacobian_frame(r.analytic, r, ex.map_key())
    return Frame(ex.decorate(spec), slots, labels=ex.labels())


def _check(ex: Any) -> Frame:
    spec, slots = maps.check_frame(ex.report, ex.map_key())
    return Frame(ex.decorate(spec), slots, labels=ex.labels())


def _complex_view(ex: Any) -> Frame:
    b = complex_blocks(ex.fn, *ex.args, wrt=ex.argnums[0])
    spec, slots = maps.complex_frame(b, ex.map_key())
    rows = [f"{b.out_name}[{i}]" for i in range(b.dre_dre.shape[0])]
    cols = [f"{b.in_name}[{j}]" for j in range(b.dre_dre.shape[1])]
    labels = {
        "rows": rows,
        "cols": cols,
        "xlabel": f"input {b.in_name}[j]",
        "ylabel": f"output {b.out_name}[i]",
    }
    return Frame(spec, slots, labels=labels)


def _hessian(ex: Any) -> Frame:
    H = hessian(ex.fn, ex.argnums[0])(*ex.args)
    spec, slots = maps.hessian_frame(H, ex.map_key())
    names = [ex.call.specs[0].label(k) for k in range(ex.call.specs[0].real_size)]
    name = ex.input_names[0]
    labels = {"rows": names, "cols": names, "xlabel": f"{name}[j]", "ylabel": f"{name}[i]"}
    return Frame(spec, slots, labels=labels)


def _step_sweep(ex: Any) -> Frame:
    spec, png = ex.pictures.step_sweep(
        ex.fn, ex.args, ex.entry_in_input(), ex.entry_wrt(), ex.dtype.value
    )
    return Frame(spec, png=png)


def _where(ex: Any) -> Frame:
    spec, png = ex.pictures.where(ex.fn, ex.args, ex.argnums, ex.dtype.value)
    return Frame(spec, png=png)


def _graph_view(ex: Any) -> Frame:
    mode, step = ex.sweep_mode.value, ex.sweep_step.value
    entry = ex.entry_in_input()
    frame, sweeps = ex.pictures.graph(ex.fn, ex.args, ex.argnums[0], entry, mode, step)
    ex.sweeps_shown(sweeps)
    return Frame(frame[0], png=frame[1]) if isinstance(frame, tuple) else Frame(frame)


def _landscape(ex: Any) -> Frame:
    spec, png = ex.pictures.landscape(ex.single, ex.args[ex.argnums[0]])
    return Frame(spec, png=png)


def _linear_map_view(ex: Any) -> Frame:
    spec, png = ex.pictures.linear_map(ex.single, ex.args[ex.argnums[0]])
    return Frame(spec, png=png)


#: The tabs, always all of them (a view that does not apply says why): a tab set that
#: never changes keeps its titles and places when the function changes.
VIEWS: tuple[View, ...] = (
    View("Jacobian", _always, _jacobian),
    View("Check", _always, _check),
    View("Complex", _complex, _complex_view, needs_operators=True),
    View("Hessian", _scalar_of_one_array("Hessian"), _hessian, needs_operators=True),
    View("Step sweep", _always, _step_sweep, follows_selection=True),
    View("Where", _always, _where),
    View("Graph", _graph, _graph_view, follows_selection=True),
    View("Landscape", _scalar_of_one_array("Landscape"), _landscape, needs_operators=True),
    View("Linear map", _linear_map, _linear_map_view, needs_operators=True),
)
VIEW_NAMES = tuple(v.name for v in VIEWS)


def view(name: str) -> View:
    """The view called ``name``.

    >>> view("Hessian").needs_operators, view("Step sweep").follows_selection
    (True, True)
    """
    return VIEWS[VIEW_NAMES.index(name)]


#: The height (CSS px) each view's first picture usually has: its pane keeps it while
#: waiting, so that nothing below moves when the picture comes.
HEIGHTS = {"Jacobian": 520, "Check": 680, "Complex": 620, "Hessian": 700, "Step sweep": 500}


def pending_spec(name: str) -> dict:
    """What a view's pane shows before its first numbers.

    >>> pending_spec("Check")
    {'kind': 'pending', 'text': 'drawing…', 'height': 680}
    """
    from .pictures import FIGSIZE

    height = HEIGHTS.get(name) or int(round(FIGSIZE.get(name, (0, 2.0))[1] * 100))
    return {"kind": "pending", "text": "drawing…", "height": height}
