"""Null gradients: VJP makers that raise when a backward pass needs them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autograd.extend import defvjp, primitive  # noqa: F401 - used by the doctests

from ..errors import GradUndefinedError, NullTypeGradError
from .operators import grad  # noqa: F401 - used by the doctests

__all__ = ["grad_not_implemented", "grad_undefined"]


def _op_name(op: Any) -> str:
    return getattr(op, "__name__", None) or str(op)


def _null_vjp_maker(op: Any, x_pos: int, comment: str, error: type, what: str):
    message = (
        f"the gradient of {_op_name(op)} with respect to its input {x_pos} is {what}"
        f"{': ' + comment if comment else ''}. Stop differentiating through that input "
        "(wrap it so it is held constant), or give the op a VJP with gx.defvjp."
    )

    def vjp_maker(ans, *args, **kwargs):
        def vjp(g):
            raise error(message)

        return vjp

    vjp_maker.message = message
    return vjp_maker


def grad_not_implemented(op: Any, x_pos: int, comment: str = "") -> Callable:
    """A VJP maker for ``defvjp`` that raises :class:`NullTypeGradError`
    when a backward pass needs the gradient of input ``x_pos`` of ``op``.

    >>> import autograd.numpy as anp
    >>> @primitive
    ... def lookup(table, i):
    ...     return table * i
    >>> defvjp(lookup, lambda ans, t, i: lambda g: g * i,
    ...        grad_not_implemented(lookup, 1, "i is an index"))
    >>> grad(lambda t: anp.sum(lookup(t, 2.0)))(anp.ones(2))
    array([2., 2.])
    """
    return _null_vjp_maker(op, x_pos, comment, NullTypeGradError, "not implemented")


def grad_undefined(op: Any, x_pos: int, comment: str = "") -> Callable:
    """Like :func:`grad_not_implemented` for a gradient that is mathematically
    undefined; raises :class:`GradUndefinedError`.

    >>> @primitive
    ... def floor_div(a, b):
    ...     return a // b
    >>> defvjp(floor_div, grad_undefined(floor_div, 0), grad_undefined(floor_div, 1))
    >>> grad(lambda a: floor_div(a, 2.0))(3.0)
    Traceback (most recent call last):
    ...
    gradexplorer.errors.GradUndefinedError: the gradient of floor_div ... is undefined...
    """
    return _null_vjp_maker(op, x_pos, comment, GradUndefinedError, "undefined")
