"""The traced graph of a :class:`~gradexplorer.locate.Localization` (matplotlib only)."""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from .plots import plot_jacobian

__all__ = ["plot_localization", "VERDICT_COLORS"]

VERDICT_COLORS = {"ok": "#cfe2f3", "wrong": "#e66101", "kink": "#fdb863", "other": "#e0e0e0"}


def _color(verdict: str) -> str:
    if verdict.startswith("wrong"):
        return VERDICT_COLORS["wrong"]
    return VERDICT_COLORS.get(verdict, VERDICT_COLORS["other"])


def _layout(nodes) -> dict[int, tuple[float, float]]:
    """Evaluation order top to bottom; a node sits one column right of its deepest parent."""
    depth = {}
    for n in nodes:
        depth[n.index] = 1 + max((depth[p] for p in n.parents if p in depth), default=-1)
    return {n.index: (float(depth[n.index]), -float(n.index)) for n in nodes}


def plot_localization(loc: Any, fig: Any = None) -> Figure:
    """Draw the operations as a graph coloured by verdict, the culprit's check beside it.

    >>> import autograd.numpy as anp, numpy as np
    >>> from gradexplorer import locate
    >>> fig = plot_localization(locate(lambda x: anp.sum(anp.sin(x)), np.ones(2)))
    >>> fig.axes[0].get_title()
    'traced operations (2): no wrong derivative'
    """
    n = len(loc.nodes)
    fig = fig or Figure(figsize=(13, max(3.0, 0.45 * n + 1.2)), layout="constrained")
    fig.clear()
    ax, side = fig.subplots(1, 2, width_ratios=[1.5, 1])
    pos = _layout(loc.nodes)
    for node in loc.nodes:
        x, y = pos[node.index]
        for p in node.parents:
            px, py = pos[p]
            ax.add_patch(
                FancyArrowPatch(
                    (px, py),
                    (x, y),
                    arrowstyle="-|>",
                    mutation_scale=10,
                    color="#777777",
                    lw=0.8,
                    shrinkA=8,
                    shrinkB=8,
                )
            )
    for node in loc.nodes:
        x, y = pos[node.index]
        edge = "black" if node is loc.culprit else "#555555"
        ax.text(
            x,
            y,
            f"{node.name}\n{node.source}",
            ha="center",
            va="center",
            fontsize=7,
            bbox=dict(
                boxstyle="round,pad=0.3",
                fc=_color(node.verdict),
                ec=edge,
                lw=2.0 if node is loc.culprit else 0.6,
            ),
        )
    xs = [p[0] for p in pos.values()] or [0.0]
    ax.set_xlim(min(xs) - 0.8, max(xs) + 0.8)
    ax.set_ylim(-n + 0.3, 0.7)
    ax.set_axis_off()
    status = (
        "no wrong derivative"
        if loc.culprit is None
        else f"culprit: {loc.culprit.name} at {loc.culprit.source}"
    )
    ax.set_title(f"traced operations ({n}): {status}")
    legend = [
        ("ok", "ok"),
        ("wrong", "wrong derivative"),
        ("kink", "kink"),
        ("other", "not checked"),
    ]
    for k, (key, label) in enumerate(legend):
        ax.text(
            0.01 + 0.2 * k,
            -0.02,
            label,
            transform=ax.transAxes,
            fontsize=8,
            va="top",
            bbox=dict(fc=VERDICT_COLORS[key], ec="#555555", lw=0.5),
        )
    c = loc.culprit
    if c is not None and c.report is not None and c.report.violation is not None:
        r = c.report
        plot_jacobian(
            r.violation,
            side,
            kind="violation",
            row_label=r.row_label,
            col_label=r.col_label,
            title=f"{c.name}: its own derivative's violation",
            xlabel="its input",
            ylabel="its output",
        )
    else:
        side.set_axis_off()
        side.text(
            0.5,
            0.5,
            "every operation's own derivative\nagrees with finite differences"
            if c is None
            else f"{c.name}: {c.verdict}",
            ha="center",
            va="center",
        )
    return fig
