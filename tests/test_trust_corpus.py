"""Trust, round three: every case of trust_corpus over ten seeds, verdicts exact.

A failing test here is a finding about the checker (the expectations in
trust_corpus are derived by hand), not something to relax.
"""

import warnings

import pytest
from trust_corpus import CASES

import gradexplorer as gx

SEEDS = range(10)


def _check(c, seed):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = gx.check_grads(c.f, *c.args, rng=seed, **c.kw)
    if c.warns is not None:
        assert any(issubclass(w.category, c.warns) for w in caught), f"no {c.warns.__name__}"
    return r


def _cells(entries):
    return {(e.row, e.col) for e in entries}


def test_corpus_covers_every_class():
    kinds = {c.kind for c in CASES}
    assert len(CASES) >= 30 and len({c.name for c in CASES}) == len(CASES)
    assert {"tie", "kink", "wrong at a kink", "staircase", "oscillation", "imprecise"} <= kinds
    assert {"inconclusive", "fast mode", "forward rule", "vacuous pass", "torch"} <= kinds


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
def test_verdicts_are_exact_and_seed_free(c):
    for seed in SEEDS:
        r = _check(c, seed)
        where = f"seed {seed}:\n{r}"
        assert r.outcome is c.outcome, where
        assert _cells(e for e in r.kinks if e.verdict is gx.Verdict.RIGHT_AT_KINK) == c.kinks, where
        named = _cells(r.mismatches)
        if c.wrong_count is None:
            assert named == c.wrong, f"missing {c.wrong - named}, extra {named - c.wrong}\n{where}"
        else:
            assert r.wrong_count == c.wrong_count, where
            assert named <= c.wrong and len(named) == min(r.wrong_count, c.kw.get("max_named", 32))
        imprecise = _cells(e for e in r.mismatches if e.verdict is gx.Verdict.IMPRECISE)
        assert imprecise == (c.imprecise & named), where
        if c.note:
            assert any(c.note in n for n in r.notes), where
        listed = {label for label, _ in r.not_checked}
        assert c.not_checked <= listed, where
        assert r.passed is (c.outcome is gx.Outcome.PASSED)
