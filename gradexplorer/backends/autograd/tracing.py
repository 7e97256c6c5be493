"""Tracing on top of autograd: one root per leaf, reusable backward passes,
forward mode that does not stop at an operation without a JVP rule.

autograd's own ``make_vjp`` boxes a single value, so it cannot say *which*
input the output is disconnected from, and it re-sorts the graph on every
backward pass. Here each differentiated leaf gets its own root; the graph is
sorted once and reused for every cotangent (a Jacobian needs many). Nodes
remember their primitive, so an error in a backward pass names it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as onp
from autograd.core import (
    JVPNode,
    VJPNode,
    add_outgrads,
    make_vjp,
    primitive_vjps,
    vspace,
)
from autograd.tracer import getval, isbox, new_box, notrace_primitives, trace_stack
from autograd.util import toposort

from ...errors import GradExplorerError
from .batched import backward_rows

__all__ = ["VJPTrace", "trace_vjp", "trace_jvp", "op_name", "getval", "isbox"]


def op_name(fun: Any) -> str:
    raw = getattr(fun, "fun", fun)
    return getattr(raw, "__name__", None) or type(raw).__name__


@dataclass(frozen=True)
class Recipe:
    """What one operation ran on: enough for a stacked rule (see :mod:`.batched`)."""

    args: tuple
    ans: Any
    argnums: tuple

    @functools.cached_property
    def arg_shapes(self) -> tuple | None:
        """The differentiated arguments' cotangent shapes (a sparse cotangent's
        vector space's, not its own); None for a container or an unknown type."""
        shapes = tuple(_array_shape(self.args[i]) for i in self.argnums)
        return None if None in shapes else shapes

    @property
    def widest(self) -> int | None:
        """The most elements among its output and differentiated inputs."""
        out = _array_shape(self.ans)
        if self.arg_shapes is None or out is None:
            return None
        return max(int(onp.prod(s)) for s in (out,) + self.arg_shapes)


def _array_shape(x: Any) -> tuple | None:
    """The shape of x's vector space where it is an array's (None for a container)."""
    try:
        shape = tuple(vspace(x).shape)
    except Exception:  # no vector space: an unknown type
        return None
    return shape if all(isinstance(d, int) for d in shape) else None


class NamedVJPNode(VJPNode):
    """A VJP node that remembers its primitive (for error messages and locate)
    and what it ran on (for many backward passes at once)."""

    __slots__ = ["fun", "ran"]

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        self.fun = fun
        self.ran = (args, value, parent_argnums)  # its Recipe, when one is asked for
        super().__init__(value, fun, args, kwargs, parent_argnums, parents)

    def initialize_root(self):
        super().initialize_root()
        self.fun = None
        self.ran = None


# Comparisons and other no-gradient functions are not recorded for autograd's
# node types; share those registrations (the same sets, so later ones count too).
notrace_primitives[NamedVJPNode] = notrace_primitives[VJPNode]


def _end(out: Any, trace_id: int):
    if isbox(out) and out._trace == trace_id:
        return out._value, out._node
    if isinstance(out, onp.ndarray) and out.dtype == object and any(map(isbox, out.flat)):
        # plain numpy packed traced values into an object array: the derivative is cut
        # here, and autograd would report zeros without a word
        raise GradExplorerError(
            "f's output is a numpy object array holding autograd's traced values: it was "
            "built with plain numpy (np.array([...]) or np.stack of traced values), which "
            "cuts the derivative (autograd would silently return zeros). Build it with "
            "autograd.numpy instead: anp.array([...]), anp.stack, anp.concatenate."
        )
    return out, None


def _with_op_context(exc: BaseException, node: Any, what: str) -> BaseException:
    """Add which operation's rule raised, keeping the exception's type."""
    name = op_name(node.fun) if getattr(node, "fun", None) is not None else "an operation"
    if hasattr(exc, "add_note") and not isinstance(exc, GradExplorerError):
        exc.add_note(f"(raised by the {what} of {name})")
    return exc


@dataclass
class VJPTrace:
    """A recorded forward pass: its value and a reusable backward pass."""

    value: Any
    leaves: Sequence[Any]
    roots: list
    end_node: Any
    _order: list = field(default_factory=list)

    def __post_init__(self):
        self._order = list(toposort(self.end_node)) if self.end_node is not None else []
        reached = set(self._order)
        self.connected = tuple(r in reached for r in self.roots)
        self._roots = set(self.roots)
        #: per operation, False once its stacked rule disagreed with its own VJP
        self.stackable: dict = {}
        self.combinations: onp.random.Generator | None = None  # made when first needed
        self._recipes: dict = {}

    def stack_size(self) -> int | None:
        """The most elements any recorded operation's cotangent has; None where
        the rows cannot go through together (inside an enclosing trace)."""
        if any(isbox(leaf) for leaf in self.leaves):
            return None
        recipes = [self.recipe(n) for n in self._order if n not in self._roots]
        widest = [r and r.widest for r in recipes]
        if any(w is None for w in widest):
            return None
        return max(widest, default=1)

    def recipe(self, node: Any) -> Recipe | None:
        """What ``node`` ran on; None for a root, or where a box of an enclosing
        trace (a higher derivative) is among its values, which only the
        operation's own VJP can carry along (autograd unboxes this trace's)."""
        if node not in self._recipes:
            ran = getattr(node, "ran", None)
            if ran is None or node in self._roots:
                self._recipes[node] = None
            else:
                args, value, argnums = ran
                nested = isbox(value) or any(isbox(a) for a in args)
                self._recipes[node] = None if nested else Recipe(tuple(args), value, tuple(argnums))
        return self._recipes[node]

    def backward_rows(self, G: Any) -> list:
        """:meth:`backward` for each row of ``G`` (shape ``(k,) + y.shape``), as
        arrays ``(k,) + leaf.shape``, the rows going through the graph together."""
        return backward_rows(self, G)

    def backward(self, g: Any) -> list:
        """Input cotangents (one per leaf) for output cotangent g.

        Disconnected leaves get zeros of their own vector space.
        """
        grads = {}
        if self.end_node is not None:
            roots = self._roots
            outgrads = {self.end_node: (g, False)}
            for node in self._order:
                outgrad = outgrads.pop(node)
                if node in roots:
                    grads[node] = outgrad[0]
                    continue
                try:
                    ingrads = list(node.vjp(outgrad[0]))
                except Exception as exc:
                    raise _with_op_context(exc, node, "VJP") from None
                for ingrad in ingrads:
                    if getattr(ingrad, "dtype", None) is onp.dtype(object):
                        raise _with_op_context(
                            TypeError(
                                "a VJP rule returned an array of objects: it passed traced "
                                "values through np.asarray / np.array, which autograd cannot "
                                "follow"
                            ),
                            node,
                            "VJP",
                        )
                for parent, ingrad in zip(node.parents, ingrads):
                    outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad)
        return [
            grads[r] if r in grads else vspace(leaf).zeros()
            for r, leaf in zip(self.roots, self.leaves)
        ]

    def ops(self) -> list[str]:
        """Names of the recorded operations, in evaluation order."""
        return [op_name(n.fun) for n in reversed(self._order) if getattr(n, "fun", None)]


def trace_vjp(fun: Callable, leaves: Sequence) -> VJPTrace:
    """Run ``fun(*leaves)`` once, recording it for reverse mode (a root per leaf)."""
    roots = [NamedVJPNode.new_root() for _ in leaves]
    with trace_stack.new_trace() as t:
        boxed = [new_box(leaf, t, root) for leaf, root in zip(leaves, roots)]
        value, end_node = _end(fun(*boxed), t)
    return VJPTrace(value, list(leaves), roots, end_node)


def traced_container(kind: str, children: list, keys: tuple, cls: Any) -> Any:
    """autograd's own containers where they hold traced values (as autograd
    boxes a list argument itself): primitives that take a whole tuple (odeint's
    ``args``) then see it traced. None for Python's containers."""
    if not children or not all(isbox(c) for c in children):
        return None  # constants inside (ints, strings): autograd has no vector space for them
    from autograd import builtins as ag

    if kind == "list":
        return ag.list(children)
    if kind == "tuple":
        return ag.tuple(children) if cls is None else cls(*children)
    if kind == "dict" and cls is None:
        return ag.dict(zip(keys, children))
    return None


# ---------------------------------------------------------------- forward mode


class _FallbackJVPNode(JVPNode):
    """A JVP node that, for an operation with no JVP rule, derives the tangent
    from the operation's VJP (the transpose of a linear map), so that the JVP
    rules of every *other* operation can still be checked in forward mode."""

    __slots__ = []
    used: list | None = None

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        try:
            super().__init__(value, fun, args, kwargs, parent_argnums, parents)
        except (NotImplementedError, KeyError) as exc:
            if _FallbackJVPNode.used is None:
                raise NotImplementedError(str(exc)) from exc
            gs = [p.g for p in parents]
            self.g = _jvp_from_vjp(fun, value, args, kwargs, parent_argnums, gs)
            _FallbackJVPNode.used.append(op_name(fun))


notrace_primitives[_FallbackJVPNode] = notrace_primitives[JVPNode]


def _plain(tree, leaves):
    """Rebuild a structure with plain tuples (autograd has no vspace for namedtuples)."""
    from ...core.tree import TreeDef, unflatten

    def strip(t: TreeDef) -> TreeDef:
        return TreeDef(t.kind, tuple(strip(c) for c in t.children), t.keys, None)

    return unflatten(strip(tree), leaves)


def _jvp_from_vjp(fun, ans, args, kwargs, argnums, gs):
    """J·g for one operation from its VJP: the VJP is linear in its cotangent u,
    so J·g is the gradient of u -> Σ <vjp(u)_k, g_k>."""
    from ...core.tree import flatten

    try:
        vjpmaker = primitive_vjps[fun]
    except KeyError:
        raise NotImplementedError(f"{op_name(fun)} has neither a JVP nor a VJP rule") from None
    ans_leaves, ans_tree = flatten(ans)
    arg_leaves = [leaf for i in argnums for leaf in flatten(getval(args[i]))[0]]
    if any(onp.iscomplexobj(getval(v)) for v in ans_leaves + arg_leaves):
        raise NotImplementedError(
            f"JVP of {op_name(fun)} is not defined, and it has complex values, so its "
            "tangent cannot be derived from its VJP"
        )
    vjp = vjpmaker(argnums, ans, args, kwargs)

    def pairing_of(u):
        total = 0.0
        for ct, g in zip(vjp(u), gs):
            for a, b in zip(flatten(ct)[0], flatten(g)[0]):
                total = total + _vdot(a, b)
        return total

    def pairing(u_leaves):
        return pairing_of(_plain(ans_tree, list(u_leaves)))

    zeros = [onp.zeros(onp.shape(v), onp.result_type(getval(v), float)) for v in ans_leaves]
    try:
        back, _ = make_vjp(lambda *ul: pairing(ul), argnum=tuple(range(len(zeros))))(*zeros)
        out = back(1.0)
        return _plain(ans_tree, list(out)) if not ans_tree.is_leaf else out[0]
    except Exception:
        pass
    sizes = [int(onp.size(z)) for z in zeros]
    if sum(sizes) > 4096:
        raise NotImplementedError(
            f"JVP of {op_name(fun)} is not defined and its VJP is not differentiable"
        )
    results = []
    for k, z in enumerate(zeros):
        flat = onp.zeros(sizes[k])
        for i in range(sizes[k]):
            unit = [onp.zeros_like(q) for q in zeros]
            e = onp.zeros(sizes[k])
            e[i] = 1.0
            unit[k] = e.reshape(onp.shape(z)) if onp.ndim(z) else e[0]
            flat[i] = float(getval(pairing(unit)))
        results.append(flat.reshape(onp.shape(z)) if onp.ndim(z) else flat[0])
    return _plain(ans_tree, results) if not ans_tree.is_leaf else results[0]


def _vdot(a, b):
    import autograd.numpy as anp

    return anp.sum(anp.real(a) * anp.real(b))


def trace_jvp(
    fun: Callable, leaves: Sequence, tangents: Sequence, *, fallback: bool = False
) -> tuple[Any, Any, list[str]]:
    """Forward mode: ``(fun(*leaves), J @ tangents, ops_without_jvp)`` in one pass.

    With ``fallback`` an operation without a JVP rule gets its tangent from
    its VJP (and is named in the third result) instead of stopping forward mode.
    """
    previous = _FallbackJVPNode.used
    _FallbackJVPNode.used = [] if fallback else None
    try:
        with trace_stack.new_trace() as t:
            boxed = [
                new_box(leaf, t, _FallbackJVPNode.new_root(g)) for leaf, g in zip(leaves, tangents)
            ]
            value, end_node = _end(fun(*boxed), t)
        used = list(_FallbackJVPNode.used or [])
    finally:
        _FallbackJVPNode.used = previous
    if end_node is None:
        return value, vspace(value).zeros(), used
    return value, end_node.g, sorted(set(used), key=used.index)
