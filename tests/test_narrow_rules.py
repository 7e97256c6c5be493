"""Rules that compute in a narrow format (mixed precision: torch's ``x.half()``, jax's
``x.astype(jnp.bfloat16)``) inside a float64 check.

Such a rule's values are float16 / bfloat16 / float32 numbers, so it disagrees with
itself (``vjp(a·u + b·v)`` against ``a·vjp(u) + b·vjp(v)``) by that format's rounding.
It was called "not linear in its cotangent" (FAILED with every entry wrong) once
that rounding passed 1e-4; now the format is read from its values at random cotangents
(:func:`gradexplorer.check.rules.rule_format`) and the rule is judged to that format's
precision. Rules whose values are simple numbers whatever the cotangent (1.0, ±2,
``round(3g)``) are no format's, and still fail.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradexplorer as gx
from gradexplorer.check.rules import rule_format

torch = pytest.importorskip("torch")
from gradexplorer.gallery.mixed_torch import gelu_layer, scaled_layer, sin3  # noqa: E402

NARROW = ["float16", "bfloat16", "float32"]


def _torch_cases(dt):
    W = torch.from_numpy(np.random.default_rng(0).standard_normal((12, 6)))
    return {
        "sin(3x)": lambda x: torch.sin(3 * x.to(dt)).double(),
        "sin(3x) in float32 after the read": lambda x: torch.sin(3 * x.to(dt).float()).double(),
        "tanh layer": lambda x: torch.tanh(x.to(dt) @ W.to(dt)).double(),
        "softmax": lambda x: torch.softmax(x.to(dt), -1).double(),
    }


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("dtype", NARROW)
def test_torch_autograd_in_a_narrow_format_is_no_false_alarm(dtype, mode):
    for name, f in _torch_cases(getattr(torch, dtype)).items():
        for seed in range(2):
            x = torch.randn(
                3, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)
            )
            r = gx.check_grads(f, x, mode=mode, rng=seed)
            assert r.outcome is not gx.Outcome.FAILED, (name, str(r))
            assert not any("not linear" in n for n in r.notes), (name, r.notes)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_float16_backward_off_by_3_percent_is_found_at_its_entry(seed):
    x = torch.randn(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    right = gx.check_grads(sin3(dtype=torch.float16), x, rng=seed)
    assert right.passed, str(right)
    assert any("all float16 numbers" in n for n in right.notes), right.notes
    wrong = gx.check_grads(sin3(0.03, torch.float16), x, rng=seed)
    assert wrong.outcome is gx.Outcome.FAILED, str(wrong)
    assert {e.in_index for e in wrong.mismatches} == {(1, 0)}, str(wrong)


def test_a_bfloat16_backward_is_judged_to_bfloat16s_precision():
    x = torch.randn(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    right = gx.check_grads(sin3(dtype=torch.bfloat16), x, rng=0)
    assert right.outcome is not gx.Outcome.FAILED, str(right)
    wrong = gx.check_grads(sin3(0.3, torch.bfloat16), x, rng=0)
    assert {e.in_index for e in wrong.mismatches} == {(1, 0)}, str(wrong)


def test_jax_in_a_narrow_format_is_no_false_alarm():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    W = np.random.default_rng(0).standard_normal((16, 8))
    with jax.enable_x64(True):
        for dt in (jnp.float16, jnp.bfloat16):
            cases = [
                lambda x: jnp.sin(3 * x.astype(dt)).astype(jnp.float64),  # noqa: B023
                lambda x: jnp.tanh(x.astype(dt) @ jnp.asarray(W, dt)).astype(jnp.float64),  # noqa: B023
            ]
            for f in cases:
                x = jnp.asarray(np.random.default_rng(1).standard_normal((2, 16)))
                for mode in ("full", "fast"):
                    r = gx.check_grads(f, x, mode=mode, rng=1)
                    assert r.outcome is not gx.Outcome.FAILED, str(r)


#: rules whose values are simple numbers, whatever the cotangent: (f, its wrong VJP)
IGNORING = {
    "ones": (lambda x: np.sum(x**2), lambda ans, x: lambda g: np.ones_like(x)),
    "sign(g)": (lambda x: x**2, lambda ans, x: lambda g: np.sign(g) * 2.0),
    "round(3g)": (lambda x: 3 * x, lambda ans, x: lambda g: np.round(g * 3)),
    "3g + 1": (lambda x: 3 * x, lambda ans, x: lambda g: g * 3 + 1.0),
}


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("name", list(IGNORING))
def test_simple_valued_rules_are_no_narrow_format(name, mode):
    fn, vjp = IGNORING[name]
    f = gx.primitive(fn)
    gx.defvjp(f, vjp)
    x = np.array([0.5, 1.5, -2.0, 0.25])
    for seed in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert gx.check_grads(f, x, mode=mode, rng=seed).outcome is gx.Outcome.FAILED


def test_the_format_is_read_from_the_rules_values():
    u = np.random.default_rng(0).standard_normal(50)
    pairs = lambda r: ((u, r),)  # noqa: E731
    half = u.astype(np.float16).astype(float)
    assert rule_format(pairs(half), 2.0**-52).name == "float16"
    assert rule_format(pairs(u.astype(np.float32).astype(float)), 2.0**-52).name == "float32"
    assert rule_format(pairs(u), 2.0**-52) is None  # float64's own
    assert rule_format(pairs(half), 2.0**-10) is None  # not coarser than the check's
    assert rule_format(pairs(np.zeros(4)), 2.0**-52) is None  # nothing to read
    # complex values (a JVP's): both parts
    assert rule_format(pairs(half + 1j * half[::-1]), 2.0**-52).name == "float16"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_mixed_precision_loss_is_no_false_alarm(dtype):
    """A float16 model beside a float64 regulariser: the rule's values mix both, so no
    format holds them, yet it disagrees with itself by float16's rounding. f reads x
    partly through float16, so that rounding is its precision (before: "the JVP is not
    linear in its tangent", FAILED in fast mode)."""
    dt = getattr(torch, dtype)
    W = torch.from_numpy(np.random.default_rng(0).standard_normal((12, 6)))

    def loss(x):
        return torch.tanh(x.to(dt) @ W.to(dt)).double().sum() + 1e-3 * (x**2).sum()

    for seed in range(3):
        x = torch.randn(3, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
        for mode in ("full", "fast"):
            r = gx.check_grads(loss, x, mode=mode, rng=seed)
            assert r.outcome is not gx.Outcome.FAILED, str(r)


def test_a_wrong_float16_backward_beside_float64_is_found():
    fn = sin3(0.1, torch.float16)
    x = torch.randn(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    r = gx.check_grads(lambda v: fn(v) + 1e-3 * v**2, x, rng=1)
    assert {e.in_index for e in r.mismatches} == {(1, 0)}, str(r)
    right = sin3(dtype=torch.float16)
    assert gx.check_grads(lambda v: right(v) + 1e-3 * v**2, x, rng=1).passed


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_a_narrow_rule_ignoring_its_cotangent_still_fails(dtype, mode):
    """Its values are float16 numbers at every cotangent, so it "computes in float16";
    yet it fills entries along inputs f does not depend on. Those entries sat on the
    output's float16 stairs and were unresolvable (INCONCLUSIVE in full mode): f never
    moved there over steps far wider than any stair, so the derivative there is 0."""
    if dtype == "bfloat16":
        dtype = pytest.importorskip("ml_dtypes").bfloat16

    @gx.primitive
    def softsign(x):
        narrow = x.astype(dtype)
        return (narrow / (1 + np.abs(narrow))).astype(np.float64)

    def ignoring(ans, x):
        d = (1 / (1 + np.abs(x.astype(dtype))) ** 2).astype(dtype).astype(np.float64)
        return lambda g: d

    gx.defvjp(softsign, ignoring)
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal(10)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = gx.check_grads(softsign, x, mode=mode, rng=seed)
        assert r.outcome is gx.Outcome.FAILED, str(r)


@pytest.mark.parametrize("mode", ["full", "fast"])
def test_a_float64_input_beside_one_read_in_float16_keeps_float64s_precision(mode):
    """x's derivatives compute partly in float16 and earn its rounding; w's are exact
    (y = h·w) and are judged as exactly as without x. Before, w's were judged to
    float16's ~1e-3 too, and a rule off by 1e-4 at w[2] passed in 8 of 8 checks."""
    for seed in range(2):
        x = torch.randn(3, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
        w = torch.randn(4, dtype=torch.float64, generator=torch.Generator().manual_seed(50 + seed))
        right = gx.check_grads(scaled_layer(0.0), x, w, mode=mode, rng=seed)
        assert right.outcome is not gx.Outcome.FAILED, str(right)
        wrong = gx.check_grads(scaled_layer(1e-3), x, w, mode=mode, rng=seed)
        assert wrong.outcome is gx.Outcome.FAILED, str(wrong)
        assert {e.wrt for e in wrong.mismatches} == {1}, str(wrong)
        assert {e.in_index for e in wrong.mismatches} == {(2,)}, str(wrong)


def test_wrong_entries_on_a_float16_outputs_stairs_are_judged():
    """A float16 output moves in its ulps, stairs the finite differences span only a
    few of where the slope is small. Those are a smooth function's rounding, not
    ``floor``'s stairs: the slope across them is its derivative, with the stairs in
    the FD error. Before, only the wrong entries (doubled) were set aside as
    unresolvable on stairs, and the check passed."""
    for seed in range(3):
        x = torch.randn(4, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
        right = gx.check_grads(gelu_layer(0.0), x, rng=seed)
        assert right.outcome is not gx.Outcome.FAILED, str(right)
        wrong = gx.check_grads(gelu_layer(1.0), x, rng=seed)
        assert {e.in_index for e in wrong.mismatches} == {(0, 5)}, str(wrong)


def _g(seed, *shape):
    return torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("seed", range(4))
def test_every_coordinate_of_a_float16_read_input_earns_its_rounding(seed, mode):
    """A coordinate of x read through float16 can show no disagreement with itself at
    the random cotangents by chance, yet its gradient is rounded by the cast's backward
    like the others': the whole input earns float16's precision. Granted coordinate by
    coordinate, layer_norm's FAILED 5 checks of 8 (x[2, 3] off by 3e-4 relative); w
    beside it, read in float64, keeps float64's. (tanh(x.half().double() @ w) also
    found jumps at float32's cell edges in float64's round-off of a small output and
    failed 27 entries at seed 0.)"""
    import torch.nn.functional as F

    x, w = _g(10 * seed, 3, 5), _g(10 * seed + 1, 5, 4)
    layer = gx.check_grads(
        lambda x, w: torch.tanh(x.half().double() @ w), x, w, mode=mode, rng=seed
    )
    assert layer.outcome is not gx.Outcome.FAILED, str(layer)
    x, gain, bias = _g(10 * seed, 3, 6), _g(10 * seed + 1, 6), _g(10 * seed + 2, 6)
    norm = gx.check_grads(
        lambda x, g, b: F.layer_norm(x.half().double(), (6,), g, b), x, gain, bias,
        mode=mode, rng=seed,
    )  # fmt: skip
    assert norm.outcome is not gx.Outcome.FAILED, str(norm)


QUANTIZERS = {
    "round(x * 1024) / 1024": (lambda x: torch.round(x * 1024) / 1024, 3.0),
    "round(x * 256) / 256": (lambda x: torch.round(x * 256) / 256, 0.0),
    "round(x.half() * 100) / 100": (lambda x: (torch.round(x.half() * 100) / 100).double(), 0.0),
    "round(x.float() * 256) / 256": (lambda x: (torch.round(x.float() * 256) / 256).double(), 0.0),
}


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("name", QUANTIZERS)
def test_a_quantizers_zero_derivative_is_no_false_alarm(name, mode):
    """A quantizer's values can be float16 numbers and its stairs no wider than their
    ulp (multiples of 1/256 between 4 and 8 are x rounded to float16), so stairs a
    narrow format's rounding could be are not told from a quantizer's by the values: a
    0 on them stays unjudged. It FAILED (analytic 0, numeric 1) in 2 to 4 of 4 checks;
    in fast mode, whose located entries were judged without the stairs, in 1 to 3 of 4
    checks of two quantizers until 2026-11-29. Nor may a check warn (numpy's "invalid
    value" from the step levels' bookkeeping leaked out of it)."""
    f, shift = QUANTIZERS[name]
    for seed in range(4):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            r = gx.check_grads(f, _g(seed, 3, 4) + shift, rng=seed, mode=mode)
        assert r.outcome is not gx.Outcome.FAILED, str(r)


def test_fast_mode_says_which_located_entries_lie_on_stairs(monkeypatch):
    """Where the full check is too large to fall back on, the entries a failing
    projection leads to on a quantizer's stairs are reported unresolved, with the
    reason, and the check is inconclusive."""
    import gradexplorer.check.fast as fast
    from gradexplorer.fd.reasons import Unresolvable

    monkeypatch.setattr(fast, "_affordable", lambda p: False)
    f, shift = QUANTIZERS["round(x.half() * 100) / 100"]
    r = gx.check_grads(f, _g(0, 3, 4) + shift, rng=0, mode="fast")
    assert r.outcome is gx.Outcome.INCONCLUSIVE, str(r)
    assert r.unresolved and "staircase" in r.inconclusive, r.inconclusive
    assert all(e.reason is Unresolvable.STAIRCASE for e in r.unresolved)


def test_fast_mode_on_float16_read_x_steps_within_reach():
    """x read through float16 twice, once shifted so that its stairs are fine: fast
    mode snapped its directions to 1.3e6 float16 ulps (steps of ~300 where 0.008 was
    asked), exp overflowed, the allowance became 1e161, and a gradient doubled at one
    element passed in 4 of 4 checks (full mode fails it at that entry)."""
    from gradexplorer.gallery.mixed_torch import planted_exp

    x = torch.tensor([0.3, -1.2, 0.8, 2.0, -0.4, 1.1], dtype=torch.float64)
    c = x - torch.tensor([1e-4, -2e-4, 3e-4, 1.5e-4, -1e-4, 2e-4], dtype=torch.float64)
    bad = planted_exp(2.0)
    f = lambda x: torch.exp(x.half().double()) + bad((x - c).half().double())  # noqa: E731
    for seed in range(2):
        r = gx.check_grads(f, x.clone(), mode="fast", rng=seed)
        assert r.outcome is gx.Outcome.FAILED, str(r)
        assert {(e.row, e.col) for e in r.mismatches} == {(1, 1)}, str(r)
        assert r.atol < 1.0, str(r)  # (the Jacobian is ~1..7)
