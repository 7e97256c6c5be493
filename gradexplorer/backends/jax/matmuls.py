"""Reduced-precision float32 matmuls on a GPU (TF32) under jax.

On a GPU, jax's default precision lets XLA run float32 matrix products and
convolutions in TF32 (a 10-bit mantissa) on tensor cores, unless
``jax_default_matmul_precision`` says "highest" (or "float32").
:func:`check_precision` asks :func:`reduced_matmuls` and re-runs the
gradient under :func:`full_float32` to name TF32 when it decides the verdict.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import jax

__all__ = ["reduced_matmuls", "full_float32", "SETTINGS"]

#: where a user switches the mode (for the report's note)
SETTINGS = "jax_default_matmul_precision, or the jax.default_matmul_precision context"

_FULL = {"highest", "float32", "HIGHEST", "FLOAT32"}


def reduced_matmuls(leaves: Sequence[Any]) -> str | None:
    """``"TF32"`` where float32 matmuls on the leaves' GPU may run in TF32, else
    None (on the CPU, or with jax's matmul precision at "highest").

    >>> import jax.numpy as jnp
    >>> reduced_matmuls([jnp.zeros(2)]) is None or jax.devices()[0].platform == "gpu"
    True
    """
    on_gpu = any(
        isinstance(v, jax.Array) and any(d.platform == "gpu" for d in v.devices()) for v in leaves
    )
    if not on_gpu:
        return None
    precision = jax.config.jax_default_matmul_precision
    if precision is not None and str(precision) in _FULL:
        return None
    return "BF16" if str(precision).lower().startswith("bfloat16") else "TF32"


@contextlib.contextmanager
def full_float32() -> Iterator[None]:
    """float32 matmuls in full float32 inside (jax's own scoped setting).

    >>> with full_float32():
    ...     jax.config.jax_default_matmul_precision
    'highest'
    """
    with jax.default_matmul_precision("highest"):
        yield
