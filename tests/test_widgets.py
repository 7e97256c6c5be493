"""The explorer driven headlessly: set widget values, assert on the data the page receives.

The page draws from the panes' state (``spec``, float32 slots ``b0``..``b5``, ``png``,
``labels``, ``luts``); these tests read that state, and what each frame sends, as the
page would get it.
"""

import gc
import json
import types

import autograd.numpy as anp
import ipywidgets as W
import matplotlib
import numpy as np
import pytest
from corpus import CASES
from matplotlib.figure import Figure

import gradexplorer as gx
from gradexplorer import gallery
from gradexplorer.explorer.registry import VIEW_NAMES

matplotlib.use("Agg")


def live_figures() -> int:
    gc.collect()
    return sum(isinstance(o, Figure) for o in gc.get_objects())


def page_array(pane, slot, spec_panel=None):
    """A slot as the page reads it: float32, shaped by the panel that draws it."""
    data = np.frombuffer(getattr(pane, slot), dtype=np.float32)
    p = spec_panel or next(p for p in pane.spec["panels"] if p["slot"] == slot)
    return data.reshape(p["rows"], p["cols"])


def sent_traits(pane):
    """Record what each frame sends to the page: one dict per message, trait -> bytes on
    the wire (a buffer's length, else its JSON's)."""
    sent = []
    real = pane.send_state

    def size(value):
        if isinstance(value, (bytes, bytearray, memoryview)):
            return len(memoryview(value))
        return len(json.dumps(value))

    def spy(key=None):
        keys = [key] if isinstance(key, str) else list(key or [])
        sent.append({k: size(getattr(pane, k)) for k in keys})
        return real(key)

    pane.send_state = spy
    return sent


@pytest.fixture
def explorer():
    made = []

    def make(*a, **k):
        e = gx.explore(*a, **k)
        made.append(e)
        return e

    yield make
    for e in made:
        e.close()


def show(ex, name):
    ex.tabs.selected_index = VIEW_NAMES.index(name)
    return ex.panes[name]


def test_controls_recompute_with_method_rtol_step_and_dtype(explorer):
    ex = explorer(lambda x: anp.exp(x), np.linspace(0, 1, 4))
    ex.method.value = "forward"
    assert ex.report.method == "forward" and "forward" in ex.badge.value
    ex.own_rtol.value = True  # a looser tolerance: the user's visible choice
    ex.rtol.value = 1e-3
    assert ex.report.rtol == pytest.approx(1e-3)
    ex.auto_step.value = False
    ex.step.value = 1e-3
    assert ex.report.passed  # the FD error estimate grows with the step: no false alarm
    ex.dtype.value = "float32"
    assert ex.report.dtype == "float32" and ex.report.passed


def test_large_inputs_get_scale_seed_and_resample(explorer):
    ex = explorer(lambda x: anp.tanh(x) * 2.0, np.linspace(-1, 1, 10))
    assert not ex.point_sliders
    before = ex.report.analytic.copy()
    ex.resample.click()
    assert ex.seed.value == 1
    assert not np.allclose(before, ex.report.analytic)
    ex.scale.value = 100.0
    assert np.max(np.abs(ex.args[0])) > 10


def test_users_exception_is_shown_in_the_widget(explorer):
    def f(x):
        if x[0] < 0:
            raise ValueError("boom: negative x")
        return anp.log(x)

    ex = explorer(f, anp.ones(2))
    ex.point_sliders[0].value = -1.0
    assert "ValueError: boom: negative x" in ex.error.value
    ex.point_sliders[0].value = 2.0
    assert ex.error.value == ""


def test_error_at_the_start_point_is_shown(explorer):
    ex = explorer(lambda x: anp.dot(x, anp.ones(5)), np.ones(3))
    assert "ValueError" in ex.error.value and "shapes" in ex.error.value


def test_gallery_menu_lists_every_example(explorer):
    ex = explorer()
    assert list(ex.gallery_menu.options) == gallery.names()
    for name in ["softmax", "matmul", "phase"]:
        ex.gallery_menu.value = name
        assert ex.error.value == "", name


def test_running_a_cell_again_closes_the_explorers_its_last_run_made(monkeypatch):
    import IPython

    from gradexplorer.explorer import rerun

    request = {"metadata": {"cellId": "cell-a"}, "header": {"msg_id": "run-1"}}
    kernel = type("Kernel", (), {"get_parent": lambda self, channel=None: request})()
    shell = type("Shell", (), {"kernel": kernel})()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    assert rerun.running_cell() == ("cell-a", "run-1")
    first = gx.explore(lambda x: anp.sin(x), anp.ones(2))
    twin = gx.explore(lambda x: anp.cos(x), anp.ones(2))  # the same run: both kept
    request["metadata"]["cellId"] = "cell-b"
    other = gx.explore(lambda x: anp.exp(x), anp.ones(2))  # another cell: kept
    request.update(metadata={"cellId": "cell-a"}, header={"msg_id": "run-2"})
    again = gx.explore(lambda x: anp.sin(x), anp.ones(2))
    try:
        assert first._closed and twin._closed and first.pictures.figures == {}
        assert not other._closed and not again._closed
        request["metadata"] = {}  # a front end that sends no cell id: nothing is closed
        assert rerun.running_cell() is None
        gx.explore(lambda x: anp.sin(x), anp.ones(2)).close()
        assert not again._closed
    finally:
        for ex in (other, again):
            ex.close()


def test_the_badge_and_tables_say_one_entry_and_align():
    from gradexplorer.explorer.html import badge_html, worst_html

    r = gx.check_grads(lambda x: x * anp.array([1.0, 1.5]) if False else x**2, np.ones(2))
    assert "PASSED" in badge_html(r)
    case = next(c for c in CASES if c.name == "transposed")
    bad = gx.check_grads(case.f, *case.args)
    assert "wrong entries" in badge_html(bad) and 'class="gx-table"' in worst_html(bad)
    one = gx.check_grads(_one_wrong, np.array([0.3, 0.8]))
    assert "FAILED: 1 wrong entry<" in badge_html(one)


def _one_wrong(x):
    from autograd.extend import defvjp, primitive

    @primitive
    def twice_first(v):
        return v * anp.array([2.0, 1.0])

    defvjp(twice_first, lambda ans, v: lambda g: g * anp.array([2.0, 1.5]))
    return twice_first(x)


def _one_wrong(x):
    from autograd.extend import defvjp, primitive

    @primitive
    def twice_first(v):
        return v * anp.array([2.0, 1.0])

    defvjp(twice_first, lambda ans, v: lambda g: g * anp.array([2.0, 1.5]))
    return twice_first(x)


def test_an_explorer_left_open_at_exit_prints_nothing():
    """A script that ends with explorers alive exits quietly (they were collected
    while Python shut down, when imports fail)."""
    import subprocess
    import sys

    script = (
        "import numpy as np, autograd.numpy as anp, gradexplorer as gx\n"
        "ex = gx.explore(lambda x: anp.sin(x) * x, np.linspace(0, 1, 3))\n"
        "menu = gx.explore()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr


def test_a_newer_change_cancels_the_running_check():
    from gradexplorer.explorer.worker import Cancelled, cancellable

    current = {"gen": 1}
    calls = []

    def f(x):
        calls.append(1)
        if len(calls) == 3:
            current["gen"] = 2  # a newer change arrives mid-check
        return anp.sin(x)

    g = cancellable(f, lambda: current["gen"] == 1)
    with pytest.raises(Cancelled):
        gx.check_grads(g, np.ones(3))
    assert len(calls) == 3  # no evaluation after the change


def test_complex_step_is_labelled_where_it_cannot_apply(explorer):
    ex = explorer(anp.abs, np.array([0.5, -1.0]))
    labels = dict((v, k) for k, v in ex.method.options)
    assert labels["complex_step"].startswith("complex_step (n/a")
    ex2 = explorer(anp.sin, np.array([0.5, -1.0]))
    assert dict((v, k) for k, v in ex2.method.options)["complex_step"] == "complex_step"
    ex2.method.value = "complex_step"
    assert "PASSED" in ex2.badge.value, ex2.error.value


# ---------------------------------------------------------------- what the page receives


def test_the_jacobian_pane_receives_float32_buffers_not_json(explorer):
    from ipywidgets.widgets.widget import _remove_buffers

    ex = explorer(lambda x: anp.sin(x) * x, anp.linspace(0, 1, 3))
    pane = ex.panes["Jacobian"]
    assert pane.spec["kind"] == "maps" and ex.error.value == ""
    np.testing.assert_allclose(page_array(pane, "b0"), ex.report.analytic, rtol=1e-6)
    ex.point_sliders[0].value = 0.7
    assert ex.report.analytic[0, 0] == pytest.approx(np.cos(0.7) * 0.7 + np.sin(0.7))
    np.testing.assert_allclose(page_array(pane, "b0"), ex.report.analytic, rtol=1e-6)
    # every per-entry matrix is there for the hover tooltip, by slot
    hover = pane.spec["hover"]
    for name in ("numeric", "abs_err", "fd_error", "violation"):
        data = np.frombuffer(getattr(pane, hover[name]), dtype=np.float32).reshape(3, 3)
        np.testing.assert_allclose(data, getattr(ex.report, name), rtol=1e-6, atol=1e-30)
    # what ipywidgets puts on the wire: the arrays as binary buffers, no lists of numbers
    state, paths, buffers = _remove_buffers(pane.get_state())
    assert ["b0"] in paths and ["luts", "viridis"] in paths
    assert all(not isinstance(v, list) or len(v) < 50 for v in state["spec"].values())
    assert "PASSED" in ex.badge.value


def test_the_page_colours_with_matplotlibs_own_maps_and_scales():
    from matplotlib import colormaps

    from gradexplorer.display import plots as P
    from gradexplorer.display.scales import lut, scale_for, to_norm
    from gradexplorer.explorer import maps

    M = np.random.default_rng(1).standard_normal((5, 7))
    spec, _ = maps.panel(M, "signed", "J")
    h = P.plot_jacobian(M)
    assert spec["scale"] == scale_for(M, "signed").to_json()
    assert h.image.norm.halfrange == spec["scale"]["vmax"]  # the static picture's scale too
    table = np.frombuffer(lut("RdBu_r"), np.uint8).reshape(-1, 4)
    # the page indexes as matplotlib does: int(t * 256), clipped
    t = to_norm(scale_for(M, "signed"))(M.ravel())
    idx = np.clip((np.asarray(t) * 256).astype(int), 0, 255)
    expected = (colormaps["RdBu_r"](np.asarray(t)) * 255).round().astype(np.uint8)
    np.testing.assert_array_equal(table[idx], expected)


def test_a_move_sends_only_what_changed(explorer):
    ex = explorer(lambda x: anp.sin(x) * x, anp.linspace(0, 1, 3))
    pane = ex.panes["Jacobian"]
    sent = sent_traits(pane)
    ex.point_sliders[0].value = 0.7
    keys = set().union(*sent)
    assert keys <= {"spec", "b0", "b1", "b2", "b3", "b4"}  # no labels, no colormaps again
    sent.clear()
    ex.row.value = 2  # a new selection: the outline moves, no numbers are sent
    assert sent and set().union(*sent) == {"spec"}
    assert pane.spec["selection"] == [2, 0]


def test_a_frame_sends_only_the_numbers_that_changed(explorer):
    """On the wire: float32 maps (256 KB for 256 x 256, never JSON lists or PNG), each
    sent again only when its numbers changed; a selection sends no numbers."""
    A = np.random.default_rng(0).standard_normal((256, 256)) / 16
    ex = explorer(lambda x: anp.tanh(A @ x), np.linspace(-1, 1, 256))
    pane = show(ex, "Check")
    slots = [k for k in ("b0", "b1", "b2", "b3", "b4") if getattr(pane, k)]
    sent = sent_traits(pane)
    ex.scale.value = 2.0  # a new point: every map changes
    assert [set(m) - {"spec"} for m in sent] == [set(slots)]
    assert all(sent[0][k] == 256 * 256 * 4 for k in slots) and sent[0]["spec"] < 4096
    before = {k: bytes(getattr(pane, k)) for k in slots}
    sent.clear()
    ex.own_rtol.value = True  # the same numbers under another tolerance
    changed = {k for k in slots if bytes(getattr(pane, k)) != before[k]}
    assert changed and len(changed) < len(slots)  # the violation changes, not J or its FD
    assert set().union(*sent) - {"spec"} == changed
    jac = show(ex, "Jacobian")
    sent = sent_traits(jac)
    ex.row.value = 7
    assert sent and set().union(*sent) == {"spec"} and sum(sent[0].values()) < 4096


def test_one_verdict_the_explorer_uses_the_checkers_defaults(explorer):
    """A VJP wrong by 1e-10 (relative): check_grads fails; explore said PASSED with its
    own tolerance (sqrt(eps)). One product, one verdict."""

    @gx.primitive
    def almost(x):
        return anp.sin(x)

    gx.defvjp(almost, lambda ans, x: lambda g: g * anp.cos(x) * (1 + 1e-10))
    x = np.array([0.3, 0.9, 1.4])
    report = gx.check_grads(almost, x)
    ex = explorer(almost, x)
    assert ex.report.status == report.status and ex.report.passed == report.passed
    assert not report.passed and "FAILED" in ex.badge.value
    assert ex.rtol.disabled and not ex.own_rtol.value and "default" in ex.rtol_note.value
    ex.own_rtol.value = True  # the user's visible choice: a looser tolerance
    ex.rtol.value = 1e-6
    assert ex.report.passed and "PASSED" in ex.badge.value


def test_an_inconclusive_check_gets_an_amber_badge():
    from types import SimpleNamespace

    from gradexplorer.check.report import Outcome
    from gradexplorer.explorer.html import badge_html
    from gradexplorer.explorer.maps import verdict_color

    r = SimpleNamespace(
        outcome=Outcome.INCONCLUSIVE, passed=False, status="INCONCLUSIVE: 2 unresolved",
        shape=(2, 2), method="richardson", dtype="float64", nfev=10,
    )  # fmt: skip
    assert "#b26b00" in badge_html(r) and "INCONCLUSIVE" in badge_html(r)
    assert verdict_color(r) == "#b26b00"


def test_the_check_view_outlines_wrong_entries_and_the_badge_says_failed(explorer):
    case = next(c for c in CASES if c.name == "transposed")
    ex = explorer(case.f, *case.args)
    assert "FAILED: 12 wrong entries" in ex.badge.value
    assert ex.report.mismatches[0].label in ex.worst.value
    pane = show(ex, "Check")
    np.testing.assert_allclose(page_array(pane, "b0"), ex.report.analytic, rtol=1e-6)
    np.testing.assert_allclose(page_array(pane, "b1"), ex.report.numeric, rtol=1e-6)
    assert len(pane.spec["marks"]) == 12 and pane.spec["title_color"] == "#b42318"
    worst = ex.report.mismatches[0]
    assert pane.spec["worst"] == [worst.row, worst.col]
    assert pane.spec["selection"] == [worst.row, worst.col]  # the worst entry is selected
    assert worst.label in ex.entry_info.value
    assert [p["scale"]["kind"] for p in pane.spec["panels"]] == [
        "signed",
        "signed",
        "log",
        "violation",
    ]


def test_a_click_on_a_cell_selects_it(explorer):
    ex = explorer(lambda x: anp.sin(x) * x, anp.linspace(0.2, 1, 3))
    pane = ex.panes["Jacobian"]
    pane._handle(pane, {"type": "select", "row": 2, "col": 1}, [])
    assert (ex.row.value, ex.col.value) == (2, 1) and "y[2] / x[1]" in ex.entry_info.value
    assert pane.spec["selection"] == [2, 1]
    pane._handle(pane, {"type": "select", "row": 9, "col": 1}, [])  # off the map: ignored
    assert (ex.row.value, ex.col.value) == (2, 1)


def test_zoom_to_entry_on_256x256_shows_the_entries_around_it(explorer):
    """Not pooled blocks: a 256 x 256 map is on the page at full resolution, so the 17 x
    17 cells around the entry are entries (the old view narrowed a 2x2-pooled picture)."""
    A = np.random.default_rng(0).standard_normal((256, 256)) / 16
    ex = explorer(lambda x: anp.tanh(A @ x), np.linspace(-1, 1, 256))
    pane = ex.panes["Jacobian"]
    assert pane.spec["panels"][0]["block"] == [1, 1]
    ex.row.value, ex.col.value = 140, 10
    ex.zoom.value = True
    assert pane.spec["zoom"] == [140, 10, 8] and pane.spec["selection"] == [140, 10]
    np.testing.assert_allclose(
        page_array(pane, "b0")[132:149, 2:19], ex.report.analytic[132:149, 2:19], rtol=1e-6
    )
    assert pane.labels["rows"][140] == "y[140]" and pane.labels["cols"][10] == "x[10]"
    ex.zoom.value = False
    assert pane.spec["zoom"] is None


def test_a_1024_map_is_pooled_and_a_zoomed_window_comes_at_full_resolution():
    from gradexplorer.explorer import maps

    rng = np.random.default_rng(3)
    M = rng.standard_normal((1024, 1024))
    M[700, 300] = 50.0
    r = type(
        "R",
        (),
        {
            "analytic": M,
            "numeric": M,
            "abs_err": abs(M),
            "fd_error": M,
            "violation": M,
            "shape": M.shape,
        },
    )()
    spec, data = maps.panel(M, "signed", "J")
    assert spec["block"] == [4, 4] and spec["rows"] == 256 and len(data) == 256 * 256 * 4
    assert np.frombuffer(data, np.float32).reshape(256, 256)[175, 75] == 50.0  # never averaged away
    t = maps.tile(r, {"analytic": "b0"}, 690, 710, 290, 330, "k")
    assert t["block"] == [1, 1] and (t["rows"], t["cols"]) == (20, 40)
    np.testing.assert_allclose(
        np.frombuffer(t["slots"]["b0"], np.float32).reshape(20, 40), M[690:710, 290:330], rtol=1e-6
    )


def test_a_tile_request_is_answered_for_the_current_map_only(explorer):
    A = np.random.default_rng(0).standard_normal((300, 300)) / 16
    ex = explorer(lambda x: anp.tanh(A @ x), np.linspace(-1, 1, 300))
    pane = ex.panes["Jacobian"]
    assert pane.spec["panels"][0]["block"] == [2, 2]
    key = pane.spec["key"]
    pane._handle(pane, {"type": "tile", "key": key, "r0": 10, "r1": 40, "c0": 0, "c1": 20}, [])
    got = np.frombuffer(pane.tile["slots"]["b0"], np.float32).reshape(30, 20)
    np.testing.assert_allclose(got, ex.report.analytic[10:40, 0:20], rtol=1e-6)
    pane.tile = {}
    pane._handle(pane, {"type": "tile", "key": "old", "r0": 0, "r1": 5, "c0": 0, "c1": 5}, [])
    assert pane.tile == {}


def test_every_view_has_numbers_or_a_picture_or_says_why(explorer):
    ex = explorer()
    for name in ["softmax", "z_abs2", "rosenbrock", "polar", "cube_holomorphic"]:
        ex.gallery_menu.value = name
        ex.fill_views()  # what the idle kernel does for the saved notebook
        assert ex.error.value == "", name
        for view, pane in ex.panes.items():
            kind = pane.spec["kind"]
            assert kind in ("maps", "image", "note"), (name, view, pane.spec)
            if kind == "note":
                assert pane.spec["text"] == ex._notes[view] or "Graph" in view, (name, view)
            if kind == "image":
                assert pane.png[:4] == b"\x89PNG" and pane.spec["width"] <= 860, (name, view)
            if kind == "maps":
                for p in pane.spec["panels"]:
                    assert len(getattr(pane, p["slot"])) == 4 * p["rows"] * p["cols"], (name, view)


def test_the_tabs_stay_the_same_through_the_gallery(explorer):
    ex = explorer()
    panes = ex.tabs.children
    for name in ["softmax", "z_abs2", "rosenbrock", "phase", "matmul"]:
        ex.gallery_menu.value = name
        assert list(ex.tabs.titles) == list(VIEW_NAMES) and ex.tabs.children == panes, name


def test_a_view_that_does_not_apply_says_why_and_comes_back(explorer):
    ex = explorer()
    ex.gallery_menu.value = "softmax"
    pane = show(ex, "Hessian")
    assert pane.spec["kind"] == "note" and "scalar" in pane.spec["text"]
    ex.gallery_menu.value = "rosenbrock"
    H = gx.hessian(ex.f)(*ex.args)
    np.testing.assert_allclose(page_array(pane, "b0"), H, rtol=1e-6)


def test_views_that_need_the_operators_ask_the_backends_capabilities():
    from gradexplorer.explorer.registry import Shape, view

    shape = Shape(False, "torch", False, True, True, (), 3, 1)
    for name in ("Complex", "Hessian", "Landscape", "Linear map"):
        assert view(name).needs_operators
    assert "operators" in view("Hessian").note(shape) and "torch" in view("Hessian").note(shape)
    assert view("Hessian").note(Shape(True, "torch", False, True, True, (), 3, 1)) is None
    assert view("Check").note(shape) is None


def test_a_pane_says_drawing_before_its_first_numbers():
    from gradexplorer.explorer.pane import Pane
    from gradexplorer.explorer.registry import pending_spec

    assert Pane().spec == {"kind": "pending", "text": "drawing…"}
    ex = gx.explore(lambda x: anp.sin(x), np.ones(2))
    try:  # the first view drawn, every other one waiting at the height of its picture
        assert ex.panes["Jacobian"].spec["kind"] == "maps"
        for name in VIEW_NAMES[1:]:
            assert ex.panes[name].spec == pending_spec(name), name
        assert ex.panes["Check"].spec == {"kind": "pending", "text": "drawing…", "height": 680}
        ex.fill_views()
        assert all(p.spec["kind"] != "pending" for p in ex.panes.values())
    finally:
        ex.close()


def test_an_error_marks_the_views_stale_names_the_point_and_recovers(explorer):
    def f(x):
        if x[0] > 2:
            raise ValueError("x[0] too big")
        return anp.sin(x) * x

    ex = explorer(f, np.array([0.5, 1.0]))
    assert "PASSED" in ex.badge.value
    before = ex.panes["Jacobian"].b0
    order = []
    ex.badge.observe(lambda c: order.append("badge"), "value")
    ex.error.observe(lambda c: order.append("error"), "value")
    ex.point_sliders[0].value = 2.5
    assert "x[0] too big" in ex.error.value and "x = [2.5, 1]" in ex.error.value
    assert order == ["badge", "error"]  # the page never shows the error beside a PASSED
    assert "STALE" in ex.badge.value and "PASSED" not in ex.badge.value
    assert "x = [0.5, 1]" in ex.badge.value  # the point the pictures still show
    assert "gx-stale" in ex.tabs._dom_classes
    assert ex.panes["Jacobian"].b0 == before
    ex.point_sliders[0].value = 0.7
    assert ex.error.value == "" and "PASSED" in ex.badge.value
    assert "gx-stale" not in ex.tabs._dom_classes


def test_a_complex_step_chosen_where_it_cannot_apply_is_a_note_not_an_error(explorer):
    ex = explorer(lambda x: anp.abs(x) * x, np.array([0.5, -1.0]))
    ex.method.value = "complex_step"
    assert ex.error.value == "" and not ex.stale and "STALE" not in ex.badge.value
    assert "PASSED" in ex.badge.value and ex.report.method == "richardson"
    assert "complex step does not apply" in ex.note.value
    ex.method.value = "central"
    assert ex.note.value == ""


def test_the_step_slider_shows_the_auto_step_in_use(explorer):
    ex = explorer(anp.sin, np.array([0.5, 100.0]))
    assert ex.step.disabled and "auto: h ≈" in ex.step_note.value
    h = float(ex.step_note.value.split("≈ ")[1].split("<")[0])
    assert ex.step.value == pytest.approx(h, rel=0.05)  # not a stale 1e-5
    generation = ex.generation
    ex.refresh()
    assert ex.generation == generation + 1  # showing the step did not refresh by itself
    ex.auto_step.value = False
    assert not ex.step.disabled and ex.step_note.value == ""


def test_the_step_sweep_labels_its_lines_and_shows_exact_zeros(explorer):
    ex = explorer(anp.sin, np.array([0.5, 1.0]))
    pane = show(ex, "Step sweep")
    assert pane.spec["kind"] == "image"
    lines = ex.pictures.artists["Step sweep"]
    ax = lines["central"].axes
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "default step (dotted)" in labels and "complex step" in labels
    assert "entry y[0] / x[0]" in ax.get_title()
    assert lines["exact"].get_visible() and "error exactly 0" in labels
    png = pane.png
    ex.row.value = 1  # the sweep follows the selected entry
    assert pane.png != png and "entry y[1] / x[0]" in ax.get_title()


def test_lesson_5s_step_sweep_keeps_its_legend_in_a_hand_made_figure():
    """The course draws ``plot_step_sweep`` on ``plt.figure(figsize=(6, 4))``: the
    legend sat below the axes, outside that figure, and students read the best steps
    off it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = Figure(figsize=(6, 4))
    FigureCanvasAgg(fig)
    lines = gx.plot_step_sweep(
        lambda x: anp.exp(x) * anp.sin(3 * x), np.array([0.7]), ax=fig.add_subplot()
    )
    fig.canvas.draw()
    legend = lines["central"].axes.get_legend()
    box, page = legend.get_window_extent(), fig.bbox
    assert box.x0 >= page.x0 and box.x1 <= page.x1 and box.y0 >= page.y0 and box.y1 <= page.y1
    assert {"forward", "central"} <= {t.get_text() for t in legend.get_texts()}


def test_the_cauchy_riemann_residual_scale_starts_at_zero(explorer):
    ex = explorer()
    ex.gallery_menu.value = "z_abs2"
    pane = show(ex, "Complex")
    residual = pane.spec["panels"][4]
    assert residual["scale"]["kind"] == "magnitude" and residual["scale"]["vmin"] == 0
    b = gx.complex_blocks(ex.f, *ex.args)
    np.testing.assert_allclose(page_array(pane, "b0"), b.dre_dre, rtol=1e-6)


def test_the_landscape_follows_a_clicked_point(explorer):
    f = lambda x: (1 - x[0]) ** 2 + 3 * (x[1] - x[0] ** 2) ** 2  # noqa: E731
    ex = explorer(f, np.array([0.5, 0.5]))
    pane = show(ex, "Landscape")
    (plane,) = pane.spec["axes"]
    assert plane["name"] == "plane" and plane["xlim"][0] < 0.8 < plane["xlim"][1]
    png, generation = pane.png, ex.generation
    pane._handle(pane, {"type": "click", "axes": "plane", "x": 0.8, "y": 0.3}, [])
    assert [s.value for s in ex.point_sliders] == pytest.approx([0.8, 0.3], abs=0.05)
    assert ex.generation == generation + 1  # one refresh for both coordinates
    art = ex.pictures.artists["Landscape"]
    np.testing.assert_allclose(art.x, [s.value for s in ex.point_sliders])
    np.testing.assert_allclose(art.gradient, gx.grad(f)(ex.args[0]))
    assert pane.png != png


def test_the_landscapes_labels_stay_inside_its_axes():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    f = lambda x: (1 - x[0]) ** 2 + 3 * (x[1] - x[0] ** 2) ** 2  # noqa: E731
    for x in ([0.5, 0.5], [-1.2, 1.0], [1.5, -0.5], [0.2, 0.9]):
        fig = Figure(figsize=(8.6, 5.0), layout="constrained")
        FigureCanvasAgg(fig)
        art = gx.plot_landscape(f, np.array(x), fig=fig)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ax = art.artists["point"].axes
        inside, title = ax.get_window_extent(renderer), ax.title.get_window_extent(renderer)
        for name in ("arrow_label", "eigen0_label", "eigen1_label"):
            box = art.artists[name].get_window_extent(renderer)
            assert inside.x0 - 2 <= box.x0 and box.x1 <= inside.x1 + 2, (x, name)
            assert inside.y0 - 2 <= box.y0 and box.y1 <= inside.y1 + 2, (x, name)
            assert not box.overlaps(title), (x, name)


def test_the_linear_map_of_a_3x3_f_names_its_block_not_det_j(explorer):
    ex = explorer(lambda x: anp.tanh(x) * x[::-1], np.array([0.5, -0.3, 0.8]))
    show(ex, "Linear map")
    words = ex.pictures.artists["Linear map"].artists["headline"].get_text()
    assert "2 x 2 block" in words and "of the 3 x 3 J" in words and "det J" not in words
    ex2 = explorer()
    ex2.gallery_menu.value = "polar"
    show(ex2, "Linear map")
    assert "det J" in ex2.pictures.artists["Linear map"].artists["headline"].get_text()


def test_updates_create_no_new_figures(explorer):
    ex = explorer(lambda x: anp.sin(x) * x, anp.linspace(0, 1, 3))
    ex.fill_views()
    before = live_figures()
    for k in range(8):
        ex.point_sliders[k % 3].value = 0.1 * k
        ex.tabs.selected_index = k % len(ex.views)
    assert live_figures() == before


def test_close_releases_every_widget_model():
    import warnings

    with warnings.catch_warnings():  # Widget.widgets: the registry of open models
        warnings.simplefilter("ignore", DeprecationWarning)
        before = set(W.Widget.widgets)
        ex = gx.explore(lambda x: anp.sin(x), anp.ones(2))
        ex.gallery_menu.value = "rosenbrock"  # loading another example replaces widgets
        ex.close()
        left = [type(w).__name__ for k, w in W.Widget.widgets.items() if k not in before]
    assert ex.pictures.figures == {}
    assert left == []  # layouts and styles included: each is a model on the page


def test_the_saved_pictures_wait_until_the_controls_rest(monkeypatch):
    """The saved-pictures output (every view's picture, megabytes for a large map) is not
    rewritten while the user is still moving the controls, only once they rest."""
    import time

    from gradexplorer.explorer import snapshot as snap

    monkeypatch.setattr(snap, "SETTLE", 0.05)

    class Explorer:  # the fields the snapshot reads
        views, generation, _closed = ["Jacobian"], 0, False

    explorer = Explorer()
    rewrites = []
    s = snap.Snapshot(explorer)
    s.handle = types.SimpleNamespace(update=lambda shown: rewrites.append(explorer.generation))
    s.keep("Jacobian", None, b"\x89PNG")
    for _ in range(6):  # a change every 30 ms: shorter than SETTLE
        time.sleep(0.03)
        explorer.generation += 1
    assert rewrites == []
    deadline = time.monotonic() + 5
    while not rewrites and time.monotonic() < deadline:
        time.sleep(0.01)
    assert rewrites == [6]  # once, with the last change's pictures
    s.cancel()


def test_the_saved_pictures_hold_every_view(explorer):
    ex = explorer(lambda x: anp.sin(x) * x, anp.linspace(0, 1, 3))
    ex.fill_views()
    pane = ex.panes["Check"]
    pane._handle(pane, {"type": "picture", "key": pane.spec["key"]}, [memoryview(b"\x89PNG-check")])
    html = ex.snapshot.html()
    assert 'class="gx-snapshot"' in html and "PASSED" in html
    for view in VIEW_NAMES:
        assert f'data-view="{view}"' in html
    assert html.count("data:image/png;base64,") == 1 + sum(
        p.spec["kind"] == "image" for p in ex.panes.values()
    )
    assert "not drawn before" in html  # the Jacobian's page picture has not come yet
    assert "f is real here" in html  # a note is kept as its words


def test_the_background_worker_fills_the_other_views_when_idle():
    ex = gx.explore(lambda x: anp.sin(x) * x, np.linspace(0, 1, 3), asynchronous=True)
    try:
        ex._worker.idle_after = 0.05
        assert ex.wait(60)
        ex.point_sliders[0].value = 0.4
        assert ex.wait(60)
        import time

        deadline = time.monotonic() + 60
        while ex._dirty and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not ex._dirty
        assert all(p.spec["kind"] in ("maps", "image", "note") for p in ex.panes.values())
    finally:
        ex.close()


def test_a_slow_check_shows_its_jacobian_first_on_the_check_tab(monkeypatch):
    from gradexplorer.explorer import computing

    monkeypatch.setattr(computing, "SLOW_CHECK", 0.0)  # every check counts as slow
    ex = gx.explore(lambda x: anp.sin(x) * x, np.array([0.5, 0.25, 0.5]), asynchronous=True)
    try:
        ex._worker.idle_after = 60
        assert ex.wait(60)
        pane = show(ex, "Check")
        assert ex.wait(60)
        frames = []
        real = pane.show

        def spy(spec, slots=None, *a, **k):
            frames.append((dict(spec), dict(slots or {})))
            return real(spec, slots, *a, **k)

        pane.show = spy
        ex._check_seconds = 1.0
        ex.point_sliders[0].value = 0.55
        assert ex.wait(60) and "PASSED" in ex.badge.value
        early, final = frames[0], frames[-1]
        assert early[0].get("pending") == [1, 2, 3] and set(early[1]) == {"b0"}
        assert not final[0].get("pending")
        np.testing.assert_allclose(page_array(pane, "b0"), ex.report.analytic, rtol=1e-6)
    finally:
        ex.close()


def test_the_teaching_views_follow_the_point(explorer):
    ex = explorer()
    ex.gallery_menu.value = "polar"
    show(ex, "Linear map")
    lm = ex.pictures.artists["Linear map"]
    J = gx.jacobian(ex.f)(*ex.args)
    np.testing.assert_allclose(lm.singular_values, np.linalg.svd(J, compute_uv=False))
    ex.point_sliders[0].value = 1.7
    assert ex.pictures.artists["Linear map"] is lm  # moved in place
    np.testing.assert_allclose(
        lm.singular_values, np.linalg.svd(gx.jacobian(ex.f)(*ex.args), compute_uv=False)
    )


def test_the_graph_view_steps_through_the_sweeps_of_the_selected_entry(explorer):
    f = lambda x: anp.sin(x[0]) * x[1] + x[0] ** 2  # noqa: E731
    ex = explorer(f, np.array([0.5, 2.0]))
    pane = show(ex, "Graph")
    assert ex.sweep_box.layout.display == "flex"
    art = ex.pictures.artists["Graph"]
    last = len(art.sweeps.forward) - 1
    assert ex.sweep_step.max == last
    pictures = []
    for k in range(last + 1):
        ex.sweep_step.value = k
        assert ex.pictures.artists["Graph"] is art
        pictures.append(pane.png)
    assert len(set(pictures)) == last + 1  # a new picture at every step
    ex.sweep_mode.value = "reverse"
    ex.col.value = 1
    np.testing.assert_allclose(ex.pictures.artists["Graph"].sweeps.adjoint, gx.grad(f)(ex.args[0]))
    ex.tabs.selected_index = 0
    assert ex.sweep_box.layout.display == "none"


def test_the_graph_view_says_why_for_a_big_function(explorer):
    A = np.random.default_rng(0).standard_normal((64, 64))
    ex = explorer(lambda x: anp.tanh(A @ x), np.ones(64))
    pane = show(ex, "Graph")
    assert pane.spec["kind"] == "note" and "small functions only" in pane.spec["text"]
    assert ex.error.value == ""


def test_where_view_names_the_culprit(explorer):
    case = next(c for c in CASES if c.name == "transposed")
    ex = explorer(case.f, *case.args)
    pane = show(ex, "Where")
    assert ex.pictures.artists["Where"].culprit is not None and pane.png[:4] == b"\x89PNG"


def test_the_pages_module_is_in_the_package_and_fetches_nothing():
    from pathlib import Path

    import gradexplorer.explorer.pane as pane_module

    js = (Path(pane_module.__file__).parent / "static" / "pane.js").read_text()
    assert "export default" in js
    assert "http" not in js.replace("http://www.w3.org", "")  # no CDN, no URL at all
    assert "import " not in js.split("\n", 20)[-1][:0] + "".join(
        line for line in js.splitlines() if line.startswith("import ")
    )


def test_the_status_counts_no_view_left_once_a_tab_click_drew_the_last(explorer):
    """The idle worker counted the views left before a tab click drew the last one, and
    then, finding none, left the status saying one was left (a saved notebook waited on
    it for ever)."""
    ex = explorer(lambda x: anp.sin(x) * x, anp.linspace(0, 1, 3))
    while len(ex._dirty) > 1:
        ex.fill_one()
    (last,) = ex._dirty
    ex.status.value = ex.status.value.replace('data-todo="0"', 'data-todo="1"')
    show(ex, last)  # the click draws it
    assert not ex._dirty and not ex.fill_one()
    assert 'data-todo="0"' in ex.status.value


def test_hand_over_waits_for_the_iopub_thread(monkeypatch):
    """A frame published from the worker is sent by the kernel's IOPub thread before the
    worker computes on: hand_over returns once an event queued behind it has run."""
    import sys
    import threading

    from gradexplorer.explorer.worker import hand_over

    ran = []

    class IOPub:  # ipykernel's IOPubThread: a thread running what is scheduled, in order
        def __init__(self):
            self.thread = threading.Thread(target=lambda: None)
            self.thread.start()
            self.thread.join()
            self.thread.is_alive = lambda: True

        def schedule(self, f):
            threading.Timer(0.02, lambda: (ran.append("sent"), f())).start()

    shell = types.SimpleNamespace(kernel=types.SimpleNamespace(iopub_thread=IOPub()))
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    hand_over()
    assert ran == ["sent"]
    shell.kernel.iopub_thread = None  # no IOPub thread: a short pause, no error
    hand_over()


def test_one_verdict_with_check_grads_on_float32_torch_and_jax(explorer):
    """The explorer's float64 is check_grads' default: every float input promoted
    (W, not only the explored x) and jax in 64-bit mode. Before, torch float32
    tensors met float64 ones (a dtype error) and jax was checked in float32, so a
    rule off by 1e-6 passed in the explorer and failed in check_grads."""
    import jax
    import jax.numpy as jnp
    import torch

    gen = torch.Generator().manual_seed(0)
    x, W = torch.randn(3, generator=gen), torch.randn(3, 3, generator=gen)
    ex = explorer(lambda x, W: torch.tanh(W @ x), x, W)
    assert ex.dtype.value == "float64" and "Error" not in ex.error.value, ex.error.value
    assert ex.report.passed and ex.report.dtype == "float64"

    @jax.custom_vjp
    def softplus(v):
        return jnp.logaddexp(v, 0.0)

    softplus.defvjp(lambda v: (softplus(v), v), lambda v, g: (g * jax.nn.sigmoid(v) * (1 + 1e-6),))
    v = jnp.linspace(-1.0, 1.0, 4)
    ex = explorer(softplus, v)
    assert gx.check_grads(softplus, v).outcome is gx.Outcome.FAILED
    assert ex.report.outcome is gx.Outcome.FAILED and ex.report.dtype == "float64", ex.report
    ex.dtype.value = "float32"  # the user's visible choice: the point in float32
    assert ex.report.dtype == "float32"


def test_the_explorers_inputs_default_to_check_grads(explorer):
    """explore(f, x, W) explores x and W, as check_grads checks both: a rule wrong only
    for W fails in both (before, the explorer took x alone and said PASSED)."""

    @gx.primitive
    def matvec(x, W):
        return W @ x

    gx.defvjp(
        matvec,
        lambda ans, x, W: lambda g: W.T @ g,
        lambda ans, x, W: lambda g: 1.01 * np.outer(g, x),
    )
    x, W = np.array([0.3, -0.8, 0.5]), np.arange(9.0).reshape(3, 3) / 9
    assert gx.check_grads(matvec, x, W).outcome is gx.Outcome.FAILED
    ex = explorer(matvec, x, W)
    assert ex.input_names == ["x", "W"] and ex.report.outcome is gx.Outcome.FAILED
    assert explorer(matvec, x, W, wrt=0).report.passed  # x alone, as asked
