"""What a running check has found so far, for whoever waits on it.

A full check builds the AD Jacobian first and spends most of its time on the
finite differences after it. The explorer shows that Jacobian as soon as it
exists: the check's own, not a second computation of it. The listener is a
context variable, so that a check running in another thread is not reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as onp

__all__ = ["on_analytic", "analytic_ready", "on_checkpoint", "checkpoint"]

_listener: ContextVar[Callable[[onp.ndarray], None] | None] = ContextVar(
    "gradexplorer_analytic_listener", default=None
)
_checkpoint: ContextVar[Callable[[], None] | None] = ContextVar(
    "gradexplorer_checkpoint", default=None
)


@contextmanager
def on_analytic(listener: Callable[[onp.ndarray], None] | None) -> Iterator[None]:
    """Within the block, a full check calls ``listener(A)`` with its AD Jacobian (the
    real matrix of ``report.analytic``) once built, before its finite differences.

    >>> import autograd.numpy as anp, gradexplorer as gx
    >>> seen = []
    >>> with on_analytic(seen.append):
    ...     report = gx.check_grads(anp.sin, anp.zeros(2), mode="full")
    >>> seen[0]
    array([[1., 0.],
           [0., 1.]])
    """
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def analytic_ready(A: onp.ndarray) -> None:
    """Called by the full check with its first-order AD Jacobian."""
    listener = _listener.get()
    if listener is not None:
        listener(A)


@contextmanager
def on_checkpoint(hook: Callable[[], None] | None) -> Iterator[None]:
    """Within the block, a running check calls ``hook()`` between its backward passes
    (which evaluate no f): the explorer's hook raises to stop a check that a newer
    change made useless, instead of waiting for its next evaluation of f.

    >>> import autograd.numpy as anp, gradexplorer as gx
    >>> calls = []
    >>> with on_checkpoint(lambda: calls.append(1)):
    ...     report = gx.check_grads(anp.sin, anp.zeros(3), mode="full")
    >>> len(calls) > 0
    True
    """
    token = _checkpoint.set(hook)
    try:
        yield
    finally:
        _checkpoint.reset(token)


def checkpoint() -> None:
    """Called by a running check between backward passes (see :func:`on_checkpoint`)."""
    hook = _checkpoint.get()
    if hook is not None:
        hook()
