"""Many backward passes at once: the rows of a Jacobian from a stack of cotangents.

autograd has no ``vmap``: a Jacobian with m rows is m backward passes, and for
``tanh(B @ x)`` each one is a matrix-vector product, bound by memory (1024 of
them on a 1024 x 1024 ``B`` take ~0.2-0.4 s where one matrix-matrix product
takes ~0.02 s). Here the passes go through the graph together, one operation
at a time, with the cotangents stacked on a leading axis:

- autograd's own ``matmul``/``dot`` and arithmetic ufuncs have a stacked rule
  here; its own one-input ufuncs (elementwise) run their VJP on the stack,
  which broadcasts over the leading axis;
- every other operation, and every operation whose rule the user defined or
  redefined, runs its own VJP once per row, as before.

A stacked result is used only where it agrees, to round-off, with the
operation's own VJP on two random rows (each entry within its own error bound,
the same rule run on absolute values) and at a random combination of all rows;
else that operation runs row by row. So the rule under test stays autograd's or
the user's, not ours. Complex values and containers run row by row too.

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

import autograd.numpy as anp
import numpy as onp
from autograd.core import primitive_vjps, sparse_object_types, vspace

__all__ = ["backward_rows", "MAX_STACK_BYTES", "STACK_FROM"]

#: The stacked cotangents of one operation stay under this many bytes; longer
#: stacks go through the graph in chunks.
MAX_STACK_BYTES = 64 * 2**20
#: Fewer rows than this go one by one: on small arrays a stack's checks cost
#: about as much as 30 backward passes.
STACK_FROM = 48
#: Round-off allowed between a stacked rule and the operation's own VJP, in
#: ulps of each entry's error bound (a disagreement only costs speed: that
#: operation then runs row by row).
AGREEMENT_ULPS = 64.0
#: Rows compared one by one with the operation's own VJP, per stack.
CHECKED_ROWS = 2


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
        parts = [_stacked(trace, G[i : i + chunk]) for i in range(0, k, chunk)]
    except Exception:  # NotStackable, or a rule that raises: in its own words, row by row
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
        grads[r] if r in grads else _zeros(k, leaf) for r, leaf in zip(trace.roots, trace.leaves)
    ]


def _zeros(k: int, leaf) -> onp.ndarray:
    """k copies of what ``backward`` gives a disconnected leaf."""
    zero = onp.asarray(vspace(leaf).zeros())
    return onp.zeros((k,) + zero.shape, zero.dtype)


def _real(a) -> bool:
    return isinstance(a, onp.ndarray) and a.dtype.kind == "f"


def _node_rows(trace, node, G) -> list[onp.ndarray]:
    """One operation's input cotangents for a stack of its output's cotangents."""
    if not _real(G):
        raise NotStackable
    recipe = trace.recipe(node)
    rule = _stacked_rule_of(node)
    if rule is not None and trace.stackable.get(node, True):
        stacked = _run(rule, node, recipe, G)
        if stacked is not None and _agrees(node, recipe, rule, G, stacked, _generator(trace)):
            return stacked
        trace.stackable[node] = False
    return _loop(node, recipe, G)


def _stacked_rule_of(node):
    """The stacked rule for an operation of autograd's own with autograd's own
    VJP (not one the user defined, wrapped or redefined), or None."""
    fun = node.fun
    rule = STACKED_RULES.get(fun)
    if rule is None and _is_autograds_ufunc(fun):
        rule = _own_vjp
    if rule is None or primitive_vjps.get(fun) is not AUTOGRADS_VJPS.get(fun):
        return None
    return rule


def _is_autograds_ufunc(fun) -> bool:
    raw = getattr(fun, "fun", None)
    return (
        isinstance(raw, onp.ufunc)
        and raw.nin == 1
        and raw.nout == 1
        and getattr(anp, raw.__name__, None) is fun
    )


def _run(rule, node, recipe, G) -> list[onp.ndarray] | None:
    """The rule on the stack, or None where it does not apply or gives a value
    that is not finite: that operation then runs row by row, with the warnings
    and errors (``np.seterr``) its own VJP gives."""
    try:
        if rule is _own_vjp:  # autograd's own code: its own warnings and errors
            out = rule(node, recipe, G)
        else:
            with onp.errstate(all="ignore"):
                out = rule(node, recipe, G)
    except Exception:  # a shape this rule does not know, or f's numbers
        return None
    if out is None or len(out) != len(node.parents):
        return None
    k = G.shape[0]
    for r, shape in zip(out, recipe.arg_shapes):
        if not _real(r) or r.shape != (k,) + shape or not onp.isfinite(r).all():
            return None
    return out


def _generator(trace) -> onp.random.Generator:
    """The trace's own random rows and combinations (the same for every run of one f)."""
    if trace.combinations is None:
        trace.combinations = onp.random.default_rng(0)
    return trace.combinations


def _agrees(node, recipe, rule, G, stacked, gen) -> bool:
    """The stacked result against the operation's own VJP: on a few rows entry
    by entry, and at a random combination of all rows."""
    k = G.shape[0]
    for i in gen.choice(k, size=min(k, CHECKED_ROWS), replace=False):
        try:
            own = [_dense(g) for g in node.vjp(G[i])]
            bound = rule(node, recipe, G[i : i + 1], absolute=True)
        except Exception:
            return False
        for mine, theirs, size in zip(stacked, own, bound):
            if not _close(mine[i], theirs, size[0]):
                return False
    w = gen.standard_normal(k)
    try:
        own = [_dense(g) for g in node.vjp(onp.tensordot(w, G, axes=1))]
    except Exception:
        return False
    for mine, theirs in zip(stacked, own):
        with onp.errstate(all="ignore"):
            combined = onp.tensordot(w, mine, axes=1)
            size = onp.tensordot(onp.abs(w), onp.abs(mine), axes=1) + onp.abs(theirs)
        if not _close(combined, theirs, size):
            return False
    return True


def _close(mine, theirs, size) -> bool:
    """Equal to round-off (``AGREEMENT_ULPS`` of a finite ``size``), or equal."""
    theirs = onp.asarray(theirs)
    if theirs.shape != mine.shape:
        return False
    eps = onp.finfo(mine.dtype).eps
    with onp.errstate(all="ignore"):
        near = onp.isfinite(size) & (onp.abs(mine - theirs) <= AGREEMENT_ULPS * eps * size)
    return bool(onp.all(near | (mine == theirs)))


def _loop(node, recipe, G) -> list[onp.ndarray]:
    rows = [[_dense(g) for g in node.vjp(row)] for row in G]
    out = []
    for j, shape in enumerate(recipe.arg_shapes):
        col = [r[j] for r in rows]
        if any(not isinstance(c, (onp.ndarray, float, onp.floating)) for c in col):
            raise NotStackable
        if any(onp.shape(c) != shape for c in col):
            raise NotStackable  # one backward pass per row says what is wrong
        out.append(onp.stack(col))
    if any(not _real(o) for o in out):
        raise NotStackable
    return out


def _dense(g):
    if type(g) in sparse_object_types:
        return g.mut_add(g.vs.zeros())
    return onp.asarray(g) if isinstance(g, (onp.ndarray, float, onp.floating)) else g


# ------------------------------------------------------------ stacked rules
# Each takes (node, recipe, G) and returns the stacked input cotangents; with
# ``absolute=True`` the same sums of products over absolute values, which bound
# the round-off of any order of summing them.


def _own_vjp(node, recipe, G, absolute: bool = False):
    """An elementwise VJP is ``g * h(x)``: it broadcasts over the stack, and
    ``|vjp(|g|)| = |g| |h(x)|``."""
    out = [onp.asarray(r) for r in node.vjp(onp.abs(G) if absolute else G)]
    return [onp.abs(r) for r in out] if absolute else out


def _unbroadcast_rows(R: onp.ndarray, shape: tuple) -> onp.ndarray:
    """Sum a stack of cotangents back to an argument's shape (per row)."""
    while R.ndim - 1 > len(shape):
        R = R.sum(axis=1)
    for axis, size in enumerate(shape):
        if size == 1 and R.shape[axis + 1] != 1:
            R = R.sum(axis=axis + 1, keepdims=True)
    return R


def _binary(cotangents):
    """A stacked rule for ``z = op(a, b)`` from each argument's cotangent,
    ``(g, a, b, z) -> g ∂z/∂arg``, written as autograd writes it (the same
    roundings, the same overflows)."""

    def rule(node, recipe, G, absolute: bool = False):
        a, b = recipe.args[:2]
        if absolute:
            a, b, G = onp.abs(a), onp.abs(b), onp.abs(G)
        out = []
        for argnum, shape in zip(recipe.argnums, recipe.arg_shapes):
            R = cotangents[argnum](G, a, b, recipe.ans)
            out.append(_unbroadcast_rows(onp.abs(R) if absolute else R, shape))
        return out

    return rule


def _matmul(node, recipe, G, absolute: bool = False):
    a, b = (onp.asarray(v) for v in recipe.args[:2])
    if a.ndim > 2 or b.ndim > 2 or a.ndim == 0 or b.ndim == 0:
        return None
    if absolute:
        a, b, G = onp.abs(a), onp.abs(b), onp.abs(G)
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


_QUOTIENT = {0: lambda g, a, b, z: g / b, 1: lambda g, a, b, z: -g * a / b**2}

STACKED_RULES = {
    anp.matmul: _matmul,
    anp.dot: _matmul,
    anp.add: _binary({0: lambda g, a, b, z: g, 1: lambda g, a, b, z: g}),
    anp.subtract: _binary({0: lambda g, a, b, z: g, 1: lambda g, a, b, z: -g}),
    anp.multiply: _binary({0: lambda g, a, b, z: b * g, 1: lambda g, a, b, z: a * g}),
    anp.divide: _binary(_QUOTIENT),
    anp.true_divide: _binary(_QUOTIENT),
}

#: autograd's own VJPs of its numpy functions, as it defined them: an operation
#: whose rule was redefined since (``defvjp`` on it) runs row by row.
AUTOGRADS_VJPS = {
    fun: primitive_vjps[fun]
    for fun in list(STACKED_RULES) + [getattr(anp, name) for name in dir(anp)]
    if callable(fun) and fun in primitive_vjps
}
