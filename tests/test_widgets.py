"""The explorer driven headlessly: set widget values, assert on what is drawn."""

import gc

import autograd.numpy as anp
import ipywidgets as W
import matplotlib
import numpy as np
import pytest
from corpus import CASES
from matplotlib.figure import Figure

import gradexplorer as gx
from gradexplorer import gallery
from gradexplorer.explorer.views import VIEWS

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
    assert "Complex" in ex.views
    ex.tabs.selected_index = ex.views.index("Complex")
    b = gx.complex_blocks(ex.f, *ex.args)
    np.testing.assert_allclose(image_of(ex.artists["Complex"].heatmaps[0]), b.dre_dre)
    (tmp_path / "complex.png").write_bytes(ex._view_widgets["Complex"].value)
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


def test_close_releases_figures_and_every_widget_model():
    import warnings

    with warnings.catch_warnings():  # Widget.widgets: the registry of open models
        warnings.simplefilter("ignore", DeprecationWarning)
        before = set(W.Widget.widgets)
        ex = gx.explore(lambda x: anp.sin(x), anp.ones(2))
        ex.gallery_menu.value = "rosenbrock"  # loading another example replaces widgets
        ex.close()
        left = [type(w).__name__ for k, w in W.Widget.widgets.items() if k not in before]
    assert ex.figures == {}
    assert left == []  # layouts and styles included: each is a model on the page


def test_a_closed_live_explorer_leaves_no_canvas_toolbar_behind(monkeypatch):
    """ipympl's canvases own toolbar widgets: left open, every re-run of a cell left
    nine toolbars and their layouts in the kernel, sent to the page on every reload."""
    import warnings

    backend = matplotlib.get_backend()
    pytest.importorskip("ipympl")
    matplotlib.use(backend)
    from gradexplorer.explorer import explorer as module

    monkeypatch.setattr(module, "ipympl_active", lambda: True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        before = set(W.Widget.widgets)
        ex = gx.explore(lambda x: anp.sin(x), anp.ones(2), asynchronous=False)
        made = {type(w).__name__ for k, w in W.Widget.widgets.items() if k not in before}
        ex.close()
        left = [type(w).__name__ for k, w in W.Widget.widgets.items() if k not in before]
    assert {"Canvas", "Toolbar"} <= {name.replace("Fast", "") for name in made}
    assert left == []


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
        assert first._closed and twin._closed and first.figures == {} and twin.figures == {}
        assert not other._closed and not again._closed
        request["metadata"] = {}  # a front end that sends no cell id: nothing is closed
        assert rerun.running_cell() is None
        gx.explore(lambda x: anp.sin(x), anp.ones(2)).close()
        assert not again._closed
    finally:
        for ex in (other, again):
            ex.close()


def test_where_view_names_the_culprit(explorer, tmp_path):
    case = next(c for c in CASES if c.name == "transposed")
    ex = explorer(case.f, *case.args)
    ex.tabs.selected_index = ex.views.index("Where")
    loc = ex.artists["Where"]
    assert loc.culprit is not None
    ax = ex.figures["Where"].axes[0]
    assert "culprit" in " ".join(ax.get_title(loc=side) for side in ("left", "center"))
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


def _ink(stamp: bool, text: str, dpi: int, ink: str, paper: str) -> np.ndarray:
    """How much each pixel differs from the paper, for one centred cell value."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from gradexplorer.display.celltext import add_cell_value

    fig = Figure(figsize=(1.2, 0.5), dpi=dpi, facecolor=paper)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1), xlim=(0, 1), ylim=(0, 1))
    ax.set_axis_off()
    # a centre off the pixel grid: the stamp must land where matplotlib would put the text
    kw = dict(fontsize=8, color=ink)
    if stamp:
        add_cell_value(ax, 0.513, 0.487, text, **kw)
    else:
        ax.text(0.513, 0.487, text, ha="center", va="center", **kw)
    fig.canvas.draw()
    rgb = np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(float)
    return np.abs(rgb - np.asarray(matplotlib.colors.to_rgb(paper)) * 255).max(axis=-1)


CELL_STRINGS = ["0.25", "-1.5e-07", "NaN", "+inf", "-inf", "123", "7", "-0.000312", "1e+03"]


@pytest.mark.parametrize("dpi", [72, 100, 150])
@pytest.mark.parametrize("ink,paper", [("black", "white"), ("white", "#30123b")])
def test_cell_values_are_stamped_where_matplotlib_draws_them(dpi, ink, paper):
    """The cached cell-value images match matplotlib's own text: the same amount of
    ink, in the same place to about a pixel (the stamp sits on whole pixels and centres
    its ink; matplotlib places glyphs at sub-pixel offsets and centres their advances)."""
    for text in CELL_STRINGS:
        drawn, stamped = _ink(False, text, dpi, ink, paper), _ink(True, text, dpi, ink, paper)
        assert drawn.sum() > 0
        assert stamped.sum() == pytest.approx(drawn.sum(), rel=0.1), text
        rows, cols = np.indices(drawn.shape)
        for index, within in ((rows, 0.6), (cols, 1.2 * dpi / 100)):
            centre = (index * drawn).sum() / drawn.sum()
            moved = (index * stamped).sum() / stamped.sum()
            assert moved == pytest.approx(centre, abs=within), text


def test_cell_values_stay_text_where_an_image_would_not_do(tmp_path):
    """Vector output keeps real text, and a rotated value is drawn by matplotlib."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from gradexplorer.display import plots as P

    fig = Figure()
    FigureCanvasAgg(fig)
    h = P.plot_jacobian(np.array([[0.25, -1.5], [3.0, 7.0]]), fig.add_subplot())
    assert {t.get_text() for t in h.texts} == {"0.25", "-1.5", "3", "7"}
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(tmp_path / "cells.svg")
    svg = (tmp_path / "cells.svg").read_text()
    assert all(f">{v}<" in svg for v in ("0.25", "-1.5", "3", "7"))
    upright = _ink(True, "0.25", 100, "black", "white")
    from gradexplorer.display.celltext import CellValue

    assert not CellValue(0, 0, "0.25", rotation=90)._stampable(fig.canvas.get_renderer())
    assert upright.sum() > 0


@pytest.mark.parametrize("family", ["DejaVu Sans", "DejaVu Serif", "DejaVu Sans Mono"])
@pytest.mark.parametrize("size,dpi", [(8, 100), (8, 72), (7, 150), (9.5, 96)])
def test_cell_values_built_from_glyphs_are_freetypes_own_pixels(family, size, dpi):
    """A value seen for the first time is put together from cached glyphs: exactly the
    ink, height and descent FreeType's own layout gives; a kerned pair is left to it."""
    from matplotlib import font_manager
    from matplotlib.backends.backend_agg import get_hinting_flag

    from gradexplorer.display.celltext import _from_freetype, _from_glyphs

    path = font_manager.findfont(font_manager.FontProperties(family=family, size=size))
    flags = get_hinting_flag()
    rng = np.random.default_rng(7)
    values = rng.standard_normal(60) * 10.0 ** rng.integers(-9, 9, 60)
    for text in CELL_STRINGS + [f"{v:.3g}" for v in values]:
        glyphs = _from_glyphs(path, size, dpi, text, flags)
        assert glyphs is not None, text
        ink, height, descent = _from_freetype(path, size, dpi, text, flags)
        width = min(ink.shape[1], glyphs[0].shape[1])  # FreeType pads its box a pixel wider
        np.testing.assert_array_equal(glyphs[0][:, :width], ink[:, :width], err_msg=text)
        assert not ink[:, width:].any() and not glyphs[0][:, width:].any(), text
        assert glyphs[1:] == (height, descent), text
    if "Mono" not in family:  # a kerned pair (monospace fonts kern none)
        assert _from_glyphs(path, size, dpi, "AV", flags) is None


def _drawn_image(fast: bool, A, size, dpi, limits, origin, transform) -> np.ndarray:
    from matplotlib import colors
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from gradexplorer.display.cellimage import cell_image

    fig = Figure(figsize=size, dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    m, n = A.shape
    kw = dict(cmap="RdBu_r", norm=colors.CenteredNorm(), origin=origin)
    kw["extent"] = (-0.5, n - 0.5, m - 0.5, -0.5)
    if fast:
        image = cell_image(ax, A, **kw)
    else:
        image = ax.imshow(A, interpolation="nearest", aspect="auto", **kw)
    if transform is not None:
        image.set_transform(transform(ax))
    fig.colorbar(image, ax=ax)
    if limits:
        ax.set_xlim(*limits[0])
        ax.set_ylim(*limits[1])
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba()).copy(), image


CELL_IMAGES = {  # name: (shape, figure size, dpi, axis limits, origin, transform, repeated)
    "3x3": ((3, 3), (4.3, 3.3), 100, None, "upper", None, True),
    "tall, with NaN": ((7, 2), (4.3, 3.3), 100, None, "upper", None, True),
    "72 dpi": ((5, 6), (4.3, 3.3), 72, None, "upper", None, True),
    "150 dpi": ((5, 6), (4.3, 3.3), 150, None, "upper", None, True),
    "one row": ((1, 40), (4.3, 3.3), 100, None, "upper", None, True),
    "zoomed in": ((16, 16), (4.3, 3.3), 100, ((3.5, 8.5), (9.5, 2.5)), "upper", None, True),
    "half outside": ((16, 16), (4.3, 3.3), 100, ((-3.2, 4.7), (20.3, 10.1)), "upper", None, True),
    "origin lower": ((5, 6), (4.3, 3.3), 100, None, "lower", None, True),
    "64x64 pooled": ((64, 64), (4.3, 3.3), 100, None, "upper", None, True),
    "cells under a pixel": ((128, 128), (2.0, 2.0), 100, None, "upper", None, False),
    "rotated": ((4, 4), (4.3, 3.3), 100, None, "upper", "rotated", False),
}


@pytest.mark.parametrize("name", list(CELL_IMAGES))
def test_cell_images_draw_the_pixels_matplotlib_draws(name):
    """A heatmap's image repeats each cell's colour over its pixels: exactly the pixels
    matplotlib's resampler draws, with the same clipping, rounding and bad colour;
    where that shortcut does not apply, matplotlib draws it."""
    from matplotlib.transforms import Affine2D

    shape, size, dpi, limits, origin, turn, repeated = CELL_IMAGES[name]
    A = np.random.default_rng(len(name)).standard_normal(shape)
    if "NaN" in name:
        A[1, 0] = A[4, 1] = np.nan
    transform = (lambda ax: Affine2D().rotate_deg(20) + ax.transData) if turn else None
    expected, _ = _drawn_image(False, A, size, dpi, limits, origin, transform)
    drawn, image = _drawn_image(True, A, size, dpi, limits, origin, transform)
    assert (drawn[..., :3].astype(int) - 255).any(), "nothing drawn"
    np.testing.assert_array_equal(drawn, expected)
    assert (image._repeated_cells() is not None) == repeated


# ---------------------------------------------------------------- issue 12: as people use it

VIEW_NAMES = list(VIEWS)


def visit_all(ex):
    for k in range(len(ex.views)):
        ex.tabs.selected_index = k
    ex.tabs.selected_index = 0


def texts_of(fig):
    return [t for t in fig.findobj(matplotlib.text.Text) if t.get_text() and t.get_visible()]


@pytest.mark.parametrize("name", ["softmax", "z_abs2", "rosenbrock", "matmul"])
def test_every_view_fits_the_output_width_and_reads_at_10_px(explorer, name):
    ex = explorer()
    ex.gallery_menu.value = name
    visit_all(ex)
    for view, fig in ex.figures.items():
        assert fig.get_figwidth() * fig.dpi <= 860, (name, view)
        small = [(t.get_text()[:30], t.get_fontsize()) for t in texts_of(fig)]
        small = [(text, size) for text, size in small if size < 7.5]
        assert not small, (name, view, small)  # 7.5 pt = 10.4 px at 100 dpi


def test_the_tabs_stay_the_same_through_the_gallery(explorer):
    ex = explorer()
    tabs = ex.tabs.children
    for name in ["softmax", "z_abs2", "rosenbrock", "phase", "matmul"]:
        ex.gallery_menu.value = name
        assert list(ex.tabs.titles) == VIEW_NAMES and ex.tabs.children == tabs, name
        visit_all(ex)
        for k, view in enumerate(VIEW_NAMES):
            ex.tabs.selected_index = k
            assert ex.error.value == "", (name, view)
            words = " ".join(t.get_text() for t in texts_of(ex.figures[view]))
            assert words.strip(), (name, view)  # never blank: a picture or why not
            if ex._notes[view]:
                assert ex._notes[view] in words.replace("\n", " ")


def test_a_view_that_does_not_apply_says_why_and_comes_back(explorer):
    ex = explorer()
    ex.gallery_menu.value = "softmax"
    ex.tabs.selected_index = VIEW_NAMES.index("Hessian")
    assert "scalar" in ex._notes["Hessian"]
    assert ex.figures["Hessian"].get_figheight() < 2
    ex.gallery_menu.value = "rosenbrock"
    H = gx.hessian(ex.f)(*ex.args)
    np.testing.assert_allclose(image_of(ex.artists["Hessian"].heatmaps[0]), H)
    assert ex.figures["Hessian"].get_figheight() > 5


def test_a_failing_check_selects_and_outlines_its_worst_entry(explorer):
    case = next(c for c in CASES if c.name == "transposed")
    ex = explorer(case.f, *case.args)
    worst = ex.report.mismatches[0]
    assert (ex.row.value, ex.col.value) == (worst.row, worst.col)
    assert worst.label in ex.entry_info.value
    outline = ex.artists["Jacobian"].selection
    assert outline.get_xy() == (worst.col - 0.5, worst.row - 0.5)
    assert matplotlib.colors.to_hex(outline.get_edgecolor()) == "#ff00ff"
    ex.tabs.selected_index = VIEW_NAMES.index("Check")
    for h in ex.artists["Check"].heatmaps:
        assert h.selection.get_xy() == (worst.col - 0.5, worst.row - 0.5)
    ex.row.value, ex.col.value = 3, 1  # a click elsewhere moves the outline
    for h in ex.artists["Check"].heatmaps:
        assert h.selection.get_xy() == (0.5, 2.5)


def test_zoom_to_entry_on_a_large_map(explorer):
    A = np.random.default_rng(0).standard_normal((64, 64)) / 8
    ex = explorer(lambda x: anp.tanh(A @ x), np.linspace(-1, 1, 64))
    ex.row.value, ex.col.value = 40, 10
    ex.zoom.value = True
    ax = ex.artists["Jacobian"].ax
    assert ax.get_xlim() == (1.5, 18.5) and ax.get_ylim() == (48.5, 31.5)
    ex.zoom.value = False
    assert ax.get_xlim() == (-0.5, 63.5)


def test_an_error_marks_the_views_stale_names_the_point_and_recovers(explorer):
    def f(x):
        if x[0] > 2:
            raise ValueError("x[0] too big")
        return anp.sin(x) * x

    ex = explorer(f, np.array([0.5, 1.0]))
    assert "PASSED" in ex.badge.value
    image = image_of(ex.artists["Jacobian"]).copy()
    ex.point_sliders[0].value = 2.5
    assert "x[0] too big" in ex.error.value and "x = [2.5, 1]" in ex.error.value
    assert "STALE" in ex.badge.value and "PASSED" not in ex.badge.value
    assert "x = [0.5, 1]" in ex.badge.value  # the point the pictures still show
    assert "gx-stale" in ex.tabs._dom_classes
    np.testing.assert_allclose(image_of(ex.artists["Jacobian"]), image)
    ex.point_sliders[0].value = 0.7
    assert ex.error.value == "" and "PASSED" in ex.badge.value
    assert "gx-stale" not in ex.tabs._dom_classes
    assert ex.report.analytic[0, 0] == pytest.approx(np.cos(0.7) * 0.7 + np.sin(0.7))


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


def test_the_step_sweep_labels_its_lines_and_shows_exact_zeros(explorer):
    ex = explorer(anp.sin, np.array([0.5, 1.0]))
    ex.tabs.selected_index = VIEW_NAMES.index("Step sweep")
    lines = ex.artists["Step sweep"]
    ax = lines["central"].axes
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "default step (dotted)" in labels and "complex step" in labels
    assert ax.get_ylabel() and "entry y[0] / x[0]" in ax.get_title()
    # sin's complex step is exact at some steps: drawn on the "exact" line, not dropped
    assert lines["exact"].get_visible() and "error exactly 0" in labels


def test_the_cauchy_riemann_residual_scale_starts_at_zero(explorer):
    ex = explorer()
    ex.gallery_menu.value = "z_abs2"
    ex.tabs.selected_index = VIEW_NAMES.index("Complex")
    residual = ex.artists["Complex"].heatmaps[4]
    assert residual.image.norm.vmin == 0 and residual.kind == "magnitude"
    assert len(residual.colorbar.ax.get_yticks()) >= 4


def test_the_auto_step_is_shown_not_a_stale_slider_value(explorer):
    ex = explorer(anp.sin, np.array([0.5, 100.0]))
    assert ex.step.disabled and "auto: h ≈" in ex.step_note.value
    ex.auto_step.value = False
    assert not ex.step.disabled and ex.step_note.value == ""


def test_complex_step_is_labelled_where_it_cannot_apply(explorer):
    ex = explorer(anp.abs, np.array([0.5, -1.0]))
    labels = dict((v, k) for k, v in ex.method.options)
    assert labels["complex_step"].startswith("complex_step (n/a")
    ex2 = explorer(anp.sin, np.array([0.5, -1.0]))
    assert dict((v, k) for k, v in ex2.method.options)["complex_step"] == "complex_step"
    ex2.method.value = "complex_step"
    assert "PASSED" in ex2.badge.value, ex2.error.value


def test_live_figures_use_no_pyplot_and_compute_in_the_background(monkeypatch):
    backend = matplotlib.get_backend()
    pytest.importorskip("ipympl")  # importing ipympl switches matplotlib's backend to it
    matplotlib.use(backend)
    import matplotlib.pyplot as plt

    from gradexplorer.explorer import explorer as module

    monkeypatch.setattr(module, "ipympl_active", lambda: True)
    before = plt.get_fignums()
    ex = gx.explore(lambda x: anp.sin(x) * x, np.linspace(0, 1, 3))
    try:
        assert ex.asynchronous and ex.live
        assert ex.wait(60)
        assert plt.get_fignums() == before
        assert all(not fig.canvas.toolbar_visible for fig in ex.figures.values())
        assert 'data-state="idle"' in ex.status.value and "PASSED" in ex.badge.value
        for value in np.linspace(0.1, 0.9, 9):  # faster than the check: only the last counts
            ex.point_sliders[0].value = float(value)
        assert ex.wait(60)
        assert ex.report.analytic[0, 0] == pytest.approx(np.cos(0.9) * 0.9 + np.sin(0.9))
        assert f'data-generation="{ex.generation}"' in ex.status.value
        assert 'data-state="idle"' in ex.status.value
    finally:
        ex.close()


def test_live_frames_decode_to_the_figures_pixels(monkeypatch):
    """The canvas's own PNG frames (full, then only the changed pixels) rebuild the
    figure exactly as the page overlays them."""
    import io

    from PIL import Image

    backend = matplotlib.get_backend()
    pytest.importorskip("ipympl")
    matplotlib.use(backend)
    from gradexplorer.explorer import explorer as module

    monkeypatch.setattr(module, "ipympl_active", lambda: True)
    ex = gx.explore(lambda x: anp.sin(x) * x, np.linspace(0, 1, 3), asynchronous=False)
    try:
        canvas = ex.figures["Jacobian"].canvas
        sent = []
        monkeypatch.setattr(type(canvas), "send_binary", lambda self, data: sent.append(data))
        canvas._force_full = True
        canvas.draw()
        page = np.asarray(Image.open(io.BytesIO(sent[-1])).convert("RGBA")).copy()
        assert canvas._current_image_mode == "full"
        assert np.array_equal(page, np.asarray(canvas.get_renderer().buffer_rgba()))
        ex.point_sliders[0].value = 0.7  # only the cells change: a diff frame
        assert canvas._current_image_mode == "diff"
        diff = np.asarray(Image.open(io.BytesIO(sent[-1])).convert("RGBA"))
        changed = diff.view(np.uint32).squeeze(2) != 0
        assert 0 < changed.mean() < 0.5
        page[changed] = diff[changed]  # what the page does: draw the diff over the old frame
        assert np.array_equal(page, np.asarray(canvas.get_renderer().buffer_rgba()))
    finally:
        ex.close()


@pytest.mark.parametrize(
    "shape, kind",
    [
        ((1, 1, 4), "random"),
        ((3, 5, 4), "random"),
        ((37, 101, 4), "random"),
        ((40, 64, 4), "diff"),  # mostly transparent zeros, as a diff frame
        ((6, 9, 4), "strided"),  # a view, not a contiguous array
    ],
)
def test_encode_png_round_trips_every_pixel(shape, kind):
    import io

    from PIL import Image

    from gradexplorer.explorer.png import encode_png

    rng = np.random.default_rng(sum(shape))
    frame = rng.integers(0, 256, size=shape, dtype=np.uint8)
    if kind == "diff":
        frame[rng.random(shape[:2]) < 0.9] = 0
    if kind == "strided":
        frame = np.zeros((2 * shape[0], shape[1], 4), np.uint8)[::2]
        frame[..., 0] = 200
    back = Image.open(io.BytesIO(encode_png(frame)))
    assert back.mode == "RGBA" and back.size == (shape[1], shape[0])
    assert np.array_equal(np.asarray(back), frame)


@pytest.mark.parametrize(
    "frame",
    [
        np.zeros((2, 2, 3), np.uint8),
        np.zeros((2, 2, 4), np.float32),
        np.zeros((8,), np.uint8),
        np.zeros((0, 5, 4), np.uint8),  # PNG has no empty images
    ],
)
def test_encode_png_names_what_it_expects(frame):
    from gradexplorer.explorer.png import encode_png

    with pytest.raises(ValueError, match=r"\(height, width, 4\).*uint8; got shape"):
        encode_png(frame)


def test_a_slow_check_shows_its_jacobian_first_and_withdraws_it_on_error(monkeypatch):
    """On the Check tab, a check slower than SLOW_CHECK: the new AD Jacobian is drawn
    as soon as the check has it, the three maps that wait for the rest labelled
    "checking…"; the check's picture removes the labels; a check that fails puts the
    last good point's Jacobian back."""
    backend = matplotlib.get_backend()
    pytest.importorskip("ipympl")
    matplotlib.use(backend)
    from gradexplorer.explorer import computing
    from gradexplorer.explorer import explorer as module

    monkeypatch.setattr(module, "ipympl_active", lambda: True)
    monkeypatch.setattr(computing, "SLOW_CHECK", 0.0)  # every check counts as slow

    def f(x):
        # the finite differences' calls past 0.56 (plain arrays, off the point) fail
        if isinstance(x, np.ndarray) and x[0] > 0.56 and x[0] != 0.57:
            raise ValueError("no finite differences past 0.56")
        return anp.sin(x) * x

    ex = gx.explore(f, np.array([0.5, 0.25, 0.5]))
    try:
        assert ex.wait(60)
        ex.tabs.selected_index = ex.views.index("Check")
        assert ex.wait(60)
        art, fig = ex.artists["Check"], ex.figures["Check"]
        seen = []
        real = computing.preview_analytic

        def spy(*a, **k):  # the picture sent while the check goes on
            shown = real(*a, **k)
            pixels = np.asarray(fig.canvas.get_renderer().buffer_rgba())[..., :3].copy()
            seen.append((shown, image_of(art.heatmaps[0]).copy(), pixels))
            return shown

        monkeypatch.setattr(computing, "preview_analytic", spy)

        old = ex.report.analytic
        ex.point_sliders[0].value = 0.55  # small moves: the colour scales still fit
        assert ex.wait(60) and "PASSED" in ex.badge.value
        (shown, early, labelled) = seen[-1]
        renderer = fig.canvas.get_renderer()
        final = np.asarray(renderer.buffer_rgba())[..., :3]
        assert shown and len(seen) == 1  # once, from the check's own Jacobian
        np.testing.assert_allclose(early, ex.report.analytic)  # the new point's, first
        assert not np.allclose(early, old)
        assert len(art.pending_labels) == 3
        for label in art.pending_labels:
            assert label.get_text() == "checking…" and not label.get_visible()
            label.set_visible(True)
            x0, y0, x1, y1 = label.get_window_extent(renderer).extents.astype(int)
            label.set_visible(False)
            rows = slice(final.shape[0] - y1, final.shape[0] - y0)
            box, after = labelled[rows, x0:x1].astype(int), final[rows, x0:x1].astype(int)
            assert (box.min(axis=-1) > 230).mean() > 0.5  # a white box, dark letters
            assert np.abs(box - after).mean() > 10  # gone once the check is drawn
        good = ex.report.analytic
        ex.point_sliders[0].value = 0.57  # f raises inside the check
        assert ex.wait(60) and ex.stale and "no finite differences" in ex.error.value
        assert seen[-1][0] and not np.allclose(seen[-1][1], good)  # shown, then withdrawn:
        np.testing.assert_allclose(image_of(art.heatmaps[0]), good)
    finally:
        ex.close()


def test_a_check_is_slow_by_its_own_time_not_its_early_pictures(monkeypatch):
    """The AD Jacobian shown first is drawn while the check runs; counted as the check's
    time it kept a fast 3x3 check "slow" once it had been, two pictures every move."""
    import time
    from types import SimpleNamespace

    backend = matplotlib.get_backend()
    pytest.importorskip("ipympl")
    matplotlib.use(backend)
    from gradexplorer.explorer import computing
    from gradexplorer.explorer import explorer as module

    monkeypatch.setattr(module, "ipympl_active", lambda: True)
    offset = [0.0]  # a clock that the early picture moves on by ten seconds
    clock = SimpleNamespace(perf_counter=lambda: time.perf_counter() + offset[0])
    monkeypatch.setattr(computing, "time", clock)
    real, shown = computing.preview_analytic, []

    def slow_preview(*args, **kwargs):
        offset[0] += 10.0
        shown.append(real(*args, **kwargs))
        return shown[-1]

    monkeypatch.setattr(computing, "preview_analytic", slow_preview)
    ex = gx.explore(lambda x: anp.sin(x) * x, np.array([0.5, 0.25, 0.5]))
    try:
        ex.tabs.selected_index = ex.views.index("Check")
        assert ex.wait(60)
        ex._check_seconds = 2 * computing.SLOW_CHECK  # as if the last check had been slow
        ex.point_sliders[0].value = 0.55
        assert ex.wait(60) and "PASSED" in ex.badge.value
        assert shown == [True]  # the Jacobian was shown first, "taking ten seconds"
        assert ex._check_seconds < 10.0  # ... which are not the check's
    finally:
        ex.close()


def test_a_drawing_error_in_the_early_jacobian_is_not_blamed_on_f(monkeypatch):
    backend = matplotlib.get_backend()
    pytest.importorskip("ipympl")
    matplotlib.use(backend)
    from gradexplorer.explorer import computing
    from gradexplorer.explorer import explorer as module

    monkeypatch.setattr(module, "ipympl_active", lambda: True)
    monkeypatch.setattr(computing, "SLOW_CHECK", 0.0)

    def broken(art, A):
        raise RuntimeError("the canvas is gone")

    monkeypatch.setattr(computing, "preview_analytic", broken)
    ex = gx.explore(lambda x: anp.sin(x) * x, np.array([0.5, 0.25, 0.5]))
    try:
        assert ex.wait(60)
        ex.tabs.selected_index = ex.views.index("Check")
        assert ex.wait(60)
        ex.point_sliders[0].value = 0.55
        assert ex.wait(60)
        assert "PASSED" in ex.badge.value and not ex.stale  # the check went on and was shown
        assert ex.report.analytic[0, 0] == pytest.approx(np.cos(0.55) * 0.55 + np.sin(0.55))
    finally:
        ex.close()


def test_a_live_canvas_keeps_its_last_picture_for_a_saved_notebook(monkeypatch):
    """ipympl's page saves the picture before the last frame (a canvas drawn once was
    saved blank): once frames stop, the canvas stores its last frame as that state."""
    import base64
    import io
    import time

    from PIL import Image

    backend = matplotlib.get_backend()
    pytest.importorskip("ipympl")
    matplotlib.use(backend)
    from gradexplorer.explorer import explorer as module
    from gradexplorer.explorer import figures

    monkeypatch.setattr(module, "ipympl_active", lambda: True)
    monkeypatch.setattr(figures, "KEEP_PICTURE_AFTER", 0.05)
    ex = gx.explore(lambda x: anp.sin(x) * x, np.linspace(0, 1, 3), asynchronous=False)
    try:
        canvas = ex.figures["Jacobian"].canvas
        canvas.syncing_data_url = False  # the page is there: ipympl stops sending it
        canvas._data_url = None
        ex.point_sliders[0].value = 0.7
        deadline = time.monotonic() + 30
        while canvas._data_url is None and time.monotonic() < deadline:
            time.sleep(0.02)
        prefix = "data:image/png;base64,"
        assert canvas._data_url is not None and canvas._data_url.startswith(prefix)
        png = base64.b64decode(canvas._data_url[len(prefix) :])
        kept = np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))
        assert np.array_equal(kept, np.asarray(canvas.get_renderer().buffer_rgba()))
    finally:
        ex.close()


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


def test_a_check_whose_scales_fit_is_sent_as_its_cells_only():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from gradexplorer.display import plots as P

    f = lambda x: anp.sin(x) * x  # noqa: E731
    fig = Figure(figsize=(8.6, 7.2))
    FigureCanvasAgg(fig)
    art = P.draw_check(gx.check_grads(f, np.linspace(0, 1, 3)), fig)
    fig.canvas.draw()
    assert P.update_check(art, gx.check_grads(f, np.linspace(0, 1, 3) * 0.98))
    assert not art.rescaled  # same verdict, marks and scales: only the cells change
    P.blit_check(art)
    case = next(c for c in CASES if c.name == "transposed")
    other = gx.check_grads(case.f, *case.args)
    assert not P.update_check(art, other)  # another shape: drawn afresh


def test_the_teaching_views_follow_the_point_and_a_click_moves_it(explorer):
    ex = explorer()
    ex.gallery_menu.value = "rosenbrock"
    ex.tabs.selected_index = VIEW_NAMES.index("Landscape")
    art = ex.artists["Landscape"]
    np.testing.assert_allclose(art.gradient, gx.grad(ex.f)(*ex.args))
    ex.gallery_menu.value = "polar"
    ex.tabs.selected_index = VIEW_NAMES.index("Linear map")
    lm = ex.artists["Linear map"]
    J = gx.jacobian(ex.f)(*ex.args)
    np.testing.assert_allclose(lm.singular_values, np.linalg.svd(J, compute_uv=False))
    ex.point_sliders[0].value = 1.7
    assert ex.artists["Linear map"] is lm  # moved in place
    np.testing.assert_allclose(
        lm.singular_values, np.linalg.svd(gx.jacobian(ex.f)(*ex.args), compute_uv=False)
    )


def test_a_click_on_the_landscape_moves_the_point(explorer):
    f = lambda x: (1 - x[0]) ** 2 + 3 * (x[1] - x[0] ** 2) ** 2  # noqa: E731
    ex = explorer(f, np.array([0.5, 0.5]))
    ex.tabs.selected_index = VIEW_NAMES.index("Landscape")
    art = ex.artists["Landscape"]
    ax = art.artists["point"].axes

    class Click:
        inaxes, xdata, ydata = ax, 0.8, 0.3

    generation = ex.generation
    ex._on_click(Click)
    assert [s.value for s in ex.point_sliders] == pytest.approx([0.8, 0.3], abs=0.05)
    assert ex.generation == generation + 1  # one refresh for both coordinates
    np.testing.assert_allclose(ex.artists["Landscape"].gradient, gx.grad(f)(ex.args[0]))


def test_the_graph_view_steps_through_the_sweeps_of_the_selected_entry(explorer):
    f = lambda x: anp.sin(x[0]) * x[1] + x[0] ** 2  # noqa: E731
    ex = explorer(f, np.array([0.5, 2.0]))
    ex.tabs.selected_index = VIEW_NAMES.index("Graph")
    assert ex.sweep_box.layout.display == "flex"
    art = ex.artists["Graph"]
    last = len(art.sweeps.forward) - 1
    assert ex.sweep_step.max == last
    highlighted = []
    for k in range(last + 1):
        ex.sweep_step.value = k
        assert ex.artists["Graph"] is art  # the same artists, moved
        highlighted.append(art.highlighted)
    assert len(set(highlighted)) == last + 1  # a new node at every step
    np.testing.assert_allclose(art.sweeps.tangent, gx.jacobian(f)(ex.args[0])[0])
    ex.sweep_mode.value = "reverse"
    ex.col.value = 1  # the forward seed follows the selected input
    np.testing.assert_allclose(ex.artists["Graph"].sweeps.adjoint, gx.grad(f)(ex.args[0]))
    ex.tabs.selected_index = 0
    assert ex.sweep_box.layout.display == "none"


def test_the_graph_view_says_why_for_a_big_function(explorer):
    A = np.random.default_rng(0).standard_normal((64, 64))
    ex = explorer(lambda x: anp.tanh(A @ x), np.ones(64))
    ex.tabs.selected_index = VIEW_NAMES.index("Graph")
    words = " ".join(t.get_text() for t in texts_of(ex.figures["Graph"]))
    assert "small functions only" in words and ex.error.value == ""
