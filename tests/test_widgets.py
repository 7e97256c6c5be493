"""The explorer driven headlessly: set widget values, assert on what is drawn."""

import gc

import autograd.numpy as anp
import matplotlib
import numpy as np
import pytest
from corpus import CASES
from matplotlib.figure import Figure

import gradexplorer as gx
from gradexplorer import gallery

matplotlib.use("Agg")


def live_figures() -> int:
    gc.collect()
    return sum(isinstance(o, Figure) for o in gc.get_objects())


def image_of(heatmap):
    return np.ma.filled(heatmap.image.get_array().astype(float), np.nan)


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


def test_jacobian_view_shows_the_reports_matrix(explorer):
    ex = explorer(lambda x: anp.sin(x) * x, anp.linspace(0, 1, 3))
    assert ex.error.value == ""
    np.testing.assert_allclose(image_of(ex.artists["Jacobian"]), ex.report.analytic)
    ex.point_sliders[0].value = 0.7
    assert ex.report.analytic[0, 0] == pytest.approx(np.cos(0.7) * 0.7 + np.sin(0.7))
    np.testing.assert_allclose(image_of(ex.artists["Jacobian"]), ex.report.analytic)
    assert "PASSED" in ex.badge.value


def test_check_view_outlines_wrong_entries_and_badge_says_failed(explorer, tmp_path):
    case = next(c for c in CASES if c.name == "transposed")
    ex = explorer(case.f, *case.args)
    assert "FAILED: 12 wrong entries" in ex.badge.value
    assert ex.report.mismatches[0].label in ex.worst.value
    ex.tabs.selected_index = ex.views.index("Check")
    art = ex.artists["Check"]
    np.testing.assert_allclose(image_of(art.heatmaps[0]), ex.report.analytic)
    np.testing.assert_allclose(image_of(art.heatmaps[1]), ex.report.numeric)
    assert len([m for m in art.marks if hasattr(m, "get_width")]) == 12 * 4
    (tmp_path / "check.png").write_bytes(ex._view_widgets["Check"].value)


def test_controls_recompute_with_method_rtol_step_and_dtype(explorer):
    ex = explorer(lambda x: anp.exp(x), np.linspace(0, 1, 4))
    ex.method.value = "forward"
    assert ex.report.method == "forward" and "forward" in ex.badge.value
    ex.rtol.value = 1e-3
    assert ex.report.rtol == pytest.approx(1e-3)
    ex.auto_step.value = False
    ex.step.value = 1e-3
    assert ex.report.passed  # the FD error estimate grows with the step: no false alarm
    ex.dtype.value = "float32"
    assert ex.report.dtype == "float32" and ex.report.passed
    assert ex.rtol.value == pytest.approx(np.sqrt(np.finfo(np.float32).eps))


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


def test_entry_selection_and_step_sweep(explorer, tmp_path):
    ex = explorer(lambda x: anp.sin(x) * x, anp.linspace(0.2, 1, 3))
    ex.row.value, ex.col.value = 1, 1
    assert "y[1] / x[1]" in ex.entry_info.value
    ex.tabs.selected_index = ex.views.index("Step sweep")
    lines = ex.artists["Step sweep"]
    assert set(lines) >= {"forward", "central", "richardson"}
    y_before = lines["central"].get_ydata().copy()
    ex.col.value = 2
    assert "y[1] / x[2]" in ex.entry_info.value
    ex.row.value = 2
    assert not np.allclose(y_before, lines["central"].get_ydata(), equal_nan=True)
    (tmp_path / "sweep.png").write_bytes(ex._view_widgets["Step sweep"].value)


def test_complex_and_hessian_views(explorer, tmp_path):
    ex = explorer()
    ex.gallery_menu.value = "z_abs2"
    assert "Complex blocks" in ex.views
    ex.tabs.selected_index = ex.views.index("Complex blocks")
    b = gx.complex_blocks(ex.f, *ex.args)
    np.testing.assert_allclose(image_of(ex.artists["Complex blocks"].heatmaps[0]), b.dre_dre)
    (tmp_path / "complex.png").write_bytes(ex._view_widgets["Complex blocks"].value)
    ex.gallery_menu.value = "rosenbrock"
    ex.tabs.selected_index = ex.views.index("Hessian")
    H = gx.hessian(ex.f)(*ex.args)
    np.testing.assert_allclose(image_of(ex.artists["Hessian"].heatmaps[0]), H)
    (tmp_path / "hessian.png").write_bytes(ex._view_widgets["Hessian"].value)


def test_updates_create_no_new_figures(explorer):
    ex = explorer(lambda x: anp.sin(x) * x, anp.linspace(0, 1, 3))
    for name in range(len(ex.views)):
        ex.tabs.selected_index = name
    before = live_figures()
    heatmap = ex.artists["Check"].heatmaps[0]
    for k in range(8):
        ex.point_sliders[k % 3].value = 0.1 * k
        ex.tabs.selected_index = k % len(ex.views)
    assert live_figures() == before
    assert ex.artists["Check"].heatmaps[0] is heatmap  # the same artists, updated in place


def test_gallery_menu_lists_every_example(explorer):
    ex = explorer()
    assert list(ex.gallery_menu.options) == gallery.names()
    for name in ["softmax", "matmul", "phase"]:
        ex.gallery_menu.value = name
        assert ex.error.value == "", name


def test_close_releases_figures():
    ex = gx.explore(lambda x: anp.sin(x), anp.ones(2))
    ex.close()
    assert ex.figures == {}


def test_where_view_names_the_culprit(explorer, tmp_path):
    case = next(c for c in CASES if c.name == "transposed")
    ex = explorer(case.f, *case.args)
    ex.tabs.selected_index = ex.views.index("Where")
    loc = ex.artists["Where"]
    assert loc.culprit is not None
    assert "culprit" in ex.figures["Where"].axes[0].get_title()
    (tmp_path / "where.png").write_bytes(ex._view_widgets["Where"].value)


def test_heatmap_keeps_a_fitting_scale_and_blits():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from gradexplorer.display import plots as P

    fig = Figure()
    FigureCanvasAgg(fig)
    M = np.random.default_rng(0).standard_normal((40, 40))
    h = P.plot_jacobian(M, fig.add_subplot())
    fig.canvas.draw()
    norm = h.image.norm
    assert P.update_heatmap(h, 0.9 * M) and not h.rescaled and h.image.norm is norm
    P.blit_heatmap(h)  # draws the image over the cached figure, no error, no new artists
    np.testing.assert_allclose(image_of(h), 0.9 * M)
    assert P.update_heatmap(h, 10 * M) and h.rescaled
    assert h.image.norm.halfrange >= np.max(np.abs(10 * M))  # with headroom for the next step
    assert P.update_heatmap(h, 0.1 * M) and h.rescaled  # too small for the old scale
