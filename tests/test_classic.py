"""compute_gradient, verify_grad, numeric_grad, abs_rel_err, assert_grads."""

import autograd.numpy as anp
import numpy as np
import pytest
from corpus import CASES

import gradexplorer as gx
from gradexplorer.check.testing import assert_grads


def test_compute_gradient_layout_is_x_rows_y_columns():
    A = np.arange(6.0).reshape(2, 3)
    t, n = gx.compute_gradient(lambda x: A @ x, (3,), rng=0, y_shape=(2,))
    assert t.shape == n.shape == (3, 2)
    np.testing.assert_allclose(t, A.T)
    np.testing.assert_allclose(n, A.T, atol=1e-8)


def test_compute_gradient_complex_blocks():
    z = np.array([1 + 2j, -0.5 + 0.3j])
    t, n = gx.compute_gradient(lambda z: z**2, (2,), x_init_value=z)
    m = 2
    assert t.shape == (2 * m, 2 * m)
    d = 2 * z  # holomorphic: dRe/dRe = Re d, dIm/dRe = Im d, dRe/dIm = -Im d, dIm/dIm = Re d
    np.testing.assert_allclose(t[:m, :m], np.diag(d.real))
    np.testing.assert_allclose(t[:m, m:], np.diag(d.imag))
    np.testing.assert_allclose(t[m:, :m], np.diag(-d.imag))
    np.testing.assert_allclose(t[m:, m:], np.diag(d.real))
    np.testing.assert_allclose(n, t, atol=1e-6)


def test_compute_gradient_real_to_complex_blocks():
    x = np.array([0.3, 0.9])
    t, _ = gx.compute_gradient(lambda x: anp.exp(1j * x), (2,), x_init_value=x)
    assert t.shape == (2, 4)
    np.testing.assert_allclose(t[:, :2], np.diag(-np.sin(x)))
    np.testing.assert_allclose(t[:, 2:], np.diag(np.cos(x)))


def test_compute_gradient_several_inputs_extra_kwargs_and_errors():
    f = lambda x, y, scale=1.0: scale * x * anp.sum(y)  # noqa: E731
    x, y = np.array([1.0, -2.0]), np.array([0.5, 1.0, 2.0])
    pairs = gx.compute_gradient(f, [(2,), (3,)], [x, y], extra_kwargs={"scale": 2.0})
    assert isinstance(pairs, list) and len(pairs) == 2
    (tx, nx), (ty, ny) = pairs
    assert tx.shape == (2, 2) and ty.shape == (3, 2)
    np.testing.assert_allclose(tx, 2.0 * y.sum() * np.eye(2))  # scale held at 2
    np.testing.assert_allclose(ty, np.tile(2.0 * x, (3, 1)))
    np.testing.assert_allclose(nx, tx, atol=1e-8)
    np.testing.assert_allclose(ny, ty, atol=1e-8)
    random_pairs = gx.compute_gradient(f, [(2,), (3,)], rng=np.random.RandomState(0))
    assert random_pairs[0][0].shape == (2, 2)
    with pytest.raises(ValueError, match="y_shape"):
        gx.compute_gradient(anp.sin, (3,), rng=0, y_shape=(4,))
    with pytest.raises(ValueError, match="shape"):
        gx.compute_gradient(anp.sin, (3,), x_init_value=np.ones(2))
    assert gx.compute_gradient_error(anp.sin, (4,), rng=1) < 1e-6


def test_verify_grad_passes_right_and_raises_with_fields_on_wrong():
    gx.verify_grad(anp.tanh, [np.array([[2.0, 3, 4], [-1, 3.3, 9.9]])], rng=np.random)
    gx.verify_grad(lambda x, y: [x * y, anp.sin(x)], [np.ones(3), np.arange(3.0)], rng=0)
    case = next(c for c in CASES if c.name == "single_entry")
    with pytest.raises(gx.GradientError) as info:
        gx.verify_grad(case.f, list(case.args), rng=0)
    e = info.value
    assert (e.arg, e.err_pos, e.shape) == (0, 2, (6,))
    assert e.abs_err > e.abs_tol and e.rel_err > e.rel_tol
    assert e.val1 != pytest.approx(e.val2)
    assert isinstance(e, AssertionError)


def test_verify_grad_fails_only_when_both_tolerances_exceeded():
    case = next(c for c in CASES if c.name == "single_entry")
    gx.verify_grad(case.f, list(case.args), rng=0, abs_tol=10.0)
    gx.verify_grad(case.f, list(case.args), rng=0, rel_tol=10.0)


def test_numeric_grad_and_abs_rel_err():
    ng = gx.numeric_grad(lambda x, y: anp.sum(x**2) + anp.sum(y), [np.ones(2), np.ones(3)])
    assert len(ng.gf) == 2
    np.testing.assert_allclose(ng.gf[0], 2 * np.ones(2), atol=1e-5)
    errs = ng.abs_rel_errors([2 * np.ones(2), np.ones(3)])
    assert len(errs) == 2 and np.all(errs[0][0] < 1e-5)
    with pytest.raises(ValueError, match="arrays"):
        ng.abs_rel_errors([np.ones(2)])
    with pytest.raises(ValueError, match="shape"):
        ng.abs_rel_errors([np.ones(2), np.ones(4)])
    arg, pos, a, r = ng.max_err([2 * np.ones(2), np.array([1.0, 1.0, 3.0])], 1e-4, 1e-4)
    assert (arg, pos) == (1, 2) and a == pytest.approx(2.0, rel=1e-4)
    assert gx.abs_rel_err(1.0, 1.5) == (0.5, 0.2)
    a, r = gx.abs_rel_err(0.0, 0.0)
    assert (a, r) == (0.0, 0.0)
    _, r = gx.abs_rel_err(1e-9, 0.0)
    assert r == pytest.approx(0.1)  # denominator clipped at 1e-8
    with pytest.raises(ValueError, match="scalar"):
        gx.numeric_grad(lambda x: x, [np.ones(2)])


def test_assert_grads_message_is_the_report(tmp_path):
    case = next(c for c in CASES if c.name == "sign_flipped")
    with pytest.raises(AssertionError) as info:
        assert_grads(case.f, *case.args)
    msg = str(info.value)
    assert "FAILED" in msg and "sign flipped" in msg
    assert assert_grads(anp.sin, np.ones(2)).passed
