"""The computation graph, step by step: a forward or reverse sweep of AD, drawn for teaching.

Each node of an :class:`~gradexplorer.locate.sweeps.ADSweeps` is a box with
its expression (``v2 = sin(v1)``), its value, and, once the sweep has reached
it, its tangent ``v̇2`` (forward mode) or adjoint ``v̄2`` (reverse mode); the
node of the current step is outlined thick in orange, with the edges its
chain rule runs along; nodes not reached yet are grey. Under the graph, the
current step's chain-rule product written out with numbers, the line of f
that ran the node, and what one sweep gives (a column of J in forward mode,
a row in reverse mode) and so how many a full Jacobian needs.

Placed in inches (one axes over the whole figure, one data unit an inch), so
the picture reads the same at any figure width up to :data:`WIDTH`;
:func:`update_ad_sweep` changes texts and colours only, never the layout.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from ..locate.sweeptext import arr, barred, dotted
from .ad_layout import (
    BOX_H,
    FONT,
    LINE,
    PAD,
    derivative_line,
    edge_path,
    fit,
    layout,
    mono,
    node_lines,
)
from .heatmap import figure_png

__all__ = ["plot_ad_sweep", "update_ad_sweep", "ADGraphArtists", "WIDTH", "HIGHLIGHT"]

#: The width (inches) of a figure made here: 860 px at 100 dpi, a projected notebook's width.
WIDTH = 8.6
#: The colour of the current step: its box's outline and the edges its chain rule uses.
HIGHLIGHT = "#e66101"
_FACE = {"current": "#fff2cc", "forward": "#d6e9f8", "reverse": "#dff0d8", "todo": "#f0f0f0"}
_EDGE = {"current": HIGHLIGHT, "visited": "#404040", "todo": "#b0b0b0"}
_WIDTHS = {"current": 3.0, "visited": 1.0, "todo": 0.8}
_TEXT = {"current": "#111111", "visited": "#111111", "todo": "#8a8a8a"}
_TITLE, _CHAIN, _SMALL = 11.0, 9.5, 9.0  # font sizes (points), all >= 8
_MARGIN = 0.12
_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


@dataclass(eq=False)
class ADGraphArtists:
    """The artists of one sweep's picture, changed in place by :func:`update_ad_sweep`.

    ``boxes[i]`` is node i's box (a FancyBboxPatch), ``heads`` / ``values`` /
    ``derivatives`` its three lines; ``edges`` maps ``(parent, consumer)`` to
    its arrow; ``highlighted`` is the node of the current step.
    """

    fig: Figure
    ax: Any
    boxes: list
    heads: list
    values: list
    derivatives: list
    edges: dict
    title: Any
    chain: Any
    code: Any
    caption: Any
    legend: list
    mode: str
    step: int
    highlighted: int
    graph: tuple = field(repr=False)
    chars: dict = field(default_factory=dict, repr=False)  # characters per line of each box
    widths: dict = field(default_factory=dict, repr=False)  # characters per line of the texts

    def _repr_png_(self) -> bytes:
        return figure_png(self.fig)


def _key(sweeps: Any) -> tuple:
    """What the drawn graph depends on: its nodes and edges (not the seeds)."""
    return tuple((n.name, n.expr, n.parents, n.value.shape) for n in sweeps.nodes)


def _wrap(text: str, chars: int) -> str:
    return "\n".join(textwrap.wrap(text, chars, subsequent_indent="    ", break_long_words=True))


def _wrap_sum(text: str, chars: int) -> str:
    """A chain-rule product wrapped before its `` + `` and `` = ``, never inside a
    vector (``[1.0,`` / ``0.0]``); a part longer than a line is wrapped as text."""
    parts = re.split(r"(?= [+=-] )", text)
    lines = [""]
    for part in parts:
        if lines[-1] and len(lines[-1]) + len(part) > chars:
            lines.append("   " + part)
        else:
            lines[-1] += part
    return "\n".join(_wrap(ln, chars) if len(ln) > chars else ln for ln in lines)


def _line(points: float) -> float:
    """Inches a line of text of this size takes."""
    return points * 1.32 / 72


def _lines(text: str) -> int:
    return text.count("\n") + 1


def _unit(k: int) -> str:
    return "e" + str(k).translate(_SUB)


def _unit_index(v: Any) -> int | None:
    """k when the seed is the unit vector e_k, else None."""
    nz = [k for k, x in enumerate(v) if x != 0]
    return nz[0] if len(nz) == 1 and v[nz[0]] == 1 else None


def _caption(sweeps: Any, mode: str) -> str:
    n, m = sweeps.n_inputs, sweeps.n_outputs
    head = (
        f"forward mode: one sweep per input (n = {n}) gives a column of J; reverse mode: "
        f"one sweep per output (m = {m}) gives a row, so a full Jacobian takes "
        f"{min(n, m)} sweep{'s' if min(n, m) > 1 else ''} in "
        f"{'forward' if n <= m else 'reverse'} mode. "
    )
    forward = mode == "forward"
    v = sweeps.seed if forward else sweeps.cotangent
    k = _unit_index(v)
    ins = [sweeps.nodes[i].name for i in sweeps.inputs]
    mark = dotted if forward else barred

    def of_inputs(mark: Any) -> str:  # ẋ, or (ȧ, ḃ) for several inputs
        return mark(ins[0]) if len(ins) == 1 else "(" + ", ".join(map(mark, ins)) + ")"

    x_, y_ = of_inputs(mark), mark(sweeps.nodes[-1].name)
    seed = f"{x_ if forward else y_} = " + (_unit(k) if k is not None else arr(v))
    end = (
        f"{y_} = J·{x_} = {arr(sweeps.tangent)}"
        if forward
        else f"{x_} = {y_}ᵀJ = {arr(sweeps.adjoint)}"
    )
    if k is not None:
        end += f", {'column' if forward else 'row'} {k} of J"
    return head + f"This sweep: {seed} gives {end}."


def _title(sweeps: Any, mode: str, step: Any) -> str:
    node = sweeps.nodes[step.node]
    last = len(sweeps.steps(mode)) - 1
    if node.kind == "input":
        what = f"the seed at input {node.name}" if mode == "forward" else f"input {node.name}"
    else:
        what = f"{'the seed at ' if not step.terms else ''}{node.name} = {node.expr}"
    return f"{sweeps.function}: {mode} mode, step {step.index} of {last}: {what}"


def _code(node: Any) -> str:
    if node.kind == "input":
        return f"{node.name} is an input of f"
    return f"{node.source}:  {node.code}" if node.source else f"{node.name} = {node.expr}"


def _draw_nodes(ax: Any, sweeps: Any, lay: Any, top: float) -> tuple[list, list, list, list]:
    """Each node's box and its three lines (head, value, derivative: filled per step)."""
    boxes, heads, values, derivs = [], [], [], []
    kw = dict(family="monospace", fontsize=FONT, va="center", ha="left", zorder=4)
    for node in sweeps.nodes:
        xc, yc = lay.centres[node.index]
        w = lay.widths[node.index]
        x, y = _MARGIN + xc, yc - top
        box = FancyBboxPatch(
            (x - w / 2, y - BOX_H / 2), w, BOX_H, boxstyle="round,pad=0,rounding_size=0.07",
            zorder=3,
        )  # fmt: skip
        ax.add_patch(box)
        boxes.append(box)
        head, value = node_lines(node, lay.chars[node.index])
        left = x - w / 2 + PAD
        heads.append(ax.text(left, y + LINE, head, weight="bold", **kw))
        values.append(ax.text(left, y, value, **kw))
        derivs.append(ax.text(left, y - LINE, "", **kw))
    return boxes, heads, values, derivs


def plot_ad_sweep(
    sweeps: Any, *, mode: str = "forward", step: int = 0, fig: Figure | None = None
) -> ADGraphArtists:
    """Draw the computation graph at one step of a forward or reverse sweep.

    Parameters
    ----------
    sweeps : ADSweeps
        From :func:`gradexplorer.locate.sweeps.ad_sweeps`.
    mode : {"forward", "reverse"}
    step : int
        The step shown (negative counts from the end: -1 is the last).
    fig : matplotlib Figure, optional
        Drawn on (cleared) at its own width, its height set to what the graph
        needs; without one, a figure :data:`WIDTH` inches wide.

    Returns
    -------
    ADGraphArtists

    Examples
    --------
    >>> import autograd.numpy as anp, numpy as np
    >>> from gradexplorer.locate.sweeps import ad_sweeps
    >>> s = ad_sweeps(lambda x: anp.sin(x[0]) * x[1], np.array([0.5, 2.0]))
    >>> art = plot_ad_sweep(s, mode="forward", step=2)
    >>> art.highlighted, art.heads[2].get_text(), art.chain.get_text()
    (2, 'v2 = sin(v1)', 'v̇2 = ∂v2/∂v1·v̇1 = cos(0.5)·1.0 = 0.878')
    """
    sweeps.step(mode, step)  # a clear error for a wrong mode or step, before drawing
    fig = fig if fig is not None else Figure(figsize=(WIDTH, 4.0))
    fig.clear()
    fig.set_layout_engine("none")  # placed in inches: see the module's docstring
    W = fig.get_figwidth()
    inner = W - 2 * _MARGIN
    lay = layout(sweeps, inner)
    chain_chars = int(inner / mono(_CHAIN))
    text_chars = int(inner / (0.52 * _CHAIN / 72))  # DejaVu Sans: about 0.5 em a letter
    # room for the longest text any step or mode will show: update never moves a thing
    titles = [_title(sweeps, m, s) for m in ("forward", "reverse") for s in sweeps.steps(m)]
    title_chars = int(inner / (0.6 * _TITLE / 72))
    title_lines = max(_lines(_wrap(t, title_chars)) for t in titles)
    chain_lines = max(
        _lines(_wrap_sum(s.text, chain_chars)) for s in sweeps.forward + sweeps.reverse
    )
    cap_lines = max(_lines(_wrap(_caption(sweeps, m), text_chars)) for m in ("forward", "reverse"))
    top = _MARGIN + title_lines * _line(_TITLE) + 0.22
    below = 0.3 + chain_lines * _line(_CHAIN) + 0.12 + _line(_SMALL) + 0.2
    below += _line(_SMALL) + 0.18 + cap_lines * _line(_CHAIN)
    H = top + lay.height + below + _MARGIN
    fig.set_size_inches(W, H, forward=True)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, W)
    ax.set_ylim(-H, 0)
    ax.set_axis_off()

    boxes, heads, values, derivs = _draw_nodes(ax, sweeps, lay, top)
    edges = {}
    for p, c in sweeps.edges:
        edges[p, c] = ax.add_patch(
            FancyArrowPatch(
                path=edge_path(lay, p, c, _MARGIN, -top), arrowstyle="-|>", mutation_scale=13,
                shrinkA=0, shrinkB=0, zorder=2,
            )
        )  # fmt: skip
    y = -(top + lay.height + 0.3)
    code = ax.text(_MARGIN, y, "", family="monospace", fontsize=_SMALL, va="top", color="#555555")
    y -= _line(_SMALL) + 0.12
    chain = ax.text(_MARGIN, y, "", family="monospace", fontsize=_CHAIN, va="top", ha="left")
    y -= chain_lines * _line(_CHAIN) + 0.2 + _line(_SMALL) / 2
    legend, x = [], _MARGIN + 0.05
    for label in ("current step", "tangent known (visited)", "not reached yet"):
        legend.append(
            ax.text(x, y, label, fontsize=_SMALL, va="center", ha="left",
                    bbox=dict(boxstyle="round,pad=0.3", lw=1.0))
        )  # fmt: skip
        x += len(label) * 0.6 * _SMALL / 72 + 0.4  # the two middle labels are as long
    y -= _line(_SMALL) / 2 + 0.18
    caption = ax.text(_MARGIN, y, "", fontsize=_CHAIN, va="top", ha="left", color="#222222")
    title = ax.text(_MARGIN, -_MARGIN, "", fontsize=_TITLE, va="top", ha="left", weight="bold")
    art = ADGraphArtists(
        fig, ax, boxes, heads, values, derivs, edges, title, chain, code, caption, legend,
        mode, step, -1, _key(sweeps),
    )  # fmt: skip
    art.chars = lay.chars
    art.widths = {"title": title_chars, "chain": chain_chars, "caption": text_chars}
    art.widths["code"] = int(inner / mono(_SMALL))
    _apply(art, sweeps, mode, step)
    return art


def update_ad_sweep(art: ADGraphArtists, sweeps: Any, mode: str, step: int) -> bool:
    """Move the picture to another step or mode, changing its artists in place.

    Returns
    -------
    bool
        False (nothing changed) when ``sweeps`` is not the graph drawn: draw
        it anew with :func:`plot_ad_sweep`.

    Examples
    --------
    >>> import autograd.numpy as anp, numpy as np
    >>> from gradexplorer.locate.sweeps import ad_sweeps
    >>> s = ad_sweeps(lambda x: anp.exp(anp.sin(x)), np.array(0.3))
    >>> art = plot_ad_sweep(s)
    >>> update_ad_sweep(art, s, "reverse", -1), art.highlighted
    (True, 0)
    """
    if _key(sweeps) != art.graph:
        return False
    sweeps.step(mode, step)  # a clear error for a wrong mode or step
    _apply(art, sweeps, mode, step)
    return True


def _apply(art: ADGraphArtists, sweeps: Any, mode: str, step: int) -> None:
    """Texts and colours of every artist for this step of this sweep."""
    current = sweeps.step(mode, step)
    done = {s.node: s.derivative for s in sweeps.steps(mode)[: current.index + 1]}
    for node in sweeps.nodes:
        i = node.index
        state = "current" if i == current.node else "visited" if i in done else "todo"
        box = art.boxes[i]
        box.set_facecolor(_FACE["current" if state == "current" else mode if i in done else "todo"])
        box.set_edgecolor(_EDGE[state])
        box.set_linewidth(_WIDTHS[state])
        art.derivatives[i].set_text(derivative_line(node, mode, done.get(i), art.chars[i]))
        art.derivatives[i].set_color(HIGHLIGHT if state == "current" else _TEXT[state])
        art.derivatives[i].set_weight("bold" if state == "current" else "normal")
        for t in (art.heads[i], art.values[i]):
            t.set_color(_TEXT[state])
    used = set(current.edges)
    for (p, c), arrow in art.edges.items():
        if (p, c) in used:
            arrow.set_color(HIGHLIGHT)
            arrow.set_linewidth(2.6)
            arrow.set_zorder(2.5)
        else:
            known = p in done and c in done
            arrow.set_color(_EDGE["visited"] if known else _EDGE["todo"])
            arrow.set_linewidth(1.1 if known else 0.9)
            arrow.set_zorder(2)
    art.title.set_text(_wrap(_title(sweeps, mode, current), art.widths["title"]))
    art.chain.set_text(_wrap_sum(current.text, art.widths["chain"]))
    art.code.set_text(fit(_code(sweeps.nodes[current.node]), art.widths["code"]))
    art.caption.set_text(_wrap(_caption(sweeps, mode), art.widths["caption"]))
    known = "tangent known (visited)" if mode == "forward" else "adjoint known (visited)"
    for t, (label, face, edge) in zip(
        art.legend,
        (
            ("current step", _FACE["current"], HIGHLIGHT),
            (known, _FACE[mode], _EDGE["visited"]),
            ("not reached yet", _FACE["todo"], _EDGE["todo"]),
        ),
    ):
        t.set_text(label)
        t.get_bbox_patch().set_facecolor(face)
        t.get_bbox_patch().set_edgecolor(edge)
    art.mode, art.step, art.highlighted = mode, current.index, current.node
