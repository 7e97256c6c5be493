"""Where each node of an :class:`~gradexplorer.locate.sweeps.ADSweeps` graph goes.

Pure layout, in inches, no drawing. Nodes are put in layers by depth (an
input is layer 0, an operation one more than its deepest argument), ordered
within a layer by the mean position of their neighbours (fewer crossings),
and the layers run left to right; when they do not fit the width, they go on
in a band below, right to left, and so on (a snake, so that consecutive
layers stay next to each other). An edge that skips
layers gets a lane in each layer it passes (a dummy node, as in Sugiyama's
method), so it runs between the boxes, never behind one. Every box is as wide
as the longest text it will ever show (its expression, its value, its
tangent and its adjoint), so stepping through a sweep never moves a box.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from matplotlib.path import Path

from ..locate.sweeptext import arr, barred, dotted

__all__ = [
    "Layout", "layout", "edge_path", "node_lines", "derivative_line", "width_of", "fit", "short",
    "mono", "FONT", "CHAR", "LINE", "PAD", "BOX_H",
]  # fmt: skip

#: Font size (points) of the text in a box; inches per character of its monospace font
#: (DejaVu Sans Mono's advance, 0.602 em, rounded up to whole pixels at 100 dpi as Agg does).
FONT = 9.0


def mono(points: float) -> float:
    """Inches per character of the monospace font at ``points``."""
    return math.ceil(0.602 * points * 100 / 72) / 100


CHAR = mono(FONT)
LINE = FONT * 1.3 / 72  # inches per line
PAD = 0.08  # inches between a box's edge and its text
BOX_H = 3 * LINE + 2 * PAD
_GAP_X, _GAP_Y = 0.26, 0.3  # inches between boxes (at least)
_LANE = 0.1  # inches a long edge takes where it passes a layer (lanes side by side: 0.18)
_BAND_GAP = 0.5  # inches between two bands of layers
#: Room (inches) kept at both ends of the bands for the edges turning into the next band.
TURN = 0.45
#: Characters a box's lines may take: at most (a longer value is shortened), and at least
#: before the layers go on in another band (below 14, a pair ``[1.0, 0.0]`` is cut).
MOST, LEAST = 40, 16


def width_of(text: str) -> int:
    """Characters a string takes in a monospace font (combining marks take none).

    >>> width_of("v\\u03072 = 1.0"), len("v\\u03072 = 1.0")
    (8, 9)
    """
    return sum(1 for c in text if not unicodedata.combining(c))


def fit(text: str, chars: int) -> str:
    """``text`` cut to ``chars`` characters, an ellipsis marking the cut."""
    if width_of(text) <= chars:
        return text
    out = ""
    for c in text:
        if width_of(out + c) > chars - 1:
            break
        out += c
    return out + "…"


def short(value: Any, chars: int) -> str:
    """A value in at most ``chars`` characters: middle entries of a long vector
    left out (``[0.1, 0.2, …, 0.9]``), else cut."""
    text = arr(value)
    if width_of(text) <= chars:
        return text
    items = text[1:-1].split(", ") if text.startswith("[") and "[" not in text[1:] else []
    for k in range(len(items) - 2, 0, -1):
        cand = "[" + ", ".join(items[:k]) + ", …, " + items[-1] + "]"
        if width_of(cand) <= chars:
            return cand
    return fit(text, chars)


def node_lines(node: Any, chars: int) -> tuple[str, str]:
    """A box's first two lines: ``v2 = sin(v1)`` (``x  (input)``) and its value."""
    head = f"{node.name}  (input)" if node.kind == "input" else f"{node.name} = {node.expr}"
    return fit(head, chars), "= " + short(node.value, chars - 2)


def derivative_line(node: Any, mode: str, value: Any, chars: int) -> str:
    """A box's third line: ``v̇2 = 0.878`` (forward) or ``v̄2 = 3.62`` (reverse);
    ``v̇2 = ?`` before the sweep reaches it (``value`` None)."""
    name = dotted(node.name) if mode == "forward" else barred(node.name)
    if value is None:
        return f"{name} = ?"
    return f"{name} = " + short(value, chars - width_of(name) - 3)


@dataclass
class Layout:
    """Box centres and widths (inches; y grows downwards from the graph's top,
    so it is negative), the points each edge passes (``routes``: its lanes,
    with their layers), the graph's size and the characters per box line.

    Layers run in bands: ``band[k]`` is layer k's band, even bands left to
    right, odd ones right to left; ``layer[i]`` is node i's layer."""

    centres: dict[int, tuple[float, float]]
    widths: dict[int, float]
    routes: dict[tuple[int, int], list[tuple[float, float, int]]]
    height: float
    width: float
    chars: dict[int, int]
    layer: dict[int, int]
    band: list[int]
    ports: dict[tuple[int, int], tuple[float, float]] = field(default_factory=dict)
    turns: dict = field(default_factory=dict)

    @property
    def bands(self) -> int:
        return max(self.band) + 1


def _box_width(sweeps: Any, node: Any, chars: int) -> float:
    finals = [s.derivative for s in sweeps.forward + sweeps.reverse if s.node == node.index]
    lines = [*node_lines(node, chars), derivative_line(node, "forward", None, chars)]
    lines += [derivative_line(node, m, v, chars) for m, v in zip(("forward", "reverse"), finals)]
    return max(width_of(t) for t in lines) * CHAR + 2 * PAD


def _layers(sweeps: Any) -> tuple[list[list], dict, dict]:
    """Layers of keys (a node's index, or ``(parent, consumer, k)`` for the lane
    of a long edge), each key's neighbours before and after, and the lanes."""
    depth: dict[int, int] = {}
    for n in sweeps.nodes:  # evaluation order: parents come first
        depth[n.index] = 1 + max((depth[p] for p in n.parents), default=-1)
    # an operation moves right, next to its first consumer: a side branch (x[0]**2
    # added at the end) then sits by the node it feeds, not far left of it
    children: dict[int, list[int]] = {n.index: [] for n in sweeps.nodes}
    for n in sweeps.nodes:
        for p in n.parents:
            children[p].append(n.index)
    for n in reversed(sweeps.nodes):
        if n.kind == "operation" and children[n.index]:
            depth[n.index] = min(depth[c] for c in children[n.index]) - 1
    layers: list[list] = [[] for _ in range(max(depth.values()) + 1)]
    for n in sweeps.nodes:
        layers[depth[n.index]].append(n.index)
    before: dict = {k: [] for k in depth}
    after: dict = {k: [] for k in depth}
    lanes: dict = {}
    for p, c in sweeps.edges:
        chain = [(p, c, k) for k in range(depth[p] + 1, depth[c])]
        lanes[p, c] = chain
        for k, key in zip(range(depth[p] + 1, depth[c]), chain):
            layers[k].append(key)
        path = [p, *chain, c]
        for a, b in zip(path, path[1:]):
            after.setdefault(a, []).append(b)
            before.setdefault(b, []).append(a)
    return layers, {"before": before, "after": after}, lanes


def _order(layers: list[list], near: dict) -> None:
    """Order each layer by the mean rank of its keys' neighbours (a few sweeps
    of the barycentre heuristic), so that edges cross less."""

    def ranks() -> dict:
        # the middle of each layer at 0, so layers of different sizes line up
        return {i: k - (len(la) - 1) / 2 for la in layers for k, i in enumerate(la)}

    first = {key: k for la in layers for k, key in enumerate(la)}
    for sweep in range(4):
        forward = sweep % 2 == 0
        nb = near["before" if forward else "after"]
        for la in layers[1:] if forward else layers[-2::-1]:
            r = ranks()

            def key(i: Any, r: dict = r, nb: dict = nb) -> tuple:
                ns = [r[j] for j in nb.get(i, [])]
                return (sum(ns) / len(ns) if ns else r[i], first[i])

            la.sort(key=key)


def layout(sweeps: Any, width: float) -> Layout:
    """Place the boxes in ``width`` inches: as many layers side by side as fit
    (the widest columns' text shortened first, down to :data:`LEAST`
    characters), the next ones in a band below, the other way."""
    layers, near, lanes = _layers(sweeps)
    _order(layers, near)
    nodes = {n.index: n for n in sweeps.nodes}
    cache: dict = {}

    def wide(i: int, chars: int) -> float:
        if (i, chars) not in cache:
            cache[i, chars] = _box_width(sweeps, nodes[i], chars)
        return cache[i, chars]

    caps = [MOST] * len(layers)

    def col(k: int) -> float:
        return max(wide(i, caps[k]) for i in layers[k] if isinstance(i, int))

    def fits(ks: list[int]) -> bool:
        """Whether these layers fit side by side, shortening the widest first."""
        while sum(col(k) for k in ks) + _GAP_X * (len(ks) - 1) > width:
            shrinkable = [k for k in ks if caps[k] > LEAST]
            if not shrinkable:
                return False
            caps[max(shrinkable, key=col)] -= 1
        return True

    if not fits(list(range(len(layers)))):
        width -= 2 * TURN  # several bands: room at both ends for the turns
        caps[:] = [MOST] * len(layers)
    bands: list[list[int]] = [[]]
    for k in range(len(layers)):
        if bands[-1] and not fits(bands[-1] + [k]):
            for j in bands[-1] + [k]:  # the band as it was: undo the shortening
                caps[j] = MOST
            fits(bands[-1])
            bands.append([])
        bands[-1].append(k)
        fits(bands[-1])
    chars = {i: caps[k] for k, la in enumerate(layers) for i in la if isinstance(i, int)}
    widths = {i: wide(i, c) for i, c in chars.items()}
    cols = [col(k) for k in range(len(layers))]
    lay = _place(layers, bands, widths, cols, lanes, width, chars)
    if len(bands) > 1:  # the room kept for the turns, on both sides
        lay.centres = {i: (x + TURN, y) for i, (x, y) in lay.centres.items()}
        lay.routes = {e: [(x + TURN, y, k) for x, y, k in r] for e, r in lay.routes.items()}
        lay.width += 2 * TURN
        lay.turns = _turns(lay)
    return lay


def _turns(lay: Layout) -> dict:
    """``(edge, band) -> x`` of the vertical run of each edge turning out of
    that band: past the band's widest box, one beside the other."""
    ends: dict = {}
    for i, (x, _) in lay.centres.items():
        b = lay.band[lay.layer[i]]
        lo, hi = ends.get(b, (x, x))
        ends[b] = (min(lo, x - lay.widths[i] / 2), max(hi, x + lay.widths[i] / 2))
    turning: dict = {}
    for e in lay.routes:
        layers = [lay.layer[e[0]], *(k for _, _, k in lay.routes[e]), lay.layer[e[1]]]
        for k0, k1 in zip(layers, layers[1:]):
            if lay.band[k0] != lay.band[k1]:
                turning.setdefault(lay.band[k0], []).append(e)
    out = {}
    for b, edges in turning.items():
        gap = min(0.09, (TURN - 0.15) / max(len(edges), 1))
        for j, e in enumerate(edges):
            # the first edges turn closest to the boxes
            out[e, b] = ends[b][1] + 0.12 + j * gap if b % 2 == 0 else ends[b][0] - 0.12 - j * gap
    return out


def _place(layers, bands, widths, cols, lanes, width: float, chars) -> Layout:
    tall = {k: BOX_H if isinstance(k, int) else _LANE for la in layers for k in la}

    def gap(a: Any, b: Any) -> float:
        # lanes of long edges run close together; boxes keep their distance
        return 0.08 if not isinstance(a, int) and not isinstance(b, int) else _GAP_Y

    def height(la: list) -> float:
        return sum(tall[k] for k in la) + sum(gap(a, b) for a, b in zip(la, la[1:]))

    at: dict = {}
    band_of: list[int] = []
    top = 0.0
    for b, ks in enumerate(bands):
        used = sum(cols[k] for k in ks)
        space = min((width - used) / max(len(ks) - 1, 1), 0.9) if len(ks) > 1 else 0.0
        x = (width - used - space * (len(ks) - 1)) / 2
        tallest = max(height(layers[k]) for k in ks)
        for k in ks:
            y = top + (tallest - height(layers[k])) / 2
            xc = x + cols[k] / 2
            xc = width - xc if b % 2 else xc  # odd bands run right to left
            for key, below in zip(layers[k], [*layers[k][1:], None]):
                at[key] = (xc, -(y + tall[key] / 2))
                y += tall[key] + gap(key, below)
            x += cols[k] + space
            band_of.append(b)
        top += tallest + _BAND_GAP
    layer = {k: n for n, la in enumerate(layers) for k in la if isinstance(k, int)}
    routes = {e: [(*at[key], key[2]) for key in chain] for e, chain in lanes.items()}
    centres = {k: v for k, v in at.items() if isinstance(k, int)}
    lay = Layout(centres, widths, routes, top - _BAND_GAP, width, chars, layer, band_of)
    lay.ports = _ports(lay)
    return lay


def _anchor(lay: Layout, i: int, out: bool) -> tuple[float, float]:
    """The middle of the side of box i its edges leave (``out``) or enter by:
    right then left in a left-to-right band, the other way in the next."""
    (x, y), w = lay.centres[i], lay.widths[i]
    right = (lay.band[lay.layer[i]] % 2 == 0) == out
    return (x + w / 2, y) if right else (x - w / 2, y)


def _ends(lay: Layout, p: int, c: int) -> tuple:
    """Where the edge p -> c leaves and enters, and the points next to them."""
    route = lay.routes[p, c]
    nxt = route[0][:2] if route else lay.centres[c]
    prv = route[-1][:2] if route else lay.centres[p]
    return _anchor(lay, p, True), _anchor(lay, c, False), nxt, prv


def _ports(lay: Layout) -> dict:
    """Offsets along their side of where each edge leaves and enters its boxes:
    several edges of one side spread along it, in the order of the points they
    go to (come from), so they neither cross nor share a point."""
    groups: dict = {}
    for p, c in lay.routes:
        _, _, nxt, prv = _ends(lay, p, c)
        groups.setdefault((p, 0), []).append((nxt[1], (p, c), 0))
        groups.setdefault((c, 1), []).append((prv[1], (p, c), 1))
    ports: dict = {e: [0.0, 0.0] for e in lay.routes}
    for items in groups.values():
        step = min(0.13, 0.6 * BOX_H / max(len(items) - 1, 1))
        items.sort(key=lambda it: it[0])  # bottom first
        for j, (_, e, end) in enumerate(items):
            ports[e][end] = (j - (len(items) - 1) / 2) * step
    return {e: (a, b) for e, (a, b) in ports.items()}


def edge_path(lay: Layout, p: int, c: int, dx: float = 0.0, dy: float = 0.0) -> Path:
    """The edge from box p to box c through its lanes, as smooth cubic curves
    leaving and entering each point sideways; where the bands turn, a U past
    the band's end. Shifted by ``(dx, dy)``."""
    (xa, ya), (xb, yb), _, _ = _ends(lay, p, c)
    a, b = lay.ports[p, c]
    pts = [(xa, ya + a, lay.layer[p]), *lay.routes[p, c], (xb, yb + b, lay.layer[c])]
    verts, codes = [(xa, ya + a)], [Path.MOVETO]
    for (x0, y0, k0), (x1, y1, k1) in zip(pts, pts[1:]):
        if lay.band[k0] == lay.band[k1]:
            h = (x1 - x0) / 2
            verts += [(x0 + h, y0), (x1 - h, y1), (x1, y1)]
            codes += [Path.CURVE4] * 3
        else:  # out past the band's end, down, and back into the next band the other way
            t = lay.turns[(p, c), lay.band[k0]]
            r = min(0.15, abs(y1 - y0) / 2) * (1 if t > x0 else -1)
            verts += [(t - r, y0), (t, y0), (t, y0 - abs(r)), (t, y1 + abs(r)), (t, y1)]
            verts += [(t - r, y1), (x1, y1)]
            codes += [Path.LINETO, Path.CURVE3, Path.CURVE3, Path.LINETO, Path.CURVE3]
            codes += [Path.CURVE3, Path.LINETO]
    return Path([(x + dx, y + dy) for x, y in verts], codes)
