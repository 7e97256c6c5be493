"""check_grads(..., compiled=True): torch.compile's gradient beside eager's, both judged
against the same finite differences, each wrong entry attributed to its side.

The mismatches are planted with ``torch.compiler.is_compiling()`` inside a custom
backward: dynamo traces the backward while compiling, so the compiled graph takes
the other branch, and the wrong entries are known exactly.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gradexplorer as gx  # noqa: E402
from gradexplorer.check.compiled import WhichWrong  # noqa: E402
from gradexplorer.gallery import for_torch  # noqa: E402

EAGER_WRONG, COMPILED_WRONG, ONLY_EAGER_WRONG = 0, 2, 4
COLUMNS = (1, 3)  # where CompiledOnlyWrong's compiled backward is wrong


class Planted(torch.autograd.Function):
    """x**2 whose backward is wrong at fixed flat indices: at EAGER_WRONG always,
    at COMPILED_WRONG only compiled, at ONLY_EAGER_WRONG only eager."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        d = (2 * x).clone()
        d[EAGER_WRONG] = d[EAGER_WRONG] * 1.1
        if torch.compiler.is_compiling():
            d[COMPILED_WRONG] = d[COMPILED_WRONG] * 1.5
        else:
            d[ONLY_EAGER_WRONG] = d[ONLY_EAGER_WRONG] * 0.9
        return g * d


class CompiledOnlyWrong(torch.autograd.Function):
    """x**2 whose backward is wrong at ``COLUMNS`` only when compiled."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        d = (2 * x).clone()
        if torch.compiler.is_compiling():
            for j in COLUMNS:
                d[j] = -d[j]
        return g * d


A = torch.tensor([[1.0, 0.5, -0.3, 0.2, 0.1], [0.0, 1.0, 0.4, -0.6, 0.3]], dtype=torch.float64)
X = torch.linspace(0.3, 1.1, 5, dtype=torch.float64)


def mixes_compiled_only_wrong(x):
    return A @ torch.sin(CompiledOnlyWrong.apply(x))


def planted(x):
    return torch.tanh(Planted.apply(x))


def _cells(entries):
    return {(e.row, e.col) for e in entries}


def test_compiled_only_defect_is_caught_at_exactly_its_entries_with_inductor():
    r = gx.check_grads(mixes_compiled_only_wrong, X, compiled=True)
    expected = {(i, j) for i in range(2) for j in COLUMNS}
    assert r.outcome is gx.Outcome.FAILED
    assert r.compiled.backend in ("inductor", "aot_eager")
    assert _cells(r.compiled.entries) == expected
    assert {e.wrong for e in r.compiled.entries} == {WhichWrong.COMPILED}
    # the wrong entries are the report's, marked as the compiled gradient's
    assert _cells(r.mismatches) == expected and r.wrong_count == len(expected)
    assert all(e.kind is gx.Comparison.COMPILED for e in r.mismatches)
    # eager's own verdicts are untouched: every eager entry is right
    assert not np.any(np.isin(r.verdicts, [gx.Verdict.WRONG.code, gx.Verdict.IMPRECISE.code]))
    for e in r.compiled.entries:  # the plant flips the sign; eager matches the truth
        assert e.compiled == pytest.approx(-e.eager, rel=1e-12)
        assert e.eager == pytest.approx(e.numeric, rel=1e-9)
    text = str(r)
    assert "[compiled]" in text and "the compiled gradient is wrong (eager is right)" in text
    assert "compiled (torch.compile" in r._repr_html_()


def test_each_wrong_side_is_named():
    r = gx.check_grads(planted, X, compiled="aot_eager")
    by_col = {e.col: e.wrong for e in r.compiled.entries}
    assert by_col == {
        EAGER_WRONG: WhichWrong.BOTH,
        COMPILED_WRONG: WhichWrong.COMPILED,
        ONLY_EAGER_WRONG: WhichWrong.EAGER,
    }
    assert all(e.row == e.col for e in r.compiled.entries)  # elementwise: the diagonal
    eager_wrong = {e.col for e in r.mismatches if e.kind is gx.Comparison.VJP}
    compiled_wrong = {e.col for e in r.mismatches if e.kind is gx.Comparison.COMPILED}
    assert eager_wrong == {EAGER_WRONG, ONLY_EAGER_WRONG}
    assert compiled_wrong == {COMPILED_WRONG}  # "both" is already an eager failure
    assert r.compiled.compiled_wrong and not r.passed
    assert "both are wrong" in str(r) and "eager is wrong (the compiled gradient is right)" in str(
        r
    )


TORCH = for_torch.examples()


@pytest.mark.parametrize("name", ["softmax", "tanh_affine", "logsumexp"])
def test_right_functions_pass_compiled(name):
    ex = TORCH[name]
    r = gx.check_grads(ex.f, *ex.args(), compiled="aot_eager")
    assert r.passed, str(r)
    assert r.compiled.entries == () and r.compiled.value_gap == 0
    np.testing.assert_allclose(r.compiled.analytic, r.analytic, rtol=1e-12, atol=1e-14)
    assert "agrees with eager" in str(r) or "within its finite-difference allowance" in str(r)


def test_right_module_passes_compiled():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    r = gx.check_grads(net, torch.ones(3), compiled="aot_eager")
    assert r.passed and r.compiled is not None and r.compiled.analytic.shape == r.shape


def test_a_numpy_function_is_refused_clearly():
    with pytest.raises(TypeError, match="torch.compile.*autograd backend.*torch tensors"):
        gx.check_grads(np.sin, np.ones(3), compiled=True)


@pytest.mark.parametrize("bad", [1, "", 2.0, ["inductor"]])
def test_bad_compiled_values_are_refused(bad):
    with pytest.raises(TypeError, match="compiled must be True"):
        gx.check_grads(torch.sin, X, compiled=bad)


def test_fast_mode_is_refused_before_any_work():
    calls = []

    def f(x):
        calls.append(1)
        return torch.sin(x)

    with pytest.raises(ValueError, match="mode='full'"):
        gx.check_grads(f, X, compiled=True, mode="fast")
    assert len(calls) < 10  # the guards' calls only: finite differences would take dozens


@torch.library.custom_op("gxcompiled::no_fake", mutates_args=())
def no_fake(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x)


def _nf_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


no_fake.register_autograd(
    lambda ctx, g: g * torch.cos(ctx.saved_tensors[0]), setup_context=_nf_setup
)


@pytest.mark.parametrize("compiled", [True, "aot_eager"])
def test_a_compile_error_is_a_clear_compile_error(compiled):
    with pytest.raises(gx.CompileError) as info:
        gx.check_grads(lambda x: no_fake(x) * 2.0, X, compiled=compiled, opcheck=False)
    text = str(info.value)
    assert "failed where eager <lambda> ran" in text and "register_fake" in text
    assert "compiled=False" in text
    assert ("aot_eager' failed too" in text) == (compiled is True)


def test_graph_breaks_are_no_failure():
    def breaks(x):
        y = torch.sin(x)
        print(end="")  # dynamo breaks the graph here and runs the call eagerly
        return y * torch.cos(x)

    r = gx.check_grads(breaks, X, compiled="aot_eager")
    assert r.passed and r.compiled.graphs >= 2


def test_inductor_without_a_cxx_compiler_falls_back_to_aot_eager(monkeypatch):
    import torch._inductor.config as inductor

    monkeypatch.setattr(inductor.cpp, "cxx", ("/nonexistent/c++",))
    monkeypatch.setattr(inductor, "fx_graph_cache", False)

    def fresh(x):  # a function inductor has not compiled before in this process
        return torch.exp(-x) * x

    r = gx.check_grads(fresh, X, compiled=True)
    assert r.passed and r.compiled.backend == "aot_eager"
    assert "inductor could not compile fresh" in r.compiled.fallback
    assert "InvalidCxxCompiler" in r.compiled.fallback or "compiler" in r.compiled.fallback
    assert "backend='aot_eager' instead" in str(r)


class ScaledUnderCompile(torch.autograd.Function):
    """A forward that compiles to another function (x**2 times 1.001)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * (1.001 if torch.compiler.is_compiling() else 1.0)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x


def test_a_changed_forward_value_is_reported():
    r = gx.check_grads(lambda x: ScaledUnderCompile.apply(x), X, compiled="aot_eager")
    assert r.compiled.value_gap == pytest.approx(1e-3, rel=1e-6)
    assert "compiling changed f itself" in str(r)


def test_second_order_compares_the_first_order_gradient():
    r = gx.check_grads(mixes_compiled_only_wrong, X, compiled="aot_eager", order=2)
    assert not r.passed and r.first_order.compiled is r.compiled
    assert _cells(r.compiled.entries) == {(i, j) for i in range(2) for j in (1, 3)}
    assert r.first_order.outcome is gx.Outcome.FAILED


class AbsKinkChoice(torch.autograd.Function):
    """|x| whose compiled backward picks another derivative at x = 0: ``SLOPE_AT_0["slope"]``."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.abs()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        d = torch.sign(x)
        if torch.compiler.is_compiling():
            d = torch.where(x == 0, torch.full_like(x, SLOPE_AT_0["slope"]), d)
        return g * d


SLOPE_AT_0 = {"slope": 1.0}


@pytest.mark.parametrize("slope, wrong", [(1.0, False), (-0.5, False), (2.0, True)])
def test_at_a_kink_the_compiled_value_is_judged_against_the_one_sided_derivatives(
    slope, wrong, monkeypatch
):
    monkeypatch.setitem(SLOPE_AT_0, "slope", slope)
    x = torch.tensor([-0.5, 0.0, 0.7], dtype=torch.float64)

    def kinked(v):  # dynamo guards on the slope it read: each value compiles anew
        return AbsKinkChoice.apply(v) * 1.0

    r = gx.check_grads(kinked, x, compiled="aot_eager")
    assert r.compiled.differ == 1  # eager's sign(0) = 0, the compiled one `slope`
    assert r.compiled.analytic[1, 1] == slope
    assert bool(r.compiled.entries) == wrong and r.passed == (not wrong)
    if wrong:
        assert [(e.row, e.col, e.wrong) for e in r.compiled.entries] == [
            (1, 1, WhichWrong.COMPILED)
        ]
