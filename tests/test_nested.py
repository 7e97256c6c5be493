"""Nested parameters and outputs through every operator, labelled by path."""

import autograd.numpy as anp
import numpy as np
import pytest

import gradexplorer as gx

rng = np.random.default_rng(3)
W1, b1 = rng.standard_normal((3, 2)), rng.standard_normal(3)
W2, b2 = rng.standard_normal((1, 3)), rng.standard_normal(1)
PARAMS = [(W1, b1), (W2, b2)]
X = rng.standard_normal(2)


def mlp(params, x):
    h = x
    for W, b in params:
        h = anp.tanh(W @ h + b)
    return anp.sum(h)


def mlp_numpy_grad(params, x):
    """Backpropagation by hand, to compare the structured gradient against."""
    (A, a), (B, c) = params
    z1 = A @ x + a
    h1 = np.tanh(z1)
    z2 = B @ h1 + c
    d2 = 1 - np.tanh(z2) ** 2
    d1 = (B.T @ d2) * (1 - h1**2)
    return [(np.outer(d1, x), d1), (np.outer(d2, h1), d2)]


def assert_same_structure(a, b):
    la, ta = gx.tree.flatten(a)
    lb, tb = gx.tree.flatten(b)
    assert ta == tb, (ta.describe(), tb.describe())
    for u, v in zip(la, lb):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)


def test_grad_keeps_the_structure_of_params():
    g = gx.grad(mlp)(PARAMS, X)
    assert isinstance(g, list) and isinstance(g[0], tuple)
    assert_same_structure(g, mlp_numpy_grad(PARAMS, X))


def test_value_and_grad_with_dict_params_and_tuple_output():
    p = {"W": W1, "b": b1}

    def model(p, x):
        z = p["W"] @ x + p["b"]
        return anp.sum(z**2), anp.sum(z)

    value, (gp,) = gx.value_and_grad(model, wrt=0)(p, X)
    z = W1 @ X + b1
    assert value[0] == pytest.approx(np.sum(z**2))
    assert set(gp) == {"W", "b"}
    np.testing.assert_allclose(gp["b"], 2 * z + 1)
    np.testing.assert_allclose(gp["W"], np.outer(2 * z + 1, X))


def test_jacobian_of_tuple_output_is_a_tuple_of_input_structures():
    def f(p):
        return p["a"] * 2.0, anp.sum(p["a"] * p["b"])

    p = {"a": np.array([1.0, 2.0]), "b": np.array([3.0, 4.0])}
    J = gx.jacobian(f)(p)
    assert isinstance(J, tuple) and len(J) == 2
    np.testing.assert_allclose(J[0]["a"], 2 * np.eye(2))
    np.testing.assert_allclose(J[0]["b"], np.zeros((2, 2)))
    np.testing.assert_allclose(J[1]["a"], p["b"])
    np.testing.assert_allclose(J[1]["b"], p["a"])


def test_hessian_hvp_lop_rop_and_gradient_function_on_structures():
    def f(p):
        return anp.sum(p[0] ** 3) + anp.sum(p[0]) * p[1]

    p = [np.array([1.0, 2.0]), 0.5]
    H = gx.hessian(f)(p)
    np.testing.assert_allclose(H[0][0], np.diag(6 * p[0]))
    np.testing.assert_allclose(H[0][1], np.ones(2))
    v = [np.array([1.0, 0.0]), 2.0]
    Hv = gx.hvp(f)(p, v)
    np.testing.assert_allclose(Hv[0], np.diag(6 * p[0]) @ v[0] + np.ones(2) * v[1])
    assert Hv[1] == pytest.approx(np.sum(v[0]))
    lop = gx.Lop(lambda q: q["x"] * q["y"], {"x": np.ones(2), "y": np.arange(2.0)}, np.ones(2))
    np.testing.assert_allclose(lop["x"], [0.0, 1.0])
    # a tuple x holds separate arguments (the seed's contract); each may be a structure
    rop = gx.Rop(lambda a, b: (a["u"] * 2, b), ({"u": np.ones(2)}, 1.0), ({"u": np.ones(2)}, 3.0))
    np.testing.assert_allclose(rop[0], 2 * np.ones(2))
    assert float(rop[1]) == 3.0
    g = gx.gradient_function(lambda q: q["w"] * 3.0)
    (dq,) = g({"w": np.ones(2)}, np.array([1.0, 2.0]))
    np.testing.assert_allclose(dq["w"], [3.0, 6.0])


def test_check_grads_labels_and_blocks_name_the_path():
    r = gx.check_grads(mlp, PARAMS, X, mode="full")
    assert r.passed, str(r)
    assert list(r.column_blocks) == [
        "params[0][0]",
        "params[0][1]",
        "params[1][0]",
        "params[1][1]",
        "x",
    ]
    assert r.col_label(7) == "params[0][1][1]"


def test_a_bug_in_one_leaf_is_named_by_its_path():
    @gx.primitive
    def layer(W, h):
        return W @ h

    def vjp_W(ans, W, h):
        def v(g):
            out = np.outer(g, h)
            out[1, 0] *= 1.5  # one wrong entry of dL/dW
            return out

        return v

    gx.defvjp(layer, vjp_W, lambda ans, W, h: lambda g: W.T @ g)

    def loss(params, x):
        return anp.sum(anp.tanh(layer(params["W_hh"], x) + params["b"]))

    params = {"W_hh": rng.standard_normal((2, 3)), "b": rng.standard_normal(2)}
    x = rng.standard_normal(3)
    for mode in ("full", "fast"):
        r = gx.check_grads(loss, params, x, mode=mode, rng=0)
        assert [e.label for e in r.mismatches] == ["y / params['W_hh'][1, 0]"], str(r)
        (e,) = r.mismatches
        assert e.wrt == 0 and e.in_index == ("W_hh", 1, 0) and e.out_index == ()


def test_wrt_none_lists_what_it_does_not_check_and_never_skips_silently():
    def f(params, n_layers, name, x, scale=2.0):
        return anp.sum(params["w"] * x) * scale * n_layers

    r = gx.check_grads(f, {"w": np.ones(2), "depth": 3}, 2, "net", np.ones(2), scale=1.5)
    assert r.passed
    checked = list(r.column_blocks)
    assert checked == ["params['w']", "x"]
    reasons = dict(r.not_checked)
    assert "integer" in reasons["params['depth']"]
    assert "integer" in reasons["n_layers"] and "string" in reasons["name"]
    assert "keyword argument" in reasons["scale"]
    assert "not checked" in str(r)


def test_keyword_arguments_are_constants_unless_named():
    f = lambda x, scale: anp.sum(x * scale)  # noqa: E731
    r = gx.check_grads(f, np.ones(2), scale=np.ones(2))
    assert list(r.column_blocks) == ["x"]
    r = gx.check_grads(f, np.ones(2), scale=np.ones(2), wrt=("x", "scale"))
    assert list(r.column_blocks) == ["x", "scale"]

    def kwonly(*, x):
        return anp.sum(anp.sin(x))

    r = gx.check_grads(kwonly, wrt="x", x=np.ones(3))
    assert r.passed and list(r.column_blocks) == ["x"]
    with pytest.raises(TypeError, match="wrt="):
        gx.check_grads(kwonly, x=np.ones(3))


def test_numeric_jacobian_and_locate_take_structures():
    r = gx.numeric_jacobian(mlp, PARAMS, X)
    J = np.concatenate([np.ravel(g) for g in gx.tree.flatten(mlp_numpy_grad(PARAMS, X))[0]])
    np.testing.assert_allclose(r.jacobian.ravel(), J, atol=1e-10)
    loc = gx.locate(mlp, PARAMS, X)
    assert loc.culprit is None and len(loc.nodes) >= 6


def test_order_two_on_structures():
    r = gx.check_grads(lambda p: anp.sum(p[0] ** 2 * p[1]), [np.ones(2), 3.0], order=2)
    assert r.passed and r.first_order.passed, str(r)


def test_random_objective_needs_reseed_and_passes_with_it():
    def elbo(mu, log_sigma):
        eps = np.random.randn(5)  # a sampled variational bound  # noqa: NPY002 - the global generator is the point
        z = mu + anp.exp(log_sigma) * eps
        return anp.mean(-0.5 * z**2) + log_sigma

    with pytest.raises(gx.NotDeterministicError, match="reseed=0"):
        gx.check_grads(elbo, 0.3, -0.2)
    before = np.random.get_state()[1].copy()  # noqa: NPY002 - the global generator is the point
    r = gx.check_grads(elbo, 0.3, -0.2, reseed=0)
    assert r.passed, str(r)
    # the caller's global generator is left as it was
    np.testing.assert_array_equal(before, np.random.get_state()[1])  # noqa: NPY002 - the global generator is the point


def test_empty_structures_are_listed_not_fatal():
    f = lambda d, x: d.get("a", x) ** 2  # noqa: E731
    r = gx.check_grads(f, {}, 2.0, wrt=(0, 1))
    assert r.passed and ("d", "an empty structure ({})") in r.not_checked
