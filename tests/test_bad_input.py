"""Every bad input gets a clear error (what was expected, what came, what to do)
or the right answer; nothing is silently wrong."""

import autograd.numpy as anp
import numpy as np
import pytest

import gradexplorer as gx


def test_output_whose_shape_depends_on_the_input_values():
    f = lambda x: x[x > 0] * 2.0  # noqa: E731 - one element sits at 0
    with pytest.raises(ValueError, match="changed shape.*depends on the input values"):
        gx.check_grads(f, np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="changed shape"):
        gx.numeric_jacobian(f, np.array([0.0, 1.0, 2.0]))


def test_longdouble_is_refused_not_rounded():
    x = np.ones(3, dtype=np.longdouble)
    if np.finfo(np.longdouble).eps == np.finfo(np.float64).eps:
        pytest.skip("longdouble is float64 on this platform")
    with pytest.raises(TypeError, match="float64"):
        gx.check_grads(anp.sin, x)


def test_step_as_an_array_is_used_and_a_wrong_shape_explained():
    x = np.array([0.5, 1.0, 2.0])
    r = gx.numeric_jacobian(np.sin, x, step=np.array([1e-3, 1e-4, 1e-5]), method="central")
    np.testing.assert_allclose(r.step, [1e-3, 1e-4, 1e-5])
    np.testing.assert_allclose(np.diag(r.jacobian), np.cos(x), rtol=1e-6)
    assert gx.check_grads(anp.sin, x, step=np.array([1e-3, 1e-3, 1e-3])).passed
    with pytest.raises(ValueError, match="shaped like the input"):
        gx.check_grads(anp.sin, x, step=np.ones(2))


@pytest.mark.parametrize(("name", "value"), [("rtol", -1.0), ("atol", np.nan), ("rtol", np.inf)])
def test_negative_or_nonfinite_tolerances(name, value):
    with pytest.raises(ValueError, match=f"{name} must be a finite float >= 0"):
        gx.check_grads(anp.sin, np.ones(2), **{name: value})


def test_nan_in_an_element_f_does_not_use_is_not_a_mismatch():
    r = gx.check_grads(lambda x: anp.sum(x[:2] ** 2), np.array([1.0, 2.0, np.nan]))
    assert r.passed and not r.mismatches, str(r)
    assert r.analytic[0, 2] == 0 and r.numeric[0, 2] == 0


def test_duplicate_wrt():
    with pytest.raises(ValueError, match="twice"):
        gx.check_grads(lambda x, y: x * y, 1.0, 2.0, wrt=("x", "x"))
    with pytest.raises(ValueError, match="twice"):
        gx.grad(lambda x, y: x * y, wrt=(1, -1))(1.0, 2.0)


def test_numeric_jacobian_guards_and_leaves_the_callers_array_alone():
    x = np.array([1.0, 2.0])
    keep = x.copy()

    def mutates(v):
        v[0] = 7.0
        return v * 2

    with pytest.raises(gx.InputMutationError, match="in place"):
        gx.numeric_jacobian(mutates, x)
    np.testing.assert_array_equal(x, keep)
    gen = np.random.default_rng(0)
    with pytest.raises(gx.NotDeterministicError, match="reseed"):
        gx.numeric_jacobian(lambda v: v * gen.random(), x)


def test_masked_arrays_are_refused():
    with pytest.raises(TypeError, match="masked array"):
        gx.check_grads(anp.sin, np.ma.masked_array([1.0, 2.0], mask=[0, 1]))
    with pytest.raises(TypeError, match="masked array"):
        gx.grad(lambda x: anp.sum(x))(np.ma.masked_array([1.0, 2.0]))


@pytest.mark.parametrize(("value", "words"), [(None, "returned None"), ("ok", "returned a str")])
def test_f_returning_none_or_a_string(value, words):
    with pytest.raises(TypeError, match=words):
        gx.check_grads(lambda x: value, np.ones(2))
    with pytest.raises(TypeError, match=words):
        gx.jacobian(lambda x: value)(np.ones(2))


def test_grad_of_a_function_of_no_arguments():
    with pytest.raises(ValueError, match="no arguments, so there is nothing to differentiate"):
        gx.grad(lambda: 3.0)()


def test_classic_api_inputs():
    with pytest.raises(ValueError, match="x_shape"):
        gx.compute_gradient(anp.sin, "3,4")
    with pytest.raises(ValueError, match="delta"):
        gx.compute_gradient(anp.sin, (3,), delta=0)
    with pytest.raises(ValueError, match="n_tests"):
        gx.verify_grad(anp.sin, [np.ones(2)], n_tests=0)
    with pytest.raises(ValueError, match="empty"):
        gx.verify_grad(anp.sin, [])
    with pytest.raises(ValueError, match="non-finite"):
        gx.verify_grad(anp.sin, [np.array([1.0, np.nan])])


def test_order_two_through_a_rule_that_cannot_be_differentiated_names_it():
    @gx.primitive
    def opaque(x):
        return np.sin(x)

    gx.defvjp(opaque, lambda ans, x: lambda g: np.asarray(g) * np.cos(x))
    f = lambda x: anp.sum(opaque(x) ** 2)  # noqa: E731
    assert gx.check_grads(f, np.array([0.3, 0.5])).passed  # order 1 is fine
    with pytest.raises(TypeError, match="VJP of opaque cannot be differentiated"):
        gx.check_grads(f, np.array([0.3, 0.5]), order=2)


def test_complex_where_real_was_meant_and_integers():
    with pytest.raises(TypeError, match="real_jacobian"):
        gx.grad(lambda z: z**2)(1.0 + 1.0j)
    with pytest.raises(TypeError, match="integer.*astype\\(float\\)"):
        gx.check_grads(anp.sin, np.arange(3), wrt=0)
    with pytest.raises(TypeError, match="float 3.0"):
        gx.grad(lambda x: x * 2.0)(3)


def test_overflowing_steps_are_unresolvable_never_wrong():
    """exp(709.5 ± h) overflows for every difference of its samples: y[0]'s only nonzero
    derivative cannot be checked entry by entry, so the check is inconclusive, never
    failed (passed only where the Taylor test settles the block: 2 draws in 40)."""
    for seed in range(3):
        r = gx.check_grads(lambda x: anp.exp(x), np.array([709.5, 1.0]), rng=seed)
        assert not r.mismatches, str(r)
        assert [e.label for e in r.unresolved] == ["y[0] / x[0]"]
        assert r.outcome is not gx.Outcome.FAILED
    r = gx.check_grads(lambda x: anp.exp(x), np.array([709.5, 1.0]), rng=0)
    assert r.outcome is gx.Outcome.INCONCLUSIVE and "every nonzero derivative" in r.inconclusive


@pytest.mark.parametrize(
    "operator",
    [
        lambda f, x: gx.jacobian(f)(x),
        lambda f, x: gx.real_jacobian(f)(x),
        lambda f, x: gx.jacobian(f, mode="fwd")(x),
        lambda f, x: gx.check_grads(f, x),
    ],
    ids=["jacobian", "real_jacobian", "forward", "check_grads"],
)
def test_an_output_packed_by_plain_numpy_is_refused_not_zero(operator):
    import numpy

    f = lambda x: numpy.array([x[0] ** 2, x[1]])  # noqa: E731 - plain numpy cuts the trace
    with pytest.raises(gx.GradExplorerError, match="anp.array"):
        operator(f, numpy.array([1.0, 2.0]))


def test_grad_names_none_and_an_empty_call():
    with pytest.raises(TypeError, match="returned None.*return statement"):
        gx.grad(lambda x: None)(np.ones(3))
    with pytest.raises(ValueError, match="no arguments.*gx.grad\\(f\\)\\(x\\)"):
        gx.grad(lambda: 1.0)()


def test_verify_grad_names_a_non_numeric_output():
    with pytest.raises(TypeError, match="returned a str"):
        gx.verify_grad(lambda x: "hello", [np.ones(3)])


def test_a_rule_in_another_calling_convention_is_named():
    f = lambda x: np.sin(x)  # noqa: E731
    with pytest.raises(TypeError, match=r"f_vjp\(\*args\) -> \(y, pullback\).*f_vjp\(x, g\)"):
        gx.check_vjp(f, lambda x, g: g * np.cos(x), np.ones(3))
    with pytest.raises(TypeError, match=r"f_jvp\(primals, tangents\)"):
        gx.check_jvp(f, lambda x: np.cos(x), np.ones(3))


def test_the_cli_names_a_function_that_mutates_its_input(tmp_path, capsys):
    (tmp_path / "mutates_mod.py").write_text(
        "def f(x):\n    x[0] = 2.0\n    return x * 3\n", encoding="utf-8"
    )
    import sys

    from gradexplorer.__main__ import main

    sys.path.insert(0, str(tmp_path))
    try:
        code = main(["check", "mutates_mod:f", "--shape", "3"])
    finally:
        sys.path.remove(str(tmp_path))
    err = capsys.readouterr().err
    assert code == 2 and "changed its argument 'x' in place" in err and "ArrayBox" not in err


def test_fd_errors_below_1e_300_are_not_printed_as_denormals():
    from gradexplorer.check.report import format_fd_error

    assert format_fd_error(2.2e-308) == "<1e-300" and format_fd_error(0.0) == "<1e-300"
    r = gx.check_grads(lambda v: v * 1e-300, np.array([1.0, 2.0]))
    assert "e-308" not in str(r) and "e-32" not in str(r)


def test_sparse_inputs_are_refused_and_sparse_or_zero_outputs_checked():
    torch = pytest.importorskip("torch")
    x = torch.tensor([0.3, -0.2, 1.1], dtype=torch.float64)
    with pytest.raises(TypeError, match="sparse.*to_dense"):
        gx.check_grads(lambda v: v.sum(), x.to_sparse())
    assert gx.check_grads(lambda v: (v * 2).to_sparse(), x).passed
    assert gx.check_grads(torch.sgn, x).passed  # its backward is a ZeroTensor


def test_a_point_at_the_edge_of_fs_domain_is_checked_from_inside():
    def entropy_term(p):
        if np.any(p < 0) or np.any(p > 1):
            raise ValueError("p must be in [0, 1]")
        return p * (1 - p)

    r = gx.check_grads(entropy_term, np.array([0.3, 1.0, 0.0]))
    assert r.passed, str(r)
    assert any("edge of f's domain" in n and "p must be in [0, 1]" in n for n in r.notes)


def test_torch_mutation_advice_and_meta_tensors_are_named():
    """A torch f that mutates its input gets torch's words (clone, torch.where) and
    plain numbers; a meta tensor (shapes, no values) is named, not torch's raw
    "Cannot copy out of meta tensor"."""
    torch = pytest.importorskip("torch")

    def doubles(a):
        a.mul_(2)
        return a.sin()

    x = torch.tensor([0.5, -1.0], dtype=torch.float64)
    with pytest.raises(gx.InputMutationError, match=r"x\.clone\(\).*torch\.where") as info:
        gx.check_grads(doubles, x)
    assert "np.float64" not in str(info.value) and "0.5 then 1.0" in str(info.value)
    meta = torch.empty(3, dtype=torch.float64, device="meta")
    for check in (gx.check_grads, gx.locate):
        with pytest.raises(ValueError, match="'meta' device.*holds no values"):
            check(torch.sin, meta)
    assert gx.jacobian(torch.sin)(meta).shape == (3, 3)  # the framework's AD needs no values


def test_order2_reads_nan_where_f_raises_far_from_x():
    """The second-order problem's points far from x (the stairs search goes out to half
    of x's size) may fall outside f's domain: odeint's times out of order raised, and
    the whole order-2 check of autograd's own ``test_odeint`` failed. They read NaN,
    as the first order's points do; at x itself the error stands."""
    from gradexplorer.check.api import second_order_problem
    from gradexplorer.check.problem import build_problem

    def f(x):
        if anp.any(x > 1):
            raise ValueError("x must stay below 1")
        return anp.sum(anp.sin(x))

    q = second_order_problem(
        build_problem(f, (np.array([0.3, 0.5]),), {}, None), np.random.default_rng(0)
    )
    Y = q.batch(np.stack([q.x0, q.x0 + 5.0]))
    assert np.isfinite(Y[0]).all() and np.isnan(Y[1]).all(), Y
