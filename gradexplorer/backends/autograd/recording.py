"""Recording the operations autograd applies to traced values (for locate)."""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import autograd
import numpy as onp
from autograd.core import SparseObject, VJPNode, primitive_jvps, primitive_vjps, vspace
from autograd.tracer import Node, new_box, notrace_primitives, trace_stack

from ..base import OpRecord, source_site, user_stack
from .tracing import op_name

__all__ = [
    "record", "op_vjp", "op_jvp", "op_eval", "op_function", "definition_site", "rule_site",
    "FRIENDLY_NAMES",
]  # fmt: skip

_LIBRARIES = (os.path.dirname(autograd.__file__), os.path.dirname(onp.__file__))

#: autograd's internal helpers, by the name users know them by.
FRIENDLY_NAMES = {
    "_array_from_scalar_or_array": "array",
    "array_from_args": "array",
    "container_take": "getitem",
    "__getitem__": "getitem",
    "sequence_extend_right": "list append",
    "sequence_extend_left": "list prepend",
    "make_sequence": "list/tuple",
    "_make_dict": "dict",
    "dict_untake": "dict",
    "untake": "getitem (backward)",
    "_broadcast_to_adjoint": "broadcast_to",
    "concatenate_args": "concatenate",
}


class _Recording:
    records: list | None = None
    stop: Any = None  # the tracer's own frame: the stack above it is not the user's
    calls: dict | None = None  # the library calls seen (see base.user_stack)


class _RecordingNode(Node):
    __slots__ = ["record"]

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        recs = _Recording.records
        parent_ids = tuple(p.record.index for p in parents if p.record is not None)
        raw = op_name(fun)
        frames, call = user_stack(_LIBRARIES, _Recording.stop, 2, _Recording.calls)
        self.record = OpRecord(
            len(recs), fun, tuple(args), dict(kwargs), tuple(parent_argnums), parent_ids,
            value, frames, FRIENDLY_NAMES.get(raw, raw), call,
        )  # fmt: skip
        recs.append(self.record)

    def initialize_root(self):
        self.record = None


# comparisons and other no-gradient functions are not recorded (as for VJPNode)
notrace_primitives[_RecordingNode] = notrace_primitives[VJPNode]


def record(fun: Callable, leaves: Sequence) -> list[OpRecord]:
    """Run ``fun(*leaves)`` once, recording every primitive it applies to them."""
    previous = (_Recording.records, _Recording.stop, _Recording.calls)
    _Recording.records = []
    _Recording.stop = sys._getframe(0)
    _Recording.calls = {}
    try:
        with trace_stack.new_trace() as t:
            boxed = [new_box(leaf, t, _RecordingNode.new_root()) for leaf in leaves]
            fun(*boxed)
        return _Recording.records
    finally:
        # the registry holds the library calls' frames (and so their locals): let them go
        _Recording.records, _Recording.stop, _Recording.calls = previous


def op_vjp(rec: OpRecord, u: Any) -> list:
    """The cotangents of the record's traced arguments for output cotangent u."""
    try:
        maker = primitive_vjps[rec.fun]
    except KeyError:
        raise NotImplementedError(f"{rec.name} has no VJP rule") from None
    cots = maker(rec.argnums, rec.value, rec.args, rec.kwargs)(u)
    return [_dense(c, rec.args[a]) for c, a in zip(cots, rec.argnums)]


def _dense(cot: Any, like: Any) -> Any:
    """A cotangent as a plain array: autograd's ``untake`` (the VJP of ``x[i]``)
    returns a sparse object that only its own backward pass can add up."""
    if isinstance(cot, SparseObject):
        return cot.mut_add(vspace(like).zeros())
    return cot


def op_jvp(rec: OpRecord, tangents: Sequence) -> Any:
    """The output tangent of the record for tangents of its traced arguments."""
    try:
        maker = primitive_jvps[rec.fun]
    except KeyError:
        raise NotImplementedError(f"{rec.name} has no JVP rule") from None
    try:
        return maker(rec.argnums, list(tangents), rec.value, rec.args, rec.kwargs)
    except KeyError:
        raise NotImplementedError(f"{rec.name} has no JVP rule for some argument") from None


def op_eval(rec: OpRecord, args: Sequence) -> Any:
    """The record's primitive applied to new (plain) arguments."""
    return rec.fun(*args, **rec.kwargs)


def op_function(rec: OpRecord, slot: int) -> Callable:
    """The record's primitive as a function of its argument ``slot`` alone."""

    def local(x):
        args = list(rec.args)
        args[slot] = x
        return rec.fun(*args, **rec.kwargs)

    local.__name__ = rec.name
    return local


def definition_site(rec: OpRecord) -> tuple[str, int] | None:
    """Where the primitive's own function is defined (for a primitive called by
    the checker itself, with no user frame between); None for a library's."""
    return source_site(getattr(rec.fun, "fun", rec.fun), _LIBRARIES)


def rule_site(rec: OpRecord, kind: str = "VJP") -> tuple[str, int] | None:
    """Where the user wrote the primitive's VJP (or JVP) rule: the function given
    to ``defvjp`` for the traced argument; None for autograd's own rules."""
    table = primitive_vjps if kind == "VJP" else primitive_jvps
    maker = table.get(rec.fun)
    if maker is None:
        return None
    try:  # defvjp keeps the given functions in its closure, by argument
        rules = inspect.getclosurevars(maker).nonlocals.get(f"{kind.lower()}s_dict")
    except (TypeError, ValueError):
        rules = None
    found = [rules[a] for a in rec.argnums if a in rules] if isinstance(rules, dict) else [maker]
    for rule in found:
        site = source_site(rule, _LIBRARIES)
        if site is not None:
            return site
    return None
