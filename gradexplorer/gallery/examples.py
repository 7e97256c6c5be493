"""Example functions with hand-derived Jacobians, for teaching, tests and benchmarks.

Each :class:`Example` holds a function written with ``autograd.numpy``, a
point to evaluate it at, and its Jacobian with respect to each input derived
by hand (never by AD), so every operator can be checked against it.

Analytic Jacobians use math layout (``out.shape + in.shape``) for real
functions; for a function with any complex side they are the 2-D
``real_jacobian`` layout (rows ``[Re y; Im y]``, columns ``[Re x; Im x]``).

>>> ex = get("softmax")
>>> x, = ex.args()
>>> ex.jacobian(x)[0].shape
(5, 5)
>>> len(EXAMPLES) >= 20
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import autograd.numpy as anp
import numpy as onp

from .math import (
    _complex_blocks,
    _holo_real_jac,
    _logdet_jac,
    _matmul_jacs,
    _randc,
    _rosenbrock_grad,
    _rosenbrock_hess,
    _sech2,
    _sigmoid,
    _softmax,
    _spd,
)

__all__ = ["Example", "EXAMPLES", "get", "names"]


@dataclass(frozen=True)
class Example:
    """One gallery function.

    ``args(seed)`` makes a point; ``jacobian(*args)`` returns one analytic
    Jacobian per input in ``wrt``; ``hessian(*args)`` (scalar examples only)
    the analytic Hessian with respect to the first input.
    """

    name: str
    f: Callable
    make_args: Callable[[onp.random.Generator], tuple]
    jacobian: Callable[..., tuple]
    description: str
    wrt: tuple[int, ...] = (0,)
    complex: bool = False
    holomorphic: bool | None = None
    hessian: Callable | None = field(default=None)

    def args(self, seed: int = 0) -> tuple:
        return tuple(self.make_args(onp.random.default_rng(seed)))

    @property
    def scalar(self) -> bool:
        return onp.ndim(self.f(*self.args())) == 0


def _sm(x):
    e = anp.exp(x - anp.max(x))
    return e / anp.sum(e)


EXAMPLES: dict[str, Example] = {}


def _add(ex: Example) -> None:
    EXAMPLES[ex.name] = ex


_add(
    Example(
        "sin",
        lambda x: anp.sin(x),
        lambda r: (r.standard_normal(5),),
        lambda x: (onp.diag(onp.cos(x)),),
        "elementwise sine: diag(cos x)",
    )
)
_add(
    Example(
        "x_exp_x",
        lambda x: x * anp.exp(x),
        lambda r: (r.standard_normal(4),),
        lambda x: (onp.diag((1 + x) * onp.exp(x)),),
        "x·eˣ elementwise: diag((1+x)eˣ)",
    )
)
_add(
    Example(
        "tanh_affine",
        lambda x, W, b: anp.tanh(W @ x + b),
        lambda r: (r.standard_normal(4), r.standard_normal((3, 4)), r.standard_normal(3)),
        lambda x, W, b: (
            _sech2(W @ x + b)[:, None] * W,
            onp.einsum("i,ij,k->ijk", _sech2(W @ x + b), onp.eye(3), x),
            onp.diag(_sech2(W @ x + b)),
        ),
        "a dense layer tanh(Wx+b), three inputs",
        wrt=(0, 1, 2),
    )
)
_add(
    Example(
        "matmul",
        lambda A, B: A @ B,
        lambda r: (r.standard_normal((3, 4)), r.standard_normal((4, 2))),
        _matmul_jacs,
        "matrix product AB: matrix inputs, 4-D Jacobians",
        wrt=(0, 1),
    )
)
_add(
    Example(
        "softmax",
        _sm,
        lambda r: (r.standard_normal(5),),
        lambda x: (onp.diag(_softmax(x)) - onp.outer(_softmax(x), _softmax(x)),),
        "softmax: diag(s) - s sᵀ",
    )
)
_add(
    Example(
        "logsumexp",
        lambda x: anp.log(anp.sum(anp.exp(x))),
        lambda r: (r.standard_normal(6),),
        lambda x: (_softmax(x),),
        "log Σ exp x: gradient softmax(x)",
        hessian=lambda x: onp.diag(_softmax(x)) - onp.outer(_softmax(x), _softmax(x)),
    )
)
_add(
    Example(
        "l2_norm",
        lambda x: anp.sqrt(anp.sum(x**2)),
        lambda r: (r.standard_normal(5),),
        lambda x: (x / onp.linalg.norm(x),),
        "Euclidean norm: x/‖x‖",
        hessian=lambda x: (onp.eye(x.size) - onp.outer(x, x) / (x @ x)) / onp.linalg.norm(x),
    )
)
_add(
    Example(
        "sum_squares",
        lambda x: anp.sum(x**2),
        lambda r: (r.standard_normal((2, 3)),),
        lambda x: (2 * x,),
        "Σ x² of a matrix: 2x",
        hessian=lambda x: 2 * onp.eye(x.size).reshape(x.shape + x.shape),
    )
)
_add(
    Example(
        "row_mean",
        lambda X: anp.mean(X, axis=1),
        lambda r: (r.standard_normal((3, 4)),),
        lambda X: (onp.einsum("ik,l->ikl", onp.eye(3), onp.full(4, 0.25)),),
        "mean over rows' entries: a reduction",
    )
)
_add(
    Example(
        "transpose_reshape",
        lambda X: 2.0 * anp.reshape(X.T, (6,)),
        lambda r: (r.standard_normal((2, 3)),),
        lambda X: (2.0 * onp.eye(6)[[0, 3, 1, 4, 2, 5]].reshape(6, 2, 3),),
        "2·vec(Xᵀ): a scaled permutation",
    )
)
_add(
    Example(
        "broadcast_add",
        lambda x, y: x + y * y,
        lambda r: (r.standard_normal((3, 1)), r.standard_normal((1, 4))),
        lambda x, y: (
            onp.einsum("ik,j->ijk", onp.eye(3), onp.ones(4))[..., None],
            onp.einsum("jl,i->ijl", onp.diag(2 * y[0]), onp.ones(3))[:, :, None, :],
        ),
        "x + y² with broadcasting (3,1)+(1,4)",
        wrt=(0, 1),
    )
)
_add(
    Example(
        "outer",
        lambda x, y: anp.outer(x, y),
        lambda r: (r.standard_normal(3), r.standard_normal(2)),
        lambda x, y: (
            onp.einsum("ik,j->ijk", onp.eye(3), y),
            onp.einsum("i,jk->ijk", x, onp.eye(2)),
        ),
        "outer product x yᵀ",
        wrt=(0, 1),
    )
)
_add(
    Example(
        "logdet",
        lambda X: anp.linalg.slogdet(X)[1],
        lambda r: (_spd(r, 3),),
        _logdet_jac,
        "log|det X| of a matrix: X⁻ᵀ",
    )
)
_add(
    Example(
        "quadratic_form",
        lambda x, A: x @ A @ x,
        lambda r: (r.standard_normal(4), r.standard_normal((4, 4))),
        lambda x, A: ((A + A.T) @ x, onp.outer(x, x)),
        "xᵀAx: (A+Aᵀ)x and xxᵀ",
        wrt=(0, 1),
        hessian=lambda x, A: A + A.T,
    )
)
_add(
    Example(
        "rosenbrock",
        lambda x: anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
        lambda r: (r.uniform(-1.5, 1.5, 4),),
        lambda x: (_rosenbrock_grad(x),),
        "the Rosenbrock valley",
        hessian=_rosenbrock_hess,
    )
)
_add(
    Example(
        "cumsum",
        lambda x: anp.cumsum(x),
        lambda r: (r.standard_normal(5),),
        lambda x: (onp.tril(onp.ones((5, 5))),),
        "running sum: lower-triangular ones",
    )
)
_add(
    Example(
        "prod",
        lambda x: anp.prod(x),
        lambda r: (r.uniform(0.5, 2.0, 4),),
        lambda x: (onp.prod(x) / x,),
        "product of entries: Π/xᵢ",
    )
)
_add(
    Example(
        "polar",
        lambda p: anp.array([p[0] * anp.cos(p[1]), p[0] * anp.sin(p[1])]),
        lambda r: (onp.array([1.5, 0.7]),),
        lambda p: (
            onp.array(
                [[onp.cos(p[1]), -p[0] * onp.sin(p[1])], [onp.sin(p[1]), p[0] * onp.cos(p[1])]]
            ),
        ),
        "polar to Cartesian coordinates",
    )
)
_add(
    Example(
        "logistic_loss",
        lambda w, X, t: (
            -anp.mean(
                t * anp.log(1 / (1 + anp.exp(-X @ w)))
                + (1 - t) * anp.log(1 - 1 / (1 + anp.exp(-X @ w)))
            )
        ),
        lambda r: (r.standard_normal(3), r.standard_normal((8, 3)), (r.random(8) > 0.5) * 1.0),
        lambda w, X, t: (X.T @ (_sigmoid(X @ w) - t) / 8,),
        "logistic regression loss; data X and labels t held fixed",
    )
)
_add(
    Example(
        "cube_holomorphic",
        lambda z: z**3,
        lambda r: (_randc(r, 3),),
        lambda z: (_holo_real_jac(3 * z**2),),
        "z³, holomorphic: dz = 3z²",
        complex=True,
        holomorphic=True,
    )
)
_add(
    Example(
        "exp_times_z",
        lambda z: anp.exp(z) * z,
        lambda r: (_randc(r, 3),),
        lambda z: (_holo_real_jac(onp.exp(z) * (1 + z)),),
        "z·eᶻ, holomorphic",
        complex=True,
        holomorphic=True,
    )
)
_add(
    Example(
        "conj",
        lambda z: anp.conj(z),
        lambda r: (_randc(r, 3),),
        lambda z: (_complex_blocks(onp.eye(3), onp.zeros((3, 3)), onp.zeros((3, 3)), -onp.eye(3)),),
        "complex conjugate: not holomorphic",
        complex=True,
        holomorphic=False,
    )
)
_add(
    Example(
        "z_abs2",
        lambda z: z * anp.abs(z) ** 2,
        lambda r: (_randc(r, 2),),
        lambda z: (
            _complex_blocks(
                onp.diag(3 * z.real**2 + z.imag**2),
                onp.diag(2 * z.real * z.imag),
                onp.diag(2 * z.real * z.imag),
                onp.diag(z.real**2 + 3 * z.imag**2),
            ),
        ),
        "z|z|²: not holomorphic",
        complex=True,
        holomorphic=False,
    )
)
_add(
    Example(
        "phase",
        lambda x: anp.exp(1j * x),
        lambda r: (r.standard_normal(3),),
        lambda x: (onp.vstack([onp.diag(-onp.sin(x)), onp.diag(onp.cos(x))]),),
        "real -> complex: e^{ix}",
        complex=True,
    )
)
_add(
    Example(
        "abs2",
        lambda z: anp.abs(z) ** 2,
        lambda r: (_randc(r, 3),),
        lambda z: (onp.hstack([onp.diag(2 * z.real), onp.diag(2 * z.imag)]),),
        "complex -> real: |z|² elementwise",
        complex=True,
        holomorphic=False,
    )
)


def get(name: str) -> Example:
    """The example called ``name`` (a KeyError lists the names)."""
    try:
        return EXAMPLES[name]
    except KeyError:
        raise KeyError(f"no gallery example {name!r}; choose one of {names()}") from None


def names() -> list[str]:
    return list(EXAMPLES)
