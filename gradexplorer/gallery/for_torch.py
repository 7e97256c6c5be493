"""The gallery written for torch: the same functions, points and hand-derived
Jacobians as :mod:`.examples`, on tensors (importing this module imports torch).

>>> ex = examples()["softmax"]
>>> type(ex.args()[0]).__name__
'Tensor'
"""

from __future__ import annotations

from dataclasses import replace

import numpy as onp
import torch

from .examples import EXAMPLES, Example

__all__ = ["examples", "FUNCTIONS"]


def _polar(p):
    return torch.stack([p[0] * torch.cos(p[1]), p[0] * torch.sin(p[1])])


def _logistic(w, X, t):
    s = 1 / (1 + torch.exp(-X @ w))
    return -torch.mean(t * torch.log(s) + (1 - t) * torch.log(1 - s))


#: Each gallery function, written with torch.
FUNCTIONS = {
    "sin": lambda x: torch.sin(x),
    "x_exp_x": lambda x: x * torch.exp(x),
    "tanh_affine": lambda x, W, b: torch.tanh(W @ x + b),
    "matmul": lambda A, B: A @ B,
    "softmax": lambda x: torch.softmax(x, dim=0),
    "logsumexp": lambda x: torch.logsumexp(x, dim=0),
    "l2_norm": lambda x: torch.sqrt(torch.sum(x**2)),
    "sum_squares": lambda x: torch.sum(x**2),
    "row_mean": lambda X: torch.mean(X, dim=1),
    "transpose_reshape": lambda X: 2.0 * torch.reshape(X.T, (6,)),
    "broadcast_add": lambda x, y: x + y * y,
    "outer": lambda x, y: torch.outer(x, y),
    "logdet": lambda X: torch.linalg.slogdet(X)[1],
    "quadratic_form": lambda x, A: x @ A @ x,
    "rosenbrock": lambda x: torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
    "cumsum": lambda x: torch.cumsum(x, dim=0),
    "prod": lambda x: torch.prod(x),
    "polar": _polar,
    "logistic_loss": _logistic,
    "cube_holomorphic": lambda z: z**3,
    "exp_times_z": lambda z: torch.exp(z) * z,
    "conj": lambda z: torch.conj(z),
    "z_abs2": lambda z: z * torch.abs(z) ** 2,
    "phase": lambda x: torch.exp(1j * x),
    "abs2": lambda z: torch.abs(z) ** 2,
}


def _tensors(make):
    return lambda r: tuple(
        torch.from_numpy(onp.array(a, dtype=onp.result_type(a, float))) for a in make(r)
    )


def _numpy(jac):
    return lambda *args: jac(
        *[a.detach().numpy() if isinstance(a, torch.Tensor) else a for a in args]
    )


def _named(fun, name):
    fun.__name__ = fun.__qualname__ = name
    return fun


def examples() -> dict[str, Example]:
    """The gallery on tensors (float64 and complex128), by name."""
    out = {}
    for name, ex in EXAMPLES.items():
        out[name] = replace(
            ex,
            f=_named(FUNCTIONS[name], name),
            make_args=_tensors(ex.make_args),
            jacobian=_numpy(ex.jacobian),
            hessian=None if ex.hessian is None else _numpy(ex.hessian),
        )
    return out
