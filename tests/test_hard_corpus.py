"""Table-driven tests over hard_corpus: no false alarm on RIGHT, the exact entries on WRONG.

A failing test here is a finding about the checker (the expected sets in
hard_corpus are derived by hand from each bug), not something to relax.
"""

import warnings

import pytest
from hard_corpus import RIGHT, WRONG

import gradexplorer as gx

ids = lambda c: c.name  # noqa: E731


def _run(c, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gx.check_grads(c.f, *c.args, order=c.order, mode=mode, rng=0, **c.kw)


def _cells(r):
    return {(e.row, e.col) for e in r.mismatches}


def _not_checked_ok(c, r):
    if c.not_checked is None:
        return
    listed = {label for label, _ in r.not_checked}
    assert c.not_checked <= listed, f"not_checked {r.not_checked} lacks {c.not_checked}\n{r}"


def test_corpus_size():
    assert len(RIGHT) >= 45 and len(WRONG) >= 35
    assert len({c.name for c in RIGHT + WRONG}) == len(RIGHT) + len(WRONG)
    assert all(not c.expected for c in RIGHT) and all(c.expected for c in WRONG)


@pytest.mark.parametrize("c", RIGHT, ids=ids)
def test_right_full(c):
    r = _run(c, "full")
    assert r.passed and not r.mismatches, f"false alarm:\n{r}"
    _not_checked_ok(c, r)


@pytest.mark.parametrize("c", [c for c in RIGHT if c.fast], ids=ids)
def test_right_fast(c):
    r = _run(c, "fast")
    assert r.passed and not r.mismatches, f"false alarm (fast):\n{r}"
    _not_checked_ok(c, r)


@pytest.mark.parametrize("c", WRONG, ids=ids)
def test_wrong_full(c):
    r = _run(c, "full")
    assert not r.passed, f"missed:\n{r}"
    if c.order == 2:
        assert r.failed_orders == (2,), f"failed orders {r.failed_orders}:\n{r}"
    if not c.weak_order2:
        got = _cells(r)
        assert got == c.expected, (
            f"missing {sorted(c.expected - got)[:12]}, extra {sorted(got - c.expected)[:12]}\n{r}"
        )
    if c.kind is not None:
        kinds = {e.kind for e in r.mismatches}
        assert kinds == {c.kind}, f"kinds {kinds}, expected {c.kind}:\n{r}"
    _not_checked_ok(c, r)


@pytest.mark.parametrize("c", [c for c in WRONG if c.fast], ids=ids)
def test_wrong_fast(c):
    r = _run(c, "fast")
    assert not r.passed, f"missed (fast):\n{r}"
    if c.order == 2:
        assert r.failed_orders == (2,), f"failed orders {r.failed_orders}:\n{r}"
    if c.weak_order2:
        return
    got = _cells(r)
    assert got, f"failed but located nothing:\n{r}"
    extra = sorted(got - c.expected)[:12]
    assert got <= c.expected, f"fast named entries that are right: {extra}\n{r}"
    if len(c.expected) <= 20:
        assert got == c.expected, f"fast missed {sorted(c.expected - got)[:12]}\n{r}"
