"""Jacobians, Hessians and products of torch and jax functions, in gx's layout.

The backend's kit (see :mod:`.native`) returns per-leaf real matrices of the
realified f (rows ``[Re y; Im y]``, columns ``[Re x; Im x]``) or per-leaf
blocks; here they become ``jacobian``'s ``out.shape + in.shape`` structures,
``real_jacobian``'s 2-D matrix per argument, ``hessian``'s structure of
structures, ``hvp``'s and ``Rop``'s tangents, and ``complex_blocks``' Re/Im
blocks, with the same checks and words as the autograd operators.

>>> import numpy as np
>>> from gradexplorer.core.outputs import output_layout
>>> unrealify(output_layout([np.zeros(2), np.zeros(1, complex)]), np.arange(4.0))
[array([0., 1.]), array([2.+3.j])]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.calls import bind_call
from ..core.tree import flatten, unflatten
from .native import bind, scalar_output, warn_nonfinite
from .structure import blocks_by_argument, holomorphic_block, structure, unrealify

__all__ = ["jacobian", "real_jacobian", "hessian", "hvp", "Rop", "real_blocks"]


def _needs_holomorphic() -> TypeError:
    return TypeError(
        "jacobian of a function with complex inputs or outputs needs holomorphic=True "
        "(then it returns dy/dz). For any complex function, holomorphic or not, use "
        "gx.real_jacobian(f), which gives the real Jacobian of its real and imaginary parts."
    )


def jacobian(
    system: Any, f: Callable, wrt: Any, args: tuple, kwargs: dict, mode: str, holomorphic: bool
) -> Any:
    """:func:`gradexplorer.jacobian` through the framework's AD."""
    call = bind(system, f, wrt, args, kwargs)
    if any(s.complex for s in call.specs) and not holomorphic:
        raise _needs_holomorphic()
    layout, value, mats, finite = system.operators.jacobian(call, mode)
    warn_nonfinite(system, value, finite)
    if any(s.complex for s in layout.leaves) and not holomorphic:
        raise _needs_holomorphic()
    return call.finish(structure(call, layout, mats, holomorphic_block))


def real_jacobian(system: Any, f: Callable, wrt: Any, args: tuple, kwargs: dict, mode: str) -> Any:
    """:func:`gradexplorer.real_jacobian` through the framework's AD."""
    call = bind(system, f, wrt, args, kwargs)
    kit = system.operators
    layout, value, mats, finite = kit.jacobian(call, mode)
    warn_nonfinite(system, value, finite)
    per_arg = [kit.hstack(ms) if len(ms) > 1 else ms[0] for ms in blocks_by_argument(call, mats)]
    return call.finish(per_arg)


def _real_inputs(call, what: str) -> None:
    for spec in call.specs:
        if spec.complex:
            raise TypeError(
                f"{what} takes real inputs; {spec.name} is complex. Its second derivatives "
                "have no single complex convention: use gx.real_jacobian on the real and "
                "imaginary parts (e.g. of a function of torch.view_as_real(z) / "
                "jnp.stack([z.real, z.imag]))."
            )


def hessian(system: Any, f: Callable, wrt: Any, args: tuple, kwargs: dict) -> Any:
    """:func:`gradexplorer.hessian` through the framework's AD: per selected
    argument its structure of structures of blocks ``in_i.shape + in_j.shape``."""
    call = bind(system, f, wrt, args, kwargs)
    _real_inputs(call, "hessian")
    groups, start = [], 0
    for sel in call.selected:
        n = sum(s is not None for s in sel.specs)
        groups.append(tuple(range(start, start + n)))
        start += n
    blocks = system.operators.hessian(call, groups, scalar_output, ("hessian",))
    out = []
    for sel, B in zip(call.selected, blocks):
        rows = [unflatten(sel.tree, row) for row in B]
        out.append(unflatten(sel.tree, rows))
    return call.finish(out)


def hvp(system: Any, f: Callable, wrt: Any, fargs: list, kwargs: dict, v: Any) -> Any:
    """:func:`gradexplorer.hvp`'s product through the framework's AD."""
    call = bind(system, f, wrt, fargs, kwargs)
    if not call.single:
        raise ValueError("hvp differentiates one argument; pass a single int or name.")
    _real_inputs(call, "hvp")
    sel = call.selected[0]
    vcall = bind_call(lambda v: v, (v,), {}, 0, kind_of=system.float_kind, any_precision=True)
    shapes = [s.shape for s in call.specs]
    if vcall.selected[0].tree != sel.tree or [s.shape for s in vcall.specs] != shapes:
        raise ValueError(
            f"v must be shaped like the input {sel.name}: it has shapes "
            f"{[s.shape for s in vcall.specs]} ({vcall.selected[0].tree.describe()}), the "
            f"input {shapes} ({sel.tree.describe()}). Pass a vector shaped like the input."
        )
    _real_tangents(call, vcall.values, "v")
    hv = system.operators.hvp(call, scalar_output, ("hvp",), vcall.values)
    return call.per_argument(hv)[0]


def _real_tangents(call, tangents, where: str) -> None:
    for spec, t in zip(call.specs, tangents):
        if not spec.complex and "complex" in str(getattr(t, "dtype", type(t))):
            raise TypeError(
                f"{where} is complex where the input {spec.name} is real; a tangent of a "
                "real input is real. Pass its real part, or make the input complex."
            )


def Rop(system: Any, f: Callable, xs: list, vs: list, sequence: bool) -> Any:
    """J(x) v through the framework's forward mode, shaped like f's output."""
    call = bind(system, f, tuple(range(len(xs))) if xs else 0, xs, {})
    if len(vs) != len(call.selected):
        raise ValueError(
            f"v must hold one tangent per input: {len(call.selected)} inputs, {len(vs)} in v."
        )
    tangents = []
    for k, (sel, vk) in enumerate(zip(call.selected, vs)):
        leaves, tree = flatten(vk)
        shapes = [s.shape for s in sel.specs if s is not None]
        got = [tuple(getattr(t, "shape", ())) for t in leaves]
        if tree != sel.tree or got != shapes:
            where = f"v[{k}]" if sequence else "v"
            raise ValueError(
                f"{where} has shape(s) {got} but the input has shape(s) {shapes}; pass a "
                "tangent shaped like the input."
            )
        tangents.extend(t for t, s in zip(leaves, sel.specs) if s is not None)
    _real_tangents(call, tangents, "v")
    layout, _, t = system.operators.jvp(call, tangents)
    return unrealify(layout, t)


def real_blocks(system: Any, f: Callable, wrt: Any, args: tuple, kwargs: dict) -> tuple:
    """``(J, m, n, y_complex, x_complex, name)`` for ``complex_blocks``: the real
    Jacobian of f's one array output with respect to one array input, on the host."""
    call = bind(system, f, wrt, args, kwargs)
    if not call.single:
        raise ValueError("complex_blocks takes one input; pass a single int or name as wrt.")
    if len(call.specs) != 1 or not call.selected[0].tree.is_leaf:
        raise ValueError(
            "complex_blocks takes one array input; for a structured input use "
            "gx.real_jacobian(f), whose columns stack the leaves."
        )
    kit = system.operators
    layout, _, mats, _ = kit.jacobian(call, "auto")
    if not layout.tree.is_leaf:
        raise ValueError("complex_blocks takes a function returning one array; f returns several.")
    out, spec = layout.leaves[0], call.specs[0]
    J = kit.to_numpy_host(mats[0])
    return J, out.size, spec.size, out.complex, spec.complex, call.selected[0].name
