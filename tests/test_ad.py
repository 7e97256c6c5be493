"""Every AD operator against the hand-derived derivatives of the gallery."""

import warnings

import autograd.numpy as anp
import numpy as np
import pytest

import gradexplorer as gx
from gradexplorer import gallery

EXAMPLES = list(gallery.EXAMPLES.values())
REAL = [e for e in EXAMPLES if not e.complex]
COMPLEX = [e for e in EXAMPLES if e.complex]
SCALAR = [e for e in REAL if e.scalar]
HESS = [e for e in SCALAR if e.hessian is not None]
ids = lambda e: e.name  # noqa: E731


def close(a, b, tol=1e-12):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * scale)


def test_gallery_is_big_and_varied():
    assert len(EXAMPLES) >= 20
    assert {True, False} <= {e.holomorphic for e in COMPLEX}
    assert any(len(e.wrt) > 1 for e in EXAMPLES)
    assert any(np.ndim(e.args()[0]) == 2 for e in EXAMPLES)


@pytest.mark.parametrize("ex", REAL, ids=ids)
@pytest.mark.parametrize("mode", ["auto", "rev", "fwd"])
def test_jacobian_matches_analytic(ex, mode):
    args = ex.args()
    if mode == "fwd" and ex.name == "logdet":  # autograd has no JVP for slogdet
        with pytest.raises(NotImplementedError, match="mode='rev'"):
            gx.jacobian(ex.f, wrt=ex.wrt, mode=mode)(*args)
        return
    got = gx.jacobian(ex.f, wrt=ex.wrt, mode=mode)(*args)
    for g, want in zip(got, ex.jacobian(*args), strict=True):
        close(g, want)


@pytest.mark.parametrize("ex", REAL, ids=ids)
def test_jacobian_shape_is_out_plus_in(ex):
    args = ex.args()
    y = ex.f(*args)
    J = gx.jacobian(ex.f, wrt=ex.wrt[0])(*args)
    assert J.shape == np.shape(y) + np.shape(args[ex.wrt[0]])


@pytest.mark.parametrize("ex", EXAMPLES, ids=ids)
def test_real_jacobian_matches_analytic(ex):
    args = ex.args()
    got = gx.real_jacobian(ex.f, wrt=ex.wrt)(*args)
    for g, want in zip(got, ex.jacobian(*args), strict=True):
        close(g, np.reshape(want, g.shape))


@pytest.mark.parametrize("ex", SCALAR, ids=ids)
def test_grad_and_value_and_grad(ex):
    args = ex.args()
    want = ex.jacobian(*args)
    got = gx.grad(ex.f, wrt=ex.wrt)(*args)
    value, grads = gx.value_and_grad(ex.f, wrt=ex.wrt)(*args)
    assert value == pytest.approx(float(ex.f(*args)))
    for g1, g2, w in zip(got, grads, want, strict=True):
        close(g1, w)
        close(g2, w)


@pytest.mark.parametrize("ex", HESS, ids=ids)
def test_hessian_and_hvp(ex):
    args = ex.args()
    H = gx.hessian(ex.f)(*args)
    x = args[0]
    close(H, ex.hessian(*args), 1e-10)
    v = np.random.default_rng(1).standard_normal(np.shape(x))
    hv = gx.hvp(ex.f)(*args, v)
    H2 = np.reshape(ex.hessian(*args), (np.size(x), np.size(x)))
    close(hv, (H2 @ v.ravel()).reshape(np.shape(x)), 1e-10)


@pytest.mark.parametrize("ex", REAL, ids=ids)
def test_lop_rop_match_jacobian(ex):
    args = ex.args()
    rng = np.random.default_rng(2)
    i = ex.wrt[0]
    y = ex.f(*args)
    J = np.reshape(ex.jacobian(*args)[0], (np.size(y), np.size(args[i])))

    def fi(xi):
        a = list(args)
        a[i] = xi
        return ex.f(*a)

    u = rng.standard_normal(np.shape(y))
    v = rng.standard_normal(np.shape(args[i]))
    close(gx.Lop(fi, args[i], u), (np.ravel(u) @ J).reshape(np.shape(args[i])))
    close(gx.Rop(fi, args[i], v), (J @ np.ravel(v)).reshape(np.shape(y)))


@pytest.mark.parametrize("ex", [e for e in COMPLEX if e.holomorphic], ids=ids)
def test_holomorphic_jacobian(ex):
    z = ex.args()[0]
    J = gx.jacobian(ex.f, holomorphic=True)(z)
    blocks = gx.complex_blocks(ex.f, z)
    close(J, blocks.dz)
    assert blocks.is_holomorphic()
    assert np.max(np.abs(blocks.dzbar)) < 1e-12


@pytest.mark.parametrize("ex", [e for e in COMPLEX if e.holomorphic is False], ids=ids)
def test_non_holomorphic_has_cauchy_riemann_residual(ex):
    blocks = gx.complex_blocks(ex.f, *ex.args())
    assert not blocks.is_holomorphic()
    assert np.max(gx.cauchy_riemann_residual(ex.f, *ex.args())) > 0.1


@pytest.mark.parametrize("ex", COMPLEX, ids=ids)
def test_complex_jacobian_without_holomorphic_points_to_real_jacobian(ex):
    with pytest.raises(TypeError, match="real_jacobian"):
        gx.jacobian(ex.f)(*ex.args())


# ------------------------------------------------------------------ seed semantics


def f_seed(x, y):
    return x * x * x * y - x * y * y


def test_seed_value_and_gradients_function_example():
    val_grads_fn = gx.value_and_gradients_function(f_seed)
    f_val, (x_grad, y_grad) = val_grads_fn(2.0, 3.0)
    assert f_val == (2**3) * 3 - 2 * (3**2)
    assert x_grad == 3 * (2**2) * 3 - 3**2
    assert y_grad == (2**3) - 2 * 2 * 3
    f_val, (y_grad,) = gx.value_and_gradients_function(f_seed, params=[1])(2.0, 3.0)
    assert f_val == (2**3) * 3 - 2 * (3**2)
    assert y_grad == (2**3) - 2 * 2 * 3
    _, (y_grad,) = gx.value_and_gradients_function(f_seed, params=["y"])(2.0, 3.0)
    assert y_grad == (2**3) - 2 * 2 * 3


def test_params_mixed_or_unknown_raise_value_error():
    with pytest.raises(ValueError, match="all integers or all parameter names"):
        gx.value_and_gradients_function(f_seed, params=[0, "y"])(2.0, 3.0)
    with pytest.raises(ValueError, match="'z'"):
        gx.value_and_grad(f_seed, wrt=["z"])(2.0, 3.0)
    with pytest.raises(ValueError, match="out of range"):
        gx.grad(f_seed, wrt=2)(2.0, 3.0)


def test_name_selects_keyword_argument_too():
    assert gx.grad(f_seed, wrt="y")(2.0, y=3.0) == pytest.approx(-4.0)


def test_value_and_grad_sums_lists_and_weights_by_dy():
    f = lambda x: [x**2, 3 * x]  # noqa: E731
    x = np.array([1.0, 2.0])
    value, (g,) = gx.value_and_grad(f)(x)
    assert isinstance(value, list) and len(value) == 2
    close(g, 2 * x + 3)
    dy = [np.array([1.0, 0.0]), np.array([0.0, 2.0])]
    _, (g,) = gx.value_and_grad(f)(x, dy=dy)
    close(g, np.array([2.0, 6.0]))


def test_dy_of_wrong_shape_is_a_value_error():
    with pytest.raises(ValueError, match=r"dy has shape \(2,\).*\(3,\)"):
        gx.value_and_grad(anp.sin)(np.ones(3), dy=np.ones(2))
    with pytest.raises(ValueError, match="one cotangent per output"):
        gx.value_and_grad(lambda x: [x, x])(np.ones(3), dy=[np.ones(3)])


def test_gradient_function_seed_semantics():
    def f(x1, x2):
        return x1 * x2, anp.sin(x1)

    g = gx.gradient_function(f)
    x1, x2 = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    dy1, dy2 = np.array([1.0, -1.0]), np.array([0.5, 2.0])
    dx1, dx2 = g(x1, x2, dy1, dy2)
    close(dx1, dy1 * x2 + dy2 * np.cos(x1))
    close(dx2, dy1 * x1)
    with pytest.raises(TypeError, match="n_inputs"):
        gx.gradient_function(lambda *a: a[0])
    g = gx.gradient_function(lambda *a: a[0] * a[1], n_inputs=2)
    assert g(2.0, 3.0, 1.0) == (3.0, 2.0)


def test_lop_keeps_list_and_tuple_form_and_rop_keeps_output_form():
    f = lambda a, b: a * b  # noqa: E731
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    out = gx.Lop(f, [a, b], np.ones(2))
    assert isinstance(out, list)
    close(out[0], b)
    assert isinstance(gx.Lop(f, (a, b), np.ones(2)), tuple)
    r = gx.Rop(lambda x: (x, 2 * x), a, np.ones(2))
    assert isinstance(r, tuple)
    close(r[1], 2 * np.ones(2))


def test_rop_falls_back_to_reverse_mode_without_jvp():
    @gx.primitive
    def twice(x):
        return 2 * x

    gx.defvjp(twice, lambda ans, x: lambda g: 2 * g)
    close(gx.Rop(twice, np.ones(3), np.arange(3.0)), 2 * np.arange(3.0))
    close(gx.jacobian(twice, mode="auto")(np.ones(2)), 2 * np.eye(2))


def test_format_as():
    assert gx.format_as(True, False, 1) == [1]
    assert gx.format_as(False, True, [1, 2]) == (1, 2)
    assert gx.format_as(False, False, [1]) == [1]
    with pytest.raises(ValueError):
        gx.format_as(True, True, 1)


def test_grad_complex_convention_is_autograds_conjugate():
    z = 1.0 + 2.0j
    g = gx.grad(lambda z: anp.abs(z) ** 2)(z)
    assert g == pytest.approx(2 * np.conj(z))  # torch/TF: 2 z


def test_jacobian_mode_auto_uses_forward_for_tall(monkeypatch):
    from gradexplorer.ad import jacobians

    calls = []
    monkeypatch.setattr(jacobians, "_forward", lambda *a: calls.append("fwd") or [np.zeros(1)])
    jacobians.dense_jacobian(lambda x: anp.tile(x, 10), [np.ones(2)], "auto")
    assert calls == ["fwd"]


# ------------------------------------------------------------------ disconnected and null


def test_disconnected_inputs_policies():
    f = lambda x, y: anp.sum(x**2)  # noqa: E731
    x, y = np.ones(2), np.ones(3)
    with pytest.warns(gx.DisconnectedInputWarning, match="'y'"):
        gx_, gy = gx.grad(f, wrt=(0, 1))(x, y)
    close(gy, np.zeros(3))
    with pytest.raises(gx.DisconnectedInputError, match="'y'") as info:
        gx.grad(f, wrt=(0, 1), disconnected_inputs="raise")(x, y)
    assert info.value.parameter == "y"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, gy = gx.grad(f, wrt=(0, 1), disconnected_inputs="ignore", return_disconnected="none")(
            x, y
        )
    assert gy is None
    _, gy = gx.grad(
        f, wrt=(0, 1), disconnected_inputs="ignore", return_disconnected="disconnected"
    )(x, y)
    assert gy is gx.DISCONNECTED and isinstance(gy, gx.DisconnectedType)
    with pytest.raises(ValueError, match="disconnected_inputs"):
        gx.grad(f, disconnected_inputs="maybe")


def test_null_gradients_raise_only_when_needed():
    @gx.primitive
    def scale_by(x, k):
        return x * k

    gx.defvjp(
        scale_by,
        lambda ans, x, k: lambda g: g * k,
        gx.grad_not_implemented(scale_by, 1, "k is a hyperparameter"),
    )
    f = lambda x, k: anp.sum(scale_by(x, k))  # noqa: E731
    close(gx.grad(f, 0)(np.ones(2), 3.0), 3 * np.ones(2))
    with pytest.raises(gx.NullTypeGradError, match="scale_by.*input 1.*hyperparameter"):
        gx.grad(f, 1)(np.ones(2), 3.0)
    assert issubclass(gx.NullTypeGradError, NotImplementedError)

    @gx.primitive
    def rounded(x):
        return np.round(x)

    gx.defvjp(rounded, gx.grad_undefined(rounded, 0, "piecewise constant"))
    with pytest.raises(gx.GradUndefinedError, match="rounded.*input 0.*undefined"):
        gx.grad(lambda x: anp.sum(rounded(x)))(np.ones(2))
    assert issubclass(gx.GradUndefinedError, gx.NullTypeGradError)


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "op",
    [gx.grad, gx.jacobian, gx.real_jacobian, gx.hessian, gx.value_and_grad, gx.gradient_function],
)
def test_non_callable(op):
    with pytest.raises(TypeError, match="callable"):
        op(np.ones(3))


@pytest.mark.parametrize("bad", [3, np.arange(3), True, np.array([1, 2], dtype=np.int32)])
@pytest.mark.parametrize("op", [gx.grad, gx.jacobian, gx.hessian, gx.real_jacobian])
def test_integer_inputs_say_float(op, bad):
    with pytest.raises(TypeError, match="float"):
        op(lambda x: anp.sum(x * 1.0))(bad)


def test_non_numeric_input():
    with pytest.raises(TypeError, match="float or complex"):
        gx.grad(lambda x: x)(np.array(["a"]))


def test_grad_of_nonscalar_or_complex_output():
    with pytest.raises(TypeError, match="jacobian.*value_and_grad"):
        gx.grad(anp.sin)(np.ones(3))
    with pytest.raises(TypeError, match="real_jacobian"):
        gx.grad(lambda z: z**2)(1.0 + 1j)
    with pytest.raises(TypeError, match="real_jacobian"):
        gx.value_and_grad(lambda z: z**2)(np.ones(2) + 1j)


def test_nonfinite_output_warns_naming_entries():
    with pytest.warns(gx.NonFiniteWarning, match=r"y\[1\]=inf"):
        gx.jacobian(lambda x: 1.0 / x)(np.array([1.0, 0.0]))
    with pytest.warns(gx.NonFiniteWarning, match=r"y=nan"):
        gx.grad(lambda x: anp.sqrt(x))(-1.0)


def test_dense_jacobian_over_memory_cap():
    with pytest.raises(gx.JacobianTooLargeError, match=r"GB.*Lop.*Rop.*fast"):
        gx.jacobian(lambda x: x * 2.0)(np.ones(100_000))
    assert issubclass(gx.JacobianTooLargeError, MemoryError)


def test_hvp_shape_mismatch():
    with pytest.raises(ValueError, match="shape"):
        gx.hvp(lambda x: anp.sum(x**2))(np.ones(3), np.ones(2))


def test_rop_tangent_shape_mismatch():
    with pytest.raises(ValueError, match="shape"):
        gx.Rop(anp.sin, np.ones(3), np.ones(2))
