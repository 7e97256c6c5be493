"""CheckReport.to_json / to_dict: strict JSON that says what the report says."""

import json

import autograd.numpy as anp
import numpy as np
import pytest

import gradexplorer as gx
from gradexplorer.check.report_json import MATRICES

GALLERY = [n for n in gx.gallery.names() if not gx.gallery.get(n).complex][:6]


def _report(name, **kw):
    ex = gx.gallery.get(name)
    return gx.check_grads(ex.f, *ex.args(), wrt=ex.wrt, **kw)


@pytest.mark.parametrize("name", GALLERY)
def test_json_round_trips_the_report(name):
    r = _report(name)
    d = json.loads(r.to_json())  # strict: to_json refuses NaN, so parsing proves it
    assert d["outcome"] == r.outcome.value and d["status"] == r.status
    assert d["shape"] == list(r.shape) and d["text"] == str(r)
    for key in MATRICES:
        np.testing.assert_array_equal(np.array(d["matrices"][key]), getattr(r, key))
    assert [e["label"] for e in d["worst"]] == [e.label for e in r.worst]
    assert [e["reading"] for e in d["worst"]] == [e.reading for e in r.worst]
    assert d["column_blocks"] == {k: [s.start, s.stop] for k, s in r.column_blocks.items()}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # sqrt's derivative at 0
def test_non_finite_numbers_are_words():
    r = gx.check_grads(anp.sqrt, np.array([0.0, 1.0]))  # d sqrt / dx = inf at 0
    d = json.loads(r.to_json())
    assert d["matrices"]["analytic"][0][0] == "inf"
    assert d["outcome"] == "failed" and d["mismatches"]
    assert d["mismatches"][0]["text"] == str(r.mismatches[0])


def test_fast_mode_has_no_matrices_but_names_entries():
    r = _report("matmul", mode="fast")
    d = r.to_dict()
    assert d["mode"] == "fast" and d["matrices"] == {}


def test_large_matrices_are_named_not_written():
    r = _report("softmax")
    d = r.to_dict(max_entries=4)
    m, n = r.shape
    assert d["matrices"]["analytic"] == {"omitted": f"{m} x {n} is over 4 entries"}


def test_bad_max_entries_is_refused():
    with pytest.raises(ValueError, match="max_entries must be >= 0; got -1"):
        _report("sin").to_dict(max_entries=-1)


def test_second_order_report_carries_the_first():
    f = lambda x: anp.sum(anp.sin(x) ** 2)
    r = gx.check_grads(f, np.linspace(0.1, 1, 3), order=2)
    d = r.to_dict()
    assert d["order"] == 2 and d["first_order"]["order"] == 1
