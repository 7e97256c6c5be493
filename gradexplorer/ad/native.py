"""The operators on torch and jax functions: each framework's own AD, gx's conventions.

``gx.grad(f)(x)`` with torch tensors (or an ``nn.Module`` as f) or jax arrays
among the arguments is computed by that framework: the backend
(:func:`gradexplorer.backends.get_backend`) brings an ``operators`` kit
(``backends/torch/operators.py``: ``torch.func`` and ``torch.autograd``;
``backends/jax/operators.py``: ``jax.vjp`` / ``jacfwd`` / ``hessian`` / ``jvp``
under ``jax.jit``) that works on one bound call and its differentiated leaves.
This module (and :mod:`.native_dense`) keeps what the operators promise
whatever the system: ``wrt`` by position or name, nested structures, the
``out.shape + in.shape`` layout, complex blocks, the disconnected-input policy,
and errors that say what to do. Results are the framework's arrays on the
inputs' device (a CUDA tensor in, CUDA tensors out), never copied to the host.

A kit provides ``value_and_grad``, ``jacobian``, ``hessian``, ``hvp``, ``jvp``,
``hstack``, ``all_finite`` and ``to_numpy_host``; see either kit's docstrings.

>>> system_for(lambda x: x, (1.0,), {}) is None   # numpy: ad/'s autograd operators
True
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

from ..core.outputs import nonfinite_summary, output_name
from ..core.tree import flatten, float_kind, leaf_of
from ..errors import NonFiniteWarning
from .binding import bind, system_for
from .cotangents import check_dy as _check_dy
from .disconnected import finish_disconnected

__all__ = [
    "system_for", "bind", "explain_foreign", "grad", "value_and_grad", "gradient_function", "Lop",
    "scalar_output", "weighted_sum", "warn_nonfinite",
]  # fmt: skip


def explain_foreign(fn: Callable, like: Callable | None = None) -> Callable:
    """fn, its TypeError from a jax or torch function given numpy arrays (which
    autograd then traces, and which jax and torch refuse) said in words; named
    and documented as ``like`` (default fn itself: ``functools.wraps``)."""

    @functools.wraps(fn if like is None else like)
    def explained(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TypeError as exc:
            msg = str(exc)
            system = (
                "jax" if "not a valid JAX type" in msg
                else "torch" if ("must be Tensor, not" in msg
                                 or "w.r.t. type <class 'torch.Tensor'>" in msg)
                else None
            )  # fmt: skip
            if system is None:
                raise
            arrays = "jax arrays (jnp.asarray(x))" if system == "jax" else (
                "torch tensors (torch.tensor(x))")  # fmt: skip
            raise TypeError(
                f"f is written with {system}, but {system} was handed numpy arrays or "
                f"autograd's traced ones ({msg.splitlines()[0][:100]}): numpy arguments are "
                f"differentiated by gradexplorer's numpy operators (autograd), which {system} "
                f"code cannot follow. Pass {arrays}, also for arguments held constant: "
                f"gradexplorer then uses {system}'s own AD."
            ) from exc

    if like is not None and not hasattr(like, "__name__"):  # a partial, a callable object
        explained.__name__, explained.__qualname__ = fn.__name__, fn.__qualname__
    return explained


# ---------------------------------------------------------------- scalarizing


def scalar_output(y: Any, static: tuple, extra: Any) -> Any:
    """f's output itself, refused unless it is a real float scalar. Runs while
    the framework traces f: it reads shapes and dtypes only."""
    what = static[0]
    _, tree = flatten(y)
    shape = tuple(getattr(y, "shape", ())) if tree.is_leaf else tree.describe()
    if not tree.is_leaf or shape != ():
        raise TypeError(
            f"{what} needs a scalar output, but f returned {shape}. Use gx.jacobian(f) "
            "for the full Jacobian, or gx.value_and_grad(f)(..., dy=w) for the weighted "
            "sum of outputs (a vector-Jacobian product)."
        )
    kind = float_kind(y)
    if kind == "complex":
        raise TypeError(
            f"{what} needs a real output, but f returned a complex scalar. Use "
            "gx.real_jacobian(f) for the derivatives of its real and imaginary parts, or "
            "gx.jacobian(f, holomorphic=True) if f is holomorphic."
        )
    if kind != "real":
        raise TypeError(
            f"{what} needs a float output, but f returned {kind}; integer outputs have "
            "no derivative. Return a float."
        )
    return y


def weighted_sum(y: Any, static: tuple, dy: Any) -> Any:
    """The sum of f's real outputs, each weighted by its cotangent in ``dy``
    (shaped like the output; None weighs every entry by one)."""
    dys = _check_dy(y, dy)
    ys, _ = flatten(y)
    total: Any = 0.0
    for yk, dk in zip(ys, dys):
        kind = float_kind(yk)
        if kind == "complex":
            raise TypeError(
                f"{static[0]} needs real outputs; f returned a complex array. Differentiate "
                "its real part or its modulus, or use gx.real_jacobian(f) for the full "
                "convention-free Jacobian."
            )
        if kind == "real":  # integer outputs (counts, indices) carry no derivative
            total = total + (yk.sum() if dk is None else (yk * dk).sum())
    return total


def cotangents_per_output(y: Any, static: tuple, dys: Any) -> Any:
    """``gradient_function``'s weighting: one cotangent per top-level output."""
    _, tree = flatten(y)
    sequence = tree.kind in ("list", "tuple")
    outs = list(y) if sequence else [y]
    if len(outs) != len(dys):
        raise TypeError(
            f"f returned {len(outs)} output(s) but g received {len(dys)} cotangent(s); "
            "pass exactly one dy per output."
        )
    dy = dys[0]
    if sequence:
        dy = type(y)(dys) if tree.cls is None else tree.cls(*dys)
    return weighted_sum(y, ("gradient_function",), dy)


def warn_nonfinite(system: Any, y: Any, finite: bool | None = None) -> None:
    """Warn, naming the entries, when an output holds NaN or Inf. ``finite`` is
    the kit's own answer when it has one (True: nothing to do); else each leaf
    is reduced on the device, and only a non-finite leaf is copied to the host,
    to name its entries."""
    if finite:
        return
    kit = system.operators
    leaves, tree = flatten(y)
    values, specs = [], []
    for leaf, path in zip(leaves, tree.paths()):
        if float_kind(leaf) not in ("real", "complex") or kit.all_finite(leaf):
            continue
        specs.append(leaf_of(leaf, output_name(path, tree.kind)))
        values.append(kit.to_numpy_host(leaf))
    summary = nonfinite_summary(values, specs)
    if summary:
        warnings.warn(
            NonFiniteWarning(f"f's output has {summary}; derivatives there are meaningless."),
            stacklevel=4,
        )


# ---------------------------------------------------------------- operators


def grad(
    system: Any,
    f: Callable,
    wrt: Any,
    args: tuple,
    kwargs: dict,
    disconnected_inputs: str,
    return_disconnected: str,
) -> Any:
    """:func:`gradexplorer.grad` through the framework's AD."""
    call = bind(system, f, wrt, args, kwargs)
    kit = system.operators
    value, grads, connected, finite = kit.value_and_grad(call, scalar_output, ("grad",), None)
    warn_nonfinite(system, value, finite)
    out = finish_disconnected(
        call, grads, connected, disconnected_inputs, return_disconnected,
        as_leaves=False, stacklevel=5,
    )  # fmt: skip
    return call.finish(out)


def value_and_grad(
    system: Any, f: Callable, wrt: Any, args: tuple, kwargs: dict, dy: Any
) -> tuple[Any, tuple]:
    """:func:`gradexplorer.value_and_grad` through the framework's AD."""
    call = bind(system, f, wrt, args, kwargs)
    value, grads, connected, finite = system.operators.value_and_grad(
        call, weighted_sum, ("value_and_grad",), dy
    )
    warn_nonfinite(system, value, finite)
    out = finish_disconnected(call, grads, connected, "warn", "zero", as_leaves=False, stacklevel=5)
    return value, tuple(out)


def gradient_function(system: Any, f: Callable, n_inputs: int, xs: list, dys: list) -> tuple:
    """:func:`gradexplorer.gradient_function`'s ``g`` through the framework's AD."""
    call = bind(system, f, tuple(range(n_inputs)), xs, {})
    _, grads, _, _ = system.operators.value_and_grad(
        call, cotangents_per_output, ("gradient_function",), list(dys)
    )
    return tuple(call.per_argument(grads))


def Lop(system: Any, f: Callable, xs: list, v: Any) -> list:
    """vᵀJ per argument of f (``xs``) through the framework's AD."""
    call = bind(system, f, tuple(range(len(xs))) if xs else 0, xs, {})
    _, grads, _, _ = system.operators.value_and_grad(call, weighted_sum, ("Lop",), v)
    return call.per_argument(grads)
