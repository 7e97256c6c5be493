"""Tracing on top of autograd with one root node per differentiated argument.

autograd's own ``make_vjp`` boxes a single value, so it cannot say *which* of
several inputs the output is disconnected from, and it re-sorts the graph on
every backward pass. Here each selected argument gets its own root; the graph
is sorted once and reused for every cotangent (a Jacobian needs many).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from autograd.core import JVPNode, VJPNode, add_outgrads, vspace
from autograd.tracer import isbox, new_box, trace_stack
from autograd.util import toposort


def _end(out: Any, trace_id: int):
    if isbox(out) and out._trace == trace_id:
        return out._value, out._node
    return out, None


@dataclass
class VJPTrace:
    """A recorded forward pass: its value and a reusable backward pass."""

    value: Any
    args: Sequence[Any]
    argnums: tuple[int, ...]
    roots: list
    end_node: Any
    _order: list = field(default_factory=list)

    def __post_init__(self):
        self._order = list(toposort(self.end_node)) if self.end_node is not None else []
        reached = set(self._order)
        self.connected = tuple(r in reached for r in self.roots)
        self._roots = set(self.roots)

    def backward(self, g: Any) -> list:
        """Input cotangents (one per selected argument) for output cotangent g.

        Disconnected inputs get zeros of their own vector space.
        """
        grads = {}
        if self.end_node is not None:
            roots = self._roots
            outgrads = {self.end_node: (g, False)}
            for node in self._order:
                outgrad = outgrads.pop(node)
                if node in roots:
                    grads[node] = outgrad[0]
                for parent, ingrad in zip(node.parents, node.vjp(outgrad[0])):
                    outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad)
        return [
            grads[r] if r in grads else vspace(self.args[i]).zeros()
            for r, i in zip(self.roots, self.argnums)
        ]


def trace_vjp(fun: Callable, args: Sequence, kwargs: dict, argnums: Sequence[int]) -> VJPTrace:
    """Run ``fun(*args, **kwargs)`` once, recording it for reverse mode."""
    roots = [VJPNode.new_root() for _ in argnums]
    with trace_stack.new_trace() as t:
        boxed = list(args)
        for root, i in zip(roots, argnums):
            boxed[i] = new_box(args[i], t, root)
        value, end_node = _end(fun(*boxed, **kwargs), t)
    return VJPTrace(value, args, tuple(argnums), roots, end_node)


def trace_jvp(
    fun: Callable, args: Sequence, kwargs: dict, argnums: Sequence[int], tangents: Sequence
) -> tuple[Any, Any]:
    """Forward mode: ``(fun(*args), J @ tangents)`` in one pass."""
    with trace_stack.new_trace() as t:
        boxed = list(args)
        for i, g in zip(argnums, tangents):
            boxed[i] = new_box(args[i], t, JVPNode.new_root(g))
        value, end_node = _end(fun(*boxed, **kwargs), t)
    if end_node is None:
        return value, vspace(value).zeros()
    return value, end_node.g
