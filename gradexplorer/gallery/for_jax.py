"""The gallery written for jax: the same functions, points and hand-derived
Jacobians as :mod:`.examples`, on jax arrays (importing this imports jax).

Points are in jax's default precision (float32 unless 64-bit mode is on), as
users make them; the checks promote them to float64 (exactly: same point).

>>> ex = examples()["softmax"]
>>> str(ex.args()[0].dtype)
'float32'
"""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as onp

from .examples import EXAMPLES, Example

__all__ = ["examples", "FUNCTIONS"]


def _logistic(w, X, t):
    s = 1 / (1 + jnp.exp(-X @ w))
    return -jnp.mean(t * jnp.log(s) + (1 - t) * jnp.log(1 - s))


#: Each gallery function, written with jax.numpy.
FUNCTIONS = {
    "sin": lambda x: jnp.sin(x),
    "x_exp_x": lambda x: x * jnp.exp(x),
    "tanh_affine": lambda x, W, b: jnp.tanh(W @ x + b),
    "matmul": lambda A, B: A @ B,
    "softmax": lambda x: jax.nn.softmax(x),
    "logsumexp": lambda x: jax.nn.logsumexp(x),
    "l2_norm": lambda x: jnp.sqrt(jnp.sum(x**2)),
    "sum_squares": lambda x: jnp.sum(x**2),
    "row_mean": lambda X: jnp.mean(X, axis=1),
    "transpose_reshape": lambda X: 2.0 * jnp.reshape(X.T, (6,)),
    "broadcast_add": lambda x, y: x + y * y,
    "outer": lambda x, y: jnp.outer(x, y),
    "logdet": lambda X: jnp.linalg.slogdet(X)[1],
    "quadratic_form": lambda x, A: x @ A @ x,
    "rosenbrock": lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
    "cumsum": lambda x: jnp.cumsum(x),
    "prod": lambda x: jnp.prod(x),
    "polar": lambda p: jnp.stack([p[0] * jnp.cos(p[1]), p[0] * jnp.sin(p[1])]),
    "logistic_loss": _logistic,
    "cube_holomorphic": lambda z: z**3,
    "exp_times_z": lambda z: jnp.exp(z) * z,
    "conj": lambda z: jnp.conj(z),
    "z_abs2": lambda z: z * jnp.abs(z) ** 2,
    "phase": lambda x: jnp.exp(1j * x),
    "abs2": lambda z: jnp.abs(z) ** 2,
}


def _arrays(make):
    def args(r):
        return tuple(jnp.asarray(onp.asarray(a, onp.result_type(a, float))) for a in make(r))

    return args


def _numpy(jac):
    """The hand derivation on float64 copies (exact for float32 points)."""

    def on_numpy(*args):
        return jac(*[onp.asarray(a).astype(onp.result_type(onp.asarray(a), float)) for a in args])

    return on_numpy


def _named(fun, name):
    fun.__name__ = fun.__qualname__ = name
    return fun


def examples() -> dict[str, Example]:
    """The gallery on jax arrays, by name."""
    out = {}
    for name, ex in EXAMPLES.items():
        out[name] = replace(
            ex,
            f=_named(FUNCTIONS[name], name),
            make_args=_arrays(ex.make_args),
            jacobian=_numpy(ex.jacobian),
            hessian=None if ex.hessian is None else _numpy(ex.hessian),
        )
    return out
