"""f that rounds an intermediate to a narrow format and goes on in float64.

``exp(tanh(x @ W).half().double())`` is a staircase in x whose stairs are a few
float16 ulps of the intermediate wide, and whose values lie on no coarse grid: the
finite differences shrink onto a stair and read 0. Until 2026-11-29 every right rule
failed there (56 of 56 checks of seven such functions, full and fast: "analytic is
nonzero where the function does not change"), and a cast's backward, which rounds the
cotangent to float16, was called "not linear in its cotangent".
"""

from __future__ import annotations

import numpy as np
import pytest

import gradexplorer as gx

torch = pytest.importorskip("torch")
from gradexplorer.gallery.mixed_torch import planted_exp  # noqa: E402

_W = torch.tensor(np.random.default_rng(0).standard_normal((4, 3)))
_T = torch.tensor(np.random.default_rng(1).standard_normal((2, 3)))


def _x(seed: int):
    return torch.tensor(np.random.default_rng(seed).standard_normal((2, 4)))


def _h16(x):
    return torch.tanh(x @ _W).half().double()


RIGHT = {
    "mse(h16, t)": lambda x: ((_h16(x) - _T) ** 2).mean(),
    "sum(exp(h16))": lambda x: torch.exp(_h16(x)).sum(),
    "exp(h16)": lambda x: torch.exp(_h16(x)),
    "h16 @ t.T": lambda x: _h16(x) @ _T.T,
    "sum(h16²)": lambda x: (_h16(x) ** 2).sum(),
}


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("name", RIGHT)
def test_right_rules_after_a_cast_are_no_false_alarm(name, mode):
    for seed in range(4):
        r = gx.check_grads(RIGHT[name], _x(seed), mode=mode, rng=seed)
        assert r.outcome is not gx.Outcome.FAILED, str(r)


def test_entries_on_stairs_are_judged_across_them_and_said_so():
    r = gx.check_grads(RIGHT["sum(exp(h16))"], _x(0), mode="full", rng=0)
    assert r.passed, str(r)
    assert any("measured again over a wider step" in n for n in r.notes), r.notes
    moved = np.abs(r.numeric) > 0  # the slope across stairs, not the stair's 0
    assert moved.sum() >= 6, r.numeric


_DOUBLED = planted_exp(2.0)  # the gradient of exp's second element doubled
WRONG = {
    "exp(h16)": lambda x: _DOUBLED(_h16(x)),
    "mse(exp(h16), t)": lambda x: ((_DOUBLED(_h16(x)) - _T) ** 2).mean(),
}


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("name", WRONG)
def test_a_wrong_rule_after_a_cast_still_fails(name, mode):
    for seed in range(2):
        r = gx.check_grads(WRONG[name], _x(seed), mode=mode, rng=seed)
        assert r.outcome is gx.Outcome.FAILED, str(r)


CASTS = {
    "(1e-9 x).half()": lambda x: (1e-9 * x).half().double(),
    "(1e-50 x).float()": lambda x: (1e-50 * x).float().double(),
}


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("name", CASTS)
def test_a_cast_rounding_the_cotangent_is_no_nonlinear_rule(name, mode):
    """The value underflows to 0 while AD passes 1e-9 through: that entry is flagged,
    but the VJP, which rounds its cotangent to the format, is not "not linear"."""
    x = torch.tensor(np.random.default_rng(0).standard_normal(5))
    r = gx.check_grads(CASTS[name], x, mode=mode, rng=0)
    assert r.outcome is gx.Outcome.FAILED, str(r)
    assert not [e for e in r.mismatches if e.kind is gx.Comparison.LINEARITY], str(r)
    assert any("rounds its cotangent" in n for n in r.notes), r.notes
