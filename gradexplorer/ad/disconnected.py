"""Inputs the output does not depend on: their marker and the policy for them.

An input that never reaches f's output has a zero gradient *because* it is
disconnected; ``grad`` raises, warns or stays silent about it, and returns a
zero, ``None`` or :data:`DISCONNECTED` in its place.

>>> DISCONNECTED
<disconnected>
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as onp

from ..core.calls import Call
from ..errors import DisconnectedInputError, DisconnectedInputWarning

__all__ = [
    "DisconnectedType",
    "DISCONNECTED",
    "DISCONNECTED_CHOICES",
    "RETURN_CHOICES",
    "finish_disconnected",
    "like_leaf",
]

DISCONNECTED_CHOICES = ("raise", "warn", "ignore")
RETURN_CHOICES = ("zero", "none", "disconnected")


class DisconnectedType:
    """Marker returned for an input the output does not depend on.

    It stands for a zero that is zero *because* of disconnection.

    >>> DISCONNECTED
    <disconnected>
    """

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<disconnected>"

    def __bool__(self) -> bool:
        return False


DISCONNECTED = DisconnectedType()


def finish_disconnected(
    call: Call,
    grads: list,
    connected: Sequence[bool],
    disconnected_inputs: str,
    return_disconnected: str,
    *,
    as_leaves: bool = True,
    stacklevel: int = 4,
) -> list:
    """Group per-leaf gradients into arguments and apply the disconnected policy.

    An argument is disconnected when none of its leaves reaches the output.
    With ``as_leaves`` a gradient takes its input's form (a Python float for a
    float); torch and jax gradients stay their system's arrays.
    """
    specs = call.specs
    if as_leaves:
        grads = [like_leaf(g, s) for g, s in zip(grads, specs)]
    per_arg = call.per_argument(grads)
    flags = iter(connected)
    out = []
    for sel, g in zip(call.selected, per_arg):
        ok = any(next(flags) for s in sel.specs if s is not None)
        if ok:
            out.append(g)
            continue
        name = getattr(call.f, "__name__", "f")
        msg = (
            f"the output of {name} does not depend on input {sel.name!r} (argument "
            f"{sel.position}); its gradient is zero because it is disconnected. Pass "
            "disconnected_inputs='ignore' if that is intended, or drop it from wrt."
        )
        if disconnected_inputs == "raise":
            raise DisconnectedInputError(sel.name, msg)
        if disconnected_inputs == "warn":
            warnings.warn(DisconnectedInputWarning(msg), stacklevel=stacklevel)
        if return_disconnected == "none":
            g = None
        elif return_disconnected == "disconnected":
            g = DISCONNECTED
        out.append(g)
    return out


def like_leaf(g: Any, spec) -> Any:
    """A gradient in the form of its input leaf: a Python float for a float,
    an array (or numpy scalar) otherwise."""
    from ..backends.autograd import isbox

    if spec.pytype is not None and not isbox(g) and onp.ndim(g) == 0:
        return spec.pytype(g)
    return g
