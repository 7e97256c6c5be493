"""A rule's part through a rounding, where the stairs it makes are too wide to measure
across (``check/rounded.py``).

``x² + c·f16(100 + k·x)``: the float16 term is a staircase along x (stairs 0.1
wide), beside x², whose slope the finite differences read. AD gives the slope across
the stairs for the rounded term (a cast's backward passes its cotangent on), which no
fit within reach can measure. Before 2026-11-29 (fifth session) the right rule FAILED
at every seed, in both modes; now those entries are unresolvable (the check
inconclusive), and a rule whose exact part is off still fails.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradexplorer as gx
from gradexplorer.check.rounded import rounded_parts

torch = pytest.importorskip("torch")
from gradexplorer.gallery.mixed_torch import with_rule  # noqa: E402

_UNSEEN = "f shows no stairs along that input within reach"

#: name -> (height factor c, slope k): stairs ulp(100)/k apart in x
STAIRS = {"stairs 0.1 wide": (2.0, 0.6)}


def _stairs(name, exact_rule=1.0):
    """x² + c·f16(100 + k·x), x²'s rule scaled by ``exact_rule``."""
    c, k = STAIRS[name]
    square = with_rule(lambda z: z**2, lambda z, g: g * 2 * z * exact_rule)
    return lambda x: (square(x) + c * (100 + k * x).half().double()).sum()


def _x(seed):
    return torch.tensor(np.random.default_rng(seed).normal(size=2))


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("name", STAIRS)
def test_a_right_rule_beside_wide_stairs_is_no_false_alarm(name, mode):
    for seed in range(1, 5):
        r = gx.check_grads(_stairs(name), _x(seed), mode=mode, rng=seed)
        assert r.outcome is not gx.Outcome.FAILED, (seed, str(r))
        assert r.unresolved, (seed, str(r))  # (the rounded part is not called right)
        assert any("sends through a rounding" in n for n in r.notes), (seed, r.notes)


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("name", STAIRS)
def test_a_rule_whose_exact_part_is_off_does_not_pass(name, mode):
    """x²'s rule 10% off: found at 3 seeds of 4 at least, and never passed (an entry
    the stairs already left open stays open: the split's evidence against its exact
    part is not used to fail it)."""
    outcomes = []
    for seed in range(1, 5):
        r = gx.check_grads(_stairs(name, exact_rule=1.1), _x(seed), mode=mode, rng=seed)
        assert r.outcome is not gx.Outcome.PASSED, (seed, str(r))
        outcomes.append(r.outcome)
    assert outcomes.count(gx.Outcome.FAILED) >= 3, outcomes


@pytest.mark.parametrize("mode", ["full", "fast"])
def test_a_bogus_term_on_a_rounded_path_of_a_smooth_f_fails(mode):
    """A review's case: a right rule for a smooth layer plus a term passed through
    bfloat16 where f has none. The rule less its rounded part agrees with f, yet f
    shows no stairs: the entry is wrong, and the report says what it differs by (a
    first version called it a staircase, and the 5 x 5 check PASSED)."""
    W = torch.tensor(np.random.default_rng(101).normal(size=(5, 5)) / 2)

    def bogus(z, g):
        v = W.T @ (g * (1 - torch.tanh(W @ z) ** 2 + 0.5))
        v[0] += 2.0 * g[1].bfloat16().double()
        return v

    f = with_rule(lambda z: torch.tanh(W @ z) + 0.5 * (W @ z), bogus)
    for seed in range(1, 3):
        x = torch.tensor(np.random.default_rng(seed).normal(size=5))
        r = gx.check_grads(f, x, mode=mode, rng=seed)
        assert r.outcome is gx.Outcome.FAILED, (seed, str(r))
        assert (1, 0) in {(e.row, e.col) for e in r.mismatches}, (seed, str(r))


def test_stairs_wider_than_the_reach_are_not_seen_and_said_so():
    """x² + 20·f16(100 + 0.05·x): stairs 1.25 wide, wider than the reach, so f is x²
    within it and AD's 2x + 1 fails, as a bogus rounded term would; the note says
    the difference is just the rule's rounded part, and what would tell them apart."""
    square = with_rule(lambda z: z**2, lambda z, g: g * 2 * z)
    f = lambda x: (square(x) + 20.0 * (100 + 0.05 * x).half().double()).sum()  # noqa: E731
    r = gx.check_grads(f, _x(1), mode="full", rng=1)
    assert r.outcome is gx.Outcome.FAILED, str(r)
    assert any(_UNSEEN in n for n in r.notes), r.notes


def test_the_rounded_part_of_a_float64_and_a_float32_rule():
    """3·f16(g) beside 2·g: the rounded part is 3, to within its error (float32's
    rounding of the moved cotangent's VJP, over s, is ~10% of it)."""
    for dtype, closely in ((np.float64, 1e-3), (np.float32, 0.5)):

        def rule(g):
            g = np.asarray(g)
            return 2.0 * g + 3.0 * g.astype(np.float16).astype(g.dtype)

        R, err = rounded_parts(rule, 3, [0, 2], dtype)
        assert np.all(np.abs(R - [[3, 0, 0], [0, 0, 3]]) <= err), (dtype, R, err)
        assert np.all(err < closely), (dtype, err)


def test_an_offset_is_no_rounded_part():
    """g + 0.5 does not scale with its cotangent: no part of it is called rounded
    (its error is infinite), so a rule adding a term not multiplied by g stays wrong."""
    R, err = rounded_parts(lambda g: np.asarray(g) + 0.5, 2, [0, 1])
    assert np.all(np.isinf(err)), err


def test_a_smooth_rule_has_no_rounded_part():
    R, err = rounded_parts(lambda g: np.sin(1.0) * np.asarray(g) * 3.0, 4, [1])
    assert np.all(np.abs(R) <= 2 * err), (R, err)


def test_entries_known_loosely_across_stairs_are_said_so():
    """LayerNorm -> float16 -> GELU -> bfloat16 beside a residual: the slope across
    bfloat16's few stairs within reach is known to 5-20%, and the report says a rule
    off by less would pass there (a review found rules 3-5% off passing silently)."""
    r = np.random.default_rng(2)
    W, w2 = torch.tensor(r.normal(size=(6, 8)) / 2), torch.tensor(r.normal(size=8))

    def f(x):
        z = x @ W
        z = (z - z.mean()) / torch.sqrt(z.var(unbiased=False) + 1e-5)
        h = torch.nn.functional.gelu(z.half().double()).bfloat16().double()
        return h @ w2 + 0.1 * (x**2).sum()

    rep = gx.check_grads(f, torch.tensor(r.normal(size=6)), mode="full", rng=2)
    assert rep.outcome is not gx.Outcome.FAILED, str(rep)
    assert any("a rule off by less there would pass unseen" in n for n in rep.notes), rep.notes
