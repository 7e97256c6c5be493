"""Stairs of several heights, seen only as noise beside a smooth term, confirmed by
the jumps they hold (``check/jumps.py``); stairs too wide to measure across, where a
fit over the few within reach sides with the rule; and the rounding a rule's small
cotangents hide in float16's subnormals (``check/roundings.py``).

The code is attention whose scores are cast to float16 and go on in float64:
``softmax(f16(q @ k.T)) @ v``. Each score rounds on a float16 grid of its own, so
along an input f moves in stairs of many heights (30x apart) beside the value path's
smooth slope. The finite differences shrink onto a stair and read that slope alone.
Before 2026-11-29 (fourth session) every seed of the right rule failed, in both modes.
"""

from __future__ import annotations

import autograd.numpy as anp
import numpy as np
import pytest
from autograd.extend import defvjp, primitive

import gradexplorer as gx
from gradexplorer.check.jumps import above_rounding, jumps_within, looks_noisy
from gradexplorer.check.roundings import intermediate_rounding

torch = pytest.importorskip("torch")
from gradexplorer.gallery.mixed_torch import with_rule  # noqa: E402


def _attention(seed, scores_rule=1.0, values_rule=1.0):
    """Row sums of softmax(f16(q @ k.T) / 2) @ v for 3 tokens of 4 features, a rule
    off by the given factors on the scores' or the values' path."""
    r = np.random.default_rng(seed)
    Wq, Wk, Wv = (torch.tensor(r.normal(size=(4, 4)) / 2) for _ in range(3))
    scores_off = with_rule(lambda z: z * 1.0, lambda z, g: g * scores_rule)
    values_off = with_rule(lambda z: z * 1.0, lambda z, g: g * values_rule)

    def f(x):
        X = x.reshape(3, 4)
        S = scores_off((X @ Wq) @ (X @ Wk).T)
        A = torch.softmax(S.half().double() / 2.0, dim=1)
        return (A @ values_off(X @ Wv)).sum(dim=1)

    return f, torch.tensor(r.normal(size=12))


@pytest.mark.parametrize("mode", ["full", "fast"])
def test_attention_with_float16_scores_is_no_false_alarm(mode):
    for seed in range(1, 5):
        f, x = _attention(seed)
        r = gx.check_grads(f, x, mode=mode, rng=seed)
        assert r.outcome is not gx.Outcome.FAILED, (seed, str(r))
        assert len(r.unresolved) <= 2, (seed, str(r))  # (wide stairs only)


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("path", ["scores", "values"])
def test_attention_with_a_rule_one_percent_off_is_found(path, mode):
    for seed in range(1, 5):
        f, x = _attention(seed, **{f"{path}_rule": 1.01})
        r = gx.check_grads(f, x, mode=mode, rng=seed)
        assert r.outcome is gx.Outcome.FAILED, (seed, str(r))


@primitive
def _wiggle(x):
    return x + 1e-4 * np.sin(1e4 * x)


defvjp(_wiggle, lambda ans, x: lambda g: g * np.ones_like(x))  # drops the wiggle's slope


@pytest.mark.parametrize("mode", ["full", "fast"])
def test_an_oscillation_is_no_staircase(mode):
    """Samples of x + 1e-4·sin(1e4·x) spaced wider than its period look like stairs'
    noise; halving shows no jump, so a rule that drops the oscillation's slope (the
    slope across it) still fails where cos(1e4·x) is far from 0: x[2]'s passed, measured
    across "stairs" its samples' changes looked like."""
    x = np.array([0.3, -1.2, 0.75])
    r = gx.check_grads(lambda x: anp.exp(_wiggle(x)), x, mode=mode, rng=1)
    assert r.outcome is gx.Outcome.FAILED, str(r)
    found = {e.col for e in r.mismatches}
    # (the fast check locates the entries of the first projection that fails)
    assert found == {0, 1, 2} if mode == "full" else found <= {0, 1, 2}, str(r)


def _two_grids(X):
    x = X[:, :1]
    return np.round(np.sin(5 * x) * 256) / 256 + np.round(np.exp(x) * 300) / 300 + x


class _F:
    """f as the stairs' search sees it: a point and a batch evaluator."""

    def __init__(self, f, x0):
        self.batch, self.x0 = f, np.array([x0])


def _samples(f, x0, spacing):
    offsets = spacing * np.arange(1, 10)
    return offsets, f(np.array([[x0]]) + offsets[:, None])


@pytest.mark.parametrize(
    "f, noisy, jumps",
    [
        (_two_grids, True, True),
        (lambda X: np.round(X[:, :1] * 3e3) / 3e3 + X[:, :1], True, True),  # regular stairs
        (lambda X: X[:, :1] + 1e-3 * np.sin(1e4 * X[:, :1]), True, False),  # an oscillation
        (lambda X: X[:, :1] ** 2 + (X[:, :1] > 0.2005), False, True),  # one jump: a where
    ],
)
def test_jumps_tell_stairs_from_noise(f, noisy, jumps):
    offsets, Y = _samples(f, 0.2, 2e-4)
    assert bool(looks_noisy(Y, offsets)[0]) is noisy
    held, nfev = jumps_within(_F(f, 0.2), np.ones(1), 1.0, offsets, Y, [0], float)
    assert bool(held[0]) is jumps
    assert nfev <= 24


def test_smooth_samples_do_not_look_noisy():
    for f in (np.exp, np.sin, lambda x: x**3):
        offsets = 1e-3 * np.arange(1, 10)
        Y = f(0.2 + offsets)[:, None]
        assert not looks_noisy(Y, offsets)[0]


def _half_path_rule(A, B, C):
    """A float64 VJP with a path whose small cotangents round to float16."""
    return lambda u: A @ u + 1e3 * (B @ (1e-3 * (C @ u)).astype(np.float16).astype(float))


def test_a_rounding_hidden_in_subnormals_is_named():
    """The rule's small cotangents (1e-3 of u's) round to float16: its test moves u by
    eps/4096 of itself, whose path through the cast lands in float16's subnormals, or
    0, on either side, and looked exact; the probe is scaled up and back now."""
    for seed in range(4):
        r = np.random.default_rng(seed)
        A, B, C = r.normal(size=(5, 3)), r.normal(size=(5, 2)), r.normal(size=(2, 3))
        rule = _half_path_rule(A, B, C)
        u = r.normal(size=3)
        fmt = intermediate_rounding(rule, ((u, rule(u)),), 2.0**-52)
        assert fmt is not None and fmt.name == "float16", seed


def _saturated_beside_identity(seed, identity_rule=1.0):
    """x + exp(f16(tanh(x @ W))): some tanh saturate, where float16's stairs near ±1
    are wider than the reach, and the identity path beside them moves f at once."""
    r = np.random.default_rng(seed)
    W, x = torch.tensor(r.normal(size=(5, 5))), torch.tensor(r.normal(size=5))
    ident = with_rule(lambda z: z * 1.0, lambda z, g: g * identity_rule)
    return lambda x: ident(x) + torch.exp(torch.tanh(x @ W).half().double()), x


def test_a_slope_beside_stairs_wider_than_the_reach_is_no_false_alarm():
    """The differences read the identity's 1 where the rule adds the rounded term's
    1e-4: no stair of that output is within reach along that input, so its slope is
    known only to the stairs' height over the reach. These seeds failed."""
    for seed in (4, 7, 8):
        f, x = _saturated_beside_identity(seed)
        r = gx.check_grads(f, x, mode="full", rng=seed)
        assert r.outcome is not gx.Outcome.FAILED, (seed, str(r))


def test_a_rule_off_beside_stairs_wider_than_the_reach_still_fails():
    """The same, with the identity's rule 1% off: far beyond the stairs' height over
    the reach, at the saturated outputs (where tanh is not, the slope across the
    stairs is known to ~0.3%, and 1% of 1 in 2.9 hides in it). The saturated ones
    were called a staircase, unresolvable."""
    for seed in (4, 8):
        f, x = _saturated_beside_identity(seed, identity_rule=1.01)
        r = gx.check_grads(f, x, mode="full", rng=seed)
        assert r.outcome is gx.Outcome.FAILED, (seed, str(r))
        z = _saturated_beside_identity(seed)[0](x) - x  # exp(f16(tanh(x @ W)))
        saturated = {(i, i) for i in range(5) if abs(float(torch.log(z[i]))) > 0.995}
        assert saturated and saturated <= {(e.row, e.col) for e in r.mismatches}, str(r)


def test_a_rounding_diluted_by_a_float64_path_is_named():
    """The VJP of x + exp(f16(tanh(x @ W))) disagrees with itself by float16's rounding
    of its small rounded paths, 1e-6 of the identity path beside them: that scatter,
    taken relative to the whole rule, fell below any format's, and the rule was called
    "an adaptive or iterative backward pass"."""
    f, x = _saturated_beside_identity(3)
    r = gx.check_grads(f, x, mode="full", rng=3)
    notes = " ".join(r.notes)
    assert "rounds an intermediate to float16" in notes, r.notes
    assert "adaptive or iterative" not in notes, r.notes


def test_a_float32_rule_rounding_to_float16_is_named_and_a_smooth_one_is_not():
    r = np.random.default_rng(0)
    A, B, C = (r.normal(size=s).astype(np.float32) for s in ((5, 3), (5, 2), (2, 3)))
    half = _half_path_rule(A, B, C)

    def rule(u):
        return half(u).astype(np.float32)

    u = r.normal(size=3).astype(np.float32)
    eps = np.finfo(np.float32).eps
    fmt = intermediate_rounding(rule, ((u, rule(u)),), eps)
    assert fmt is not None and fmt.name == "float16"

    def smooth(g):
        return (g * (1 + 1e-3 * np.abs(g).max() / np.linalg.norm(g))).astype(np.float32)

    assert intermediate_rounding(smooth, ((u, smooth(u)),), eps) is None


def test_a_float64_input_beside_a_cast_is_judged_sharply_beside_unseen_stairs():
    """exp(f16(tanh(x[:2]))) + sin(3·x[2:]), sin's rule 0.1% off: the rule's paths from
    x[2:] pass through no rounding, so no unseen stair's height over the reach widens
    their entries (it would hide up to ~0.2% there)."""
    s = with_rule(lambda z: torch.sin(3 * z), lambda z, g: g * 3 * torch.cos(3 * z) * 1.001)
    x = torch.tensor([0.3, -0.7, 0.45, -0.2], dtype=torch.float64)
    for seed in range(4):
        r = gx.check_grads(
            lambda x: torch.exp(torch.tanh(x[:2]).half().double()) + s(x[2:]), x, rng=seed
        )
        assert {(0, 2), (1, 3)} <= {(e.row, e.col) for e in r.mismatches}, (seed, str(r))


def test_samples_a_few_ulps_apart_are_not_looked_into():
    """Samples at spacings far below the stairs' show only float64's rounding of f:
    halving them confirmed nothing and spent the row's tries, so stairs at wider
    spacings were never looked into (40 outputs of exp(f16(sin(x @ W))) + 0.3·x @ W:
    all of y[15]'s entries failed a right rule)."""
    offsets = 1e-7 * np.arange(1, 10)
    Y = (np.exp(0.3) + 0.3 * offsets + 1e-16 * np.sin(1e9 * offsets))[:, None]
    assert not above_rounding(Y, offsets)[0]
    r = np.random.default_rng(0)
    W, x = torch.tensor(r.normal(size=(4, 40))), torch.tensor(r.normal(size=4))
    report = gx.check_grads(
        lambda x: torch.exp(torch.sin(x @ W).half().double()) + 0.3 * (x @ W), x, rng=0
    )
    assert not [e for e in report.mismatches if e.row == 15], str(report)
