"""torch.library custom operators: the check finds a wrong register_autograd at its
entries; torch.library.opcheck's findings (wrong fake kernel, autograd registered
where autograd does not look) join the report; a right op passes with none."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch_cases as tc  # noqa: E402

import gradexplorer as gx  # noqa: E402
from gradexplorer.check.opcheck import OpcheckReport  # noqa: E402

X = torch.tensor([0.2, 0.5, 1.0, 1.3], dtype=torch.float64)


def _save_input(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


# a right op: kernel, fake kernel and backward all agree
@torch.library.custom_op("gxopcheck::cube", mutates_args=())
def right_cube(x: torch.Tensor) -> torch.Tensor:
    return x**3


right_cube.register_fake(lambda x: torch.empty_like(x))
right_cube.register_autograd(
    lambda ctx, g: g * 3 * ctx.saved_tensors[0] ** 2, setup_context=_save_input
)


# a wrong backward (3x for 3x²): right only where x == 1; opcheck cannot see it
@torch.library.custom_op("gxopcheck::cube_wrong_backward", mutates_args=())
def wrong_backward(x: torch.Tensor) -> torch.Tensor:
    return x**3


wrong_backward.register_fake(lambda x: torch.empty_like(x))
wrong_backward.register_autograd(
    lambda ctx, g: g * 3 * ctx.saved_tensors[0], setup_context=_save_input
)


# a fake kernel with the wrong shape: eager gradients are right, compile is not
@torch.library.custom_op("gxopcheck::cube_wrong_fake", mutates_args=())
def wrong_fake(x: torch.Tensor) -> torch.Tensor:
    return x**3


wrong_fake.register_fake(lambda x: x.new_empty(x.shape[0] + 1))
wrong_fake.register_autograd(
    lambda ctx, g: g * 3 * ctx.saved_tensors[0] ** 2, setup_context=_save_input
)

# a kernel registered to the CPU key, no autograd kernel: autograd records the
# kernel's own torch calls, so today's gradient is right by accident
_lib = torch.library.Library("gxopcheck_low", "DEF")
_lib.define("cube_cpu_only(Tensor x) -> Tensor")
_lib.impl("cube_cpu_only", lambda x: x**3, "CPU")
cpu_only = torch.ops.gxopcheck_low.cube_cpu_only.default


# no backward registered at all: the backward pass raises
@torch.library.custom_op("gxopcheck::cube_no_autograd", mutates_args=())
def no_autograd(x: torch.Tensor) -> torch.Tensor:
    return x**3


no_autograd.register_fake(lambda x: torch.empty_like(x))


def _failed(r, op):
    return {f.test for f in r.opcheck.failures if f.op == op}


def test_a_right_op_passes_with_no_findings():
    r = gx.check_grads(right_cube, X)
    assert r.passed, str(r)
    assert isinstance(r.opcheck, OpcheckReport)
    assert r.opcheck.ops == ("gxopcheck::cube",) and r.opcheck.passed
    assert {f.test for f in r.opcheck.findings} >= {"test_schema", "test_faketensor"}
    assert "opcheck (torch.library): gxopcheck::cube passed" in str(r)


def test_a_wrong_register_autograd_is_caught_at_its_entries():
    r = gx.check_grads(wrong_backward, X)
    wrong = {(e.row, e.col) for e in r.mismatches}
    assert wrong == {(i, i) for i in range(4) if X[i] != 1.0}  # 3x == 3x² at x = 1
    for e in r.mismatches:
        assert e.analytic == pytest.approx(3 * X[e.col].item())
        assert e.numeric == pytest.approx(3 * X[e.col].item() ** 2, rel=1e-9)
    # opcheck compares the op with itself: it cannot see a wrong formula
    assert r.opcheck.passed


def test_an_op_inside_f_is_found_and_checked():
    r = gx.check_grads(lambda x: torch.sin(wrong_backward(x)).sum(), X)
    assert r.opcheck.ops == ("gxopcheck::cube_wrong_backward",) and not r.passed
    assert {e.col for e in r.mismatches} == {i for i in range(4) if X[i] != 1.0}


def test_a_wrong_fake_kernel_is_an_opcheck_finding():
    r = gx.check_grads(wrong_fake, X)
    assert r.outcome is gx.Outcome.FAILED and r.wrong_count == 0  # every entry right
    assert "test_faketensor" in _failed(r, "gxopcheck::cube_wrong_fake")
    finding = next(f for f in r.opcheck.failures if f.test == "test_faketensor")
    assert "MetadataMismatch" in finding.message or "shape" in finding.message.lower()
    assert r.status.startswith("FAILED: opcheck: ")
    text = str(r)
    assert "gxopcheck::cube_wrong_fake FAILED" in text and "fake tensor (meta) kernel" in text
    with pytest.raises(gx.GradientError, match="opcheck"):
        r.raise_if_failed()


@pytest.mark.filterwarnings("ignore:.*autograd kernel was not registered:UserWarning")
def test_a_missing_autograd_registration_is_an_opcheck_finding():
    r = gx.check_grads(lambda x: torch.sin(cpu_only(x)), X)
    assert r.wrong_count == 0 and not r.passed  # right by accident, and found
    assert "test_autograd_registration" in _failed(r, "gxopcheck_low::cube_cpu_only")
    assert "autograd kernel" in str(r)


def test_an_op_whose_backward_was_never_registered_raises_with_the_finding():
    with pytest.raises(RuntimeError, match="no autograd formula") as info:
        gx.check_grads(no_autograd, X)
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "gxopcheck::cube_no_autograd FAILED" in notes


def test_the_gallery_case_with_no_fake_kernel_is_named():
    x = torch.linspace(0.2, 1.0, 4, dtype=torch.float64)
    r = gx.check_grads(tc.uses_custom_op, x)
    assert "test_faketensor" in _failed(r, "gxtest::cube")
    assert any("register_fake" in f.message for f in r.opcheck.failures)


def test_opcheck_can_be_turned_off_and_is_absent_without_custom_ops():
    assert gx.check_grads(wrong_fake, X, opcheck=False).opcheck is None
    assert gx.check_grads(wrong_fake, X, opcheck=False).passed
    assert gx.check_grads(torch.sin, X).opcheck is None
    assert gx.check_grads(np.sin, np.ones(2)).opcheck is None
    with pytest.raises(TypeError, match="opcheck must be True or False"):
        gx.check_grads(torch.sin, X, opcheck="yes")
