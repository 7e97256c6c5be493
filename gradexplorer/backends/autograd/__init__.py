"""The autograd backend: functions written with ``autograd.numpy``.

The module itself is the backend object (see :mod:`gradexplorer.backends.base`).
"""

from __future__ import annotations

from typing import Any

import autograd.numpy as np
import numpy as onp
from autograd.extend import defjvp, defvjp, primitive
from autograd.tracer import getval, isbox

from .recording import FRIENDLY_NAMES, definition_site, op_eval, op_jvp, op_vjp, record
from .tracing import VJPTrace, op_name, trace_jvp, trace_vjp, traced_container

__all__ = [
    "name", "np", "owns", "to_array", "to_numpy", "vjp", "jvp", "value", "is_traced",
    "container", "record", "op_vjp", "op_jvp", "op_eval", "definition_site",
    "trace_vjp", "trace_jvp", "VJPTrace", "getval", "isbox", "op_name", "FRIENDLY_NAMES",
    "primitive", "defvjp", "defjvp",
]  # fmt: skip

name = "autograd"


def owns(x: Any) -> bool:
    """autograd works on plain numpy: it owns numpy arrays and Python numbers."""
    return isinstance(x, (onp.ndarray, onp.generic, float, complex, int)) or isbox(x)


def to_array(a: Any) -> Any:
    return a


def to_numpy(x: Any) -> Any:
    return getval(x)


vjp = trace_vjp
value = getval
is_traced = isbox
container = traced_container


def jvp(F, leaves, tangents, fallback: bool = False):
    return trace_jvp(F, leaves, tangents, fallback=fallback)
