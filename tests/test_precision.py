"""check_precision: a low-precision gradient judged against float64, in eps units.

Right kernels (torch's and jax's own, stable custom ones) pass in float32, float16
and bfloat16; kernels worse than their precision allows fail, while the float64
gradient of the same code is right."""

import numpy as np
import pytest

import gradexplorer as gx

torch = pytest.importorskip("torch")
import torch_cases as tc  # noqa: E402

F = torch.nn.functional
g = torch.Generator().manual_seed(0)


def _randn(*shape, scale=1.0, shift=0.0):
    return torch.randn(*shape, generator=g) * scale + shift


RIGHT = {
    "sigmoid": (lambda x: torch.sigmoid(x).sum(), [torch.linspace(-20, 20, 50)]),
    "softmax": (lambda x: torch.softmax(x, 0), [_randn(20, scale=3)]),
    "logsumexp": (lambda x: torch.logsumexp(x, 0), [_randn(100, scale=5)]),
    "layer_norm": (lambda x: F.layer_norm(x, (64,)), [_randn(64, scale=2, shift=3)]),
    "mlp": (
        lambda W1, b1, W2, x: torch.tanh(W2 @ torch.relu(W1 @ x + b1)).sum(),
        [_randn(32, 16, scale=0.25), _randn(32), _randn(4, 32, scale=0.15), _randn(16)],
    ),
    "conv1d": (lambda x, w: F.conv1d(x, w).sum(), [_randn(1, 3, 50), _randn(4, 3, 5)]),
    "cross_entropy": (lambda z: F.cross_entropy(z, torch.arange(8) % 5), [_randn(8, 5, scale=4)]),
    "gelu": (F.gelu, [_randn(30, scale=3)]),
    "norm": (torch.linalg.vector_norm, [_randn(500)]),
    "variance_offset": (torch.var, [_randn(100, shift=1e4)]),
    "stable_sigmoid": (lambda x: tc.StableSigmoid.apply(x).sum(), [torch.linspace(-20, 20, 50)]),
}
LOW = [torch.float32, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name", list(RIGHT))
def test_right_kernels_are_as_good_as_their_precision_allows(name, dtype):
    f, args = RIGHT[name]
    r = gx.check_precision(f, *[a.to(dtype) for a in args], rng=0)
    assert r.passed, str(r)
    assert r.low_dtype == str(dtype).removeprefix("torch.")
    assert r.reference_check.passed


def test_a_half_precision_backward_in_a_float32_kernel_fails_in_eps_units():
    x = _randn(30)
    r = gx.check_precision(lambda x: tc.HalfForFloat32Tanh.apply(x), x)
    assert not r.passed and r.reference_check.passed
    worst = r.mismatches[0]
    assert worst.eps_units > 100 * worst.allowed_units / 32  # far beyond round-off
    assert "eps" in str(r)
    # the same kernel's float64 gradient is right: check_grads passes
    assert gx.check_grads(lambda x: tc.HalfForFloat32Tanh.apply(x), x).passed


def test_an_overflowing_backward_fails_where_float32_could_represent_the_answer():
    x = _randn(20, scale=5, shift=90)
    r = gx.check_precision(lambda x: tc.NaiveLogsumexp.apply(x), x)
    assert not r.passed and r.reference_check.passed
    assert any(not np.isfinite(e.low) for e in r.mismatches)
    stable = gx.check_precision(lambda x: torch.logsumexp(x, 0), x)
    assert stable.passed


def test_values_beyond_the_range_are_not_held_against_the_kernel():
    x = torch.linspace(5, 14, 6, dtype=torch.float16)  # exp(14) > float16's max
    r = gx.check_precision(lambda x: torch.exp(x), x)
    assert r.passed, str(r)
    assert any("beyond" in n for n in r.notes)


def test_an_ill_conditioned_problem_gets_its_conditioning_allowed():
    r = gx.check_precision(torch.var, _randn(100, shift=1e4))
    assert r.passed
    assert any("ill-conditioned" in n for n in r.notes)


def test_a_wrong_derivative_fails_its_reference_check_first():
    x = torch.linspace(-1, 1, 5)
    r = gx.check_precision(lambda x: tc.SoftplusWrongBackward.apply(x), x)
    assert not r.passed and not r.reference_check.passed
    assert any("fails its finite-difference check" in n for n in r.notes)


def test_modules_by_parameter_name():
    torch.manual_seed(0)
    r = gx.check_precision(tc.Net(), torch.randn(5, 3), wrt="fc1.weight")
    assert r.passed and list(r.column_blocks) == ["fc1.weight"]


def test_numpy_float32_through_autograd():
    import autograd.numpy as anp

    r = gx.check_precision(lambda x: anp.sum(anp.tanh(x) ** 2), np.linspace(-2, 2, 7, dtype="f4"))
    assert r.passed and r.low_dtype == "float32"


def test_jax_bfloat16():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    x = jnp.linspace(-3.0, 3.0, 16, dtype=jnp.bfloat16)
    r = gx.check_precision(lambda x: jnp.sum(jax.nn.softplus(x)), x)
    assert r.passed and r.low_dtype == "bfloat16"


def test_float64_inputs_have_nothing_to_judge():
    with pytest.raises(TypeError, match="lower precision against float64"):
        gx.check_precision(torch.sin, torch.ones(3, dtype=torch.float64))


def test_report_renders():
    pytest.importorskip("matplotlib")
    r = gx.check_precision(torch.tanh, torch.linspace(-1, 1, 4))
    assert r._repr_png_()[:4] == b"\x89PNG"
    assert "check_precision" in r._repr_html_()


def test_precision_entries_share_the_check_entries_field_names():
    import dataclasses

    from gradexplorer.check.precision_report import PrecisionEntry

    shared = {"out_index", "in_index", "label", "verdict"}
    assert shared <= {f.name for f in dataclasses.fields(PrecisionEntry)}
    assert shared <= {f.name for f in dataclasses.fields(gx.Entry)}
    x = torch.linspace(-1, 1, 4)
    r = gx.check_precision(lambda v: torch.sin(v) * v, x)
    e = r.worst[0]
    assert e.verdict is gx.Verdict.RIGHT and e.in_index == (e.col,) and e.out_index == (e.row,)
    assert r.outcome is gx.Outcome.PASSED and e.reading.startswith("ok")


# ---------------------------------------------------------------- an oracle (reference=)


class SequentialBackward(torch.autograd.Function):
    """W @ x whose backward sums the rows one by one in the inputs' low precision
    (a kernel that accumulates in bf16 where a library accumulates in float32)."""

    @staticmethod
    def forward(ctx, W, x):
        ctx.save_for_backward(W, x)
        return W @ x

    @staticmethod
    def backward(ctx, g):
        W, x = ctx.saved_tensors
        acc = torch.zeros(W.shape[1], dtype=W.dtype)
        for i in range(W.shape[0]):
            acc = acc + W[i] * g[i]
        return g[:, None] * x[None, :], acc


def _plain_layer(W, x):
    return torch.tanh(W @ x).sum()


def _sequential_layer(W, x):
    return torch.tanh(SequentialBackward.apply(W, x)).sum()


@pytest.mark.parametrize(("dtype", "rows"), [(torch.bfloat16, 64), (torch.float16, 1024)])
def test_an_oracle_passes_its_own_kind_and_fails_a_kernel_worse_than_it(dtype, rows):
    gen = torch.Generator().manual_seed(0)
    W = torch.randn(rows, 16, generator=gen).to(dtype)
    x = torch.randn(16, generator=gen).to(dtype)
    assert gx.check_precision(_plain_layer, W, x, reference=_plain_layer).passed
    # within the precision's round-off allowance alone, yet several times the oracle's error
    assert gx.check_precision(_sequential_layer, W, x).passed
    judged = gx.check_precision(_sequential_layer, W, x, reference=_plain_layer)
    assert not judged.passed and any("oracle" in note for note in judged.notes)
    assert {e.in_index[0] for e in judged.mismatches if e.label.split(" / ")[1][0] == "x"}


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"reference": "plain"}, TypeError, "reference"),
        ({"reference": _plain_layer, "reference_factor": 0}, ValueError, "reference_factor"),
        ({"reference": _plain_layer, "reference_factor": float("inf")}, ValueError, "positive"),
    ],
)
def test_bad_oracle_options_say_what_was_expected(options, error, match):
    W, x = torch.ones(2, 3).bfloat16(), torch.ones(3).bfloat16()
    with pytest.raises(error, match=match):
        gx.check_precision(_plain_layer, W, x, **options)
