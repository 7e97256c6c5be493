"""Recording what f does to jax arrays (for locate): its jaxpr, one equation
at a time.

f is traced to a jaxpr and evaluated equation by equation; ``jit`` calls are
opened so the operations inside them are seen with their own lines, while a
``custom_vjp`` / ``custom_jvp`` function stays one operation named after the
user's function, so a wrong rule is named. A Python ``if`` on an array value
follows the branch f takes at the point (``branches``). Each equation is re-run
alone through ``bind``, differentiated with ``jax.vjp`` / ``jax.jvp``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as onp

from ...core.tree import flatten, map_leaves, unflatten
from ..base import OpRecord, is_library_path, source_site
from .arrays import to_array, to_numpy
from .branches import decisions_of, replaying

__all__ = [
    "record", "op_vjp", "op_jvp", "op_eval", "op_function", "definition_site", "rule_site",
    "custom_rule_names",
]  # fmt: skip

_LIBRARIES = (
    os.path.dirname(jax.__file__),
    os.path.dirname(onp.__file__),
    os.path.dirname(os.path.dirname(jax.__file__)) + os.sep + "jaxlib",
)
#: Primitives whose derivative is zero by declaration: no gradient flows back.
_STOPS = ("stop_gradient",)
# ("remat2": jax.checkpoint's primitive since jax 0.4; "checkpoint" and "remat" before)
_OPENED = ("jit", "pjit", "closed_call", "core_call", "remat", "remat2", "checkpoint")


def _bind_params(eqn) -> dict:
    params = eqn.primitive.get_bind_params(eqn.params)
    if isinstance(params, tuple):  # older jax: (subfuns, params)
        raise NotImplementedError("this jax version binds sub-functions; locate needs jax>=0.6")
    return params


def _name(eqn) -> str:
    params = eqn.params
    for key in ("call_jaxpr", "fun_jaxpr"):
        inner = params.get(key)
        debug = getattr(getattr(inner, "jaxpr", inner), "debug_info", None)
        src = getattr(debug, "func_src_info", None)
        if src:
            return str(src).split(" at ")[0]
    return params.get("name") or eqn.primitive.name


class JaxOp:
    """One jaxpr equation as a re-runnable operation (numpy in, jax out)."""

    def __init__(self, eqn):
        self.primitive = eqn.primitive
        self.params = _bind_params(eqn)
        self.name = _name(eqn)
        self.eqn = eqn

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, JaxOp)
            and other.primitive is self.primitive
            and other.name == self.name
        )

    def __hash__(self) -> int:
        return hash((id(self.primitive), self.name))

    def __call__(self, *args: Any) -> Any:
        out = self.primitive.bind(*[to_array(a) for a in args], **self.params)
        if self.primitive.multiple_results:
            return out[0] if len(out) == 1 else tuple(out)
        return out


def _frames(eqn) -> tuple:
    # the traceback jax keeps with each equation (innermost frame first); jax's own
    # frames and other libraries' are left out by path
    try:
        frames = list(eqn.source_info.traceback.frames)
    except Exception:
        return ()
    return tuple(
        (fr.file_name, fr.line_num)
        for fr in frames
        if not is_library_path(fr.file_name, _LIBRARIES)
    )


def _jaxpr_of(fun: Callable, leaves: Sequence):
    """f's jaxpr at these leaves; when f's Python code branches on array values
    (``if x[0] > 0``), the jaxpr of the branches it takes here."""
    trace = jax.make_jaxpr(lambda *xs: fun(*xs))
    try:
        return trace(*leaves)
    except jax.errors.ConcretizationTypeError:
        answers = decisions_of(fun, leaves, _LIBRARIES)
        if not answers:
            raise
        with replaying(answers, _LIBRARIES):
            return trace(*leaves)


def _walk(jaxpr, consts, args, traced_in, env_records, records, visit):
    """Evaluate ``jaxpr`` equation by equation; ``visit`` sees each one."""
    env: dict = {}
    traced: set = set()
    producer: dict = {}

    def read(v):
        return v.val if type(v).__name__ == "Literal" else env[v]

    for v, c in zip(jaxpr.constvars, consts):
        env[v] = c
    for v, a, t, src in zip(jaxpr.invars, args, traced_in, env_records):
        env[v] = a
        if t:
            traced.add(v)
        if src is not None:
            producer[v] = src
    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        is_traced = [type(v).__name__ != "Literal" and v in traced for v in eqn.invars]
        sources = [producer.get(v) if type(v).__name__ != "Literal" else None for v in eqn.invars]
        if eqn.primitive.name in _OPENED and "jaxpr" in eqn.params and any(is_traced):
            inner = eqn.params["jaxpr"]  # a ClosedJaxpr (jit), or a bare Jaxpr (remat2)
            body, consts = getattr(inner, "jaxpr", inner), getattr(inner, "consts", ())
            outs, out_traced, out_src = _walk(
                body, consts, invals, is_traced, sources, records, visit
            )
        else:
            outs, out_traced, out_src = visit(eqn, invals, is_traced, sources)
        for v, val, t, s in zip(eqn.outvars, outs, out_traced, out_src):
            env[v] = val
            if t:
                traced.add(v)
            if s is not None:
                producer[v] = s
    return (
        [read(v) for v in jaxpr.outvars],
        [type(v).__name__ != "Literal" and v in traced for v in jaxpr.outvars],
        [producer.get(v) if type(v).__name__ != "Literal" else None for v in jaxpr.outvars],
    )


def record(fun: Callable, leaves: Sequence) -> list[OpRecord]:
    """Trace ``fun(*leaves)`` to a jaxpr and evaluate it, recording every
    equation that depends on the leaves."""
    xs = [to_array(x) for x in leaves]
    closed = _jaxpr_of(fun, xs)
    records: list[OpRecord] = []

    def visit(eqn, invals, is_traced, sources):
        op = JaxOp(eqn)
        out = op(*invals)
        outs = list(out) if isinstance(out, tuple) else [out]
        if not any(is_traced) or eqn.primitive.name in _STOPS:
            return outs, [False] * len(outs), [None] * len(outs)
        floats = [o for o in outs if jnp.issubdtype(jnp.result_type(o), jnp.inexact)]
        index = len(records)
        if floats:
            parents = tuple(
                dict.fromkeys(s for s, t in zip(sources, is_traced) if t and s is not None)
            )
            records.append(
                OpRecord(
                    index,
                    op,
                    tuple(to_numpy(v) for v in invals),
                    {},
                    tuple(i for i, t in enumerate(is_traced) if t),
                    parents,
                    map_leaves(to_numpy, out),
                    _frames(eqn),
                    op.name,
                )
            )
        src = index if floats else None
        return outs, [True] * len(outs), [src] * len(outs)

    _walk(closed.jaxpr, closed.consts, xs, [True] * len(xs), [None] * len(xs), records, visit)
    return records


def custom_rule_names(fun: Callable, leaves: Sequence, primitive: str) -> list[str]:
    """Names of the custom-rule functions (``custom_vjp_call`` ...) fun applies."""
    closed = _jaxpr_of(fun, [to_array(x) for x in leaves])
    names: list[str] = []

    def scan(jaxpr):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == primitive and _name(eqn) not in names:
                names.append(_name(eqn))
            if "jaxpr" in eqn.params and hasattr(eqn.params["jaxpr"], "jaxpr"):
                scan(eqn.params["jaxpr"].jaxpr)

    scan(closed.jaxpr)
    return names


# ---------------------------------------------------------------- one operation


def _function_of_traced(rec: OpRecord, args: Sequence) -> tuple[Callable, list]:
    fixed = [to_array(a) for a in args]

    def g(*traced):
        full = list(fixed)
        for a, x in zip(rec.argnums, traced):
            full[a] = x
        return rec.fun(*full)

    return g, [fixed[a] for a in rec.argnums]


def op_vjp(rec: OpRecord, u: Any) -> list:
    """Cotangents of the traced arguments for output cotangent u (jax's
    convention, which is autograd's), as numpy."""
    g, primals = _function_of_traced(rec, rec.args)
    y, pullback = jax.vjp(g, *primals)
    ys, tree = flatten(y)
    us = [jnp.asarray(uu, dtype=jnp.result_type(yy)) for uu, yy in zip(flatten(u)[0], ys)]
    cots = pullback(unflatten(tree, us))
    return [to_numpy(c) for c in cots]


def op_jvp(rec: OpRecord, tangents: Sequence) -> Any:
    """The output tangent for tangents of the traced arguments, as numpy."""
    g, primals = _function_of_traced(rec, rec.args)
    ts = [jnp.asarray(onp.asarray(t), dtype=jnp.result_type(p)) for t, p in zip(tangents, primals)]
    try:
        _, out = jax.jvp(g, tuple(primals), tuple(ts))
    except TypeError as exc:
        if "custom_vjp" in str(exc):
            raise NotImplementedError(
                f"{rec.name} is a custom_vjp function (no JVP rule)"
            ) from None
        raise
    return map_leaves(to_numpy, out)


def op_eval(rec: OpRecord, args: Sequence) -> Any:
    """The operation on new (numpy) arguments, as numpy."""
    return map_leaves(to_numpy, rec.fun(*args))


def op_function(rec: OpRecord, slot: int) -> Callable:
    """The operation as a function of its argument ``slot`` alone, on jax arrays."""

    def local(x):
        args = [to_array(a) for a in rec.args]
        args[slot] = x
        return rec.fun(*args)

    local.__name__ = rec.name
    return local


def definition_site(rec: OpRecord) -> tuple[str, int] | None:
    """Where a custom rule's own code is defined (its bwd / jvp function)."""
    return rule_site(rec)


def rule_site(rec: OpRecord, kind: str = "VJP") -> tuple[str, int] | None:
    """Where the user wrote the operation's rule: a ``custom_vjp``'s bwd (its
    VJP), a ``custom_jvp``'s jvp (both); None for jax's own primitives."""
    params = getattr(rec.fun, "params", {})
    subfuns = params.get("subfuns") or ()
    kind_of = getattr(getattr(rec.fun, "primitive", None), "name", "")
    if kind_of.startswith("custom_vjp") and len(subfuns) > 2:
        found = [subfuns[2]] if kind == "VJP" else []  # (fun, fwd, bwd)
    elif kind_of.startswith("custom_jvp") and len(subfuns) > 1:
        found = [subfuns[1]]  # (fun, jvp)
    else:
        found = [params.get(k) for k in ("bwd", "jvp_jaxpr_fun", "jvp")]
    for fn in found:
        site = _user_code_in(fn) if fn is not None else None
        if site is not None:
            return site
    return None


def _user_code_in(fn: Any, depth: int = 6) -> tuple[str, int] | None:
    """The site of the first user function jax wrapped ``fn`` around: its rule
    sits under ``WrappedFun.f``, ``functools.partial`` and closures."""
    seen: set = set()
    todo = [(fn, 0)]
    while todo:
        obj, d = todo.pop(0)
        if id(obj) in seen or d > depth:
            continue
        seen.add(id(obj))
        if callable(obj) and not isinstance(obj, type):
            site = source_site(obj, _LIBRARIES)
            if site is not None:
                return site
        inner = [getattr(obj, "f", None), getattr(obj, "func", None)]
        inner += [c.cell_contents for c in getattr(obj, "__closure__", None) or () if _filled(c)]
        todo.extend((x, d + 1) for x in inner if x is not None and not isinstance(x, (int, str)))
    return None


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


del sys
