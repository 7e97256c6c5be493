"""jax arrays as the checkers see them: conversions and float64 promotion.

Checks run inside ``jax.enable_x64`` (the session), so float64 is available
without changing the user's global configuration; float32, float16 and
bfloat16 inputs are promoted on copies unless ``precision="native"``.
"""

from __future__ import annotations

import contextlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as onp

from ...core.tree import dtype_name, float_kind
from ..base import Prepared, promote_arguments, promotion_note

__all__ = ["np", "owns", "to_array", "to_numpy", "cast", "float_kind", "prepare", "session"]

#: The array functions the realified map uses while it is traced.
np = jnp


def owns(x: Any) -> bool:
    return isinstance(x, jax.Array)


def to_array(a: Any, like: Any = None) -> Any:
    """numpy arrays and scalars to jax arrays (keeping their dtype) on ``like``'s
    device (jax's default without one); others pass through."""
    if isinstance(a, (onp.ndarray, onp.generic)) and a.dtype.kind in "fciub":
        if isinstance(like, jax.Array):
            return jax.device_put(a, next(iter(like.devices())))
        return jnp.asarray(a)
    return a


def cast(x: Any, dtype: str) -> Any:
    """x as a jax array of the named dtype (``"bfloat16"`` too)."""
    return jnp.asarray(x, dtype=jnp.dtype(dtype))


def to_numpy(x: Any) -> Any:
    """A jax array as a fresh numpy array (bfloat16 via float32; a typed PRNG key,
    ``jax.random.key``, as its key data); others pass through."""
    if not isinstance(x, jax.Array):
        return x
    if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        x = jax.random.key_data(x)
    a = onp.array(x, copy=True)
    if a.dtype.kind == "V" or dtype_name(a) == "bfloat16":
        a = a.astype(onp.float32)
    return a


_WIDER = {
    "float16": "float64",
    "bfloat16": "float64",
    "float32": "float64",
    "complex64": "complex128",
}


def prepare(f: Any, args: tuple, kwargs: dict, wrt: Any, precision: Any) -> Prepared:
    """Float inputs in float64 unless ``precision="native"`` (numpy inputs too:
    jax differentiates them alike)."""
    if precision == "native":
        return Prepared(f, tuple(args), dict(kwargs), wrt)

    def widen(x: Any) -> tuple[Any, str | None]:
        if isinstance(x, (jax.Array, onp.ndarray, onp.generic)) and dtype_name(x) in _WIDER:
            return jnp.asarray(x, dtype=_WIDER[dtype_name(x)]), dtype_name(x)
        return x, None

    args, kwargs, seen = promote_arguments(f, args, kwargs, widen)
    return Prepared(f, args, kwargs, wrt, (promotion_note(seen),) if seen else ())


def session(precision: Any = None):
    """64-bit mode for the check (thread-local; the user's setting is restored)."""
    if precision == "native":
        return contextlib.nullcontext()
    return jax.enable_x64(True)
