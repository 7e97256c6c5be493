"""jax: the same checks, located bugs and explorer as for autograd, table-driven."""

from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import jax_cases as jc  # noqa: E402

import gradexplorer as gx  # noqa: E402
from gradexplorer.gallery.for_jax import examples  # noqa: E402

EXAMPLES = list(examples().values())
ids = lambda e: e.name  # noqa: E731
HERE = Path(__file__).with_name("jax_cases.py")


def _line(marker: str) -> int:
    for k, text in enumerate(HERE.read_text().splitlines(), 1):
        if f"# CALL:{marker}" in text:
            return k
    raise AssertionError(marker)


def _wrt(ex):
    return ex.wrt if len(ex.wrt) > 1 else ex.wrt[0]


@pytest.mark.parametrize("ex", EXAMPLES, ids=ids)
def test_gallery_passes_and_matches_the_hand_jacobian(ex):
    args = ex.args()
    r = gx.check_grads(ex.f, *args, wrt=_wrt(ex))
    assert r.passed, str(r)
    hand = np.hstack([np.asarray(j).reshape(r.shape[0], -1) for j in ex.jacobian(*args)])
    np.testing.assert_allclose(r.analytic, hand, atol=1e-12)


@pytest.mark.parametrize("ex", EXAMPLES, ids=ids)
def test_gallery_wrong_vjp_fails_in_its_row(ex):
    f = lambda *a: jc.scale_row(ex.f(*a))  # noqa: E731
    r = gx.check_grads(f, *ex.args(), wrt=_wrt(ex))
    assert not r.passed
    size = r.rows.sides[0].size
    assert {e.row for e in r.mismatches} <= {0, size}, [e.label for e in r.mismatches]


@pytest.mark.parametrize("ex", [e for e in EXAMPLES if e.scalar and not e.complex], ids=ids)
def test_gallery_second_order_passes(ex):
    assert gx.check_grads(ex.f, *ex.args(), wrt=_wrt(ex), order=2).passed


@pytest.mark.parametrize("ex", [e for e in EXAMPLES if len(e.wrt) == 1], ids=ids)
def test_gallery_fast_mode_and_locate_pass(ex):
    assert gx.check_grads(ex.f, *ex.args(), mode="fast", rng=0).passed
    loc = gx.locate(ex.f, *ex.args())
    assert loc.culprit is None, str(loc)
    assert all(not n.verdict.startswith("not checked") for n in loc.nodes), str(loc)


def test_float32_is_promoted_in_a_session_that_leaves_jax_as_it_was():
    assert not jax.config.read("jax_enable_x64")
    x = jnp.linspace(-1.0, 1.0, 4)
    r = gx.check_grads(lambda x: jnp.tanh(x) * x, x)
    assert r.passed and r.dtype == "float64"
    assert any("x (float32) promoted" in n for n in r.notes)
    assert not jax.config.read("jax_enable_x64") and jnp.ones(2).dtype == jnp.float32


def test_wrong_custom_vjp_is_named_with_its_line_through_jit():
    x = jnp.array([0.3, -1.2, 0.8])
    W = jnp.array(np.random.default_rng(0).standard_normal((2, 3)))
    assert not gx.check_grads(jc.uses_wrong_vjp, x, W).passed
    loc = gx.locate(jc.uses_wrong_vjp, x, W)
    assert loc.culprit.name == "softplus_wrong"
    assert loc.culprit.source.endswith(f"jax_cases.py:{_line('softplus_wrong')}")
    assert "dot_general" in [n.name for n in loc.nodes]  # the jitted layer is opened


def test_jitted_function_is_checked_like_the_plain_one():
    x = jnp.array([0.3, -1.2, 0.8])
    W = jnp.array(np.random.default_rng(0).standard_normal((2, 3)))
    assert not gx.check_grads(jax.jit(jc.uses_wrong_vjp), x, W).passed
    f = jax.jit(lambda x, W: jnp.sum(jnp.tanh(W @ jc.softplus(x))))
    assert gx.check_grads(f, x, W).passed


@pytest.mark.parametrize("wrap", [jax.jit, jax.checkpoint], ids=["jit", "checkpoint"])
def test_locate_opens_jit_and_checkpoint(wrap):
    """jax.checkpoint's primitive (``remat2``) holds a bare jaxpr, jit's a closed one:
    both are opened, so the wrong custom_vjp inside is named, not the wrapper."""
    x = jnp.array([0.3, -1.2, 0.8])
    W = jnp.array(np.random.default_rng(0).standard_normal((2, 3)))
    loc = gx.locate(lambda x, W: jnp.sum(wrap(jc.uses_wrong_vjp)(x, W)), x, W)
    assert loc.culprit.name == "softplus_wrong"
    assert "dot_general" in [n.name for n in loc.nodes]


def test_wrong_custom_jvp_is_named():
    x = jnp.linspace(-1.0, 1.0, 3)
    assert not gx.check_grads(jc.uses_wrong_jvp, x).passed
    loc = gx.locate(jc.uses_wrong_jvp, x)
    assert loc.culprit.name == "tanh_wrong_jvp"
    assert loc.culprit.source.endswith(f":{_line('tanh_wrong_jvp')}")


def test_custom_vjp_has_no_forward_rule_and_says_so():
    r = gx.check_grads(jc.softplus, jnp.linspace(-2.0, 2.0, 4))
    assert r.passed
    assert any("softplus" in n and "none" in n for n in r.notes), r.notes


def test_pytree_parameters_are_labelled_by_path():
    rng = np.random.default_rng(1)
    params = {
        "W1": jnp.array(rng.standard_normal((4, 3))),
        "b1": jnp.zeros(4),
        "W2": jnp.array(rng.standard_normal((2, 4))),
    }
    r = gx.check_grads(jc.mlp, params, jnp.array(rng.standard_normal(3)), wrt=0)
    assert r.passed
    assert list(r.column_blocks) == ["params['W1']", "params['b1']", "params['W2']"]
    assert gx.check_grads(jc.mlp, params, jnp.ones(3), wrt=0, order=2).passed


def test_numeric_jacobian_of_a_jax_function():
    r = gx.numeric_jacobian(jnp.sin, jnp.array([0.0, 1.0]))
    np.testing.assert_allclose(r.jacobian, np.diag(np.cos([0.0, 1.0])), atol=1e-10)


def test_integer_array_says_to_pass_floats():
    with pytest.raises(TypeError, match="integer"):
        gx.check_grads(lambda x: x * 2.0, jnp.arange(3), wrt=0)


def test_explorer_on_a_jax_function():
    pytest.importorskip("ipywidgets")
    from gradexplorer.explorer import explore

    ex = explore(lambda x: jnp.sin(x) * x, jnp.linspace(-1.0, 1.0, 8))
    try:
        assert "scalar" in ex._notes["Hessian"] and "PASSED" in ex.badge.value
        ex.seed.value = 3
        assert "PASSED" in ex.badge.value and not ex.error.value
        for k in range(len(ex.views)):
            ex.tabs.selected_index = k
            assert not ex.error.value, ex.views[k]
    finally:
        ex.close()


def _rows_one_by_one(tr, m):
    return np.stack(
        [np.concatenate([np.ravel(g) for g in tr.backward(np.eye(m)[i])]) for i in range(m)]
    )


def test_a_jacobians_rows_go_through_the_pullback_together():
    """backward_rows maps the pullback over the rows (jax.vmap): the same rows as
    one backward pass each."""
    from gradexplorer.backends.jax.tracing import VJPTrace

    with jax.enable_x64(True):
        W = jnp.asarray(np.random.default_rng(0).standard_normal((5, 4)))
        tr = VJPTrace(lambda x, b: jnp.tanh(W @ x) * b, [jnp.linspace(-1, 1, 4), jnp.ones(5)])
        together = tr.backward_rows(np.eye(5))
        stacked = np.concatenate([np.asarray(g).reshape(5, -1) for g in together], axis=1)
        assert tr._stackable
        np.testing.assert_allclose(stacked, _rows_one_by_one(tr, 5), rtol=1e-14, atol=1e-15)


def test_a_pullback_that_cannot_be_mapped_runs_row_by_row():
    """A custom_vjp backward with Python control flow on values cannot be vmapped;
    its rows come one pass at a time, and a check of it is judged as before."""
    from gradexplorer.backends.jax.tracing import VJPTrace

    @jax.custom_vjp
    def clipped(x):
        return jnp.sin(x)

    def fwd(x):
        return jnp.sin(x), x

    def bwd(x, g):
        scale = 1.0 if float(jnp.sum(jnp.abs(g))) > 0 else 0.0  # a host decision
        return (scale * g * jnp.cos(x),)

    clipped.defvjp(fwd, bwd)
    with jax.enable_x64(True):
        x = jnp.linspace(-1, 1, 60)
        tr = VJPTrace(clipped, [x])
        rows = tr.backward_rows(np.eye(60))
        assert not tr._stackable
        np.testing.assert_allclose(np.asarray(rows[0]), np.diag(np.cos(np.asarray(x))))
        assert gx.check_grads(clipped, x).passed


@pytest.mark.parametrize("make_key", [jax.random.key, jax.random.PRNGKey], ids=["typed", "uint32"])
def test_a_random_key_argument_is_held_constant(make_key):
    """A dropout-like loss taking its key: the key (typed, ``jax.random.key``, or a
    legacy uint32 array) is held constant and named, never converted by force."""

    def loss(a, key):
        keep = jax.random.bernoulli(key, 0.5, a.shape)
        return jnp.sum(jnp.tanh(a) * keep)

    x = jnp.asarray(np.random.default_rng(1).standard_normal(4))
    report = gx.check_grads(loss, x, make_key(0))
    assert report.passed, report
    assert [name for name, _ in report.not_checked] == ["key"]


def test_check_precision_runs_its_float64_side_in_64_bit_mode():
    """Every float64 evaluation of check_precision runs inside jax's 64-bit mode: none
    asks jax for float64 outside it (jax's "will be truncated to float32" warning)."""
    import warnings

    x = jnp.linspace(-1.0, 1.0, 4)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert gx.check_precision(jax.nn.softmax, x).passed
    assert not [w for w in seen if "truncated" in str(w.message)], [str(w.message) for w in seen]
