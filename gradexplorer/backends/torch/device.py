"""torch's kit for finite differences on the inputs' own device.

:class:`gradexplorer.fd.evaluation.DeviceEvaluator` builds points, evaluates
f and reduces the samples with these: numpy-like array functions over torch
(:data:`xp`, numpy's signatures, the few the reductions use), copies to and
from the host, and f mapped over a batch of points with ``torch.func.vmap``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as onp
import torch

from .arrays import widest

__all__ = ["xp", "Kit", "device_kit"]


def _t(a: Any, like: torch.Tensor | None = None) -> torch.Tensor:
    if isinstance(a, torch.Tensor) and (like is None or a.device == like.device):
        return a
    t = a if isinstance(a, torch.Tensor) else torch.as_tensor(onp.asarray(a))
    if like is None:
        return t
    # a host operand joins the device's arrays in their dtype (float32 without float64)
    return t.to(like.device, like.dtype) if t.is_floating_point() else t.to(like.device)


def _axis_reduce(fn):
    def reduce(a, axis=None, initial=None, keepdims=False):
        a = _t(a)
        if initial is not None and a.numel() == 0:
            shape = list(a.shape)
            if axis is not None:
                shape.pop(axis)
            return torch.full(shape, float(initial), dtype=a.dtype, device=a.device)
        out = fn(a) if axis is None else fn(a, dim=axis, keepdim=keepdims)
        if initial is not None and fn is torch.amax:
            out = torch.clamp(out, min=initial)
        return out

    return reduce


def _where(c, a, b):
    c = _t(c)
    ref = a if isinstance(a, torch.Tensor) else b if isinstance(b, torch.Tensor) else c
    dtype = ref.dtype if ref.dtype.is_floating_point else torch.float64
    a = a if isinstance(a, torch.Tensor) else torch.as_tensor(a, dtype=dtype, device=c.device)
    b = b if isinstance(b, torch.Tensor) else torch.as_tensor(b, dtype=dtype, device=c.device)
    return torch.where(c, a, b)


def _binary(fn):
    def op(a, b):
        if not isinstance(a, torch.Tensor):
            a = torch.as_tensor(a, dtype=b.dtype, device=b.device)
        if not isinstance(b, torch.Tensor):
            b = torch.as_tensor(b, dtype=a.dtype, device=a.device)
        return fn(a, b)

    return op


def _frexp(a):
    m, e = torch.frexp(a)
    return m, e.to(torch.int64)


#: numpy-like functions over torch tensors (numpy's names and signatures).
xp = SimpleNamespace(
    inf=float("inf"),
    nan=float("nan"),
    asarray=lambda a, dtype=None: _t(a) if dtype is None else _t(a).to(torch.float64),
    abs=torch.abs,
    sqrt=torch.sqrt,
    maximum=_binary(torch.maximum),
    minimum=_binary(torch.minimum),
    fmax=_binary(torch.fmax),
    fmin=_binary(torch.fmin),
    where=_where,
    isfinite=torch.isfinite,
    isnan=torch.isnan,
    all=lambda a, axis=None: torch.all(a) if axis is None else torch.all(a, dim=axis),
    any=lambda a, axis=None: torch.any(a) if axis is None else torch.any(a, dim=axis),
    max=_axis_reduce(torch.amax),
    min=_axis_reduce(torch.amin),
    sum=lambda a, axis=None: torch.sum(a) if axis is None else torch.sum(a, dim=axis),
    einsum=lambda spec, *ops: torch.einsum(spec, *[_t(o, ops[-1]) for o in ops]),
    concatenate=lambda parts, axis=0: torch.cat(list(parts), dim=axis),
    stack=lambda parts, axis=0: torch.stack(list(parts), dim=axis),
    reshape=lambda a, shape: torch.reshape(a, tuple(shape)),
    zeros_like=torch.zeros_like,
    zeros=lambda shape: torch.zeros(shape, dtype=torch.float64),
    diff=lambda a, axis=0: torch.diff(a, dim=axis),
    frexp=_frexp,
    ldexp=lambda m, e: torch.ldexp(m, e),
    mean=lambda a, axis=None: torch.mean(a) if axis is None else torch.mean(a, dim=axis),
    astype_int64=lambda a: a.to(torch.int64),
    astype_float64=lambda a: a.to(torch.float64),
    round_to=lambda a, name: a.to(getattr(torch, name)).to(a.dtype),
)


class Kit:
    """What a DeviceEvaluator needs of torch, for tensors on ``device``."""

    def __init__(self, device: torch.device, dtype: torch.dtype | None = None):
        self.torch_device = device
        self.dtype = widest(device) if dtype is None else dtype
        #: the dtype finite differences work in on this device (float64 where it has one)
        self.widest = str(self.dtype).removeprefix("torch.")
        self.device = str(device)
        # arrays made from nothing live on the device, in its widest float (float32
        # on a device without float64)
        wide = self.dtype
        like = torch.empty(0, dtype=wide, device=device)
        self.xp = SimpleNamespace(
            **{
                **vars(xp),
                "asarray": lambda a, dtype=None: _t(a, like),
                "zeros": lambda shape: torch.zeros(shape, dtype=wide, device=device),
                "astype_float64": lambda a: a.to(wide),
            }
        )

    def to_host(self, a: torch.Tensor) -> onp.ndarray:
        return a.detach().cpu().numpy().copy() if isinstance(a, torch.Tensor) else onp.asarray(a)

    def to_device(self, a: onp.ndarray) -> torch.Tensor:
        return torch.as_tensor(onp.ascontiguousarray(a), dtype=self.dtype, device=self.torch_device)

    def realified(self, leaves: list, dtype: str | None = None) -> torch.Tensor:
        """The leaves as one real vector (Re then Im of a complex leaf) of
        ``dtype``, built where they live: x0 never leaves the device."""
        parts = []
        for v in leaves:
            v = v.detach()
            parts.extend(
                [v.real.reshape(-1), v.imag.reshape(-1)] if v.is_complex() else [v.reshape(-1)]
            )
        target = self.dtype if dtype is None else getattr(torch, dtype)
        return torch.cat([p.to(target) for p in parts])

    def cast(self, a: torch.Tensor, dtype: str) -> torch.Tensor:
        return a.to(getattr(torch, dtype))

    def repeat(self, row: torch.Tensor, count: int) -> torch.Tensor:
        return row.expand(count, -1).clone()

    def add_at(self, pts: torch.Tensor, rows, cols, vals: torch.Tensor) -> torch.Tensor:
        index = (torch.as_tensor(rows, device=pts.device), torch.as_tensor(cols, device=pts.device))
        return pts.index_put(index, vals, accumulate=True)

    def batched(self, F):
        """F over a leading batch axis with torch.func.vmap (an f that cannot be
        mapped raises on its first batch, and is then called point by point)."""
        mapped = torch.func.vmap(F)

        def run(X: torch.Tensor) -> torch.Tensor:
            with torch.no_grad():
                return mapped(X)

        return run


def device_kit(x0: Any) -> Kit:
    """The kit for tensors living where ``x0`` (a tensor) lives."""
    return Kit(x0.device if isinstance(x0, torch.Tensor) else torch.device("cpu"))
