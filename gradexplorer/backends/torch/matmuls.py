"""Reduced-precision float32 matmuls and convolutions on CUDA (TF32).

Tensor cores run float32 matrix products and convolutions in TF32 (a 10-bit
mantissa) where torch allows it: ``torch.backends.cuda.matmul.allow_tf32`` /
``torch.set_float32_matmul_precision("high")`` for matmuls, and
``torch.backends.cudnn.allow_tf32`` (on by default) for convolutions. A float32
gradient checked against what float32 allows then fails by TF32's rounding,
not the kernel's: :func:`check_precision` asks :func:`reduced_matmuls` and
re-runs the gradient under :func:`full_float32` to name TF32 when it decides
the verdict.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import torch

__all__ = ["reduced_matmuls", "full_float32"]


def _settings() -> tuple[bool, str, bool]:
    with warnings.catch_warnings():  # newer torch prefers its fp32_precision names
        warnings.simplefilter("ignore")
        return (
            bool(torch.backends.cuda.matmul.allow_tf32),
            torch.get_float32_matmul_precision(),
            bool(torch.backends.cudnn.allow_tf32),
        )


def _apply(matmul_tf32: bool, precision: str, cudnn_tf32: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.set_float32_matmul_precision(precision)
        torch.backends.cuda.matmul.allow_tf32 = matmul_tf32
        torch.backends.cudnn.allow_tf32 = cudnn_tf32


def reduced_matmuls(leaves: Sequence[Any]) -> str | None:
    """``"TF32"`` where float32 matmuls or convolutions on the leaves' CUDA
    device may run in TF32, else None (on the CPU, or with TF32 switched off).

    >>> reduced_matmuls([torch.zeros(2)]) is None  # a CPU tensor
    True
    """
    on_cuda = any(isinstance(v, torch.Tensor) and v.is_cuda for v in leaves)
    if not on_cuda:
        return None
    matmul_tf32, precision, cudnn_tf32 = _settings()
    return "TF32" if matmul_tf32 or precision != "highest" or cudnn_tf32 else None


@contextlib.contextmanager
def full_float32() -> Iterator[None]:
    """float32 matmuls and convolutions in full float32 inside, the user's
    settings restored after.

    >>> with full_float32():
    ...     torch.get_float32_matmul_precision()
    'highest'
    """
    saved = _settings()
    _apply(False, "highest", False)
    try:
        yield
    finally:
        _apply(*saved)
