"""The slope across a staircase fitted through many points (``check/slopefit.py``) and
the ladder of spans it is fitted over (``check/stairs.py``), on code that rounds an
intermediate to float16, bfloat16 or float32 and goes on in float64.

Right rules must not fail where a short span sits within a few stairs of a tall
staircase (many interleaved terms), where a wide one is no cubic (``sin(20·x)``
across periods), or beside a smooth float64 term; wrong rules off by 3% must fail.
An adversarial review (helper 26, 2026-11-29) found the first two in the first
version; each case here is one of its kinds, rewritten.
"""

from __future__ import annotations

import autograd.numpy as anp
import numpy as np
import pytest
from autograd.extend import defvjp, primitive

import gradexplorer as gx

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = jax.numpy
from gradexplorer.gallery.mixed_torch import with_rule  # noqa: E402


def _rng(seed):
    return np.random.default_rng(seed)


def _t(a):
    return torch.tensor(a, dtype=torch.float64)


def _cast(z, dtype):
    return z.to(dtype).double()


def _sin_cast_loss(seed, k=20, dtype=torch.bfloat16):
    """sum(bf16(sin(k·x@W))²): a wide span covers several periods."""
    W, x = _t(_rng(seed).normal(size=(4, 12))), _t(_rng(seed + 50).normal(size=4))
    return lambda x: (_cast(torch.sin(k * (x @ W)), dtype) ** 2).sum(), x


def _tiny_x_float32(seed):
    """exp(3·f32(sin(1000·x))) at x ~ 1e-3 (autograd): periods of 6e-3."""
    x = 1e-3 * _rng(seed).normal(size=3)
    return lambda x: anp.exp(3 * anp.sin(1000 * x).astype(np.float32).astype(np.float64)), x


def _interleaved_loss(seed):
    """sum(f16(sin(x@W))²), 20 terms: the first span sits within a tall term's stairs."""
    W, x = _t(_rng(seed).normal(size=(6, 20))), _t(_rng(seed + 50).normal(size=6))
    return lambda x: (_cast(torch.sin(x @ W), torch.float16) ** 2).sum(), x


def _fifty_bf16_terms(seed):
    """sum(log(1 + bf16(x@W)²)), 40 terms of 50 inputs."""
    W, x = _t(_rng(seed).normal(size=(50, 40)) / 7), _t(_rng(seed + 50).normal(size=50))
    return lambda x: torch.log(1 + _cast(x @ W, torch.bfloat16) ** 2).sum(), x


def _beside_a_smooth_term(seed):
    """x + exp(f16(sin(x))) (autograd): stairs ~1e-3 wide beside x's slope."""
    x = _rng(seed).normal(size=3)
    return lambda x: x + anp.exp(anp.sin(x).astype(np.float16).astype(np.float64)), x


RIGHT = {
    "sum(bf16(sin(20x@W))^2)": _sin_cast_loss,
    "exp(3 f32(sin(1000x))), x ~ 1e-3": _tiny_x_float32,
    "sum(f16(sin(x@W))^2), 20 terms": _interleaved_loss,
    "x + exp(f16(sin(x)))": _beside_a_smooth_term,
}


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("name", RIGHT)
def test_right_rules_behind_casts_are_no_false_alarm(name, mode):
    for seed in range(1, 5):
        f, x = RIGHT[name](seed)
        r = gx.check_grads(f, x, mode=mode, rng=seed)
        assert r.outcome is not gx.Outcome.FAILED, (seed, str(r))


def test_fifty_interleaved_bfloat16_terms_are_no_false_alarm():
    """A short span there was off by 3x its scatter's error (-2.6 where the slope is
    -0.39); the widest span whose scatter is the stairs' is not."""
    for seed in (1, 2, 4):
        f, x = _fifty_bf16_terms(seed)
        r = gx.check_grads(f, x, mode="full", rng=seed)
        assert r.outcome is not gx.Outcome.FAILED, (seed, str(r))


# ------------------------------------------------------------------ wrong rules, 3% off


def _layer_off(dtype, scale=1.03):
    """sum(cast(tanh(x@W))²) whose tanh rule is off by 3% everywhere."""
    tanh = with_rule(torch.tanh, lambda z, g: g * (1 - torch.tanh(z) ** 2) * scale)

    def build(seed):
        W, x = _t(_rng(seed).normal(size=(5, 12))), _t(_rng(seed + 50).normal(size=5))
        return lambda x: (_cast(tanh(x @ W), dtype) ** 2).sum(), x, set(range(5))

    return build


def _jax_entry_off(seed, scale=1.03):
    """sum(exp(f16(sin(x)))) in jax, sin's rule off by 3% at x[0]."""

    @jax.custom_vjp
    def sin(z):
        return jnp.sin(z)

    sin.defvjp(
        lambda z: (jnp.sin(z), z),
        lambda z, g: (g * jnp.cos(z) * jnp.ones_like(z).at[0].set(scale),),
    )
    x = jnp.array(_rng(seed).normal(size=3))
    return lambda x: jnp.sum(jnp.exp(sin(x).astype(jnp.float16).astype(jnp.float64))), x, {0}


def _autograd_entry_off(seed, scale=1.03):
    """sum(exp(4·f32(sin(x)))) in autograd, sin's rule off by 3% at x[0]."""

    @primitive
    def sin(z):
        return np.sin(z)

    defvjp(sin, lambda ans, z: lambda g: g * np.cos(z) * np.r_[scale, np.ones(z.size - 1)])
    x = _rng(seed).normal(size=3)
    return lambda x: anp.sum(anp.exp(4 * sin(x).astype(np.float32).astype(np.float64))), x, {0}


WRONG = {
    "layer 3% off, float16": _layer_off(torch.float16),
    "layer 3% off, float32": _layer_off(torch.float32),
    "jax entry 3% off, float16": _jax_entry_off,
    "autograd entry 3% off, float32": _autograd_entry_off,
}


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("name", WRONG)
def test_a_rule_three_percent_off_behind_a_cast_is_found(name, mode):
    """A central difference across the stairs knew its slope to a stair's height over
    its step, 2-7%: these passed 30 of 32 checks before 2026-11-29."""
    for seed in range(1, 5):
        f, x, wrong = WRONG[name](seed)
        r = gx.check_grads(f, x, mode=mode, rng=seed)
        assert r.outcome is gx.Outcome.FAILED, (seed, str(r))
        assert {e.col for e in r.mismatches} <= wrong, (seed, str(r))
