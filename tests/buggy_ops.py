"""Functions whose custom primitives have known derivative bugs, at marked lines.

The line that *calls* the wrong operation carries a ``# CALL:<name>`` marker; the
tests find the line numbers from these markers, not by hard-coding them.
"""

import autograd.numpy as anp
import numpy as np

import gradexplorer as gx

rng = np.random.default_rng(7)
A = rng.standard_normal((4, 4))


@gx.primitive
def scaled_exp(x):
    return np.exp(x)


gx.defvjp(scaled_exp, lambda ans, x: lambda g: 2.0 * g * ans)  # twice too big


@gx.primitive
def mix(x):
    return A @ x


gx.defvjp(mix, lambda ans, x: lambda g: A @ g)  # transposed: should be A.T @ g


@gx.primitive
def square(z):
    return z**2


gx.defvjp(square, lambda ans, z: lambda g: g * np.conj(2 * z))  # extra conjugate


@gx.primitive
def good_softplus(x):
    return np.logaddexp(0.0, x)


gx.defvjp(good_softplus, lambda ans, x: lambda g: g / (1 + np.exp(-x)))


def uses_scaled(x):
    y = anp.sin(x)
    return anp.sum(scaled_exp(y) * x)  # CALL:scaled


def uses_mix(x):
    h = anp.tanh(x)
    return mix(h) + 1.0  # CALL:mix


def uses_square(z):
    w = z * (1 + 0.5j)
    return square(w)  # CALL:square


def right_function(x):
    return anp.sum(good_softplus(anp.tanh(A @ x)) ** 2)


def deep_function(x):
    """About 30 operations, one of them wrong."""
    h = anp.tanh(A @ x)
    h = h * 0.5 + anp.sin(h)
    h = anp.exp(-(h**2)) + anp.cos(h) * h
    h = good_softplus(h) - 0.1 * h
    h = anp.sqrt(h**2 + 1.0) * anp.log1p(anp.abs(h) + 0.1)
    h = mix(h)  # CALL:deep
    h = anp.tanh(h) + h / (1.0 + h**2)
    h = anp.sum(h**3) + anp.prod(anp.cos(h))
    return h


def mutates_input(x):
    """Writes into its argument: the CLI must refuse it cleanly."""
    x[0] = 0.0
    return anp.sin(x)
