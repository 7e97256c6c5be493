"""Many backward passes at once: the rows of a Jacobian from a stack of cotangents.

autograd has no ``vmap``: a Jacobian with m rows is m backward passes, and for
``tanh(B @ x)`` each one is a matrix-vector product, bound by memory (1024 of
them on a 1024 x 1024 ``B`` take ~0.2-0.4 s where one matrix-matrix product
takes ~0.02 s). Here the passes go through the graph together, one operation
at a time, with the cotangents stacked on a leading axis:

- an elementwise operation (a one-input ufunc) runs its own VJP on the stack,
  which broadcasts over the leading axis;
- ``matmul``/``dot`` and the arithmetic ufuncs have a stacked rule here;
- every other operation runs its own VJP once per row, as before.

The rule under test is autograd's, not ours: a stacked result is used only
where it agrees, at a random combination of the rows, with the operation's own
VJP of that combination (linear maps that agree there agree on every row), and
an operation where it does not (or whose VJP is not linear in its cotangent)
runs row by row. Complex values and containers run row by row too.

>>> import autograd.numpy as anp, numpy as np
>>> from gradexplorer.backends.autograd.tracing import trace_vjp
>>> B = np.arange(6.0).reshape(3, 2)
>>> tr = trace_vjp(lambda x: anp.tanh(B @ x), [np.array([0.1, -0.2])])
>>> rows = backward_rows(tr, np.eye(3))[0]
>>> bool(np.allclose(rows[1], tr.backward(np.eye(3)[1])[0]))
True
"""

from __future__ import annotations

from typing import Any

import numpy as onp
from autograd.core import sparse_object_types

__all__ = ["backward_rows", "MAX_STACK_BYTES", "STACK_FROM"]

#: The stacked cotangents of one operation stay under this many bytes; longer
#: stacks go through the graph in chunks.
MAX_STACK_BYTES = 64 * 2**20
#: Fewer rows than this go one by one: a stack's checks cost about as much as
#: a dozen small backward passes.
STACK_FROM = 16
#: Round-off allowed between a stacked rule and the operation's own VJP, in
#: ulps of the products' size (a disagreement only costs speed: that
#: operation then runs row by row).
AGREEMENT_ULPS = 64.0


class NotStackable(Exception):
    """This graph cannot go through as one stack (a container or a complex value)."""


def backward_rows(trace: Any, G: onp.ndarray) -> list[onp.ndarray]:
    """Input cotangents for each row of ``G`` (shape ``(k,) + y.shape``), one
    array ``(k,) + leaf.shape`` per leaf, as ``k`` calls of ``trace.backward``
    would give them (to round-off)."""
    G = onp.asarray(G)
    k = G.shape[0]
    try:
        size = trace.stack_size() if k >= STACK_FROM and _real(G) else None
    except Exception:  # a value whose size autograd cannot tell
        size = None
    if size is None:
        return _row_by_row(trace, G)
    chunk = max(1, MAX_STACK_BYTES // (8 * size))
    try:
        with onp.errstate(all="ignore"):  # a rule's own warnings come from the rows
            parts = [_stacked(trace, G[i : i + chunk]) for i in range(0, k, chunk)]
    except Exception:  # NotStackable, or a rule that raises: its own words, row by row
        return _row_by_row(trace, G)
    return [onp.concatenate(p) for p in zip(*parts)]


def _row_by_row(trace, G) -> list[onp.ndarray]:
    rows = [trace.backward(g) for g in G]
    return [onp.stack([onp.asarray(r[j]) for r in rows]) for j in range(len(trace.leaves))]


def _stacked(trace, G) -> list[onp.ndarray]:
    k = G.shape[0]
    grads: dict = {}
    if trace.end_node is not None:
        outgrads = {trace.end_node: G}
        for node in trace._order:
            stack = outgrads.pop(node)
            if node in trace._roots:
                grads[node] = stack
                continue
            for parent, ingrad in zip(node.parents, _node_rows(trace, node, stack)):
                before = outgrads.get(parent)
                outgrads[parent] = ingrad if before is None else before + ingrad
    return [
        grads[r] if r in grads else onp.zeros((k,) + onp.shape(leaf), _float(leaf))
        for r, leaf in zip(trace.roots, trace.leaves)
    ]


def _float(leaf) -> onp.dtype:
    return onp.result_type(onp.asarray(leaf).dtype, onp.float16)


def _real(a) -> bool:
    return isinstance(a, onp.ndarray) and a.dtype.kind == "f"


def _node_rows(trace, node, G) -> list[onp.ndarray]:
    """One operation's input cotangents for a stack of its output's cotangents."""
    if not _real(G):
        raise NotStackable
    recipe = trace.recipe(node)
    if trace.stackable.get(node, True):
        stacked = _stacked_rule(node, recipe, G)
        if stacked is not None and _agrees(node, G, stacked, _generator(trace)):
            return stacked
        trace.stackable[node] = False
    return _loop(node, recipe, G)


def _stacked_rule(node, recipe, G) -> list[onp.ndarray] | None:
    raw = getattr(node.fun, "fun", node.fun)
    rule = STACKED_RULES.get(raw)
    if rule is None and isinstance(raw, onp.ufunc) and raw.nin == 1 and raw.nout == 1:
        rule = _own_vjp
    if rule is None:
        return None
    try:
        out = rule(node, recipe, G)
    except Exception:  # a shape this rule does not know: row by row
        return None
    if out is None or len(out) != len(node.parents):
        return None
    k = G.shape[0]
    for r, shape in zip(out, recipe.arg_shapes):
        if not _real(r) or r.shape != (k,) + shape:
            return None
    return out


def _generator(trace) -> onp.random.Generator:
    """The trace's own random combinations (the same for every run of one f)."""
    if trace.combinations is None:
        trace.combinations = onp.random.default_rng(0)
    return trace.combinations


def _agrees(node, G, stacked, gen) -> bool:
    """The stacked result against the operation's own VJP at one random
    combination of the rows."""
    w = gen.standard_normal(G.shape[0])
    try:
        own = [_dense(g) for g in node.vjp(onp.tensordot(w, G, axes=1))]
    except Exception:
        return False
    for mine, theirs in zip(stacked, own):
        if theirs is None or onp.shape(theirs) != mine.shape[1:]:
            return False
        combined = onp.tensordot(w, mine, axes=1)
        size = onp.tensordot(onp.abs(w), onp.abs(mine), axes=1) + onp.abs(theirs)
        eps = onp.finfo(mine.dtype).eps
        if not onp.all(onp.abs(combined - theirs) <= AGREEMENT_ULPS * eps * size):
            return False
    return True


def _loop(node, recipe, G) -> list[onp.ndarray]:
    rows = [[_dense(g) for g in node.vjp(row)] for row in G]
    out = []
    for j, shape in enumerate(recipe.arg_shapes):
        col = [r[j] for r in rows]
        if any(not isinstance(c, (onp.ndarray, float, onp.floating)) for c in col):
            raise NotStackable
        out.append(onp.stack([onp.broadcast_to(c, shape) for c in col]))
    if any(not _real(o) for o in out):
        raise NotStackable
    return out


def _dense(g):
    if type(g) in sparse_object_types:
        return g.mut_add(g.vs.zeros())
    return onp.asarray(g) if isinstance(g, (onp.ndarray, float, onp.floating)) else g


# ------------------------------------------------------------ stacked rules


def _own_vjp(node, recipe, G):
    """An elementwise operation's VJP is ``g * h(x)``: it broadcasts over the stack."""
    return [onp.asarray(r) for r in node.vjp(G)]


def _unbroadcast_rows(R: onp.ndarray, shape: tuple) -> onp.ndarray:
    """Sum a stack of cotangents back to an argument's shape (per row)."""
    while R.ndim - 1 > len(shape):
        R = R.sum(axis=1)
    for axis, size in enumerate(shape):
        if size == 1 and R.shape[axis + 1] != 1:
            R = R.sum(axis=axis + 1, keepdims=True)
    return R


def _binary(partials):
    """A stacked rule for ``z = op(a, b)`` from ``∂z/∂a`` and ``∂z/∂b``."""

    def rule(node, recipe, G):
        a, b = recipe.args[:2]
        out = []
        for argnum, shape in zip(recipe.argnums, recipe.arg_shapes):
            out.append(_unbroadcast_rows(G * partials[argnum](a, b, recipe.ans), shape))
        return out

    return rule


def _matmul(node, recipe, G):
    a, b = (onp.asarray(v) for v in recipe.args[:2])
    if a.ndim > 2 or b.ndim > 2 or a.ndim == 0 or b.ndim == 0:
        return None
    out = []
    for argnum in recipe.argnums:
        if argnum == 0:  # dz/da
            if b.ndim == 1:
                r = G[..., None] * b if a.ndim == 2 else G[:, None] * b
            else:
                r = G @ b.T
        else:  # dz/db
            if a.ndim == 1:
                r = a[:, None] * G[:, None, :] if b.ndim == 2 else G[:, None] * a
            else:
                r = G @ a if b.ndim == 1 else a.T @ G
        out.append(r)
    return out


STACKED_RULES = {
    onp.matmul: _matmul,
    onp.dot: _matmul,
    onp.add: _binary({0: lambda a, b, z: 1.0, 1: lambda a, b, z: 1.0}),
    onp.subtract: _binary({0: lambda a, b, z: 1.0, 1: lambda a, b, z: -1.0}),
    onp.multiply: _binary({0: lambda a, b, z: b, 1: lambda a, b, z: a}),
    onp.divide: _binary({0: lambda a, b, z: 1.0 / b, 1: lambda a, b, z: -z / b}),
}
