"""jax's kit for finite differences on the inputs' own device.

:class:`gradexplorer.fd.evaluation.DeviceEvaluator` builds points, evaluates
f and reduces the samples with these: jax.numpy (numpy's names; a few extras
for the reductions), copies to and from the host, and f mapped over a batch
of points with ``jax.vmap`` under ``jax.jit``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as onp

__all__ = ["xp", "Kit", "device_kit"]

#: numpy-like functions over jax arrays (jax.numpy, and what it lacks by name).
xp = SimpleNamespace(
    **{
        name: getattr(jnp, name)
        for name in (
            "abs",
            "sqrt",
            "maximum",
            "minimum",
            "fmax",
            "fmin",
            "where",
            "isfinite",
            "isnan",
            "all",
            "any",
            "max",
            "min",
            "sum",
            "einsum",
            "concatenate",
            "stack",
            "reshape",
            "zeros_like",
            "zeros",
            "diff",
            "frexp",
            "ldexp",
            "mean",
            "inf",
            "nan",
        )
    },  # fmt: skip
    asarray=lambda a, dtype=None: jnp.asarray(a, dtype=dtype),
    # the widest jax has: 32 bits where 64-bit mode is off (a ``precision="native"`` check)
    astype_int64=lambda a: a.astype(jax.dtypes.canonicalize_dtype(jnp.int64)),
    astype_float64=lambda a: a.astype(jax.dtypes.canonicalize_dtype(jnp.float64)),
    round_to=lambda a, name: a.astype(getattr(jnp, name)).astype(a.dtype),
)


def _program(fn: Callable) -> Callable:
    """fn (keyword arrays -> arrays, or a dataclass of them) compiled whole: each
    eager operation would compile on its own, per shape (see gradexplorer.fd.fusing)."""
    made: dict = {}

    def flat(**arrays):
        out = fn(**arrays)
        if dataclasses.is_dataclass(out):
            made["type"] = type(out)
            return {f.name: getattr(out, f.name) for f in dataclasses.fields(out)}
        return out

    program = jax.jit(flat)

    def run(**arrays):
        out = program(**arrays)
        return made["type"](**out) if "type" in made else out

    return run


xp.fuse = _program


class Kit:
    """What a DeviceEvaluator needs of jax, for arrays on ``device``.

    On an accelerator the samples are reduced there with jax.numpy. On the
    CPU, f still runs as jax (compiled and mapped over the batch), but the
    reductions use numpy on the same memory: jax dispatches each eager
    operation of a new shape through a compilation, which costs far more
    than the arithmetic itself (``device_arithmetic=True`` forces jax.numpy,
    so the accelerator's path can be tested on a CPU).
    """

    #: about what compiling f mapped over a batch costs, in seconds
    batch_overhead = 0.05
    #: each eager operation compiles once per shape on an accelerator, so samples of
    #: a few outputs are reduced on the host there (see DeviceEvaluator)
    compiles_per_shape = True

    @property
    def widest(self) -> str:
        """The dtype finite differences work in: float64 in 64-bit mode (a check's
        session turns it on), float32 where a ``precision="native"`` check runs
        without it (jax then has no float64 to give)."""
        return str(jax.dtypes.canonicalize_dtype(jnp.float64))

    def __init__(self, device: Any, device_arithmetic: bool | None = None):
        self.jax_device = device
        self.device = f"{device.platform}:{device.id}"
        if device_arithmetic is None:
            device_arithmetic = device.platform != "cpu"
        self.on_host = not device_arithmetic
        self.xp = onp if self.on_host else xp

    def to_host(self, a: Any) -> onp.ndarray:
        return onp.array(a, copy=True)

    def to_device(self, a: onp.ndarray) -> Any:
        if self.on_host:
            return onp.array(a, dtype=onp.float64, copy=True)
        return jax.device_put(onp.asarray(a, dtype=self.widest), self.jax_device)

    def repeat(self, row: Any, count: int) -> Any:
        return self.xp.repeat(row, count, axis=0) if self.on_host else _repeat(row, count)

    def add_at(self, pts: Any, rows, cols, vals: Any) -> Any:
        if self.on_host:
            out = pts.copy()
            onp.add.at(out, (rows, cols), vals)
            return out
        return _add_at(pts, jnp.asarray(rows), jnp.asarray(cols), vals)

    def realified(self, leaves: list, dtype: str | None = None) -> Any:
        """The leaves as one real vector (Re then Im of a complex leaf) of
        ``dtype``, on the device (on the host where the reductions run there)."""
        xp = onp if self.on_host else jnp
        parts = []
        for v in leaves:
            v = onp.asarray(v) if self.on_host else jnp.asarray(v)
            parts.extend([v.real.ravel(), v.imag.ravel()] if xp.iscomplexobj(v) else [v.ravel()])
        return xp.concatenate([p.astype(dtype or self.widest) for p in parts])

    def cast(self, a: Any, dtype: str) -> Any:
        return jnp.asarray(a, dtype=jnp.dtype(dtype))

    def _placed(self, F):
        """F on points placed on the kit's device (numpy points would run on
        jax's default device, which need not be the inputs')."""
        if self.jax_device == jax.devices()[0]:
            return F
        return lambda x: F(jax.device_put(x, self.jax_device))

    def adapt(self, F):
        """F as the evaluator calls it: on the inputs' device, its results as
        the kit's arrays."""
        if not self.on_host:
            return F
        F = self._placed(F)
        return lambda x: onp.asarray(F(x))

    def batched(self, F):
        """F over a leading batch axis (an f that cannot be traced, with Python
        control flow on values, raises on its first batch and is then called
        point by point). Compiled as one program on an accelerator; on the CPU
        each operation runs batched on its own, which costs no compilation per
        f (jax caches each operation's program by shape, across functions)."""
        mapped = jax.jit(jax.vmap(F))
        return self.adapt(mapped) if self.on_host else self._placed(mapped)


# one program each (eagerly, their several operations compiled one by one, per shape)
_repeat = jax.jit(lambda row, count: jnp.repeat(row, count, 0), static_argnums=1)
_add_at = jax.jit(lambda pts, rows, cols, vals: pts.at[rows, cols].add(vals))


def device_kit(x0: Any, device_arithmetic: bool | None = None) -> Kit:
    """The kit for arrays living where ``x0`` (a jax array) lives."""
    devices = x0.devices() if isinstance(x0, jax.Array) else {jax.devices()[0]}
    return Kit(next(iter(devices)), device_arithmetic)
