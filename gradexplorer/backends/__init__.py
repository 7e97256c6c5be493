"""The AD systems gradexplorer can check, behind one seam (:mod:`.base`).

>>> get_backend().name
'autograd'
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from ..core.tree import flatten
from .base import PRECISIONS, Backend, Capabilities, OpRecord, Prepared

__all__ = [
    "get_backend", "opened", "bind_prepared", "Backend", "Capabilities", "OpRecord", "Prepared",
    "NAMES", "PRECISIONS", "owns_callable",
]  # fmt: skip

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


def get_backend(name: str | None = None, args: Any = (), f: Any = None) -> Any:
    """The backend named, or the one the arguments' arrays (or f, a torch
    ``nn.Module``) belong to.

    torch tensors select torch and jax arrays select jax; numpy selects
    autograd. Neither torch nor jax is imported unless the arguments (or the
    name) ask for it.
    """
    if name is not None:
        return _load(name) if isinstance(name, str) else name  # a backend object itself
    leaves, _ = flatten(list(args) if isinstance(args, (list, tuple)) else [args])
    if f is not None:
        leaves.append(f)
    for system in ("torch", "jax"):
        if system in sys.modules and any(_belongs(leaf, system) for leaf in leaves):
            return _load(system)
    return _load("autograd")


def owns_callable(f: Any) -> bool:
    """Whether a loaded AD system recognises f by its type (a torch ``nn.Module``,
    a jax-transformed function): such an f must reach the backend unwrapped.

    >>> owns_callable(len)
    False
    """
    if "torch" in sys.modules and _belongs(f, "torch"):
        return True
    return type(f).__module__.split(".")[0] in ("jax", "jaxlib", "flax")


def _belongs(x: Any, system: str) -> bool:
    if system == "torch":
        torch = sys.modules["torch"]
        return isinstance(x, (torch.Tensor, torch.nn.Module))
    jax = sys.modules["jax"]
    return isinstance(x, jax.Array) or type(x).__module__.startswith(("jax", "jaxlib"))


@contextlib.contextmanager
def opened(
    f: Callable,
    args: tuple,
    kwargs: dict,
    wrt: Any,
    *,
    backend: str | None = None,
    precision: str | None = None,
) -> Iterator[tuple[Any, Prepared]]:
    """The backend for this call and the call as it is checked, inside the
    backend's session (every entry point runs its whole work in here).

    >>> import numpy as np
    >>> with opened(np.sin, (np.ones(2, np.float32),), {}, 0, precision="float64") as (b, p):
    ...     b.name, p.args[0].dtype
    ('autograd', dtype('float64'))
    """
    if precision not in PRECISIONS:
        raise ValueError(
            f"precision must be None (float64 for torch and jax, the inputs' own for numpy), "
            f"'float64' or 'native'; got {precision!r}."
        )
    system = get_backend(backend, list(args) + list(kwargs.values()), f)
    with system.session(precision):
        prepared = system.prepare(f, tuple(args), dict(kwargs), wrt, precision)
        try:
            yield system, prepared
        except Exception as exc:
            if any("promoted" in n for n in prepared.notes) and hasattr(exc, "add_note"):
                exc.add_note(
                    "(gradexplorer evaluated f in float64, its lower-precision inputs promoted. "
                    "An array f takes from outside its arguments (a closure, a global, a module "
                    "attribute) keeps its own dtype: pass it as an argument, or pass "
                    "precision='native' to check in the inputs' own precision.)"
                )
            raise


def bind_prepared(prep: Any, system: Any, *, constants_ok: bool, **options: Any) -> Any:
    """:func:`~gradexplorer.core.calls.bind_call` on a prepared call (``prep.f``,
    ``.args``, ``.kwargs``, ``.wrt``), with the AD system's containers and float kinds."""
    from ..core.calls import bind_call

    return bind_call(
        prep.f,
        prep.args,
        prep.kwargs,
        prep.wrt,
        constants_ok=constants_ok,
        container=system.container,
        kind_of=system.float_kind,
        **options,
    )
