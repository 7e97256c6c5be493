"""Reduced-precision float32 matmuls and convolutions on CUDA (TF32, bf16).

Tensor cores run float32 matrix products and convolutions in TF32 (a 10-bit
mantissa) or, with ``"medium"``, bfloat16 where torch allows it. torch has two
ways to say so, which must not be mixed in one process (reading the old after
setting the new raises): the old ``torch.set_float32_matmul_precision`` and
``torch.backends.cudnn.allow_tf32``, and (torch >= 2.9) the ``fp32_precision``
attributes of ``torch.backends``, ``torch.backends.cuda.matmul`` and
``torch.backends.cudnn.conv``. Both are read and restored here in the user's own.

A float32 gradient checked against what float32 allows then fails by the
matmuls' rounding, not the kernel's: :func:`check_precision` asks
:func:`reduced_matmuls` and re-runs the gradient under :func:`full_float32` to
name the mode when it decides the verdict.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import torch

__all__ = ["reduced_matmuls", "full_float32", "SETTINGS"]

#: where a user switches these modes (for the report's note)
SETTINGS = (
    "torch.set_float32_matmul_precision / torch.backends.cuda.matmul.fp32_precision, "
    "torch.backends.cudnn.allow_tf32 / torch.backends.cudnn.conv.fp32_precision"
)

_LEGACY_NAMES = {"high": "TF32", "medium": "BF16"}


def _settings() -> tuple:
    """The user's settings, in the API they use: the old one's getters raise once
    the new one was set (the new one's never do)."""
    with warnings.catch_warnings():  # the old names are deprecated in newer torch
        warnings.simplefilter("ignore")
        try:
            return (
                "old",
                torch.get_float32_matmul_precision(),
                bool(torch.backends.cudnn.allow_tf32),
            )
        except RuntimeError:
            return (
                "new",
                torch.backends.fp32_precision,
                torch.backends.cuda.matmul.fp32_precision,
                torch.backends.cudnn.conv.fp32_precision,
            )


def _apply(settings: tuple) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if settings[0] == "new":
            _, overall, matmul, conv = settings
            torch.backends.fp32_precision = overall
            torch.backends.cuda.matmul.fp32_precision = matmul
            torch.backends.cudnn.conv.fp32_precision = conv
        else:
            _, precision, cudnn_tf32 = settings
            torch.set_float32_matmul_precision(precision)
            torch.backends.cudnn.allow_tf32 = cudnn_tf32


def _mode(settings: tuple) -> str | None:
    if settings[0] == "old":
        _, precision, cudnn_tf32 = settings
        return _LEGACY_NAMES.get(precision) or ("TF32" if cudnn_tf32 else None)
    _, overall, matmul, conv = settings
    modes = []
    for value in (matmul, conv):
        value = overall if value == "none" else value
        if value not in ("none", "ieee"):
            modes.append(str(value).upper())
    return modes[0] if modes else None


def reduced_matmuls(leaves: Sequence[Any]) -> str | None:
    """The reduced precision (``"TF32"``, ``"BF16"``) float32 matmuls or
    convolutions may run in on the leaves' CUDA device, else None (on the CPU,
    or in full float32).

    >>> reduced_matmuls([torch.zeros(2)]) is None  # a CPU tensor
    True
    """
    if not any(isinstance(v, torch.Tensor) and v.is_cuda for v in leaves):
        return None
    return _mode(_settings())


@contextlib.contextmanager
def full_float32() -> Iterator[None]:
    """float32 matmuls and convolutions in full float32 inside, the user's
    settings restored after (in the API the user set them with).

    >>> with full_float32():
    ...     reduced_matmuls([torch.zeros(2)]) is None
    True
    """
    saved = _settings()
    if saved[0] == "new":
        _apply(("new", saved[1], "ieee", "ieee"))
    else:
        _apply(("old", "highest", False))
    try:
        yield
    finally:
        _apply(saved)
