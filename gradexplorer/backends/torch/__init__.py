"""The torch backend: functions of torch tensors, custom ``autograd.Function``s,
``torch.library`` custom ops and ``nn.Module``s.

The module itself is the backend object (see :mod:`gradexplorer.backends.base`).
Importing it imports torch; ``import gradexplorer`` never does.
"""

from __future__ import annotations

from typing import Any

import torch

from ...core.guards import register_random_source
from ..base import Capabilities
from . import operators
from .arrays import (
    cast,
    float_kind,
    nondifferentiable_outputs,
    np,
    owns,
    prepare,
    session,
    to_array,
    to_numpy,
)
from .compiled import compile_function
from .device import device_kit
from .matmuls import SETTINGS as matmul_settings
from .matmuls import full_float32, reduced_matmuls
from .opcheck import custom_op_calls, opcheck
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
    "nondifferentiable_outputs", "operators", "compile_function", "custom_op_calls", "opcheck",
    "reduced_matmuls", "full_float32", "matmul_settings",
]  # fmt: skip

capabilities = Capabilities(
    eager_record=True,
    operators=True,
    devices=True,
    batching=True,
    compiling=True,
    custom_ops=True,
    matmul_modes=True,
)
name = "torch"
vjp = trace_vjp


def jvp(F, leaves, tangents, fallback: bool = False):
    return trace_jvp(F, leaves, tangents, fallback=fallback)


def value(x: Any) -> Any:
    return x.detach() if isinstance(x, torch.Tensor) else x


def is_traced(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.requires_grad


def container(kind: str, children: list, keys: tuple, cls: Any) -> Any:
    return None  # torch follows tensors inside Python's own containers


def _rng_state() -> tuple:
    """torch's CPU generator state and, where CUDA is initialised, every device's."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.random.get_rng_state(), cuda


def _set_rng_state(state: tuple) -> None:
    cpu, cuda = state
    torch.random.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


# torch.manual_seed seeds the CPU generator and every CUDA device's
register_random_source("torch", _rng_state, _set_rng_state, torch.manual_seed)
