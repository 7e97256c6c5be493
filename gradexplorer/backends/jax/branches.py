"""Tracing f to a jaxpr when its Python code branches on array values.

``jax.make_jaxpr`` traces with abstract values, so ``if x[0] > 0:`` in f cannot
be decided and tracing fails, while f itself runs fine on concrete arrays (and
``jax.vjp`` differentiates it). locate only needs the operations f applies at
this point: f is run once on the concrete arrays, every conversion of an array
to a Python value made by the user's own code (``bool``, ``int``, ``float``,
``operator.index``) is written down, and the trace then gets the same answers
in the same order, so it follows the branches f took.
"""

from __future__ import annotations

import contextlib
import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from ..base import is_library_path

__all__ = ["decisions_of", "replaying"]

_CONVERSIONS = ("__bool__", "__int__", "__index__", "__float__", "__complex__")
#: The classes whose conversions are answered: concrete arrays (their class, taken from
#: one: it is not public) and every tracer.
_CLASSES = (type(jnp.zeros(())), jax.core.Tracer)


def _from_user(library_dirs: tuple[str, ...]) -> bool:
    # frame 0: this function; 1: the patched conversion; 2: who converted
    return not is_library_path(sys._getframe(2).f_code.co_filename, library_dirs)


@contextlib.contextmanager
def _patched(make: Callable[[Callable], Callable]) -> Iterator[None]:
    saved = [(cls, name, cls.__dict__[name]) for cls in _CLASSES for name in _CONVERSIONS]
    try:
        for cls, name, original in saved:
            setattr(cls, name, make(original))
        yield
    finally:
        for cls, name, original in saved:
            setattr(cls, name, original)


def decisions_of(fun: Callable, leaves: Sequence, library_dirs: tuple[str, ...]) -> list:
    """Run ``fun(*leaves)`` on concrete arrays; the Python values the user's code
    converted arrays to, in order."""
    log: list = []

    def make(original):
        def converted(self):
            out = original(self)
            if _from_user(library_dirs):
                log.append(out)
            return out

        return converted

    with _patched(make):
        fun(*leaves)
    return log


@contextlib.contextmanager
def replaying(answers: list, library_dirs: tuple[str, ...]) -> Iterator[None]:
    """Inside, the user's code's conversions of arrays (traced ones too) return
    ``answers`` in order (then convert as usual)."""
    queue: deque[Any] = deque(answers)

    def make(original):
        def converted(self):
            if _from_user(library_dirs) and queue:
                return queue.popleft()
            return original(self)

        return converted

    with _patched(make):
        yield
