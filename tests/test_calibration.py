"""The FD error estimate against the true error (AD as truth) over many functions:
it must cover the true error (times the checker's safety factor) on every entry,
and stay within ~10x of it (sharp enough to see bugs 10x the FD error)."""

import warnings

import autograd.numpy as anp
import numpy as np
import pytest

import gradexplorer as gx
from gradexplorer import gallery
from gradexplorer.check.judging import FD_SAFETY


def _cases():
    out = []
    for ex in gallery.EXAMPLES.values():
        if ex.complex:
            continue
        for seed in range(3):
            out.append((ex.name, ex.f, ex.args(seed), ex.wrt[0]))
    scale = {
        "huge_outputs": (lambda x: 1e13 * anp.sin(x), np.linspace(0.1, 2, 5)),
        "huge_inputs": (lambda x: anp.sin(x / 1e8) * x, np.linspace(1e8, 3e8, 4)),
        "tiny_outputs": (lambda x: 1e-8 * anp.sin(x), np.linspace(0.1, 2, 5)),
        "tiny_inputs": (lambda x: anp.sin(x * 1e8) * 1e-8, np.linspace(1e-9, 3e-8, 4)),
        "steep": (lambda x: anp.tanh(40 * x), np.linspace(-0.05, 0.05, 5)),
        "exp_large": (lambda x: anp.exp(20 * x), np.linspace(0, 1, 4)),
        "cancellation": (lambda x: (x + 1e6) ** 2 - 1e12, np.linspace(-1, 1, 3)),
        "mixed_scale": (lambda x: anp.log(x) + anp.sin(x), np.array([1e-6, 1e-3, 1.0, 1e3, 1e6])),
        "exp700": (lambda x: anp.exp(x), np.array([700.0, 650.0])),
        "oscillation": (lambda x: anp.sin(50 * x), np.linspace(0, 1, 6)),
        "poly": (lambda x: x**7 - 3 * x**5, np.linspace(-2, 2, 6)),
        "runge": (lambda x: 1 / (1 + 25 * x**2), np.linspace(-1, 1, 7)),
    }
    for name, (f, x) in scale.items():
        out.append((name, f, (x,), 0))
    rng = np.random.default_rng(0)
    ops = [anp.sin, anp.cos, anp.tanh, anp.exp, lambda v: v * v, lambda v: anp.log1p(v * v),
           lambda v: anp.sqrt(1 + v * v), lambda v: 1 / (1 + v * v)]  # fmt: skip
    for t in range(30):
        seq = [ops[i] for i in rng.integers(0, len(ops), 4)]
        W = rng.standard_normal((4, 4)) * rng.choice([0.1, 1, 3])

        def f(x, seq=seq, W=W):
            v = W @ x
            for o in seq:
                v = o(v)
            return v

        out.append((f"composition{t}", f, (rng.standard_normal(4) * rng.choice([0.01, 1, 10]),), 0))
    return out


CASES = _cases()


def test_estimates_cover_the_truth_and_stay_sharp():
    ratios, misses = [], []
    for name, f, args, wrt in CASES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            A = gx.real_jacobian(f, wrt)(*args)
            r = gx.numeric_jacobian(f, *args, wrt=wrt)
        N, E = r.jacobian.reshape(A.shape), r.error.reshape(A.shape)
        ok = np.isfinite(E)
        err = np.abs(N - A)[ok]
        # covered: the checker allows FD_SAFETY x the estimate (plus AD round-off)
        bad = err > FD_SAFETY * E[ok] + 1e-15 * np.abs(A[ok])
        misses += [name] * int(bad.sum())
        moving = ok & (np.abs(A) > 0)
        if moving.any():
            true = np.sqrt(np.mean((N - A)[moving] ** 2))
            if true > 0:
                ratios.append(np.median(E[moving]) / true)
    assert not misses, misses
    # within ~10x: the median over functions of (median estimate / rms true error)
    assert 1.0 <= np.median(ratios) <= 10.0, np.median(ratios)


@pytest.mark.parametrize("x", [np.array([0.3]), np.array([2.0, -1.0])])
def test_unresolvable_is_never_reported_as_a_number(x):
    # an oscillation far faster than any step: no estimate, and the reason
    r = gx.numeric_jacobian(lambda v: anp.sin(1e9 * v), x)
    assert np.all(np.isinf(np.diag(np.atleast_2d(r.error)))) or np.all(
        np.abs(np.diag(np.atleast_2d(r.jacobian)) - 1e9 * np.cos(1e9 * x))
        <= 2 * np.diag(np.atleast_2d(r.error))
    )
