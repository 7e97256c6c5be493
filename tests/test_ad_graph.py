"""The computation graph, step by step: ad_sweeps (the data) and plot_ad_sweep (the picture).

The sweeps are checked against gx.jacobian (the final tangent is J·seed, the
final adjoints seedᵀ·J, for every unit seed and a random one); the picture by
its artists: the highlighted box follows the step, update moves the same
artists, every text is >= 8 pt and inside the figure, the figure <= 8.6 in wide.
"""

import unicodedata

import autograd.numpy as anp
import numpy as np
import pytest
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

import gradexplorer as gx
from gradexplorer.display.ad_graph import HIGHLIGHT, WIDTH, plot_ad_sweep, update_ad_sweep
from gradexplorer.errors import GradExplorerError
from gradexplorer.gallery import get
from gradexplorer.locate.sweeps import MAX_NODES, ad_sweeps

W = np.array([[0.5, -0.3], [0.2, 0.1], [1.0, 2.0]])


def reused(x):
    u = anp.sin(x[0])  # u feeds two operations: its adjoint sums two contributions
    return u * x[1] + anp.exp(u)


CASES = {
    "sin_mul_square": (lambda x: anp.sin(x[0]) * x[1] + x[0] ** 2, (np.array([0.5, 2.0]),)),
    "tanh_Wx": (lambda x: anp.tanh(W @ x), (np.array([1.0, -1.0]),)),
    "gallery_l2_norm": (get("l2_norm").f, get("l2_norm").args()),
    "reused": (reused, (np.array([0.5, 2.0]),)),
    "scalar_square": (lambda x: x * x, (3.0,)),
}


def nfc(text):
    """Text as Unicode composes it (ẋ typed as one character or as x + a dot)."""
    return unicodedata.normalize("NFC", text)


def _jac(f, args):
    y = np.asarray(f(*args))
    return np.asarray(gx.jacobian(f)(*args)).reshape(y.size, np.size(args[0]))


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    f, args = CASES[request.param]
    return f, args, ad_sweeps(f, *args), _jac(f, args)


def test_final_tangent_and_adjoint_are_columns_and_rows_of_J(case):
    f, args, s, J = case
    m, n = J.shape
    assert (s.n_inputs, s.n_outputs) == (n, m)
    for j in range(n):
        np.testing.assert_allclose(ad_sweeps(f, *args, seed=j).tangent, J[:, j], atol=1e-12)
    for i in range(m):
        np.testing.assert_allclose(ad_sweeps(f, *args, cotangent=i).adjoint, J[i], atol=1e-12)
    rng = np.random.default_rng(0)
    t, u = rng.standard_normal(n), rng.standard_normal(m)
    r = ad_sweeps(f, *args, seed=t, cotangent=u)
    np.testing.assert_allclose(r.tangent, J @ t, atol=1e-12)
    np.testing.assert_allclose(r.adjoint, u @ J, atol=1e-12)


def test_steps_visit_every_node_once_in_order(case):
    _, _, s, _ = case
    forward = [st.node for st in s.forward]
    assert forward == list(range(len(s.nodes)))
    assert [st.node for st in s.reverse] == forward[::-1]
    assert s.nodes[-1].kind == "output" and s.nodes[0].kind == "input"
    for st in s.forward[1:]:  # each product uses the node's arguments, by edge
        assert {e[1] for e in st.edges} == {st.node}
    for st in s.reverse[1:]:
        assert {e[0] for e in st.edges} <= {st.node}


def test_chain_rule_written_with_numbers():
    s = ad_sweeps(*[CASES["sin_mul_square"][0]], *CASES["sin_mul_square"][1])
    sin = next(st for st in s.forward if s.nodes[st.node].op == "sin")
    assert sin.text == nfc("v̇2 = ∂v2/∂v1·v̇1 = cos(0.5)·1.0 = 0.878")
    assert s.forward[0].text.startswith(nfc("ẋ = [1.0, 0.0]"))
    assert s.reverse[0].text.startswith(nfc("ȳ = 1.0"))
    (term,) = sin.terms
    np.testing.assert_allclose(term.local, [[np.cos(0.5)]])


def test_reused_intermediate_sums_two_contributions():
    s = ad_sweeps(reused, np.array([0.5, 2.0]))
    u = next(n.index for n in s.nodes if n.op == "sin")
    step = next(st for st in s.reverse if st.node == u)
    assert len(step.terms) == 2
    np.testing.assert_allclose(step.derivative, 2.0 + np.exp(np.sin(0.5)))
    assert step.text.startswith(nfc("v̄2 = ∂v4/∂v2·v̄4 + ∂v5/∂v2·v̄5 = 2.0·1.0 + exp(0.479)·1.0"))


def _style(box):
    return to_rgba(box.get_edgecolor()), box.get_linewidth()


def _check_highlight(art, s, mode, k):
    node = s.steps(mode)[k].node
    assert art.highlighted == node
    for i, box in enumerate(art.boxes):
        color, lw = _style(box)
        if i == node:
            assert color == to_rgba(HIGHLIGHT) and lw >= 3
        else:
            assert color != to_rgba(HIGHLIGHT) and lw < 2


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_highlight_follows_the_step_and_update_moves_the_same_artists(case, mode):
    _, _, s, _ = case
    art = plot_ad_sweep(s, mode=mode, step=0)
    before = [id(a) for a in art.boxes + art.heads + art.values + art.derivatives]
    counts = (len(art.ax.patches), len(art.ax.texts), len(art.fig.axes))
    for k in range(len(s.steps(mode))):
        fresh = plot_ad_sweep(s, mode=mode, step=k)
        _check_highlight(fresh, s, mode, k)
        assert update_ad_sweep(art, s, mode, k) is True
        _check_highlight(art, s, mode, k)
        assert art.chain.get_text().replace("\n   ", "") == s.steps(mode)[k].text
        assert [t.get_text() for t in art.derivatives] == [t.get_text() for t in fresh.derivatives]
    assert [id(a) for a in art.boxes + art.heads + art.values + art.derivatives] == before
    assert (len(art.ax.patches), len(art.ax.texts), len(art.fig.axes)) == counts
    other = "reverse" if mode == "forward" else "forward"
    assert update_ad_sweep(art, s, other, -1) and art.mode == other


def test_visited_nodes_show_their_derivative_the_others_are_grey():
    s = ad_sweeps(reused, np.array([0.5, 2.0]))
    art = plot_ad_sweep(s, mode="forward", step=2)
    lines = [t.get_text() for t in art.derivatives]
    assert lines[:3] == [nfc(t) for t in ("ẋ = [1.0, 0.0]", "v̇1 = 1.0", "v̇2 = 0.878")]
    assert all(t.endswith("= ?") for t in lines[3:])
    assert to_rgba(art.boxes[4].get_facecolor()) != to_rgba(art.boxes[1].get_facecolor())
    assert "one sweep per input (n = 2)" in art.caption.get_text()
    assert "one sweep per output (m = 1)" in art.caption.get_text()


def test_update_refuses_another_graph():
    s = ad_sweeps(reused, np.array([0.5, 2.0]))
    art = plot_ad_sweep(s)
    other = ad_sweeps(lambda x: anp.sin(x), np.array([0.5, 2.0]))
    assert update_ad_sweep(art, other, "forward", 0) is False
    assert art.highlighted == 0


def _texts(fig):
    return [t for ax in fig.axes for t in ax.texts] + list(fig.texts)


@pytest.mark.parametrize("name", list(CASES))
def test_every_text_is_big_enough_inside_the_figure_and_its_box(name):
    f, args = CASES[name]
    s = ad_sweeps(f, *args)
    for mode in ("forward", "reverse"):
        art = plot_ad_sweep(s, mode=mode, step=-1)
        fig = art.fig
        assert fig.get_figwidth() <= WIDTH + 1e-9
        png = art._repr_png_()  # draws at 100 dpi
        assert png[:4] == b"\x89PNG"
        renderer = fig.canvas.get_renderer()
        frame = fig.bbox
        for t in _texts(fig):
            assert t.get_fontsize() >= 8, t.get_text()
            if not t.get_text():
                continue
            box = t.get_window_extent(renderer)
            assert frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1, t.get_text()
            assert frame.y0 - 1 <= box.y0 and box.y1 <= frame.y1 + 1, t.get_text()
        for i, patch in enumerate(art.boxes):
            outline = patch.get_window_extent(renderer)
            for t in (art.heads[i], art.values[i], art.derivatives[i]):
                inner = t.get_window_extent(renderer)
                assert outline.x0 <= inner.x0 and inner.x1 <= outline.x1 + 0.5, t.get_text()


def test_given_figure_is_used_at_its_width():
    fig = Figure(figsize=(7.0, 3.0))
    s = ad_sweeps(*CASES["tanh_Wx"][0:1], *CASES["tanh_Wx"][1])
    art = plot_ad_sweep(s, mode="reverse", step=1, fig=fig)
    assert art.fig is fig and fig.get_figwidth() == 7.0


def test_step_and_mode_errors_are_clear():
    s = ad_sweeps(reused, np.array([0.5, 2.0]))
    n = len(s.forward)
    with pytest.raises(IndexError, match=rf"step {n} is out of range.*{n} steps, 0 to {n - 1}"):
        plot_ad_sweep(s, step=n)
    with pytest.raises(IndexError, match="out of range"):
        plot_ad_sweep(s, mode="reverse", step=-n - 1)
    art = plot_ad_sweep(s)
    with pytest.raises(IndexError, match="out of range"):
        update_ad_sweep(art, s, "forward", n)
    with pytest.raises(ValueError, match="'forward' or 'reverse'"):
        plot_ad_sweep(s, mode="sideways")
    with pytest.raises(TypeError, match="step must be an int"):
        plot_ad_sweep(s, step=1.0)
    with pytest.raises(IndexError, match="seed=5: the input has 2 entries"):
        ad_sweeps(reused, np.array([0.5, 2.0]), seed=5)
    with pytest.raises(ValueError, match="cotangent must have 1 entries"):
        ad_sweeps(reused, np.array([0.5, 2.0]), cotangent=[1.0, 2.0])


def test_too_big_graphs_are_refused_with_what_to_do():
    def long(x):
        for _ in range(MAX_NODES):
            x = anp.sin(x)
        return x

    with pytest.raises(GradExplorerError, match=rf"at most {MAX_NODES}.*gx\.locate"):
        ad_sweeps(long, np.array([0.1, 0.2]))
    with pytest.raises(GradExplorerError, match="input x has 30 entries.*at most 12"):
        ad_sweeps(lambda x: anp.sum(x**2), np.ones(30))
    with pytest.raises(GradExplorerError, match="nothing to sweep"):
        ad_sweeps(lambda x: np.ones(2), np.ones(2))


def test_deep_graph_runs_in_bands_within_the_width():
    def chain(x):
        for _ in range(9):
            x = anp.sin(x) * 1.1
        return x

    s = ad_sweeps(chain, np.array([0.3, 0.5]))
    art = plot_ad_sweep(s, mode="reverse", step=7)
    assert art.fig.get_figwidth() <= WIDTH
    ys = {round(b.get_y(), 3) for b in art.boxes}
    assert len(ys) > 1  # more than one band
    art._repr_png_()
    renderer = art.fig.canvas.get_renderer()
    for b in art.boxes:
        assert art.fig.bbox.contains(*b.get_window_extent(renderer).p1)


def _torch_case():
    torch = pytest.importorskip("torch")
    return torch, lambda x: torch.sin(x[0]) * x[1] + x[0] ** 2, torch.tensor([0.5, 2.0])


def _jax_case():
    jnp = pytest.importorskip("jax.numpy")
    return jnp, lambda x: jnp.sin(x[0]) * x[1] + x[0] ** 2, jnp.array([0.5, 2.0])


@pytest.mark.parametrize("make", [_torch_case, _jax_case], ids=["torch", "jax"])
def test_torch_and_jax_functions_sweep_too(make):
    _, f, x = make()
    J = _jac(CASES["sin_mul_square"][0], CASES["sin_mul_square"][1])
    for j in (1, 0):  # e_0 last: its sweep is drawn below
        s = ad_sweeps(f, x, seed=j, cotangent=0)
        np.testing.assert_allclose(s.tangent, J[:, j], atol=1e-12)
        np.testing.assert_allclose(s.adjoint, J[0], atol=1e-12)
    assert any("cos(0.5)·1.0 = 0.878" in st.text for st in s.forward)
    art = plot_ad_sweep(s, mode="reverse", step=-1)
    assert art.highlighted == 0
