"""Hand-derived derivatives used by the gallery (plain numpy; never AD)."""

from __future__ import annotations

import numpy as onp


def _sech2(u):
    return 1.0 / onp.cosh(u) ** 2


def _softmax(x):
    e = onp.exp(x - x.max())
    return e / e.sum()


def _complex_blocks(d_re_x_re, d_re_x_im, d_im_x_re, d_im_x_im):
    return onp.block([[d_re_x_re, d_re_x_im], [d_im_x_re, d_im_x_im]])


def _holo_real_jac(dz):
    """Real Jacobian of a holomorphic elementwise map with derivative dz."""
    D = onp.diag(dz)
    return _complex_blocks(D.real, -D.imag, D.imag, D.real)


def _randc(rng, n):
    return rng.standard_normal(n) + 1j * rng.standard_normal(n)


def _spd(rng, n):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * onp.eye(n)


def _matmul_jacs(A, B):
    m, k = A.shape
    _, n = B.shape
    JA = onp.einsum("ik,lj->ijkl", onp.eye(m), B)  # d(AB)_ij / dA_kl = δ_ik B_lj
    JB = onp.einsum("ik,jl->ijkl", A, onp.eye(n))  # d(AB)_ij / dB_kl = A_ik δ_jl
    return JA, JB


def _rosenbrock_grad(x):
    g = onp.zeros_like(x)
    g[:-1] = -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


def _rosenbrock_hess(x):
    n = x.size
    H = onp.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        H[i, i + 1] += -400 * x[i]
        H[i + 1, i] += -400 * x[i]
        H[i + 1, i + 1] += 200
    return H


def _logdet_jac(X):
    return (onp.linalg.inv(X).T,)


def _sigmoid(u):
    return 1 / (1 + onp.exp(-u))
