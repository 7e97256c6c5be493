"""The picture of a :class:`~gradexplorer.locate.Localization`: where the bug is.

The operations are drawn as boxes coloured by verdict, grouped under the line
of the user's code that ran them (``cell [3], line 11  return anp.sum(mix(h))``),
in evaluation order, with an arrow where a box uses the result of the one just
left of it (longer edges would cross the lines of code). Operations one library
call is made of (the ``array``, ``getitem`` and ``concatenate`` inside
``anp.stack``) are one box named after the call (``graphlayout``). The title
names the culprit, its line and that line's code, and where its rule is
written; beside the graph, the culprit's own Jacobian check.

Everything is placed in inches from the figure's own size, so the picture
reads the same in the explorer's figure (whatever size it chose) and alone;
a graph needing more height than the figure has makes the figure taller.
"""

from __future__ import annotations

import textwrap
from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from .graphlayout import (
    BOX_H,
    HEAD_H,
    MAX_HEIGHT,
    MONO,
    SUB_GAP,
    Row,
    box_key,
    boxes,
    choose_rows,
    fit,
    flow,
    rows_of,
)
from .heatmap import plot_jacobian

__all__ = ["plot_localization", "VERDICT_COLORS", "WIDTH", "MIN_FONT"]

VERDICT_COLORS = {"ok": "#cfe2f3", "wrong": "#e66101", "kink": "#fdb863", "other": "#e0e0e0"}
#: the dashed edge of an operation with an input cut off the AD graph
CUT_EDGE = "#e66101"
#: The width (inches) of a figure drawn here: 880 px at 100 dpi, a notebook's width.
WIDTH = 8.8
#: The smallest font (points) used: 10 px at 100 dpi and more.
MIN_FONT = 8.0
_TITLE, _LABEL, _SMALL = 10.5, 8.5, 8.0  # font sizes (points)


def _title(loc: Any, width: float) -> str:
    """The headline, wrapped to ``width`` inches; the culprit's line on a line of its own."""
    n, c = len(loc.nodes), loc.culprit
    name = getattr(loc, "function", "f")
    if c is None:
        skipped = sum(1 for node in loc.nodes if not node.checked)
        text = (
            f"locate({name}): no operation depends on the input"
            if not n
            else f"locate({name}): culprit: none, all {n} operations have right derivatives"
            if not skipped
            else f"locate({name}): culprit: none; {n - skipped} of {n} operations checked, "
            f"all right; {skipped} not checked"
        )
    else:
        inside = f" (inside {c.call})" if c.call else ""
        text = (
            f"locate({name}): culprit: {c.name}{inside}, {c.verdict} "
            f"(violation {c.local_error:.2g}), operation {c.index + 1} of {n}"
        )
    cuts = getattr(loc, "cuts", ())
    if c is None and cuts:
        text += f"; {len(cuts)} with an input cut off the AD graph"
    chars = max(int(width * 72 / (0.6 * _TITLE)), 20)
    text = textwrap.fill(text, chars, subsequent_indent="  ")
    if c is not None:
        text += "\n" + textwrap.fill(f"at {c.source}", chars, subsequent_indent="  ")
    return text


def _head(loc: Any) -> list[tuple[str, str]]:
    """What goes under the title: the culprit's code line, and where its rule is written;
    without a culprit, the first operation whose input is cut off the AD graph."""
    c = loc.culprit
    if c is None:
        cuts = getattr(loc, "cuts", ())
        if not cuts:
            return []
        cut = cuts[0]
        made = next((m for m in getattr(cut, "cut_from", ()) if m), "")
        said = f"the input of {cut.label} at {cut.source} depends on x outside the AD graph" + (
            f": the value of {made}" if made else ""
        )
        return [("text", said)] + ([("code", cut.code)] if cut.code else [])
    items = [("code", c.code)] if c.code else []
    if getattr(c, "rule_elsewhere", False) and c.rule is not None:
        items.append(("text", f"its {c.verdict.rule} rule, {c.rule.where}:"))
        if c.rule.code:
            items.append(("code", c.rule.code))
    return items


_ITEM_H = {"code": 0.29, "text": 0.21}  # inches per line under the title


def _side_text(c: Any, width: float) -> str:
    """What the culprit's own check says: how many entries are wrong, and its pattern."""
    r = c.report
    m, n = r.shape
    said = [f"{len(r.mismatches)} of {m * n} entries wrong"] + [
        note for note in r.notes if not note.startswith(("JVP rules", "forward mode"))
    ][:2]
    chars = max(int(width * 72 / (0.55 * _LABEL)), 20)
    return "\n".join(textwrap.fill(t, chars) for t in said)


def _draw_head(ax: Any, head: list, width: float) -> float:
    """The lines above the graph (the culprit, its code in a box); returns the y below
    them."""
    y = 0.0
    code_chars = int((width - 0.1) / (MONO * (_LABEL + 0.5) / _LABEL))
    for kind, text in head:
        if kind == "code":
            ax.text(
                0.03,
                y - 0.13,
                fit(text, code_chars),
                family="monospace",
                fontsize=_LABEL + 0.5,
                va="center",
                ha="left",
                clip_on=False,
                bbox=dict(boxstyle="round,pad=0.25", fc="#fff3e8", ec="#e66101", lw=0.8),
            )
        else:
            chars = int((width - 0.1) * 72 / (0.55 * (_LABEL + 0.5)))
            ax.text(0, y - 0.1, fit(text, chars), fontsize=_LABEL + 0.5, va="center", ha="left")
        y -= _ITEM_H[kind]
    return y


def plot_localization(loc: Any, fig: Any = None) -> Figure:
    """Draw the traced operations by line of code, coloured by verdict, and the culprit's check.

    Parameters
    ----------
    loc : Localization
        The result of :func:`gradexplorer.locate`.
    fig : matplotlib Figure, optional
        Drawn on (cleared first) at its own width; made taller when the graph
        needs it. Without one, a figure :data:`WIDTH` inches wide.

    Returns
    -------
    matplotlib Figure

    Examples
    --------
    >>> import autograd.numpy as anp, numpy as np
    >>> from gradexplorer import locate
    >>> fig = plot_localization(locate(lambda x: anp.sum(anp.sin(x)), np.ones(2)))
    >>> fig.axes[0].get_title()
    'locate(<lambda>): culprit: none, all 2 operations have right derivatives'
    >>> fig.get_figwidth() <= WIDTH
    True
    """
    fig = fig if fig is not None else Figure(figsize=(WIDTH, 3.0))
    fig.clear()
    fig.set_layout_engine("none")  # placed here in inches: see the module's docstring
    W = fig.get_figwidth()
    base = getattr(fig, "_gradexplorer_height", None) or fig.get_figheight()
    fig._gradexplorer_height = base  # the height chosen for it, before any growth

    c = loc.culprit
    report = getattr(c, "report", None)
    side = report is not None and getattr(report, "violation", None) is not None
    side_w = min(3.4, 0.4 * W) if side else 0.0
    margin = 0.12
    graph_w = W - side_w - 2 * margin
    title = _title(loc, W - 2 * margin)
    top = margin + (title.count("\n") + 1) * _TITLE * 1.3 / 72 + 0.08  # axes top, from the top
    head = _head(loc)
    head_h = sum(_ITEM_H[kind] for kind, _ in head) + 0.32  # and the legend

    drawn = boxes(loc)
    rows = rows_of(drawn)
    chars = 22 if len(drawn) <= 30 else 14  # big graphs: shorter names, more per row
    for row in rows:
        flow(row, graph_w - 0.1, chars, c)
    shown = choose_rows(rows, c, MAX_HEIGHT - top - head_h - margin)
    more = 0.3 if len(shown) < len(rows) else 0.0
    graph_h = head_h + sum(r.height for r in shown) + more + (0.0 if rows else 0.4)
    panel = _panel_layout(c, W, side_w) if side else None
    need = top + max(graph_h, head_h + panel[-1] if panel else 0.0) + margin
    H = max(base, need)
    if abs(H - fig.get_figheight()) > 1e-6:
        fig.set_size_inches(W, H, forward=True)

    ax = fig.add_axes((margin / W, margin / H, graph_w / W, (H - top - margin) / H))
    ax.set_xlim(0, graph_w)
    ax.set_ylim(-(H - top - margin), 0)
    ax.set_axis_off()
    # the main title (``get_title()``), moved to the left edge: a long one is wrapped
    # to the figure's width from there, never cut off on the left
    ax.set_title(title, fontsize=_TITLE, pad=5, ha="left", x=0.0)
    y = _draw_head(ax, head, W - 2 * margin)
    _legend(ax, y - 0.15, bool(getattr(loc, "cuts", ())))
    y -= 0.32
    _draw_rows(ax, shown, y, graph_w, c)
    if more:
        hidden = sum(len(r.boxes) + r.hidden for r in rows if not any(r is k for k in shown))
        ax.text(
            0,
            -graph_h + 0.2,
            f"… {hidden} more operations on {len(rows) - len(shown)} "
            "more lines (print the Localization for all)",
            fontsize=_SMALL,
            color="#555555",
        )
    if not rows:
        ax.text(
            0,
            y - 0.2,
            "nothing to draw: no operation of f depends on its input",
            fontsize=_LABEL,
            color="#555555",
            va="center",
        )
    if panel:
        _culprit_panel(fig, c, W, H, side_w, top + head_h, panel)
    return fig


def _legend(ax, y: float, cuts: bool = False) -> None:
    x = 0.0
    keys = [("ok", "ok"), ("wrong", "wrong derivative"), ("kink", "kink"), ("other", "not checked")]
    for key, label in keys + ([("cut", "input cut off the AD graph")] if cuts else []):
        edge = dict(ec=CUT_EDGE, lw=1.2, ls="--") if key == "cut" else dict(ec="#555555", lw=0.5)
        ax.text(
            x,
            y,
            label,
            fontsize=_SMALL,
            va="center",
            ha="left",
            bbox=dict(
                boxstyle="round,pad=0.25", fc=VERDICT_COLORS["ok" if key == "cut" else key], **edge
            ),
        )
        x += len(label) * 0.6 * _SMALL / 72 + 0.35


def _draw_rows(ax, rows: list[Row], y: float, width: float, culprit) -> None:
    """Each row's line of code, its boxes, and the arrows between boxes."""
    where: dict[int, tuple[float, float, float]] = {}  # box id -> (x centre, y, width)
    for row in rows:
        node = row.node
        head = f"{node.source}  {node.code}" if node.code else node.source
        mine = row.holds(culprit)
        ax.text(
            0,
            y - HEAD_H / 2,
            fit(head, int(width / MONO)),
            family="monospace",
            fontsize=_LABEL,
            va="center",
            ha="left",
            zorder=3,
            color="#a33f00" if mine else "#333333",
            weight="bold" if mine else "normal",
        )
        top = y - HEAD_H
        if row.hidden:
            ax.text(
                0.1,
                top - row.hidden_sub * (BOX_H + SUB_GAP) - BOX_H / 2,
                f"… and {row.hidden} more operations of this line",
                fontsize=_SMALL,
                va="center",
                color="#555555",
            )
        for b in row.boxes:
            x0, sub = b.xy
            yc = top - sub * (BOX_H + SUB_GAP) - BOX_H / 2
            where[id(b)] = (x0 + 0.1 + b.width / 2, yc, b.width)
            kind = b.kind(culprit)
            cut = kind != "culprit" and any(getattr(n, "cut", ()) for n in b.nodes)
            ax.text(
                x0 + 0.1 + b.width / 2,
                yc,
                b.label,
                family="monospace",
                fontsize=_LABEL,
                ha="center",
                va="center",
                zorder=4,
                weight="bold" if kind == "culprit" else "normal",
                bbox=dict(
                    boxstyle="round,pad=0.3",
                    fc=VERDICT_COLORS["wrong" if kind == "culprit" else kind],
                    ec="black" if kind == "culprit" else CUT_EDGE if cut else "#666666",
                    lw=2.2 if kind == "culprit" else 1.6 if cut else 0.6,
                    ls="--" if cut else "-",
                ),
            )
        y -= row.height
    # an arrow where a box uses the result of the box just left of it: the local
    # chains read left to right; longer edges would cross the lines of code
    for row in rows:
        for a, b in zip(row.boxes, row.boxes[1:]):
            if a.xy[1] == b.xy[1] and box_key(a) in b.parents:
                (xa, ya, wa), (xb, yb, wb) = where[id(a)], where[id(b)]
                ax.add_patch(
                    FancyArrowPatch(
                        (xa + wa / 2 + 0.07, ya),
                        (xb - wb / 2 - 0.07, yb),
                        arrowstyle="-|>",
                        mutation_scale=9,
                        color="#666666",
                        lw=0.8,
                        shrinkA=0,
                        shrinkB=0,
                        zorder=2,
                    )
                )


def _panel_layout(c: Any, W: float, side_w: float) -> tuple:
    """The culprit panel's sizes (inches): heatmap width and height, its title,
    the text under it, and the height all of it needs."""
    width = side_w - 0.65 - 0.7  # room for the row labels; for the colour bar's
    height = min(width * 0.9, 3.2)
    chars = max(int((side_w - 0.2) * 72 / (0.6 * 9.5)), 16)
    title = textwrap.fill(f"{c.name} alone: its Jacobian's violation", chars)
    text = _side_text(c, side_w - 0.3)
    title_h = (title.count("\n") + 1) * 9.5 * 1.3 / 72 + 0.1
    text_h = (text.count("\n") + 1) * _LABEL * 1.25 / 72
    return width, height, title, text, title_h + height + 0.8 + text_h + 0.1


def _culprit_panel(fig, c, W: float, H: float, side_w: float, top: float, panel: tuple) -> None:
    """The culprit's own Jacobian check, as a violation heatmap on the right."""
    r = c.report
    width, height, title, text, _ = panel
    title_h = (title.count("\n") + 1) * 9.5 * 1.3 / 72 + 0.1
    left, bottom = W - side_w + 0.65, H - top - title_h - height
    ax = fig.add_axes((left / W, bottom / H, width / W, height / H))
    heat = plot_jacobian(
        r.violation,
        ax,
        kind="violation",
        row_label=r.row_label,
        col_label=r.col_label,
        title=title,
        xlabel="its input",
        ylabel="its output",
    )
    ax.title.set_fontsize(9.5)
    for a in fig.axes[1:]:  # the heatmap and its colour bar: nothing below MIN_FONT
        labels = [a.xaxis.label, a.yaxis.label, *a.get_xticklabels(), *a.get_yticklabels()]
        for t in labels + list(a.texts):
            if t.get_fontsize() < MIN_FONT:
                t.set_fontsize(MIN_FONT)
    # values written in cells too narrow for them would run into each other
    cols = max(heat.shape[1] // max(heat.block[1], 1), 1)
    cell = ax.get_position().width * W * 72 / cols
    texts = getattr(heat, "texts", [])
    widest = max((len(t.get_text()) * 0.6 * t.get_fontsize() for t in texts), default=0.0)
    if widest > 0.92 * cell:
        for t in texts:
            t.set_visible(False)
    # what the culprit's own check says, under its picture and its axis labels
    fig.text((W - side_w + 0.15) / W, (bottom - 0.8) / H, text, fontsize=_LABEL, va="top")
