"""f's signature: its parameters' names, and ``wrt`` resolved to argument slots.

>>> resolve_wrt(lambda x, y: x * y, "y", 2)
((1,), True)
"""

from __future__ import annotations

import contextlib
import inspect
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as onp

__all__ = [
    "check_callable", "parameter_names", "keyword_only_names", "has_var_positional",
    "param_label", "resolve_wrt",
]  # fmt: skip


def check_callable(f: Any, what: str = "f") -> None:
    """Raise a TypeError unless ``f`` is callable."""
    if not callable(f):
        raise TypeError(
            f"{what} must be a callable (a Python function of numpy arrays); got "
            f"{type(f).__name__} {f!r:.60}. Pass the function itself, e.g. "
            "gx.grad(f) rather than gx.grad(f(x))."
        )


#: f -> (stamp, signature): inspect.signature costs ~10 us, and every operator
#: call reads it two or three times (the torch / jax operators are ~50 us in all)
_SIGNATURES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _signature(f: Callable) -> inspect.Signature | None:
    f = getattr(f, "fun", f) if getattr(f, "_is_autograd_primitive", False) else f
    # what a signature is read from: a changed one (a new __signature__ or
    # __code__) is read again
    stamp = (
        getattr(f, "__code__", None),
        getattr(f, "__signature__", None),
        getattr(f, "__wrapped__", None),
    )
    try:
        known = _SIGNATURES.get(f)
    except TypeError:  # unhashable or not weakly referenceable
        known = None
    if known is not None and known[0] == stamp:
        return known[1]
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        sig = None
    with contextlib.suppress(TypeError):
        _SIGNATURES[f] = (stamp, sig)
    return sig


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def parameter_names(f: Callable) -> list[str]:
    """Names of f's positional parameters (empty when they cannot be read)."""
    sig = _signature(f)
    if sig is None:
        return []
    return [p.name for p in sig.parameters.values() if p.kind in _POSITIONAL]


def keyword_only_names(f: Callable) -> list[str]:
    sig = _signature(f)
    if sig is None:
        return []
    return [p.name for p in sig.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]


def has_var_positional(f: Callable) -> bool:
    sig = _signature(f)
    if sig is None:
        return True
    return any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in sig.parameters.values())


def param_label(f: Callable, slot: int | str) -> str:
    """The name used for an argument in labels (``x``, or ``arg2``)."""
    if isinstance(slot, str):
        return slot
    names = parameter_names(f)
    return names[slot] if slot < len(names) else f"arg{slot}"


def _is_index(s: Any) -> bool:
    return isinstance(s, (int, onp.integer)) and not isinstance(s, (bool, onp.bool_))


def resolve_wrt(f: Callable, wrt: Any, nargs: int, kwargs: dict | None = None):
    """Turn a ``wrt`` selector into argument slots.

    Returns ``(slots, single)``: a slot is a position in the positional
    arguments, or a keyword name for an argument passed by keyword; ``single``
    is True when ``wrt`` was one int or one name (the caller then returns one
    result instead of a tuple). ``wrt=None`` selects every positional argument.

    >>> resolve_wrt(lambda x, y: x * y, "y", 2)
    ((1,), True)
    >>> resolve_wrt(lambda x, y: x * y, [0, 1], 2)
    ((0, 1), False)
    >>> resolve_wrt(lambda x, *, scale: x * scale, "scale", 1, {"scale": 2.0})
    (('scale',), True)
    """
    kwargs = kwargs or {}
    if wrt is None:
        return tuple(range(nargs)), False
    single = _is_index(wrt) or isinstance(wrt, str)
    selectors = [wrt] if single else list(wrt) if isinstance(wrt, Sequence) else None
    if selectors is None or not selectors:
        raise ValueError(
            f"wrt must be an int, a parameter name, or a non-empty sequence of them; got "
            f"{wrt!r}. Use e.g. wrt=0, wrt='x' or wrt=(0, 1)."
        )
    is_int = [_is_index(s) for s in selectors]
    is_str = [isinstance(s, str) for s in selectors]
    if not (all(is_int) or all(is_str)):
        raise ValueError(
            f"wrt must be all integers or all parameter names, not a mix; got {wrt!r}. "
            "Write e.g. wrt=(0, 1) or wrt=('x', 'y')."
        )
    names = parameter_names(f)
    slots: list = []
    for s in selectors:
        if isinstance(s, str):
            if s in kwargs:
                slot = s
            elif s in names and names.index(s) < nargs:
                slot = names.index(s)
            else:
                known = names[:nargs] + list(kwargs)
                raise ValueError(
                    f"wrt names {s!r}, but f was given no argument of that name; its "
                    f"arguments are {known}. Use one of those names or an index."
                )
        else:
            i = int(s)
            if i < 0:
                i += nargs
            if 0 <= i < nargs:
                slot = i
            elif 0 <= i < len(names) and names[i] in kwargs:
                slot = names[i]  # passed by keyword: differentiate it there
            elif not nargs:
                raise ValueError(
                    "f was called with no arguments, so there is nothing to differentiate "
                    f"(wrt={s!r}). Pass the point to the function the operator returns: "
                    "gx.grad(f)(x), not gx.grad(f)()."
                )
            else:
                raise ValueError(
                    f"wrt={s!r} is out of range: f was called with {nargs} positional "
                    f"argument(s), so valid indices are 0..{nargs - 1}."
                )
        if slot in slots:
            raise ValueError(
                f"wrt selects argument {param_label(f, slot)!r} twice ({wrt!r}); list each "
                "argument once."
            )
        slots.append(slot)
    return tuple(slots), single
