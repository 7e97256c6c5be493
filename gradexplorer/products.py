"""Products with the Jacobian without building it: Lop (vᵀJ), Rop (J v), and format_as."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import autograd.numpy as anp
import numpy as onp
from autograd.builtins import tuple as ag_tuple
from autograd.tracer import getval

from ._args import as_differentiable, check_callable
from ._trace import trace_jvp, trace_vjp
from .ad import _check_dy, _outputs, _weighted_sum

__all__ = ["Lop", "Rop", "format_as"]


def _as_inputs(x: Any) -> tuple[list, bool, bool]:
    is_list, is_tuple = isinstance(x, list), isinstance(x, tuple)
    xs = list(x) if (is_list or is_tuple) else [x]
    return (
        [
            as_differentiable(xi, f"x[{k}]" if (is_list or is_tuple) else "x")
            for k, xi in enumerate(xs)
        ],
        is_list,
        is_tuple,
    )


def Lop(f: Callable, x: Any, v: Any) -> Any:
    """Left product ``vᵀ J(x)``: the vector-Jacobian product, shaped like x.

    ``x`` is one array or a list/tuple of arrays (f then takes them as separate
    arguments); ``v`` is shaped like f's output (a list for list outputs).

    >>> import numpy as np
    >>> Lop(lambda x: 2 * x, np.ones(3), np.arange(3.0))
    array([0., 2., 4.])
    """
    check_callable(f)
    xs, is_list, is_tuple = _as_inputs(x)
    argnums = tuple(range(len(xs)))
    captured = {}

    def scalarized(*a):
        y = f(*a)
        ys = [getval(t) for t in _outputs(y)]
        captured["dys"] = dys = _check_dy(ys if isinstance(y, (list, tuple)) else ys[0], v)
        return _weighted_sum(y, dys)

    if v is None:
        raise ValueError("Lop needs v, shaped like f's output; got None.")
    tr = trace_vjp(scalarized, xs, {}, argnums)
    grads = tr.backward(onp.ones((), onp.result_type(getval(tr.value)))[()])
    return format_as(is_list, is_tuple, grads if (is_list or is_tuple) else grads[0])


def Rop(f: Callable, x: Any, v: Any) -> Any:
    """Right product ``J(x) v``: the Jacobian-vector product, shaped like f(x).

    Uses forward mode; falls back to reverse mode (a VJP of the VJP) for
    operations without a forward rule.

    >>> import numpy as np
    >>> Rop(lambda x: x**2, np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array([2., 4.])
    """
    check_callable(f)
    xs, is_list, is_tuple = _as_inputs(x)
    vs = list(v) if (is_list or is_tuple) else [v]
    if len(vs) != len(xs):
        raise ValueError(f"v must hold one array per input: {len(xs)} inputs, {len(vs)} in v.")
    for k, (xk, vk) in enumerate(zip(xs, vs)):
        if onp.shape(vk) != onp.shape(xk):
            raise ValueError(
                f"v[{k}] has shape {onp.shape(vk)} but the input has shape {onp.shape(xk)}; "
                "pass a tangent shaped like the input."
            )
    vs = [onp.asarray(vk, dtype=onp.result_type(xk, float)) for xk, vk in zip(xs, vs)]
    argnums = tuple(range(len(xs)))

    def packed(*a):
        y = f(*a)
        return ag_tuple(y) if isinstance(y, (list, tuple)) else y

    try:
        y, jv = trace_jvp(packed, xs, {}, argnums, vs)
    except NotImplementedError:
        return _rop_by_double_vjp(f, xs, vs)
    if isinstance(y, (list, tuple)):
        return type(y)(jv) if isinstance(y, list) else tuple(jv)
    return jv


def _rop_by_double_vjp(f: Callable, xs: list, vs: list) -> Any:
    """J v as the VJP of the linear map u -> uᵀ J (for ops with no JVP rule)."""
    y = f(*xs)
    ys = _outputs(y)

    def vjp_dot_v(*us):
        tr = trace_vjp(lambda *a: _weighted_sum(f(*a), list(us)), xs, {}, tuple(range(len(xs))))
        return sum(anp.sum(g * vk) for g, vk in zip(tr.backward(1.0), vs))

    zeros = [onp.zeros_like(onp.asarray(yk, dtype=float)) for yk in ys]
    tr = trace_vjp(vjp_dot_v, zeros, {}, tuple(range(len(zeros))))
    out = tr.backward(1.0)
    return type(y)(out) if isinstance(y, (list, tuple)) else out[0]


def format_as(use_list: bool, use_tuple: bool, outputs: Any) -> Any:
    """Return ``outputs`` as a list, a tuple, or unchanged.

    With ``use_list`` a non-sequence becomes a one-element list; likewise for
    ``use_tuple``. With neither, ``outputs`` is returned as it is.

    >>> format_as(True, False, 3), format_as(False, True, [1, 2]), format_as(False, False, 5)
    ([3], (1, 2), 5)
    """
    if use_list and use_tuple:
        raise ValueError("format_as: use_list and use_tuple cannot both be True.")
    if use_list or use_tuple:
        seq = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        return seq if use_list else tuple(seq)
    return outputs
