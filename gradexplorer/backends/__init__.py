"""The AD systems gradexplorer can check, behind one seam (:mod:`.base`).

>>> get_backend().name
'autograd'
"""

from __future__ import annotations

import sys
from typing import Any

from ..core.tree import flatten
from .base import Backend, OpRecord

__all__ = ["get_backend", "Backend", "OpRecord", "NAMES"]

NAMES = ("autograd", "torch", "jax")


def _load(name: str):
    if name == "autograd":
        from . import autograd

        return autograd
    if name in ("torch", "jax"):
        import importlib

        try:
            return importlib.import_module(f".{name}", __name__)
        except ImportError as exc:
            raise ImportError(
                f"backend={name!r} needs {name}, which is not importable here ({exc}). "
                f"Install it: pip install 'gradexplorer[{name}]'."
            ) from None
    raise ValueError(f"backend must be one of {list(NAMES)} or None; got {name!r}.")


def get_backend(name: str | None = None, args: Any = ()) -> Any:
    """The backend named, or the one the arguments' arrays belong to.

    torch tensors select torch and jax arrays select jax; numpy selects
    autograd. Neither torch nor jax is imported unless the arguments (or the
    name) ask for it.
    """
    if name is not None:
        return _load(name)
    leaves, _ = flatten(list(args) if isinstance(args, (list, tuple)) else [args])
    for system in ("torch", "jax"):
        if system in sys.modules and any(_belongs(leaf, system) for leaf in leaves):
            return _load(system)
    return _load("autograd")


def _belongs(x: Any, system: str) -> bool:
    if system == "torch":
        return isinstance(x, sys.modules["torch"].Tensor)
    jax = sys.modules["jax"]
    return isinstance(x, jax.Array) or type(x).__module__.startswith("jax")
