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

__all__ = ["on_analytic", "analytic_ready"]

_listener: ContextVar[Callable[[onp.ndarray], None] | None] = ContextVar(
    "gradexplorer_analytic_listener", default=None
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
