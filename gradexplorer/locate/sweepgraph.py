"""The graph :func:`~gradexplorer.locate.sweeps.ad_sweeps` sweeps: nodes, edges, local Jacobians.

f is recorded once by its backend; each recorded operation's traced
arguments are traced back to the operation (or input) that produced them, the
operations the output does not depend on are left out, and each remaining
edge gets its local Jacobian ``∂consumer/∂argument`` from the AD system's own
rule (one VJP of the operation per entry of its output).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as onp

from ..core.tree import flatten, float_kind
from ..errors import GradExplorerError
from .sites import site_of
from .sweeptext import canonical, expression

__all__ = ["ADNode", "build_graph", "local_jacobians", "MAX_NODES", "MAX_ENTRIES"]

#: The most nodes (inputs, operations, output) a graph may have to be drawn step by step.
MAX_NODES = 40
#: The most entries one node's value may have: every value is written out.
MAX_ENTRIES = 12


@dataclass(frozen=True, eq=False)
class ADNode:
    """One node: an input, an operation, or the output (the last operation).

    ``name`` is ``x`` (the input's label), ``v1``, ``v2``… or ``y``; ``op``
    the operation (``input`` for an input); ``expr`` how it reads with its
    arguments' names (``sin(v1)``, ``x[0]``, ``v2 * v3``); ``parents`` the
    nodes it uses, in order; ``source`` / ``code`` the line of f that ran it.
    """

    index: int
    name: str
    op: str
    expr: str
    parents: tuple[int, ...]
    value: onp.ndarray
    kind: str  # "input", "operation" or "output"
    source: str = ""
    code: str = ""


def _same(a: Any, b: Any) -> bool:
    a, b = onp.asarray(a), onp.asarray(b)
    return a.shape == b.shape and bool(onp.array_equal(a, b, equal_nan=True))


def _sources(rec, records, inputs) -> list[tuple[int, int, Any]]:
    """``(slot, leaf, source)`` of each float leaf of the traced arguments; the
    source is ``("r", j)`` (record j's value) or ``("in", k)`` (input k).

    autograd hands an operation its producers' very values (identity); torch
    and jax records hold copies, told apart by value, each argument's producer
    taken from the record's parents in order first (then an input)."""
    out, pending, used = [], list(rec.parents), []
    for a in rec.argnums:
        leaves = flatten(rec.args[a])[0]
        for q, leaf in enumerate(leaves):
            if float_kind(leaf) != "real":
                continue
            src = next((("r", p) for p in rec.parents if records[p].value is leaf), None)
            src = src or next((("in", k) for k, v in enumerate(inputs) if v is leaf), None)
            if src is None:
                if pending and _same(records[pending[0]].value, leaf):
                    src = ("r", pending[0])
                else:
                    seen = [("r", p) for p in used + pending if _same(records[p].value, leaf)]
                    seen += [("in", k) for k, v in enumerate(inputs) if _same(v, leaf)]
                    src = seen[0] if seen else None
            if src is None:
                if len(leaves) > 1:  # a constant inside a list of traced values
                    continue
                raise GradExplorerError(
                    f"ad_sweeps could not tell where argument {a} of {rec.name} comes from."
                )
            if src[0] == "r" and src[1] in pending:
                pending.remove(src[1])
                used.append(src[1])
            out.append((a, q, src))
    return out


def build_graph(call, system, fname: str):
    """Nodes (inputs, the operations the output depends on, the output) and,
    for each operation node, its ``(slot, leaf, parent node)`` edges."""
    values = call.values
    inputs = [onp.asarray(system.to_numpy(v), dtype=float) for v in values]
    records = system.record(call, values)
    out = flatten(call(*values))[0]
    if len(out) != 1:
        raise GradExplorerError(f"ad_sweeps needs f to return one array; {fname} returns more.")
    y = onp.asarray(system.to_numpy(system.value(out[0])))
    at = next((j for j in range(len(records) - 1, -1, -1) if _same(records[j].value, y)), None)
    if at is None:
        raise GradExplorerError(
            f"{fname}'s output does not come from an operation on its input: nothing to sweep."
        )
    sources = [_sources(r, records, values) for r in records[: at + 1]]
    keep, todo = set(), [at]
    while todo:  # the operations the output depends on
        j = todo.pop()
        if j not in keep:
            keep.add(j)
            todo.extend(s[1] for _, _, s in sources[j] if s[0] == "r")
    kept = sorted(keep)
    total = len(inputs) + len(kept)
    if total > MAX_NODES:
        raise GradExplorerError(
            f"{fname} has {total} nodes (inputs, operations, output); ad_sweeps draws at most "
            f"{MAX_NODES}, every one with its value. Sweep a smaller function (a few operations "
            "on scalars or short vectors), or use gx.locate(f, *args) for a graph of any size."
        )
    specs = call.specs
    number = {j: len(inputs) + i for i, j in enumerate(kept)}
    names = [s.name for s in specs] + [f"v{i + 1}" for i in range(len(kept))]
    names[-1] = next(n for n in ("y", "f", "out") if all(s.name != n for s in specs))
    nodes, edges, recs = [], {}, {}
    for k, (s, v) in enumerate(zip(specs, inputs)):
        nodes.append(ADNode(k, s.name, "input", s.name, (), v.reshape(s.shape), "input"))
    for j in kept:
        rec, i = records[j], number[j]
        edges[i] = [(a, q, k if kind == "in" else number[k]) for a, q, (kind, k) in sources[j]]
        recs[i] = rec
        arg_names = {a: names[p] for a, q, p in edges[i] if len(flatten(rec.args[a])[0]) == 1}
        site = site_of(rec, system)
        value = onp.asarray(rec.value, dtype=float)
        nodes.append(
            ADNode(
                i,
                names[i],
                canonical(rec.name),
                expression(rec, arg_names),
                tuple(dict.fromkeys(p for _, _, p in edges[i])),
                value,
                "output" if j == at else "operation",
                site.where if site is not None else "",
                site.code if site is not None else "",
            )
        )
    for node in nodes:
        if node.value.size > MAX_ENTRIES:
            what = f"input {node.name}" if node.kind == "input" else f"{node.name} = {node.expr}"
            raise GradExplorerError(
                f"{what} has {node.value.size} entries; ad_sweeps writes every value out and "
                f"takes at most {MAX_ENTRIES} per node. Use smaller arrays (a teaching example), "
                "or gx.jacobian / gx.check_grads for real sizes."
            )
    return nodes, edges, recs


def local_jacobians(records: dict, edges: dict, nodes: list, system) -> dict:
    """``(node, edge number) -> ∂node/∂parent`` (``node.size × parent.size``),
    one VJP of the operation per entry of its output."""
    out = {}
    for i, rec in records.items():
        value = rec.value
        m = nodes[i].value.size
        rows = {e: [] for e in range(len(edges[i]))}
        for r in range(m):
            e_r = onp.eye(1, m, r)[0].reshape(onp.shape(value))
            u = e_r.astype(onp.asarray(value).dtype) if onp.ndim(value) else float(e_r)
            cots = system.op_vjp(rec, u)
            slot_of = {a: c for a, c in zip(rec.argnums, cots)}
            for e, (a, q, p) in enumerate(edges[i]):
                leaf = flatten(slot_of[a])[0][q] if slot_of[a] is not None else None
                size = nodes[p].value.size
                row = onp.zeros(size) if leaf is None else onp.ravel(system.to_numpy(leaf))
                rows[e].append(onp.asarray(row, dtype=float))
        for e in rows:
            out[i, e] = onp.array(rows[e]).reshape(m, -1)
    return out
