"""check_vjp / check_jvp: hand-written rules for plain numpy functions, table-driven
over the gallery (its hand-derived Jacobians make the right rules)."""

import numpy as np
import pytest

import gradexplorer as gx
from gradexplorer import gallery

REAL = [e for e in gallery.EXAMPLES.values() if not e.complex]
ids = lambda e: e.name  # noqa: E731


def _numpy_f(ex):
    return lambda *a: np.asarray(ex.f(*a))


def vjp_rule(ex, wrong=False):
    """pullback(ybar) = ybar · J for each input, from the hand Jacobian."""

    def rule(*args):
        y = np.asarray(ex.f(*args))
        jacs = ex.jacobian(*args)

        def pullback(ybar):
            cts = [np.zeros_like(a) for a in args]
            for k, J in zip(ex.wrt, jacs):
                ct = np.tensordot(ybar, J, axes=np.ndim(y))
                if wrong and k == ex.wrt[-1]:
                    ct = np.array(ct, dtype=float)
                    ct.reshape(-1)[-1] *= 1.001
                cts[k] = ct
            return tuple(cts)

        return y, pullback

    return rule


def jvp_rule(ex, wrong=False):
    def rule(primals, tangents):
        y = np.asarray(ex.f(*primals))
        y_dot = np.zeros_like(y, dtype=float)
        for k, J in zip(ex.wrt, ex.jacobian(*primals)):
            t = np.asarray(tangents[k], dtype=float)
            y_dot = y_dot + np.tensordot(J, t, axes=t.ndim)
        y_dot = np.array(y_dot, dtype=float)
        if wrong:
            y_dot.reshape(-1)[0] *= 1.001
        return y, y_dot

    return rule


def _wrt(ex):
    return ex.wrt if len(ex.wrt) > 1 else ex.wrt[0]


@pytest.mark.parametrize("ex", REAL, ids=ids)
def test_right_vjp_rule_passes(ex):
    r = gx.check_vjp(_numpy_f(ex), vjp_rule(ex), *ex.args(), wrt=_wrt(ex))
    assert r.passed, str(r)
    assert r.checker == "check_vjp"


@pytest.mark.parametrize("ex", REAL, ids=ids)
def test_wrong_vjp_rule_fails_in_its_last_column(ex):
    r = gx.check_vjp(_numpy_f(ex), vjp_rule(ex, wrong=True), *ex.args(), wrt=_wrt(ex))
    assert not r.passed
    assert {e.col for e in r.mismatches} == {r.shape[1] - 1}, [e.label for e in r.mismatches]


@pytest.mark.parametrize("ex", REAL, ids=ids)
def test_right_jvp_rule_passes_and_a_wrong_one_fails_in_its_first_row(ex):
    args = ex.args()
    assert gx.check_jvp(_numpy_f(ex), jvp_rule(ex), *args, wrt=_wrt(ex)).passed
    r = gx.check_jvp(_numpy_f(ex), jvp_rule(ex, wrong=True), *args, wrt=_wrt(ex))
    assert not r.passed and {e.row for e in r.mismatches} == {0}
    assert r.checker == "check_jvp"


def test_a_pullback_that_ignores_its_cotangent_is_named_nonlinear():
    f = lambda x: np.sin(x) * x  # noqa: E731
    rule = lambda x: (f(x), lambda g: (np.cos(x) * x + np.sin(x),))  # noqa: E731
    r = gx.check_vjp(f, rule, np.linspace(0.1, 1.0, 4))
    assert not r.passed
    assert any("not linear in its cotangent" in n for n in r.notes)


def test_structured_arguments_and_both_rules_in_one_report():
    def f(params, x):
        return np.tanh(params["W"] @ x + params["b"])

    def f_vjp(params, x):
        y = f(params, x)

        def pullback(ybar):
            d = ybar * (1 - y**2)
            return {"W": np.outer(d, x), "b": d}, params["W"].T @ d

        return y, pullback

    def f_jvp(primals, tangents):
        (params, x), (dp, dx) = primals, tangents
        y = f(params, x)
        return y, (1 - y**2) * (dp["W"] @ x + params["W"] @ dx + dp["b"])

    rng = np.random.default_rng(0)
    params = {"W": rng.standard_normal((2, 3)), "b": rng.standard_normal(2)}
    r = gx.check_vjp(f, f_vjp, params, rng.standard_normal(3), f_jvp=f_jvp)
    assert r.passed and list(r.column_blocks) == ["params['W']", "params['b']", "x"]
    assert r.forward is not None
    assert gx.check_vjp(f, f_vjp, params, np.ones(3), mode="fast", rng=0).passed


def test_complex_rule_in_jax_convention():
    f = lambda z: z**2 * np.conj(z)  # noqa: E731

    def f_vjp(z):
        return f(z), lambda zb: (2 * zb * z * np.conj(z) + np.conj(zb) * np.conj(z**2),)

    z = np.array([0.3 + 1.2j, -0.7 + 0.1j])
    assert gx.check_vjp(f, f_vjp, z).passed
    wrong = lambda z: (f(z), lambda zb: (2 * zb * z * np.conj(z),))  # noqa: E731
    assert not gx.check_vjp(f, wrong, z).passed


@pytest.mark.parametrize(
    "rule, match",
    [
        (lambda x: np.sin(x), r"must return \(y, pullback\)"),
        (lambda x: (np.sin(x), lambda g: (g, g)), "returned 2 cotangents"),
        (lambda x: (np.sin(x), lambda g: (g[:2],)), "has shape"),
        (lambda x: (np.sin(x), lambda g: (1j * g,)), "complex"),
    ],
)
def test_malformed_rules_say_what_was_expected(rule, match):
    with pytest.raises((TypeError, ValueError), match=match):
        gx.check_vjp(np.sin, rule, np.ones(3))


def test_non_callable_rule():
    with pytest.raises(TypeError, match="f_vjp must be a callable"):
        gx.check_vjp(np.sin, None, np.ones(3))
