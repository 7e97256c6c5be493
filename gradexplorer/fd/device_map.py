"""f as a real-vector map on its inputs' own device, for the finite differences.

:class:`~gradexplorer.fd.realmap.RealMap` evaluates f on host points (numpy in,
numpy out); a backend with devices (torch, jax) can instead keep the points,
f's values and the stencil's reductions on the device
(:class:`~gradexplorer.fd.evaluation.DeviceEvaluator`). This module builds that
map from a bound call: the same leaves, dtypes and output layout as the host
map, with no crossing per point.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as onp

from ..core.calls import Call
from ..core.guards import reseeded
from ..core.outputs import OutputLayout
from ..core.tree import Leaf
from .evaluation import DeviceEvaluator

__all__ = ["traceable", "device_evaluator", "call_on_device"]


def traceable(call: Call, layout: OutputLayout, reseed: int | None, backend: Any) -> Callable:
    """``F(*ws)``: f on one real vector per differentiated leaf (the backend's
    arrays), its float outputs realified into one real vector, traceable by the
    backend's AD.

    >>> import numpy as np
    >>> from gradexplorer.backends import get_backend
    >>> from gradexplorer.core.calls import bind_call
    >>> from gradexplorer.core.outputs import output_layout
    >>> call = bind_call(np.sin, (np.zeros(2),), {}, 0, constants_ok=True)
    >>> F = traceable(call, output_layout(np.zeros(2)), None, get_backend("autograd"))
    >>> F(np.array([0.0, np.pi / 2]))
    array([0., 1.])
    """
    specs, np = call.specs, backend.np

    def F(*ws):
        leaves = [s.from_real(w, np=np) for s, w in zip(specs, ws)]
        reseeded(reseed)
        return layout.realify(call(*leaves), np=np)

    # a backend that answers from hand-written rules needs the call, not a trace
    F.call, F.layout, F.reseed = call, layout, reseed
    return F


def device_evaluator(
    F: Callable, kit: Any, sides: Sequence[Leaf], x0: onp.ndarray, leaves: list | None = None
) -> DeviceEvaluator:
    """A :class:`DeviceEvaluator` of ``F`` (one real vector per leaf of ``sides``):
    one real vector on the device in, f's realified output in the kit's widest
    float out; each leaf cut from the vector in its own dtype. ``x0`` is the
    point on the host; ``leaves``, f's own arrays at it (x0 is then made from them
    on the device, never copied there)."""
    bounds = onp.cumsum([0] + [s.real_size for s in sides])
    dtypes = [str(s.real_dtype) for s in sides]

    def flat(x):
        parts = [kit.cast(x[a:b], d) for a, b, d in zip(bounds[:-1], bounds[1:], dtypes)]
        return kit.cast(F(*parts), kit.widest)

    x0_device = None if leaves is None else kit.realified(leaves)
    return DeviceEvaluator(flat, kit, x0, x0_device=x0_device)


def call_on_device(
    call: Call, layout: OutputLayout, reseed: int | None, backend: Any, x0: onp.ndarray
) -> DeviceEvaluator | None:
    """The device evaluator of a bound call where its backend has devices (None
    where it has not: numpy code runs on the host)."""
    if not backend.capabilities.devices or not call.values:
        return None
    F = traceable(call, layout, reseed, backend)
    kit = backend.device_kit(call.values[0])
    return device_evaluator(F, kit, call.specs, x0, list(call.values))
