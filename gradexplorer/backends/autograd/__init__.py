"""The autograd backend: functions written with ``autograd.numpy``.

The module itself is the backend object (see :mod:`gradexplorer.backends.base`).
"""

from __future__ import annotations

import contextlib
from typing import Any

import autograd.numpy as np
import numpy as onp
from autograd.extend import defjvp, defvjp, primitive
from autograd.tracer import getval, isbox

from ...core.tree import float_kind
from ..base import Capabilities, Prepared, promote_arguments, promotion_note
from .recording import (
    FRIENDLY_NAMES,
    definition_site,
    op_eval,
    op_function,
    op_jvp,
    op_vjp,
    record,
    rule_site,
)
from .tracing import VJPTrace, op_name, trace_jvp, trace_vjp, traced_container

__all__ = [
    "name", "capabilities", "np", "owns", "to_array", "to_numpy", "vjp", "jvp", "value",
    "is_traced",
    "container", "record", "op_vjp", "op_jvp", "op_eval", "definition_site", "rule_site",
    "op_function",
    "float_kind", "prepare", "session", "cast",
    "trace_vjp", "trace_jvp", "VJPTrace", "getval", "isbox", "op_name", "FRIENDLY_NAMES",
    "primitive", "defvjp", "defjvp",
]  # fmt: skip

capabilities = Capabilities(numpy_arrays=True, eager_record=True, operators=True)
name = "autograd"


def owns(x: Any) -> bool:
    """autograd works on plain numpy: it owns numpy arrays and Python numbers."""
    return isinstance(x, (onp.ndarray, onp.generic, float, complex, int)) or isbox(x)


def to_array(a: Any, like: Any = None) -> Any:
    return a


def to_numpy(x: Any) -> Any:
    return getval(x)


vjp = trace_vjp
value = getval
is_traced = isbox
container = traced_container


def jvp(F, leaves, tangents, fallback: bool = False):
    return trace_jvp(F, leaves, tangents, fallback=fallback)


def cast(x: Any, dtype: str) -> Any:
    """x as a numpy array of the named dtype (numpy has no bfloat16)."""
    if dtype == "bfloat16":
        raise TypeError(
            "numpy has no bfloat16: check a bfloat16 gradient with torch or jax tensors."
        )
    return onp.asarray(x, dtype=dtype)


def session(precision: Any = None):
    return contextlib.nullcontext()


_WIDER = {"float16": "float64", "float32": "float64", "complex64": "complex128"}


def prepare(f: Any, args: tuple, kwargs: dict, wrt: Any, precision: Any) -> Prepared:
    """numpy inputs are checked in their own precision unless ``precision="float64"``."""
    if precision != "float64":
        return Prepared(f, tuple(args), dict(kwargs), wrt)

    def widen(x: Any) -> tuple[Any, str | None]:
        if isinstance(x, (onp.ndarray, onp.generic)) and str(x.dtype) in _WIDER:
            wide = onp.asarray(x, _WIDER[str(x.dtype)])
            return (wide if onp.ndim(x) else wide[()]), str(x.dtype)
        return x, None

    args, kwargs, seen = promote_arguments(f, args, kwargs, widen)
    return Prepared(f, args, kwargs, wrt, (promotion_note(seen),) if seen else ())
