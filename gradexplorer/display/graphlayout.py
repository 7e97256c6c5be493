"""Where each operation of a :class:`~gradexplorer.locate.Localization` goes in its picture.

Pure layout, in inches, no drawing: nodes merged into boxes (the operations one
library call is made of are one box named after the call; autograd's own
bookkeeping is left out), boxes grouped into rows by the line of code that ran
them, each row flowed left to right into as many sub-rows as its width needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..locate.local_check import BOOKKEEPING
from ..locate.result import OpVerdict

__all__ = [
    "Box", "Row", "boxes", "rows_of", "flow", "fit", "choose_rows", "box_key",
    "MONO", "BOX_H", "HEAD_H", "SUB_GAP", "ROW_GAP", "BOX_GAP", "MAX_HEIGHT", "MAX_SUBS",
]  # fmt: skip

#: Inches per character of the 8.5 pt monospace font of the labels (DejaVu Sans Mono).
MONO = 0.602 * 8.5 / 72
BOX_H, HEAD_H, SUB_GAP, ROW_GAP, BOX_GAP = 0.27, 0.22, 0.12, 0.12, 0.3  # inches
MAX_HEIGHT = 13.0  # inches: beyond, rows are left out (the culprit's never)
MAX_SUBS = 4  # sub-rows of one line of code (a loop's) before the rest is counted


@dataclass
class Box:
    """One drawn operation: a node, or the nodes of one library call."""

    label: str
    nodes: list
    parents: set = field(default_factory=set)
    xy: tuple = (0.0, 0.0)
    width: float = 0.0

    def holds(self, node: Any) -> bool:
        return node is not None and any(n is node for n in self.nodes)

    def kind(self, culprit: Any) -> str:
        """``culprit``, ``wrong``, ``ok`` (all checked and right) or ``other``."""
        verdicts = [n.verdict for n in self.nodes]
        if self.holds(culprit):
            return "culprit"
        if any(v.wrong for v in verdicts):
            return "wrong"
        return "ok" if all(v is OpVerdict.OK for v in verdicts) else "other"


def boxes(loc: Any) -> list[Box]:
    """Nodes merged by library call; autograd's bookkeeping left out (its
    consumers take its parents), the culprit always kept."""
    out: dict[int, Box] = {}
    box_of: dict[int, set] = {}  # node index -> the boxes standing for it
    for n in loc.nodes:
        parents = set().union(*(box_of.get(p, set()) for p in n.parents))
        if n.verdict == BOOKKEEPING and n is not loc.culprit:
            box_of[n.index] = parents
            continue
        key = n.group if n.group >= 0 else n.index
        box = out.setdefault(key, Box(n.label, []))
        box.nodes.append(n)
        box.parents |= parents - {key}
        box_of[n.index] = {key}
    return list(out.values())


@dataclass
class Row:
    """The boxes one line of code ran, placed in ``subs`` sub-rows; ``hidden``
    boxes of a long row (a loop's) are left out, said in sub-row ``hidden_sub``."""

    node: Any  # its first operation: the row's source and code
    boxes: list
    subs: int = 1
    hidden: int = 0
    hidden_sub: int = -1

    def holds(self, node: Any) -> bool:
        return any(b.holds(node) for b in self.boxes)

    @property
    def height(self) -> float:
        """Inches the row takes, its line of code included."""
        return HEAD_H + self.subs * BOX_H + (self.subs - 1) * SUB_GAP + ROW_GAP


def rows_of(boxes: list[Box]) -> list[Row]:
    """Boxes grouped under the line of code that ran them, lines in order of use."""
    rows: dict[str, Row] = {}
    for b in boxes:
        n = b.nodes[0]
        rows.setdefault(n.source, Row(n, [])).boxes.append(b)
    return list(rows.values())


def fit(text: str, chars: int) -> str:
    """``text`` cut to ``chars`` characters, an ellipsis marking the cut."""
    return text if len(text) <= chars else text[: max(chars - 1, 1)] + "…"


def flow(row: Row, width: float, chars: int, culprit: Any = None) -> None:
    """Place a row's boxes left to right, sub-row after sub-row, as many as
    ``width`` inches hold; past :data:`MAX_SUBS` sub-rows the rest is left out
    (but for the culprit's sub-row) and counted."""
    x, sub = 0.0, 0
    for b in row.boxes:
        b.label = fit(b.label, chars)
        b.width = len(b.label) * MONO + 0.16
        if x > 0 and x + b.width > width:
            x, sub = 0.0, sub + 1
        b.xy = (x, sub)
        x += b.width + BOX_GAP
    row.subs = sub + 1
    if row.subs <= MAX_SUBS:
        return
    keep = MAX_SUBS - 1
    mine = next((b.xy[1] for b in row.boxes if b.holds(culprit)), None)
    kept = [b for b in row.boxes if b.xy[1] < keep]
    if mine is not None and mine >= keep:  # the culprit's sub-row moves up, then the count
        moved = [b for b in row.boxes if b.xy[1] == mine]
        for b in moved:
            b.xy = (b.xy[0], keep)
        kept, keep = kept + moved, keep + 1
    row.hidden = len(row.boxes) - len(kept)
    row.boxes, row.hidden_sub, row.subs = kept, keep, keep + 1


def choose_rows(rows: list[Row], culprit: Any, budget: float) -> list[Row]:
    """The rows drawn: all when they fit in ``budget`` inches, else the first
    ones and the culprit's."""
    if sum(r.height for r in rows) <= budget:
        return list(rows)
    mine = next((r for r in rows if r.holds(culprit)), None)
    keep, used = [], (mine.height if mine is not None else 0.0) + 0.3
    for r in rows:
        if r is mine:
            continue
        if used + r.height > budget:
            break
        keep.append(r)
        used += r.height
    return [r for r in rows if r is mine or any(r is k for k in keep)]


def box_key(b: Box) -> int:
    """The key a box's consumers know it by (in their ``parents``)."""
    n = b.nodes[0]
    return n.group if n.group >= 0 else n.index
