"""Dense derivative matrices: jacobian, real_jacobian, hessian, hvp.

Math layout everywhere: ``jacobian`` is ``out.shape + in.shape``; the
realified ``real_jacobian`` is 2-D with rows ``[Re y; Im y]`` and columns
``[Re x; Im x]`` (a real side has no Im half).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import autograd.numpy as anp
import numpy as onp

from ._args import (
    Side,
    check_callable,
    check_jacobian_size,
    from_real_vector,
    param_label,
    realify_output,
    side_of,
    to_real_vector,
)
from ._trace import trace_jvp, trace_vjp
from .ad import grad, prepare_call, warn_nonfinite

__all__ = ["jacobian", "real_jacobian", "hessian", "hvp", "dense_real_jacobians"]

_MODES = ("auto", "rev", "fwd")


def dense_real_jacobians(
    f: Callable, args: Sequence, kwargs: dict, argnums: Sequence[int], mode: str = "auto"
) -> tuple[Any, list[onp.ndarray]]:
    """2-D Jacobians ``(m, n_i)`` of a real function for each selected argument.

    Reverse mode traces once and runs one backward pass per output element;
    forward mode runs one pass per input element. ``auto`` picks the cheaper
    and falls back to reverse mode when an operation has no forward rule.
    Returns ``(value, [J_0, J_1, ...])``.
    """
    args = list(args)
    y = f(*args, **kwargs)
    if isinstance(y, (list, tuple)):
        raise TypeError(
            f"this operator needs f to return one array; it returned a {type(y).__name__}. "
            "Stack the outputs (anp.concatenate) or differentiate each one."
        )
    y_arr = onp.asarray(y)
    m = y_arr.size
    sizes = [onp.size(args[i]) for i in argnums]
    dtype = onp.result_type(y_arr, *[args[i] for i in argnums], onp.float16)
    for n in sizes:
        check_jacobian_size(m, n, dtype.itemsize)
    use_fwd = mode == "fwd" or (mode == "auto" and sum(sizes) < m)
    if use_fwd:
        try:
            return y, _forward(f, args, kwargs, argnums, sizes, m, dtype)
        except NotImplementedError as exc:
            if mode == "fwd":
                raise NotImplementedError(
                    f"forward mode needs a JVP rule for every operation: {exc}. "
                    "Use mode='rev', or mode='auto', which falls back to reverse mode."
                ) from exc
    return y, _reverse(f, args, kwargs, argnums, sizes, y_arr, dtype)


def _reverse(f, args, kwargs, argnums, sizes, y_arr, dtype):
    tr = trace_vjp(f, args, kwargs, argnums)
    m = y_arr.size
    jacs = [onp.zeros((m, n), dtype) for n in sizes]
    basis = onp.zeros(m, y_arr.dtype)
    for row in range(m):
        basis[row] = 1
        g = basis.reshape(y_arr.shape) if y_arr.ndim else basis[0]
        for J, gx in zip(jacs, tr.backward(g)):
            J[row] = onp.ravel(gx)
        basis[row] = 0
    return jacs


def _forward(f, args, kwargs, argnums, sizes, m, dtype):
    jacs = []
    for i, n in zip(argnums, sizes):
        x = onp.asarray(args[i])
        J = onp.zeros((m, n), dtype)
        basis = onp.zeros(n, x.dtype)
        for col in range(n):
            basis[col] = 1
            tangent = basis.reshape(x.shape) if x.ndim else basis[0]
            _, jv = trace_jvp(f, args, kwargs, (i,), (tangent,))
            J[:, col] = onp.ravel(jv)
            basis[col] = 0
        jacs.append(J)
    return jacs


def _check_mode(mode: str) -> None:
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {list(_MODES)}; got {mode!r}.")


def _realified(f: Callable, args: list, kwargs: dict, argnums, sides: list[Side]):
    """A real function of real vectors equivalent to f (for the selected args)."""

    def g(*vs):
        a = list(args)
        for i, v, s in zip(argnums, vs, sides):
            a[i] = from_real_vector(v, s, np=anp)
        return realify_output(f(*a, **kwargs), np=anp)

    vecs = [to_real_vector(args[i]) for i in argnums]
    return g, vecs


def jacobian(
    f: Callable, wrt: Any = 0, *, mode: str = "auto", holomorphic: bool = False
) -> Callable:
    """Jacobian of f, shaped ``out.shape + in.shape``.

    Parameters
    ----------
    f : callable
        Returns one array.
    wrt : int, str or sequence of them
        Argument(s) to differentiate; a sequence gives a tuple of Jacobians.
    mode : {"auto", "rev", "fwd"}
        Reverse mode costs one backward pass per output element, forward mode
        one forward pass per input element. ``auto`` picks forward mode when
        the inputs have fewer elements than the output.
    holomorphic : bool
        Needed when any side is complex: then the result is the complex
        derivative dy/dz (exact only for holomorphic f: it is the derivative
        along the real axis). Use :func:`real_jacobian` for any complex f.

    Returns
    -------
    callable
        ``jac_f(*args, **kwargs)``.

    Examples
    --------
    >>> import autograd.numpy as anp
    >>> jacobian(lambda x: anp.array([x[0] * x[1], anp.sin(x[0])]))(anp.array([0.0, 2.0]))
    array([[2., 0.],
           [1., 0.]])
    >>> jacobian(lambda z: z**2, holomorphic=True)(anp.array([1j]))
    array([[0.+2.j]])
    """
    check_callable(f)
    _check_mode(mode)

    @functools.wraps(f)
    def jac_f(*args, **kwargs):
        args, kwargs, argnums, single = prepare_call(f, wrt, args, kwargs)
        y0 = f(*args, **kwargs)
        warn_nonfinite(y0)
        complex_sides = onp.iscomplexobj(y0) or any(onp.iscomplexobj(args[i]) for i in argnums)
        if complex_sides:
            if not holomorphic:
                raise TypeError(
                    "jacobian of a function with complex inputs or outputs needs "
                    "holomorphic=True (then it returns dy/dz). For any complex function, "
                    "holomorphic or not, use gx.real_jacobian(f), which gives the real "
                    "Jacobian of its real and imaginary parts."
                )
            jacs = _holomorphic(f, args, kwargs, argnums, onp.shape(y0), mode)
        else:
            _, mats = dense_real_jacobians(f, args, kwargs, argnums, mode)
            jacs = [J.reshape(onp.shape(y0) + onp.shape(args[i])) for J, i in zip(mats, argnums)]
        return jacs[0] if single else tuple(jacs)

    return jac_f


def _holomorphic(f, args, kwargs, argnums, out_shape, mode):
    sides = [side_of(args[i], param_label(f, i)) for i in argnums]
    g, vecs = _realified(f, args, kwargs, argnums, sides)
    y = onp.asarray(f(*args, **kwargs))
    m = y.size
    _, mats = dense_real_jacobians(g, vecs, {}, tuple(range(len(vecs))), mode)
    out = []
    for J, s in zip(mats, sides):
        d_re_x = J[:, : s.size]  # derivative along the real axis of each input
        dz = d_re_x[:m] + (1j * d_re_x[m:] if onp.iscomplexobj(y) else 0)
        out.append(dz.reshape(out_shape + s.shape))
    return out


def real_jacobian(f: Callable, wrt: Any = 0, *, mode: str = "auto") -> Callable:
    """The 2-D real Jacobian of the realified map, for any mix of real and complex sides.

    Rows are ``[Re y.ravel(); Im y.ravel()]``, columns ``[Re x.ravel(); Im x.ravel()]``;
    a real side has no Im half. Works where ``autograd.jacobian`` crashes
    (complex outputs) and does not depend on any complex-gradient convention.

    Examples
    --------
    >>> import autograd.numpy as anp
    >>> real_jacobian(lambda z: anp.conj(z))(anp.array([1.0 + 1.0j]))
    array([[ 1.,  0.],
           [ 0., -1.]])
    """
    check_callable(f)
    _check_mode(mode)

    @functools.wraps(f)
    def real_jac_f(*args, **kwargs):
        args, kwargs, argnums, single = prepare_call(f, wrt, args, kwargs)
        sides = [side_of(args[i], param_label(f, i)) for i in argnums]
        g, vecs = _realified(f, args, kwargs, argnums, sides)
        y, mats = dense_real_jacobians(g, vecs, {}, tuple(range(len(vecs))), mode)
        warn_nonfinite(y)
        return mats[0] if single else tuple(mats)

    return real_jac_f


def hessian(f: Callable, wrt: Any = 0) -> Callable:
    """Hessian of a real scalar function, shaped ``in.shape + in.shape``.

    A sequence ``wrt`` gives the tuple of diagonal blocks ``d²f/dx_i²``.

    >>> import autograd.numpy as anp
    >>> hessian(lambda x: anp.sum(x**3))(anp.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    check_callable(f)

    @functools.wraps(f)
    def hess_f(*args, **kwargs):
        args, kwargs, argnums, single = prepare_call(f, wrt, args, kwargs)
        out = []
        for i in argnums:
            g = grad(f, i, disconnected_inputs="ignore")
            H = jacobian(g, i, mode="rev")(*args, **kwargs)
            out.append(onp.asarray(H))
        return out[0] if single else tuple(out)

    return hess_f


def hvp(f: Callable, wrt: int | str = 0) -> Callable:
    """Hessian-vector product ``fn(*args, v) -> H v`` without forming H.

    >>> import autograd.numpy as anp
    >>> hvp(lambda x: anp.sum(x**3))(anp.array([1.0, 2.0]), anp.array([1.0, 1.0]))
    array([ 6., 12.])
    """
    check_callable(f)

    def hvp_f(*args, **kwargs):
        if not args:
            raise TypeError("hvp's function takes f's arguments followed by the vector v.")
        *fargs, v = args
        fargs, kwargs, argnums, single = prepare_call(f, wrt, tuple(fargs), kwargs)
        if not single:
            raise ValueError("hvp differentiates one argument; pass a single int or name.")
        i = argnums[0]
        if onp.shape(v) != onp.shape(fargs[i]):
            raise ValueError(
                f"v has shape {onp.shape(v)} but the input has shape {onp.shape(fargs[i])}; "
                "pass a vector shaped like the input."
            )
        g = grad(f, i, disconnected_inputs="ignore")
        return grad(lambda *a, **k: anp.sum(g(*a, **k) * v), i, disconnected_inputs="ignore")(
            *fargs, **kwargs
        )

    return hvp_f
