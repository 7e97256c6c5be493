"""Products with the Jacobian without building it: Lop (vᵀJ), Rop (J v), and format_as."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import autograd.numpy as anp
import numpy as onp

from ..backends.autograd import getval, trace_jvp, trace_vjp
from ..core.calls import check_callable
from ..core.tree import flatten, unflatten
from . import native, native_dense
from .operators import _check_dy, _value_of, _weighted_sum, prepare_call

__all__ = ["Lop", "Rop", "format_as"]


def _as_call(f: Callable, x: Any):
    is_list, is_tuple = isinstance(x, list), isinstance(x, tuple)
    xs = list(x) if (is_list or is_tuple) else [x]
    call = prepare_call(f, tuple(range(len(xs))) if xs else 0, xs, {})
    return call, is_list, is_tuple


@native.explain_foreign
def Lop(f: Callable, x: Any, v: Any) -> Any:
    """Left product ``vᵀ J(x)``: the vector-Jacobian product, shaped like x.

    ``x`` is one array (or nested structure) or a list/tuple of them (f then
    takes them as separate arguments); ``v`` is shaped like f's output.

    Notes
    -----
    With torch tensors (or an ``nn.Module`` as f, its parameters selected by name) or
    jax arrays among the arguments, the framework's own AD computes it
    (``torch.autograd.grad``; ``jax.vjp`` under ``jax.jit``); the results are that
    framework's arrays on the inputs' device, in their dtype (a CUDA tensor in, CUDA
    tensors out: nothing is copied to the host).

    >>> import numpy as np
    >>> Lop(lambda x: 2 * x, np.ones(3), np.arange(3.0))
    array([0., 2., 4.])
    """
    check_callable(f)
    if v is None:
        raise ValueError("Lop needs v, shaped like f's output; got None.")
    is_list, is_tuple = isinstance(x, list), isinstance(x, tuple)
    xs = list(x) if (is_list or is_tuple) else [x]
    system = native.system_for(f, xs, {})
    if system is not None:
        per_arg = native.Lop(system, f, xs, v)
        return format_as(is_list, is_tuple, per_arg if (is_list or is_tuple) else per_arg[0])
    call, is_list, is_tuple = _as_call(f, x)

    def scalarized(*leaves):
        y = call(*leaves)
        return _weighted_sum(y, _check_dy(_value_of(y), v))

    tr = trace_vjp(scalarized, call.values)
    grads = tr.backward(onp.ones((), onp.result_type(getval(tr.value), onp.float16))[()])
    per_arg = call.per_argument(grads)
    return format_as(is_list, is_tuple, per_arg if (is_list or is_tuple) else per_arg[0])


@native.explain_foreign
def Rop(f: Callable, x: Any, v: Any) -> Any:
    """Right product ``J(x) v``: the Jacobian-vector product, shaped like f(x).

    Uses forward mode; an operation without a forward rule gets its tangent
    from its VJP.

    Notes
    -----
    With torch tensors (or an ``nn.Module`` as f, its parameters selected by name) or
    jax arrays among the arguments, the framework's own AD computes it
    (``torch.func.jvp``; ``jax.jvp`` under ``jax.jit``); the results are that
    framework's arrays on the inputs' device, in their dtype (a CUDA tensor in, CUDA
    tensors out: nothing is copied to the host).

    >>> import numpy as np
    >>> Rop(lambda x: x**2, np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array([2., 4.])
    """
    check_callable(f)
    is_list, is_tuple = isinstance(x, list), isinstance(x, tuple)
    system = native.system_for(f, list(x) if (is_list or is_tuple) else [x], {})
    if system is not None:
        xs = list(x) if (is_list or is_tuple) else [x]
        vs = list(v) if (is_list or is_tuple) else [v]
        return native_dense.Rop(system, f, xs, vs, is_list or is_tuple)
    call, is_list, is_tuple = _as_call(f, x)
    vs = list(v) if (is_list or is_tuple) else [v]
    if len(vs) != len(call.selected):
        raise ValueError(
            f"v must hold one tangent per input: {len(call.selected)} inputs, {len(vs)} in v."
        )
    tangents = []
    for k, (sel, vk) in enumerate(zip(call.selected, vs)):
        leaves, tree = flatten(vk)
        shapes = [s.shape for s in sel.specs if s is not None]
        if tree != sel.tree or [onp.shape(t) for t in leaves] != shapes:
            where = f"v[{k}]" if (is_list or is_tuple) else "v"
            raise ValueError(
                f"{where} has shape(s) {[onp.shape(t) for t in leaves]} but the input has "
                f"shape(s) {shapes}; pass a tangent shaped like the input."
            )
        for t, s in zip(leaves, sel.specs):
            if s is not None:
                dt = onp.result_type(s.dtype, onp.float16)
                tangents.append(onp.asarray(t, dtype=onp.result_type(dt, onp.asarray(t).dtype)))

    def packed(*leaves):
        y = call(*leaves)
        ys, tree = flatten(y)
        return y if tree.is_leaf else anp.concatenate([anp.ravel(t) for t in ys])

    y0 = _value_of(call(*call.values))
    ys, tree = flatten(y0)
    value, jv, _ = trace_jvp(packed, call.values, tangents, fallback=True)
    if tree.is_leaf:
        return jv
    out, start = [], 0
    jv = onp.asarray(jv)
    for t in ys:
        n = onp.size(t)
        out.append(jv[start : start + n].reshape(onp.shape(t)))
        start += n
    return unflatten(tree, out)


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
