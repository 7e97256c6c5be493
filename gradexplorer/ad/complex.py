"""Complex functions as real maps: Re/Im blocks and the Cauchy–Riemann residual.

A complex function ``f: C^n -> C^m`` is the real map ``R^2n -> R^2m`` of its
real and imaginary parts. Its real Jacobian splits into four blocks; f is
holomorphic exactly where ``dRe y/dRe x = dIm y/dIm x`` and
``dRe y/dIm x = -dIm y/dRe x`` (the Cauchy–Riemann equations).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as onp

from . import native, native_dense
from .jacobians import real_jacobian
from .operators import prepare_call

__all__ = ["ComplexBlocks", "complex_blocks", "cauchy_riemann_residual"]


@dataclass(frozen=True)
class ComplexBlocks:
    """The four real blocks of a complex function's Jacobian (math layout).

    Each block is ``(out.size, in.size)``; a real output has zero Im blocks,
    a real input zero ``d/dIm x`` blocks. ``cr_residual`` is
    ``|dRe y/dRe x - dIm y/dIm x| + |dRe y/dIm x + dIm y/dRe x|`` per entry,
    zero everywhere iff f is holomorphic at this point. ``dz`` is the complex
    derivative ``dy/dz`` and ``dzbar`` the conjugate Wirtinger derivative
    ``dy/dz̄`` (zero iff holomorphic).
    """

    dre_dre: onp.ndarray
    dre_dim: onp.ndarray
    dim_dre: onp.ndarray
    dim_dim: onp.ndarray
    out_name: str
    in_name: str

    @property
    def cr_residual(self) -> onp.ndarray:
        return onp.abs(self.dre_dre - self.dim_dim) + onp.abs(self.dre_dim + self.dim_dre)

    @property
    def dz(self) -> onp.ndarray:
        return 0.5 * (self.dre_dre + self.dim_dim) + 0.5j * (self.dim_dre - self.dre_dim)

    @property
    def dzbar(self) -> onp.ndarray:
        return 0.5 * (self.dre_dre - self.dim_dim) + 0.5j * (self.dim_dre + self.dre_dim)

    def is_holomorphic(self, rtol: float = 1e-8) -> bool:
        scale = max(float(onp.max(onp.abs(self.dz), initial=0.0)), 1e-300)
        return bool(onp.max(self.cr_residual, initial=0.0) <= rtol * max(scale, 1.0))

    def __str__(self) -> str:
        verdict = "holomorphic" if self.is_holomorphic() else "not holomorphic"
        return (
            f"ComplexBlocks d{self.out_name}/d{self.in_name}: {self.dre_dre.shape} blocks, "
            f"max Cauchy–Riemann residual {onp.max(self.cr_residual, initial=0.0):.3g} "
            f"({verdict})"
        )

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"

    def _repr_png_(self) -> bytes:
        from ..display import render

        return render(self, png=True)


@native.explain_foreign
def complex_blocks(f: Callable, *args: Any, wrt: int | str = 0, **kwargs: Any) -> ComplexBlocks:
    """Split the real Jacobian of f at ``args`` into its Re/Im blocks.

    With torch tensors or jax arrays the Jacobian is the framework's own
    (``gx.real_jacobian``, on the inputs' device); the blocks of this result
    object are numpy arrays, on the host.

    Examples
    --------
    >>> import autograd.numpy as anp
    >>> b = complex_blocks(lambda z: z**2, anp.array([1.0 + 1.0j]))
    >>> b.dz, b.is_holomorphic()
    (array([[2.+2.j]]), True)
    >>> complex_blocks(anp.conj, anp.array([1.0 + 1.0j])).is_holomorphic()
    False
    """
    system = native.system_for(f, args, kwargs)
    if system is not None:  # torch / jax: their AD on the device, the blocks on the host
        J, m, n, y_complex, x_complex, name = native_dense.real_blocks(system, f, wrt, args, kwargs)
        return _split_blocks(J, m, n, y_complex, x_complex, name)
    call = prepare_call(f, wrt, args, kwargs)
    if not call.single:
        raise ValueError("complex_blocks takes one input; pass a single int or name as wrt.")
    if len(call.specs) != 1 or not call.selected[0].tree.is_leaf:
        raise ValueError(
            "complex_blocks takes one array input; for a structured input use "
            "gx.real_jacobian(f), whose columns stack the leaves."
        )
    sel = call.selected[0]
    J = real_jacobian(f, sel.slot)(*args, **kwargs)
    y = call(*call.values)
    if isinstance(y, (list, tuple, dict)):
        raise ValueError("complex_blocks takes a function returning one array; f returns several.")
    m = onp.size(y)
    n = call.specs[0].size
    return _split_blocks(J, m, n, onp.iscomplexobj(y), call.specs[0].complex, sel.name)


def _split_blocks(J, m: int, n: int, y_complex: bool, x_complex: bool, name: str):
    re_rows = J[:m]
    im_rows = J[m:] if y_complex else onp.zeros_like(re_rows)
    if x_complex:
        blocks = re_rows[:, :n], re_rows[:, n:], im_rows[:, :n], im_rows[:, n:]
    else:
        blocks = re_rows, onp.zeros((m, n)), im_rows, onp.zeros((m, n))
    return ComplexBlocks(*blocks, out_name="y", in_name=name)


def cauchy_riemann_residual(f: Callable, *args: Any, wrt: int | str = 0) -> onp.ndarray:
    """Per-entry Cauchy–Riemann residual (zero iff f is holomorphic here).

    >>> import autograd.numpy as anp
    >>> float(cauchy_riemann_residual(lambda z: anp.abs(z) ** 2, anp.array([1.0 + 2.0j]))[0, 0])
    6.0
    """
    return complex_blocks(f, *args, wrt=wrt).cr_residual
