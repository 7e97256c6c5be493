"""Reverse-mode operators: grad, value_and_grad, gradient_function and
disconnected inputs (autograd backend). Lop/Rop live in ``products``, null
gradients in ``nullgrad``.

Functions are written with ``autograd.numpy``. Complex inputs follow
autograd's convention: for a real-valued ``L(z)``, ``grad`` returns
``dL/dRe z - i dL/dIm z``, the *conjugate* of what torch and TensorFlow return
(``dL/dRe z + i dL/dIm z``); both are ``2 dL/dz`` or ``2 dL/dz*`` in Wirtinger
terms. Use :func:`gradexplorer.real_jacobian` for the convention-free answer.

>>> import autograd.numpy as anp
>>> grad(lambda z: anp.abs(z) ** 2)(1.0 + 2.0j)   # torch would give (2+4j)
(2-4j)
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import autograd.numpy as anp
import numpy as onp
from autograd.extend import defjvp, defvjp, primitive
from autograd.tracer import getval

from ._args import (
    as_differentiable,
    bind_positional,
    check_callable,
    has_var_positional,
    nonfinite_summary,
    param_label,
    parameter_names,
    resolve_wrt,
    side_of,
)
from ._trace import trace_vjp
from .errors import DisconnectedInputError, DisconnectedInputWarning, NonFiniteWarning

__all__ = [
    "grad",
    "value_and_grad",
    "value_and_gradients_function",
    "gradient_function",
    "DisconnectedType",
    "DISCONNECTED",
    "primitive",
    "defvjp",
    "defjvp",
]

_DISCONNECTED_CHOICES = ("raise", "warn", "ignore")
_RETURN_CHOICES = ("zero", "none", "disconnected")


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


# ---------------------------------------------------------------- helpers


def _choice(value: str, choices: Sequence[str], what: str) -> None:
    if value not in choices:
        raise ValueError(f"{what} must be one of {list(choices)}; got {value!r}.")


def prepare_call(f: Callable, wrt: Any, args: tuple, kwargs: dict):
    """Bind, select and validate: ``(args, kwargs, argnums, single)``."""
    args, kwargs = bind_positional(f, args, kwargs)
    argnums, single = resolve_wrt(f, wrt, len(args))
    for i in argnums:
        args[i] = as_differentiable(args[i], param_label(f, i))
    return args, kwargs, argnums, single


def warn_nonfinite(y: Any, name: str = "y", what: str = "f's output") -> None:
    if isinstance(y, (list, tuple)):
        for k, yk in enumerate(y):
            warn_nonfinite(yk, f"{name}{k}", what)
        return
    summary = nonfinite_summary(y, side_of(y, name))
    if summary:
        warnings.warn(
            NonFiniteWarning(f"{what} has {summary}; derivatives there are meaningless."),
            stacklevel=4,
        )


def finish_disconnected(
    f: Callable,
    grads: list,
    connected: Sequence[bool],
    argnums: Sequence[int],
    disconnected_inputs: str,
    return_disconnected: str,
) -> list:
    """Apply the disconnected-input policy to freshly computed gradients."""
    out = list(grads)
    for k, (ok, i) in enumerate(zip(connected, argnums)):
        if ok:
            continue
        name = param_label(f, i)
        msg = (
            f"the output of {getattr(f, '__name__', 'f')} does not depend on input "
            f"{name!r} (argument {i}); its gradient is zero because it is disconnected. "
            "Pass disconnected_inputs='ignore' if that is intended, or drop it from wrt."
        )
        if disconnected_inputs == "raise":
            raise DisconnectedInputError(name, msg)
        if disconnected_inputs == "warn":
            warnings.warn(DisconnectedInputWarning(msg), stacklevel=4)
        if return_disconnected == "none":
            out[k] = None
        elif return_disconnected == "disconnected":
            out[k] = DISCONNECTED
    return out


def _outputs(y: Any) -> list:
    return list(y) if isinstance(y, (list, tuple)) else [y]


def _check_dy(y_value: Any, dy: Any) -> list:
    """Validate the cotangent(s) against f's output(s); None means ones."""
    ys = _outputs(y_value)
    if dy is None:
        return [None] * len(ys)
    dys = _outputs(dy) if isinstance(y_value, (list, tuple)) else [dy]
    if len(dys) != len(ys):
        raise ValueError(
            f"dy must hold one array per output: f returned {len(ys)} outputs, "
            f"dy has {len(dys)}. Pass a list of {len(ys)} arrays shaped like them."
        )
    for k, (yk, dk) in enumerate(zip(ys, dys)):
        if onp.shape(dk) != onp.shape(yk):
            raise ValueError(
                f"dy{'' if len(ys) == 1 else f'[{k}]'} has shape {onp.shape(dk)}, but f's "
                f"output{'' if len(ys) == 1 else f' {k}'} has shape {onp.shape(yk)}; pass "
                "a cotangent shaped exactly like the output."
            )
    return dys


def _weighted_sum(y: Any, dys: list) -> Any:
    total = 0.0
    for yk, dk in zip(_outputs(y), dys):
        if onp.iscomplexobj(getval(yk)):
            raise TypeError(
                "value_and_grad needs real outputs; f returned a complex array. "
                "Differentiate anp.real(y) or anp.abs(y), or use gx.real_jacobian(f) "
                "for the full convention-free Jacobian."
            )
        total = total + (anp.sum(yk) if dk is None else anp.sum(yk * dk))
    return total


# ---------------------------------------------------------------- grad


def grad(
    f: Callable,
    wrt: int | str | Sequence[int] | Sequence[str] = 0,
    *,
    disconnected_inputs: str = "warn",
    return_disconnected: str = "zero",
) -> Callable:
    """Gradient of a real scalar function.

    Parameters
    ----------
    f : callable
        A function of numpy arrays (written with ``autograd.numpy``) that
        returns a real scalar.
    wrt : int, str or sequence of them
        The argument(s) to differentiate, by position or parameter name. One
        selector gives one array, a sequence gives a tuple.
    disconnected_inputs : {"warn", "raise", "ignore"}
        What to do when the output does not depend on a selected input.
    return_disconnected : {"zero", "none", "disconnected"}
        What to return for such an input: zeros, ``None`` or
        :data:`DISCONNECTED`.

    Returns
    -------
    callable
        ``grad_f(*args, **kwargs)`` with f's signature.

    Examples
    --------
    >>> g = grad(lambda x, y: x**3 * y - x * y**2, wrt=("x", "y"))
    >>> g(2.0, 3.0)
    (27.0, -4.0)
    """
    check_callable(f)
    _choice(disconnected_inputs, _DISCONNECTED_CHOICES, "disconnected_inputs")
    _choice(return_disconnected, _RETURN_CHOICES, "return_disconnected")

    @functools.wraps(f)
    def grad_f(*args, **kwargs):
        args, kwargs, argnums, single = prepare_call(f, wrt, args, kwargs)
        tr = trace_vjp(f, args, kwargs, argnums)
        y = getval(tr.value)
        if isinstance(y, (list, tuple)) or onp.ndim(y) != 0:
            shape = f"a {type(y).__name__}" if isinstance(y, (list, tuple)) else onp.shape(y)
            raise TypeError(
                f"grad needs a scalar output, but f returned {shape}. Use gx.jacobian(f) "
                "for the full Jacobian, or gx.value_and_grad(f)(..., dy=w) for the "
                "weighted sum of outputs (a vector-Jacobian product)."
            )
        if onp.iscomplexobj(y):
            raise TypeError(
                "grad needs a real output, but f returned a complex scalar. Use "
                "gx.real_jacobian(f) for the derivatives of its real and imaginary "
                "parts, or gx.jacobian(f, holomorphic=True) if f is holomorphic."
            )
        warn_nonfinite(y)
        grads = tr.backward(onp.ones((), onp.asarray(y).dtype)[()])
        grads = finish_disconnected(
            f, grads, tr.connected, argnums, disconnected_inputs, return_disconnected
        )
        return grads[0] if single else tuple(grads)

    return grad_f


def value_and_grad(f: Callable, wrt: Any = None) -> Callable:
    """Value of f and the gradients of its (weighted) summed outputs.

    Non-scalar and list outputs are summed; ``dy=`` weights them instead, which
    makes the gradients a vector-Jacobian product.

    Parameters
    ----------
    f : callable
        Returns a real scalar, array, or list/tuple of arrays.
    wrt : int, str, sequence of them, or None
        Arguments to differentiate (None: every positional argument).

    Returns
    -------
    callable
        ``fn(*args, dy=None, **kwargs) -> (value, grads)``; ``grads`` is always
        a tuple, one entry per selected argument.

    Examples
    --------
    >>> fn = value_and_grad(lambda x, y: x * x * x * y - x * y * y)
    >>> fn(2.0, 3.0)
    (6.0, (27.0, -4.0))
    >>> fn = value_and_grad(lambda x, y: x * x * x * y - x * y * y, wrt=[1])
    >>> fn(2.0, 3.0)
    (6.0, (-4.0,))
    """
    check_callable(f)

    @functools.wraps(f)
    def value_and_grad_f(*args, dy=None, **kwargs):
        args, kwargs, argnums, _ = prepare_call(f, wrt, args, kwargs)
        captured = {}

        def scalarized(*a, **k):
            y = f(*a, **k)
            captured["y"] = y
            captured["dys"] = dys = _check_dy(
                [getval(v) for v in _outputs(y)] if isinstance(y, (list, tuple)) else getval(y), dy
            )
            return _weighted_sum(y, dys)

        tr = trace_vjp(scalarized, args, kwargs, argnums)
        y = captured["y"]
        value = type(y)(getval(v) for v in y) if isinstance(y, (list, tuple)) else getval(y)
        warn_nonfinite(value)
        grads = tr.backward(onp.ones((), onp.result_type(getval(tr.value)))[()])
        grads = finish_disconnected(f, grads, tr.connected, argnums, "warn", "zero")
        return value, tuple(grads)

    return value_and_grad_f


def value_and_gradients_function(f: Callable, params: Any = None) -> Callable:
    """The seed's name for :func:`value_and_grad` (``params`` is ``wrt``).

    >>> fn = value_and_gradients_function(lambda x, y: x * y, params=["y"])
    >>> fn(2.0, 3.0)
    (6.0, (2.0,))
    """
    return value_and_grad(f, wrt=params)


def gradient_function(f: Callable, n_inputs: int | None = None) -> Callable:
    """The gradient function g of an N-input, M-output function f.

    ``g(x1, ..., xN, dy1, ..., dyM)`` returns ``(dx1, ..., dxN)``, the
    cotangents of the inputs for output cotangents ``dy``. N is the number of
    f's positional parameters, or ``n_inputs`` when f takes ``*args``.

    Examples
    --------
    >>> g = gradient_function(lambda x, y: (x * y, x + y))
    >>> g(2.0, 3.0, 1.0, 10.0)
    (13.0, 12.0)
    """
    check_callable(f)
    if n_inputs is None:
        if has_var_positional(f):
            raise TypeError(
                "gradient_function cannot count the inputs of a function taking *args; "
                "pass n_inputs=N."
            )
        n_inputs = len(parameter_names(f))

    def g(*args):
        if len(args) <= n_inputs:
            raise TypeError(
                f"g takes the {n_inputs} inputs of f followed by one cotangent per "
                f"output; got {len(args)} arguments in all."
            )
        xs, dys = list(args[:n_inputs]), list(args[n_inputs:])
        argnums = tuple(range(n_inputs))
        for i in argnums:
            xs[i] = as_differentiable(xs[i], param_label(f, i))

        def scalarized(*a):
            y = f(*a)
            ys = _outputs(y)
            if len(ys) != len(dys):
                raise TypeError(
                    f"f returned {len(ys)} output(s) but g received {len(dys)} "
                    "cotangent(s); pass exactly one dy per output."
                )
            return _weighted_sum(y, _check_dy([getval(v) for v in ys], dys))

        tr = trace_vjp(scalarized, xs, {}, argnums)
        return tuple(tr.backward(onp.ones((), onp.result_type(getval(tr.value)))[()]))

    return g
