"""The jax backend: functions of jax arrays, ``custom_vjp`` / ``custom_jvp``
rules, ``jit``, pytrees of parameters.

The module itself is the backend object (see :mod:`gradexplorer.backends.base`).
Importing it imports jax; ``import gradexplorer`` never does.
"""

from __future__ import annotations

from typing import Any

import jax

from ..base import Capabilities
from . import operators
from .arrays import cast, float_kind, np, owns, prepare, session, to_array, to_numpy
from .device import device_kit
from .matmuls import SETTINGS as matmul_settings
from .matmuls import full_float32, reduced_matmuls
from .recording import (
    definition_site,
    op_eval,
    op_function,
    op_jvp,
    op_vjp,
    record,
    rule_site,
)
from .tracing import VJPTrace, trace_jvp, trace_vjp

__all__ = [
    "name", "capabilities", "np", "owns", "to_array", "to_numpy", "vjp", "jvp", "value",
    "is_traced",
    "container", "record", "op_vjp", "op_jvp", "op_eval", "op_function", "definition_site",
    "rule_site", "float_kind", "prepare", "session", "cast", "VJPTrace", "device_kit",
    "operators", "reduced_matmuls", "full_float32", "matmul_settings",
]  # fmt: skip

capabilities = Capabilities(operators=True, devices=True, batching=True, matmul_modes=True)
name = "jax"
vjp = trace_vjp


def jvp(F, leaves, tangents, fallback: bool = False):
    return trace_jvp(F, leaves, tangents, fallback=fallback)


def value(x: Any) -> Any:
    return x


def is_traced(x: Any) -> bool:
    return isinstance(x, jax.core.Tracer)


def container(kind: str, children: list, keys: tuple, cls: Any) -> Any:
    return None  # jax follows arrays inside Python's own containers (pytrees)
