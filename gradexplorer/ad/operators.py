"""Reverse-mode operators: grad, value_and_grad, gradient_function (autograd
backend). Disconnected inputs' marker and policy live in ``disconnected``,
Lop/Rop in ``products``, null gradients in ``nullgrad``; functions of torch
tensors and jax arrays go to their framework's own AD (``native``).

Functions are written with ``autograd.numpy``. Arguments and outputs may be
nested lists / tuples / dicts of arrays; gradients come back in the
argument's own structure. Complex inputs follow autograd's convention: for a
real-valued ``L(z)``, ``grad`` returns ``dL/dRe z - i dL/dIm z``, the
*conjugate* of what torch and TensorFlow return (``dL/dRe z + i dL/dIm z``);
both are ``2 dL/dz`` or ``2 dL/dz*`` in Wirtinger terms. Use
:func:`gradexplorer.real_jacobian` for the convention-free answer.

>>> import autograd.numpy as anp
>>> grad(lambda z: anp.abs(z) ** 2)(1.0 + 2.0j)   # torch would give (2+4j)
(2-4j)
>>> grad(lambda p: anp.sum(p["w"] ** 2) + p["b"])({"w": anp.array([1.0, 2.0]), "b": 0.5})
{'w': array([2., 4.]), 'b': 1.0}
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import autograd.numpy as anp
import numpy as onp
from autograd.extend import defjvp, defvjp, primitive

from ..backends import autograd as _backend
from ..backends.autograd import getval, trace_vjp
from ..core.calls import Call, bind_call, check_callable, has_var_positional, parameter_names
from ..core.outputs import nonfinite_summary as _nonfinite
from ..core.outputs import output_layout
from ..core.tree import flatten, float_kind, leaf_of, unflatten
from ..errors import NonFiniteWarning
from . import native
from .cotangents import check_dy as _check_dy
from .disconnected import (
    DISCONNECTED,
    DISCONNECTED_CHOICES,
    RETURN_CHOICES,
    DisconnectedType,
    finish_disconnected,
    like_leaf,
)

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


# ---------------------------------------------------------------- helpers


def _choice(value: str, choices: Sequence[str], what: str) -> None:
    if value not in choices:
        raise ValueError(f"{what} must be one of {list(choices)}; got {value!r}.")


def prepare_call(f: Callable, wrt: Any, args: tuple, kwargs: dict) -> Call:
    """Bind, select and validate the differentiated arguments (strictly: every
    leaf of a selected argument must be float or complex)."""
    return bind_call(f, args, kwargs, wrt, constants_ok=False, container=_backend.container)


def warn_nonfinite(y: Any, what: str = "f's output") -> None:
    """Warn, naming the entries, when an output holds NaN or Inf."""
    leaves, tree = flatten(y)
    specs = []
    for leaf, path in zip(leaves, tree.paths()):
        kind = float_kind(leaf)
        specs.append(
            leaf_of(leaf, _out_name(path, tree.kind)) if kind in ("real", "complex") else None
        )
    summary = _nonfinite([getval(v) for v in leaves], specs)
    if summary:
        warnings.warn(
            NonFiniteWarning(f"{what} has {summary}; derivatives there are meaningless."),
            stacklevel=4,
        )


def _out_name(path, kind):
    from ..core.outputs import output_name

    return output_name(path, kind)


def _weighted_sum(y: Any, dys: list) -> Any:
    total = 0.0
    ys, _ = flatten(y)
    for yk, dk in zip(ys, dys):
        kind = float_kind(yk)
        if kind == "complex":
            raise TypeError(
                "value_and_grad needs real outputs; f returned a complex array. "
                "Differentiate anp.real(y) or anp.abs(y), or use gx.real_jacobian(f) "
                "for the full convention-free Jacobian."
            )
        if kind != "real":
            continue  # integer outputs (counts, indices) carry no derivative
        total = total + (anp.sum(yk) if dk is None else anp.sum(yk * dk))
    return total


def _value_of(y: Any) -> Any:
    leaves, tree = flatten(y)
    return unflatten(tree, [getval(v) for v in leaves]) if not tree.is_leaf else getval(y)


def _one_like(y: Any) -> Any:
    return onp.ones((), onp.result_type(getval(y), onp.float16))[()]


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
        returns a real scalar. Arguments may be nested lists / tuples / dicts
        of arrays.
    wrt : int, str or sequence of them
        The argument(s) to differentiate, by position or parameter name. One
        selector gives one gradient, a sequence gives a tuple.
    disconnected_inputs : {"warn", "raise", "ignore"}
        What to do when the output does not depend on a selected input.
    return_disconnected : {"zero", "none", "disconnected"}
        What to return for such an input: zeros, ``None`` or
        :data:`DISCONNECTED`.

    Returns
    -------
    callable
        ``grad_f(*args, **kwargs)`` with f's signature; each gradient has the
        structure of its argument.

    Notes
    -----
    With torch tensors (or an ``nn.Module`` as f, its parameters selected by name) or
    jax arrays among the arguments, the framework's own AD computes it
    (``torch.autograd.grad`` on one recorded forward pass; ``jax.vjp`` under
    ``jax.jit``); the results are that framework's arrays on the inputs' device, in
    their dtype (a CUDA tensor in, CUDA tensors out: nothing is copied to the host).
    Complex inputs follow the convention above on every backend: jax's own gradient is
    already ``dL/dRe z - i dL/dIm z``; torch's own is its conjugate (``dL/dRe z + i
    dL/dIm z``), which gx conjugates back.

    Examples
    --------
    >>> g = grad(lambda x, y: x**3 * y - x * y**2, wrt=("x", "y"))
    >>> g(2.0, 3.0)
    (27.0, -4.0)
    """
    check_callable(f)
    _choice(disconnected_inputs, DISCONNECTED_CHOICES, "disconnected_inputs")
    _choice(return_disconnected, RETURN_CHOICES, "return_disconnected")

    @functools.partial(native.explain_foreign, like=f)
    def grad_f(*args, **kwargs):
        system = native.system_for(f, args, kwargs)
        if system is not None:
            return native.grad(
                system, f, wrt, args, kwargs, disconnected_inputs, return_disconnected
            )
        call = prepare_call(f, wrt, args, kwargs)
        tr = trace_vjp(call, call.values)
        y = _value_of(tr.value)
        if y is None or isinstance(y, (str, bytes)):
            output_layout(y, getattr(f, "__name__", "f"))  # None, a string: said plainly
        leaves, tree = flatten(y)
        if not tree.is_leaf or onp.ndim(y) != 0:
            shape = tree.describe() if not tree.is_leaf else onp.shape(y)
            raise TypeError(
                f"grad needs a scalar output, but f returned {shape}. Use gx.jacobian(f) "
                "for the full Jacobian, or gx.value_and_grad(f)(..., dy=w) for the "
                "weighted sum of outputs (a vector-Jacobian product)."
            )
        kind = float_kind(y)
        if kind == "complex":
            raise TypeError(
                "grad needs a real output, but f returned a complex scalar. Use "
                "gx.real_jacobian(f) for the derivatives of its real and imaginary "
                "parts, or gx.jacobian(f, holomorphic=True) if f is holomorphic."
            )
        if kind != "real":
            raise TypeError(
                f"grad needs a float output, but f returned {kind} ({y!r:.40}); integer "
                "outputs have no derivative. Return a float."
            )
        warn_nonfinite(y)
        grads = tr.backward(_one_like(y))
        out = finish_disconnected(
            call, grads, tr.connected, disconnected_inputs, return_disconnected
        )
        return call.finish(out)

    return grad_f


def value_and_grad(f: Callable, wrt: Any = None) -> Callable:
    """Value of f and the gradients of its (weighted) summed outputs.

    Non-scalar and structured outputs are summed; ``dy=`` weights them
    instead (shaped like the output), which makes the gradients a
    vector-Jacobian product.

    Parameters
    ----------
    f : callable
        Returns a real scalar, array, or a list / tuple / dict of them.
    wrt : int, str, sequence of them, or None
        Arguments to differentiate (None: every positional argument).

    Returns
    -------
    callable
        ``fn(*args, dy=None, **kwargs) -> (value, grads)``; ``grads`` is always
        a tuple, one entry per selected argument, each shaped like it.

    Notes
    -----
    With torch tensors (or an ``nn.Module`` as f, its parameters selected by name) or
    jax arrays among the arguments, the framework's own AD computes it
    (``torch.autograd.grad``; ``jax.vjp`` under ``jax.jit``); the results are that
    framework's arrays on the inputs' device, in their dtype (a CUDA tensor in, CUDA
    tensors out: nothing is copied to the host). ``dy`` may be numpy; it is moved to the
    inputs' device. An ``nn.Module`` with ``wrt=None`` gives the gradients of all its
    parameters, in ``named_parameters`` order.

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

    @functools.partial(native.explain_foreign, like=f)
    def value_and_grad_f(*args, dy=None, **kwargs):
        system = native.system_for(f, args, kwargs)
        if system is not None:
            return native.value_and_grad(system, f, wrt, args, kwargs, dy)
        call = prepare_call(f, wrt, args, kwargs)
        captured = {}

        def scalarized(*leaves):
            y = call(*leaves)
            captured["y"] = y
            dys = _check_dy(_value_of(y), dy)
            return _weighted_sum(y, dys)

        tr = trace_vjp(scalarized, call.values)
        value = _value_of(captured["y"])
        warn_nonfinite(value)
        grads = tr.backward(_one_like(tr.value))
        out = finish_disconnected(call, grads, tr.connected, "warn", "zero")
        return value, tuple(out)

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
    f's positional parameters, or ``n_inputs`` when f takes ``*args``; M is
    the length of f's output when it returns a list or tuple, else 1. Inputs
    and cotangents may be nested structures.

    Notes
    -----
    With torch tensors (or an ``nn.Module`` as f, its parameters selected by name) or
    jax arrays among the arguments, the framework's own AD computes it
    (``torch.autograd.grad``; ``jax.vjp`` under ``jax.jit``); the results are that
    framework's arrays on the inputs' device, in their dtype (a CUDA tensor in, CUDA
    tensors out: nothing is copied to the host).

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
    if n_inputs < 1:
        raise TypeError(
            "gradient_function needs f to take at least one input; f takes none. Pass "
            "n_inputs=N if f takes *args."
        )

    @native.explain_foreign
    def g(*args):
        if len(args) <= n_inputs:
            raise TypeError(
                f"g takes the {n_inputs} inputs of f followed by one cotangent per "
                f"output; got {len(args)} arguments in all."
            )
        xs, dys = list(args[:n_inputs]), list(args[n_inputs:])
        system = native.system_for(f, xs, {})
        if system is not None:
            return native.gradient_function(system, f, n_inputs, xs, dys)
        call = prepare_call(f, tuple(range(n_inputs)), xs, {})

        def scalarized(*leaves):
            y = call(*leaves)
            value = _value_of(y)
            top, tree = flatten(value)
            outs = list(value) if tree.kind in ("list", "tuple") else [value]
            if len(outs) != len(dys):
                raise TypeError(
                    f"f returned {len(outs)} output(s) but g received {len(dys)} "
                    "cotangent(s); pass exactly one dy per output."
                )
            dy = dys if tree.kind in ("list", "tuple") else dys[0]
            if tree.kind in ("list", "tuple"):
                dy = type(value)(dys) if tree.cls is None else tree.cls(*dys)
            return _weighted_sum(y, _check_dy(value, dy))

        tr = trace_vjp(scalarized, call.values)
        grads = tr.backward(_one_like(tr.value))
        grads = [like_leaf(g, s) for g, s in zip(grads, call.specs)]
        return tuple(call.per_argument(grads))

    return g
