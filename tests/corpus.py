"""Deliberately wrong derivatives, each with the exact set of entries it breaks.

Every case builds a custom primitive whose VJP (or JVP, or second derivative)
has a known bug. ``expected`` lists the (row, col) entries of the report's
2-D matrix that are wrong, worked out from the bug, not from the checker.
"""

from dataclasses import dataclass, field

import autograd.numpy as anp
import numpy as np

import gradexplorer as gx

rng = np.random.default_rng(42)


@dataclass
class Case:
    name: str
    f: object
    args: tuple
    expected: set
    order: int = 1
    kw: dict = field(default_factory=dict)


def _prim(fun, vjp, jvp=None):
    p = gx.primitive(fun)
    gx.defvjp(p, vjp)
    if jvp is not None:
        gx.defjvp(p, jvp)
    return p


def _all(m, n):
    return {(i, j) for i in range(m) for j in range(n)}


def _diag(n):
    return {(i, i) for i in range(n)}


CASES = []

# scaled: every entry of a matrix-vector product is twice too big
W = rng.standard_normal((3, 4))
scaled = _prim(lambda x: W @ x, lambda ans, x: lambda g: 2 * (W.T @ g))
CASES.append(Case("scaled", scaled, (rng.standard_normal(4),), _all(3, 4)))

# transposed: A @ g instead of A.T @ g; wrong wherever A differs from its transpose
A = rng.standard_normal((4, 4))
transposed = _prim(lambda x: A @ x, lambda ans, x: lambda g: A @ g)
CASES.append(
    Case(
        "transposed",
        transposed,
        (rng.standard_normal(4),),
        {(i, j) for i in range(4) for j in range(4) if i != j},
    )
)

# sign flipped
sign = _prim(lambda x: np.sin(x), lambda ans, x: lambda g: -g * np.cos(x))
CASES.append(Case("sign_flipped", sign, (rng.uniform(0.2, 1.2, 5),), _diag(5)))


# a single entry off by 1%
def _one_entry_vjp(ans, x):
    def vjp(g):
        out = g * np.exp(x)
        out[2] *= 1.01
        return out

    return vjp


one_entry = _prim(lambda x: np.exp(x), _one_entry_vjp)
CASES.append(Case("single_entry", one_entry, (rng.standard_normal(6),), {(2, 2)}))


# 1e-6 relative bug in one entry of a 1000-input gradient
def _tiny_rel_vjp(ans, x):
    def vjp(g):
        out = g * np.cos(x)
        out[537] *= 1 + 1e-6
        return out

    return vjp


tiny_rel = _prim(lambda x: np.sin(x), _tiny_rel_vjp)
CASES.append(
    Case(
        "relative_1e-6_in_1000",
        lambda x: anp.sum(tiny_rel(x)),
        (rng.uniform(-1, 1, 1000),),
        {(0, 537)},
    )
)


# a 10% bug at tiny scale (outputs ~1e-8)
def _tiny_scale_vjp(ans, x):
    def vjp(g):
        out = 1e-8 * g * np.cos(x)
        out[1] *= 1.1
        return out

    return vjp


tiny_scale = _prim(lambda x: 1e-8 * np.sin(x), _tiny_scale_vjp)
CASES.append(Case("tiny_scale_10pct", tiny_scale, (rng.standard_normal(4),), {(1, 1)}))

# second order only: cube's VJP calls a primitive 3x^2 whose own VJP is wrong (3x not 6x)
three_sq = _prim(lambda x: 3 * x**2, lambda ans, x: lambda g: g * 3 * x)
cube = _prim(lambda x: x**3, lambda ans, x: lambda g: g * three_sq(x))
CASES.append(
    Case(
        "second_order_only",
        lambda x: anp.sum(cube(x)),
        (rng.uniform(0.5, 1.5, 3),),
        _diag(3),
        order=2,
    )
)

# complex: an extra conjugate in a holomorphic VJP (autograd's rule is g * f'(z))
square_extra_conj = _prim(lambda z: z**2, lambda ans, z: lambda g: g * np.conj(2 * z))
z0 = rng.standard_normal(3) + 1j * rng.standard_normal(3)
# realified layout: rows [Re y; Im y], cols [Re z; Im z]; conj flips the sign of Im(2z),
# which sits on the diagonals of the two off-diagonal blocks (dRe y/dIm z, dIm y/dRe z)
_blocks = {(i, 3 + i) for i in range(3)} | {(3 + i, i) for i in range(3)}
CASES.append(Case("extra_conjugate", square_extra_conj, (z0,), _blocks))

# complex: a missing conjugate in conj's VJP (the right one is conj(g))
conj_missing = _prim(lambda z: np.conj(z), lambda ans, z: lambda g: g)
CASES.append(
    Case("missing_conjugate", conj_missing, (z0.copy(),), {(3 + i, 3 + i) for i in range(3)})
)

# forward mode only: the JVP is wrong, the VJP right
fwd_bug = _prim(
    lambda x: np.tanh(x), lambda ans, x: lambda g: g * (1 - ans**2), lambda g, ans, x: g * (1 - ans)
)
CASES.append(Case("forward_mode_only", fwd_bug, (rng.uniform(0.3, 1.0, 3),), _diag(3)))

# several inputs: the bug sits only in the second input's block
B = rng.standard_normal((2, 3))
two_inputs = _prim(lambda x, y: B @ x + 2 * y, lambda ans, x, y: lambda g: B.T @ g)
gx.defvjp(two_inputs, lambda ans, x, y: lambda g: B.T @ g, lambda ans, x, y: lambda g: 3 * g)
CASES.append(
    Case(
        "second_input_block",
        two_inputs,
        (rng.standard_normal(3), rng.standard_normal(2)),
        {(0, 3), (1, 4)},
    )
)
