"""Dense derivative matrices: jacobian, real_jacobian, hessian, hvp.

Math layout everywhere: ``jacobian`` is ``out.shape + in.shape`` (for nested
inputs and outputs: the output's structure, each leaf holding the input's
structure of blocks, as jax does); the realified ``real_jacobian`` is 2-D
with rows ``[Re y; Im y]`` and columns ``[Re x; Im x]`` (a real side has no
Im half), leaves stacked in order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import autograd.numpy as anp
import numpy as onp

from ..backends.autograd import getval, trace_jvp, trace_vjp
from ..backends.autograd.batched import STACK_FROM
from ..core.calls import Call, check_callable
from ..core.outputs import OutputLayout, check_jacobian_size, output_layout
from . import native, native_dense
from .operators import grad, prepare_call, warn_nonfinite
from .structure import blocks_by_argument, holomorphic_block, structure

__all__ = ["jacobian", "real_jacobian", "hessian", "hvp", "dense_jacobian", "realified"]

_MODES = ("auto", "rev", "fwd")
#: Bytes of unit cotangents sent through the graph at once.
ROWS_BYTES = 32 * 2**20


def dense_jacobian(
    F: Callable, vs: Sequence, mode: str = "auto"
) -> tuple[onp.ndarray, list[onp.ndarray]]:
    """2-D Jacobians ``(m, size_k)`` of a function of real vectors returning one
    real vector, one per argument ``vs[k]``.

    Reverse mode traces once and runs one backward pass per output element
    (from 48 outputs on, a block of them at a time through the graph: see
    :mod:`gradexplorer.backends.autograd.batched`); forward mode runs one pass
    per input element. ``auto`` picks the cheaper
    and falls back to reverse mode when an operation has no forward rule.
    Returns ``(value, [J_0, J_1, ...])``.
    """
    vs = list(vs)
    y = onp.asarray(getval(F(*vs)))
    m = y.size
    sizes = [onp.size(v) for v in vs]
    dtype = onp.result_type(y, *vs, onp.float16)
    check_jacobian_size(m, sum(sizes), dtype.itemsize)
    use_fwd = mode == "fwd" or (mode == "auto" and sum(sizes) < m)
    if use_fwd:
        try:
            return y, _forward(F, vs, sizes, m, dtype)
        except NotImplementedError as exc:
            if mode == "fwd":
                raise NotImplementedError(
                    f"forward mode needs a JVP rule for every operation: {exc}. "
                    "Use mode='rev', or mode='auto', which falls back to reverse mode."
                ) from exc
    return y, _reverse(F, vs, sizes, y, dtype)


def _reverse(F, vs, sizes, y, dtype):
    tr = trace_vjp(F, vs)
    m = y.size
    jacs = [onp.zeros((m, n), dtype) for n in sizes]
    if y.ndim and y.dtype.kind == "f" and m >= STACK_FROM:  # the rows go through together
        block = max(1, min(m, ROWS_BYTES // (8 * m)))
        for start in range(0, m, block):
            k = min(block, m - start)
            units = onp.eye(k, m, start, dtype=y.dtype).reshape((k,) + y.shape)
            for J, rows in zip(jacs, tr.backward_rows(units)):
                J[start : start + k] = onp.reshape(rows, (k, -1))
        return jacs
    basis = onp.zeros(m, y.dtype)
    for row in range(m):
        basis[row] = 1
        g = basis.reshape(y.shape) if y.ndim else basis[0]
        for J, gx in zip(jacs, tr.backward(g)):
            J[row] = onp.ravel(gx)
        basis[row] = 0
    return jacs


def _forward(F, vs, sizes, m, dtype):
    jacs = []
    zeros = [onp.zeros_like(v) for v in vs]
    for k, (v, n) in enumerate(zip(vs, sizes)):
        J = onp.zeros((m, n), dtype)
        basis = onp.zeros(n, onp.asarray(v).dtype)
        for col in range(n):
            basis[col] = 1
            tangents = list(zeros)
            tangents[k] = basis.reshape(onp.shape(v)) if onp.ndim(v) else basis[0]
            _, jv, _ = trace_jvp(F, vs, tangents)
            J[:, col] = onp.ravel(jv)
            basis[col] = 0
        jacs.append(J)
    return jacs


def _check_mode(mode: str) -> None:
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {list(_MODES)}; got {mode!r}.")


def realified(call: Call, layout: OutputLayout) -> tuple[Callable, list]:
    """f as a function of one real vector per leaf, returning one real vector."""
    specs = call.specs

    def F(*vs):
        leaves = [s.from_real(v, np=anp) for s, v in zip(specs, vs)]
        return layout.realify(call(*leaves), np=anp)

    return F, [s.to_real(v) for s, v in zip(specs, call.values)]


def jacobian(
    f: Callable, wrt: Any = 0, *, mode: str = "auto", holomorphic: bool = False
) -> Callable:
    """Jacobian of f, shaped ``out.shape + in.shape``.

    Parameters
    ----------
    f : callable
        Returns an array, or a list / tuple / dict of arrays.
    wrt : int, str or sequence of them
        Argument(s) to differentiate; a sequence gives a tuple of Jacobians.
        A nested argument gives its own structure of blocks; a structured
        output gives its structure, each leaf holding the blocks (jax's layout).
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

    Notes
    -----
    With torch tensors (or an ``nn.Module`` as f, its parameters selected by name) or
    jax arrays among the arguments, the framework's own AD computes it
    (``torch.func.jacrev`` / ``jacfwd``, eager ``torch.autograd`` where torch.func
    refuses f; ``jax.jacrev`` / ``jacfwd`` under ``jax.jit``, eagerly where ``jit``
    cannot trace f); the results are that framework's arrays on the inputs' device, in
    their dtype (a CUDA tensor in, CUDA tensors out: nothing is copied to the host).

    Examples
    --------
    >>> import autograd.numpy as anp
    >>> jacobian(lambda x: anp.array([x[0] * x[1], anp.sin(x[0])]))(anp.array([0.0, 2.0]))
    array([[2., 0.],
           [1., 0.]])
    >>> jacobian(lambda z: z**2, holomorphic=True)(anp.array([1j]))
    array([[0.+2.j]])
    >>> J = jacobian(lambda p: (p[0] * p[1], p[0]))([anp.ones(2), 3.0])
    >>> J[0][1], J[1][0]
    (array([1., 1.]), array([[1., 0.],
           [0., 1.]]))
    """
    check_callable(f)
    _check_mode(mode)

    @functools.partial(native.explain_foreign, like=f)
    def jac_f(*args, **kwargs):
        system = native.system_for(f, args, kwargs)
        if system is not None:
            return native_dense.jacobian(system, f, wrt, args, kwargs, mode, holomorphic)
        call = prepare_call(f, wrt, args, kwargs)
        y0 = call(*call.values)
        warn_nonfinite(y0)
        layout = output_layout(y0)
        any_complex = any(s.complex for s in layout.leaves + call.specs)
        if any_complex and not holomorphic:
            raise TypeError(
                "jacobian of a function with complex inputs or outputs needs "
                "holomorphic=True (then it returns dy/dz). For any complex function, "
                "holomorphic or not, use gx.real_jacobian(f), which gives the real "
                "Jacobian of its real and imaginary parts."
            )
        F, vs = realified(call, layout)
        _, mats = dense_jacobian(F, vs, mode)
        return call.finish(structure(call, layout, mats, holomorphic_block))

    return jac_f


def real_jacobian(f: Callable, wrt: Any = 0, *, mode: str = "auto") -> Callable:
    """The 2-D real Jacobian of the realified map, for any mix of real and complex sides.

    Rows are ``[Re y.ravel(); Im y.ravel()]``, columns ``[Re x.ravel(); Im x.ravel()]``;
    a real side has no Im half; the leaves of nested outputs (rows) and of a
    nested argument (columns) are stacked in order. Works where
    ``autograd.jacobian`` crashes (complex outputs) and does not depend on any
    complex-gradient convention.

    Notes
    -----
    With torch tensors (or an ``nn.Module`` as f, its parameters selected by name) or
    jax arrays among the arguments, the framework's own AD computes it (as for
    :func:`jacobian`); the results are that framework's arrays on the inputs' device, in
    their dtype (a CUDA tensor in, CUDA tensors out: nothing is copied to the host).

    Examples
    --------
    >>> import autograd.numpy as anp
    >>> real_jacobian(lambda z: anp.conj(z))(anp.array([1.0 + 1.0j]))
    array([[ 1.,  0.],
           [ 0., -1.]])
    """
    check_callable(f)
    _check_mode(mode)

    @functools.partial(native.explain_foreign, like=f)
    def real_jac_f(*args, **kwargs):
        system = native.system_for(f, args, kwargs)
        if system is not None:
            return native_dense.real_jacobian(system, f, wrt, args, kwargs, mode)
        call = prepare_call(f, wrt, args, kwargs)
        y0 = call(*call.values)
        layout = output_layout(y0)
        F, vs = realified(call, layout)
        y, mats = dense_jacobian(F, vs, mode)
        warn_nonfinite(y0)
        per_arg = [
            onp.hstack(ms) if len(ms) > 1 else ms[0] for ms in blocks_by_argument(call, mats)
        ]
        return call.finish(per_arg)

    return real_jac_f


def hessian(f: Callable, wrt: Any = 0) -> Callable:
    """Hessian of a real scalar function, shaped ``in.shape + in.shape``.

    A sequence ``wrt`` gives the tuple of diagonal blocks ``d²f/dx_i²``; a
    nested argument gives its structure of its structure of blocks.

    Notes
    -----
    With torch tensors (or an ``nn.Module`` as f, its parameters selected by name) or
    jax arrays among the arguments, the framework's own AD computes it
    (``torch.func.hessian``; ``jax.hessian`` under ``jax.jit``: forward over reverse);
    the results are that framework's arrays on the inputs' device, in their dtype (a
    CUDA tensor in, CUDA tensors out: nothing is copied to the host). Inputs must be
    real there.

    >>> import autograd.numpy as anp
    >>> hessian(lambda x: anp.sum(x**3))(anp.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    check_callable(f)

    @functools.partial(native.explain_foreign, like=f)
    def hess_f(*args, **kwargs):
        system = native.system_for(f, args, kwargs)
        if system is not None:
            return native_dense.hessian(system, f, wrt, args, kwargs)
        call = prepare_call(f, wrt, args, kwargs)
        out = []
        for sel in call.selected:
            g = grad(f, sel.slot, disconnected_inputs="ignore")
            out.append(jacobian(g, sel.slot, mode="rev")(*args, **kwargs))
        return call.finish(out)

    return hess_f


def hvp(f: Callable, wrt: int | str = 0) -> Callable:
    """Hessian-vector product ``fn(*args, v) -> H v`` without forming H.

    ``v`` has the structure of the differentiated argument.

    Notes
    -----
    With torch tensors (or an ``nn.Module`` as f, its parameters selected by name) or
    jax arrays among the arguments, the framework's own AD computes it
    (``torch.func.jvp`` of ``torch.func.grad``; ``jax.jvp`` of ``jax.grad``); the
    results are that framework's arrays on the inputs' device, in their dtype (a CUDA
    tensor in, CUDA tensors out: nothing is copied to the host).

    >>> import autograd.numpy as anp
    >>> hvp(lambda x: anp.sum(x**3))(anp.array([1.0, 2.0]), anp.array([1.0, 1.0]))
    array([ 6., 12.])
    """
    check_callable(f)

    @native.explain_foreign
    def hvp_f(*args, **kwargs):
        if not args:
            raise TypeError("hvp's function takes f's arguments followed by the vector v.")
        *fargs, v = args
        system = native.system_for(f, fargs, kwargs)
        if system is not None:
            return native_dense.hvp(system, f, wrt, fargs, kwargs, v)
        call = prepare_call(f, wrt, tuple(fargs), kwargs)
        if not call.single:
            raise ValueError("hvp differentiates one argument; pass a single int or name.")
        sel = call.selected[0]
        vcall = prepare_call(lambda v: v, 0, (v,), {})
        if vcall.selected[0].tree != sel.tree or [s.shape for s in vcall.specs] != [
            s.shape for s in call.specs
        ]:
            raise ValueError(
                f"v must be shaped like the input {sel.name}: it has shapes "
                f"{[s.shape for s in vcall.specs]} ({vcall.selected[0].tree.describe()}), the "
                f"input {[s.shape for s in call.specs]} ({sel.tree.describe()}). Pass a "
                "vector shaped like the input."
            )
        vleaves = vcall.values
        g = grad(f, sel.slot, disconnected_inputs="ignore")

        def gv(*a, **k):
            from ..core.tree import flatten

            gl, _ = flatten(g(*a, **k))
            return sum(anp.sum(gi * vi) for gi, vi in zip(gl, vleaves))

        return grad(gv, sel.slot, disconnected_inputs="ignore")(*fargs, **kwargs)

    return hvp_f
