"""Which AD system computes an operator's call, and the call bound to it.

Both are asked on every call of an operator, and on a torch or jax function
they are a good part of what gradexplorer adds to the framework's own call:
reading f's signature, resolving ``wrt``, naming and checking every leaf.
Both depend only on f, ``wrt`` and the arguments' types (and, for the bound
call, shapes and dtypes), so calls that repeat them — an operator in a loop —
reuse the first answer: the backend per tuple of argument types, the bound
call per f, ``wrt`` and arrays' signature (a container argument, a dict of
parameters say, by its structure and its arrays'), its leaves replaced by the
new ones. Keyword arguments, leaves that are no arrays (Python numbers) and
``nn.Module`` functions are bound afresh every time.

>>> system_for(lambda x: x, (1.0,), {}) is None   # numpy: ad/'s autograd operators
True
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from typing import Any

from ..backends import get_backend, owns_callable
from ..core.calls import Call, Selected, bind_call
from ..core.tree import flatten

__all__ = ["system_for", "bind"]

#: (type of f, types of the arguments) -> backend (None: ad/'s autograd operators)
_SYSTEMS: dict = {}
#: f -> {(wrt, arrays' signature): the bound call without f and its values}
_BOUND: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CONTAINERS = (list, tuple, dict, type(None))
_KEPT = 256  # signatures kept per f, and argument-type tuples kept in all


def system_for(f: Callable, args: tuple, kwargs: dict) -> Any:
    """The backend whose own AD computes this call, or None for ad/'s autograd
    operators (numpy arguments)."""
    key = None
    if not kwargs:
        key = (type(f), tuple(_types(a) for a in args))
        if key in _SYSTEMS:
            return _SYSTEMS[key]
    system = get_backend(None, list(args) + list(kwargs.values()), f)
    if getattr(system, "operators", None) is not None:
        found = system
    elif system.capabilities.operators:
        found = None
    else:
        raise TypeError(
            f"gradexplorer's operators do not take {system.name} functions; its checks "
            "(gx.check_grads, gx.numeric_jacobian) do. Pass numpy, torch or jax arrays."
        )
    if key is not None and len(_SYSTEMS) < _KEPT:
        _SYSTEMS[key] = found
    return found


def _types(a: Any) -> Any:
    """What decides an argument's AD system: its type, or a container's structure
    and its leaves' types."""
    if isinstance(a, _CONTAINERS):
        leaves, tree = flatten(a)
        return tree, tuple(type(v) for v in leaves)
    return type(a)


def _array_signature(a: Any) -> tuple | None:
    shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
    if shape is None or dtype is None:
        return None
    return type(a), tuple(shape), dtype


def _signature(wrt: Any, args: tuple, kwargs: dict) -> tuple | None:
    """The key of a bound call: None when it is not kept (keyword arguments, a
    leaf that is no array, an unhashable ``wrt``). A container argument (a dict of
    parameters, a list of layers) is keyed by its structure and its arrays'."""
    if kwargs:
        return None
    sig: list = []
    for a in args:
        if isinstance(a, _CONTAINERS):
            leaves, tree = flatten(a)
            inner = tuple(_array_signature(v) for v in leaves)
            if None in inner:
                return None
            sig.append((tree, inner))
            continue
        one = _array_signature(a)
        if one is None:
            return None
        sig.append(one)
    key = (wrt, tuple(sig))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _kept(call: Call) -> tuple:
    """What a bound call is without f and its values (kept: no array, no f)."""
    meta = [(s.slot, s.name, s.position, s.tree, s.specs, s.constants) for s in call.selected]
    return meta, call.single, call.container, {}


def _rebound(f: Callable, kept: tuple, args: tuple) -> Call:
    """The kept call of f with these arguments (of the structures, shapes and dtypes it
    was kept for), sharing the kept call's memo."""
    meta, single, container, memo = kept
    selected = [
        Selected(slot, name, position, tree, _leaves(args[slot], tree), specs, constants)
        for slot, name, position, tree, specs, constants in meta
    ]
    return Call(f, list(args), {}, selected, single, container=container, memo=memo)


def _leaves(value: Any, tree: Any) -> list:
    return [value] if tree.is_leaf else flatten(value)[0]


def bind(system: Any, f: Callable, wrt: Any, args: tuple, kwargs: dict) -> Call:
    """The call in the inputs' own precision (an ``nn.Module`` as a function of its
    named parameters), ``wrt`` resolved, every selected leaf float or complex."""
    key = None if owns_callable(f) else _signature(wrt, args, kwargs)
    kept = None
    if key is not None:
        with contextlib.suppress(TypeError):  # f not weakly referenceable: nothing kept
            kept = _BOUND.get(f)  # (setdefault would make a weak reference every call)
            if kept is None:
                kept = _BOUND[f] = {}
        if kept is not None and key in kept:
            return _rebound(f, kept[key], tuple(args))
    prep = system.prepare(f, tuple(args), dict(kwargs), wrt, "native")
    call = bind_call(
        prep.f,
        prep.args,
        prep.kwargs,
        prep.wrt,
        constants_ok=False,
        container=system.container,
        kind_of=system.float_kind,
        any_precision=True,
    )
    if kept is not None and prep.f is f and not prep.kwargs and len(kept) < _KEPT:
        kept[key] = _kept(call)
        call.memo = kept[key][3]
    return call
