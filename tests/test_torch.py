"""torch: the same checks, located bugs and explorer as for autograd, table-driven."""

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch_cases as tc  # noqa: E402

import gradexplorer as gx  # noqa: E402
from gradexplorer.gallery.for_torch import examples  # noqa: E402

EXAMPLES = list(examples().values())
ids = lambda e: e.name  # noqa: E731
HERE = Path(__file__).with_name("torch_cases.py")


def _line(marker: str) -> int:
    for k, text in enumerate(HERE.read_text().splitlines(), 1):
        if f"# CALL:{marker}" in text:
            return k
    raise AssertionError(marker)


def _hand_jacobian(ex, args, shape):
    return np.hstack([np.asarray(j).reshape(shape[0], -1) for j in ex.jacobian(*args)])


def _wrt(ex):
    return ex.wrt if len(ex.wrt) > 1 else ex.wrt[0]


@pytest.mark.parametrize("ex", EXAMPLES, ids=ids)
def test_gallery_passes_and_matches_the_hand_jacobian(ex):
    args = ex.args()
    r = gx.check_grads(ex.f, *args, wrt=_wrt(ex))
    assert r.passed, str(r)
    np.testing.assert_allclose(r.analytic, _hand_jacobian(ex, args, r.shape), atol=1e-12)


@pytest.mark.parametrize("ex", EXAMPLES, ids=ids)
def test_gallery_wrong_backward_fails_in_its_row(ex):
    args = ex.args()
    f = lambda *a: tc.ScaleRow.apply(ex.f(*a))  # noqa: E731
    r = gx.check_grads(f, *args, wrt=_wrt(ex))
    assert not r.passed
    size = r.rows.sides[0].size
    assert {e.row for e in r.mismatches} <= {0, size}, [e.label for e in r.mismatches]


@pytest.mark.parametrize("ex", [e for e in EXAMPLES if e.scalar and not e.complex], ids=ids)
def test_gallery_second_order_passes(ex):
    r = gx.check_grads(ex.f, *ex.args(), wrt=_wrt(ex), order=2)
    assert r.passed, str(r)


@pytest.mark.parametrize("ex", [e for e in EXAMPLES if len(e.wrt) == 1], ids=ids)
def test_gallery_fast_mode_and_locate_pass(ex):
    assert gx.check_grads(ex.f, *ex.args(), mode="fast", rng=0).passed
    loc = gx.locate(ex.f, *ex.args())
    assert loc.culprit is None, str(loc)
    assert all(not n.verdict.startswith("not checked") for n in loc.nodes), str(loc)


def test_float32_inputs_are_checked_in_float64_with_a_note():
    x = torch.linspace(-1, 1, 5)
    r = gx.check_grads(lambda x: torch.tanh(x) * x, x)
    assert r.passed and r.dtype == "float64"
    assert any("x (float32) promoted" in n for n in r.notes)
    assert x.dtype == torch.float32 and torch.get_default_dtype() == torch.float32


def test_native_precision_checks_float32_itself():
    r = gx.check_grads(lambda x: torch.tanh(x) * x, torch.linspace(-1, 1, 5), precision="native")
    assert r.passed and r.dtype == "float32" and r.rtol > 1e-6


def test_wrong_backward_is_named_with_its_line():
    x, W = torch.randn(4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
    r = gx.check_grads(tc.uses_wrong_backward, x, W)
    assert not r.passed
    loc = gx.locate(tc.uses_wrong_backward, x, W)
    assert loc.culprit.name == "SoftplusWrongBackward"
    assert loc.culprit.source.endswith(f"torch_cases.py:{_line('SoftplusWrongBackward')}")
    assert loc.culprit.verdict == "wrong VJP"


def test_wrong_jvp_only_fails_in_forward_mode_and_is_named():
    x = torch.linspace(-2, 2, 4, dtype=torch.float64)
    r = gx.check_grads(tc.uses_wrong_jvp, x)
    assert not r.passed
    assert {e.kind for e in r.mismatches} == {"jvp"}
    loc = gx.locate(tc.uses_wrong_jvp, x)
    assert loc.culprit.name == "SoftplusWrongJvp" and loc.culprit.verdict == "wrong JVP"
    assert loc.culprit.source.endswith(f":{_line('SoftplusWrongJvp')}")


def test_right_custom_function_with_jvp_passes_both_modes():
    r = gx.check_grads(lambda x: tc.Softplus.apply(x), torch.linspace(-2, 2, 5))
    assert r.passed and r.forward is not None
    assert not any("has none" in n for n in r.notes)


def test_torch_library_custom_op_is_checked_and_named():
    x = torch.linspace(0.2, 1.0, 4, dtype=torch.float64)
    assert not gx.check_grads(tc.uses_custom_op, x).passed
    loc = gx.locate(tc.uses_custom_op, x)
    assert loc.culprit.name == "gxtest::cube"
    assert loc.culprit.source.endswith(f":{_line('gxtest::cube')}")


def test_nondeterministic_backward_is_reported_with_its_spread():
    torch.manual_seed(0)
    A = torch.randn(60, 6, dtype=torch.float64) * torch.logspace(-3, 3, 60).double()[:, None]
    r = gx.check_grads(lambda x: tc.RandomOrderMatvec.apply(x, A), torch.randn(6).double())
    assert r.passed, str(r)
    assert r.backward_spread is not None and 0 < r.backward_spread < 1e-12
    assert any("not deterministic" in n for n in r.notes)
    right = gx.check_grads(lambda x: A @ x, torch.randn(6).double())
    assert right.backward_spread is None


def test_module_parameters_by_name_and_the_module_is_untouched():
    torch.manual_seed(0)
    net = tc.Net()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    x = torch.randn(5, 3)
    r = gx.check_grads(net, x)
    assert r.passed and list(r.column_blocks) == [
        "fc1.weight",
        "fc1.bias",
        "fc2.weight",
        "fc2.bias",
    ]
    assert gx.check_grads(net, x, wrt="fc1.weight").shape == (1, 12)
    assert list(gx.check_grads(net, x, wrt="fc2").column_blocks) == ["fc2.weight", "fc2.bias"]
    assert list(gx.check_grads(net, x, wrt="x").column_blocks) == ["x"]
    assert gx.check_grads(net, x, order=2).passed
    for k, v in net.state_dict().items():
        assert torch.equal(v, before[k]) and v.dtype == torch.float32
    assert all(p.grad is None for p in net.parameters())
    with pytest.raises(ValueError, match="names no parameter or input of Net.*fc1.weight"):
        gx.check_grads(net, x, wrt="fc3")


def test_module_with_a_wrong_layer_fails_in_the_parameters_before_it():
    torch.manual_seed(1)
    r = gx.check_grads(tc.Net(wrong=True), torch.randn(5, 3))
    assert not r.passed
    assert {e.label.split(" / ")[1].split("[")[0] for e in r.mismatches} <= {
        "fc1.weight",
        "fc1.bias",
    }


def test_fast_mode_locates_one_wrong_entry_of_a_large_input():
    tc.OneWrongEntry.index = 1234
    x = torch.linspace(-3, 3, 3000, dtype=torch.float64)
    r = gx.check_grads(lambda x: (tc.OneWrongEntry.apply(x) ** 2).sum(), x, rng=0)
    assert r.mode == "fast" and not r.passed
    assert [e.in_index for e in r.mismatches] == [(1234,)]


def test_numeric_jacobian_of_a_torch_function():
    x = torch.tensor([0.0, 1.0])
    r = gx.numeric_jacobian(torch.sin, x)
    np.testing.assert_allclose(r.jacobian, np.diag(np.cos([0.0, 1.0])), atol=1e-10)


def test_order_two_through_a_once_differentiable_backward_says_which_rule():
    from torch.autograd.function import once_differentiable

    class Once(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    with pytest.raises(Exception, match="differentiat"):
        gx.check_grads(lambda x: Once.apply(x).sum(), torch.ones(3).double(), order=2)


# ---------------------------------------------------------------- bad input


def test_integer_tensor_says_to_pass_floats():
    with pytest.raises(TypeError, match=r"integer.*\.double\(\)"):
        gx.check_grads(lambda x: x * 2, torch.arange(3), wrt=0)


def test_python_float_is_a_constant_to_torch():
    r = gx.check_grads(lambda x, a: torch.sin(x) * a, torch.ones(2), 2.0)
    assert [label for label, _ in r.not_checked] == ["a"]
    with pytest.raises(TypeError, match="torch differentiates tensors"):
        gx.check_grads(lambda x, a: torch.sin(x) * a, torch.ones(2), 2.0, wrt=1)


def test_bfloat16_native_points_to_check_precision():
    with pytest.raises(TypeError, match="check_precision"):
        gx.check_grads(torch.sin, torch.ones(3, dtype=torch.bfloat16), precision="native")


def test_a_float32_closure_constant_is_explained():
    A = torch.randn(3, 3)
    with pytest.raises(RuntimeError) as info:
        gx.check_grads(lambda x: A @ x, torch.ones(3))
    assert "closure" in "".join(getattr(info.value, "__notes__", []))


def test_mutating_and_nondeterministic_torch_functions_are_refused():
    def mutates(x):
        x.mul_(2)
        return x.sum()

    with pytest.raises(gx.InputMutationError):
        gx.check_grads(mutates, torch.ones(3).double())
    with pytest.raises(gx.NotDeterministicError, match="model.eval"):
        gx.check_grads(lambda x: torch.dropout(x, 0.5, True).sum(), torch.ones(50).double())
    r = gx.check_grads(
        lambda x: torch.dropout(x, 0.5, True).sum(), torch.ones(50).double(), reseed=0
    )
    assert r.passed


def test_nan_output_is_named():
    with pytest.warns(gx.NonFiniteWarning, match=r"y\[1\]"):
        gx.check_grads(torch.log, torch.tensor([1.0, -1.0]).double())


# ---------------------------------------------------------------- explorer


def test_explorer_on_a_torch_function():
    pytest.importorskip("ipywidgets")
    from gradexplorer.explorer import explore

    ex = explore(lambda x: torch.tanh(x) * x, torch.linspace(-1, 1, 3))
    try:
        from gradexplorer.explorer.registry import VIEW_NAMES

        assert list(ex.tabs.titles) == list(VIEW_NAMES)
        assert "scalar" in ex._notes["Hessian"] and "real here" in ex._notes["Complex"]
        assert "PASSED" in ex.badge.value and not ex.error.value
        before = ex.report.analytic.copy()
        ex.point_sliders[0].value = 0.5
        assert not np.allclose(ex.report.analytic, before)
        ex.dtype.value = "float32"
        assert ex.report.dtype == "float32" and "PASSED" in ex.badge.value
        for k in range(len(ex.views)):
            ex.tabs.selected_index = k
            assert not ex.error.value, ex.views[k]
    finally:
        ex.close()


def test_importing_gradexplorer_does_not_import_torch():
    assert "torch" in sys.modules  # this module did; the packaging test checks a fresh one
