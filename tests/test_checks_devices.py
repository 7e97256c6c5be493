"""Checks on the inputs' own device: every entry point, every device present.

The table runs on the CPU always and on CUDA where there is one. On the CPU a
tensor subclass stands in for a device tensor: like a CUDA tensor it refuses
to become a numpy array implicitly (``np.asarray``, ``.numpy()``) and only an
explicit ``.cpu()`` copies it to the host. Every path that would crash on a
GPU crashes here too; f records the device and dtype of every call it sees.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gradexplorer as gx  # noqa: E402


class DeviceLike(torch.Tensor):
    """A CPU tensor with a CUDA tensor's manners at the host boundary."""

    def numpy(self, *args, **kwargs):
        raise TypeError("can't convert a device tensor to numpy: copy it with .cpu() first")

    def __array__(self, *args, **kwargs):
        raise TypeError("can't convert a device tensor to numpy: copy it with .cpu() first")

    def cpu(self, *args, **kwargs):
        return torch.Tensor.cpu(self).as_subclass(torch.Tensor).clone()


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def on(device: str, t: torch.Tensor) -> torch.Tensor:
    """t on the device (on the CPU: as a DeviceLike)."""
    return t.as_subclass(DeviceLike) if device == "cpu" else t.to(device)


def point(device: str):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4, generator=gen, dtype=torch.float64)
    W = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    return on(device, x), on(device, W)


class Recorder:
    """f = tanh(W x), remembering where each concrete call ran and in what dtype."""

    def __init__(self):
        self.calls: list[tuple[str, torch.dtype]] = []

    def __call__(self, x, W):
        if not torch._C._functorch.is_functorch_wrapped_tensor(x):
            self.calls.append((x.device.type, x.dtype))
        return torch.tanh(W @ x)


class WrongSoftplus(torch.autograd.Function):
    """softplus with a backward 1% too large: a custom kernel's planted bug."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.nn.functional.softplus(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.sigmoid(x) * 1.01


def layer_with_wrong_kernel(x, W):
    return WrongSoftplus.apply(W @ x)


def rule_point(device):
    x, _ = point(device)
    f = lambda x: torch.sin(x) * x  # noqa: E731

    def f_vjp(x):
        return f(x), lambda g: (g * (torch.cos(x) * x + torch.sin(x)),)

    def f_jvp(primals, tangents):
        (x,), (dx,) = primals, tangents
        return f(x), (torch.cos(x) * x + torch.sin(x)) * dx

    return f, f_vjp, f_jvp, x


def within_its_error(fd, exact: np.ndarray) -> bool:
    """Every entry of a finite-difference Jacobian within its own error estimate
    (finite: resolved) of the exact one."""
    return bool(np.all(np.isfinite(fd.error)) and np.all(np.abs(fd.jacobian - exact) <= fd.error))


ENTRY_POINTS = {
    "check_grads full": lambda f, x, W: gx.check_grads(f, x, W, mode="full").passed,
    "check_grads fast": lambda f, x, W: gx.check_grads(f, x, W, mode="fast").passed,
    "check_grads order 2": lambda f, x, W: gx.check_grads(f, x, W, order=2).passed,
    # the exact Jacobian from a plain copy of f on the host (not the Recorder: its
    # host calls are the test's own)
    "numeric_jacobian": lambda f, x, W: within_its_error(
        gx.numeric_jacobian(f, x, W, wrt=0),
        gx.jacobian(lambda x, W: torch.tanh(W @ x))(x.cpu(), W.cpu()).detach().numpy(),
    ),
    "locate": lambda f, x, W: gx.locate(f, x, W).culprit is None,
    "check_precision": lambda f, x, W: gx.check_precision(f, x.float(), W.float()).passed,
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_every_entry_point_evaluates_f_on_the_inputs_device(device, entry):
    f = Recorder()
    x, W = point(device)
    assert ENTRY_POINTS[entry](f, x, W)
    assert f.calls and {d for d, _ in f.calls} == {torch.device(device).type}
    wanted = torch.float32 if entry == "check_precision" else torch.float64
    assert wanted in {t for _, t in f.calls}


class Float32Inside(Recorder):
    """tanh(W x) computed in float32 from float64 inputs, remembering each call."""

    def __call__(self, x, W):
        if not torch._C._functorch.is_functorch_wrapped_tensor(x):
            self.calls.append((x.device.type, x.dtype))
        return torch.tanh(W.float() @ x.float()).double()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", ["full", "fast"])
def test_f_reading_its_inputs_in_float32_is_checked_at_their_float32_on_the_device(device, mode):
    """The point rounded to float32 is made again where f runs: every call of f stays on
    the inputs' device, and the check is at x in float32 (gradexplorer.fd.narrow)."""
    f = Float32Inside()
    x, W = point(device)
    r = gx.check_grads(f, x, W, mode=mode)
    assert r.passed, str(r)
    assert any("only through float32" in n for n in r.notes), r.notes
    assert f.calls and {d for d, _ in f.calls} == {torch.device(device).type}


@pytest.mark.parametrize("device", DEVICES)
def test_the_report_names_the_device_and_counts_its_copies(device):
    x, W = point(device)
    report = gx.check_grads(Recorder(), x, W)
    assert report.device.startswith(torch.device(device).type) and report.copies > 0
    assert (" on cuda" in str(report).splitlines()[0]) == (device == "cuda")


def test_numeric_jacobian_runs_its_stencils_batched_on_the_device():
    """The stencil points are built on the device and go through f in batches
    (torch.func.vmap), not one host-built point per call: f's concrete calls are a
    handful (the guards, x0), far fewer than its evaluations; numpy code stays on
    the host with no copies."""
    f = Recorder()
    x, W = point("cpu")
    fd = gx.numeric_jacobian(f, x, W, wrt=0)
    assert fd.device == "cpu" and fd.copies > 0
    assert len(f.calls) < fd.nfev / 20, (len(f.calls), fd.nfev)
    host = gx.numeric_jacobian(lambda x: np.tanh(x), np.ones(3))
    assert (host.device, host.copies) == ("cpu", 0)


def test_numeric_jacobian_on_the_device_gives_the_host_numbers():
    """The device path (points, batches, reductions with the framework's arrays)
    and the host path (numpy points, one call each) estimate the same Jacobian."""
    x = torch.linspace(-1.0, 1.5, 7, dtype=torch.float64)
    f = lambda x: torch.sin(3 * x) * torch.cumsum(x, 0)  # noqa: E731
    device = gx.numeric_jacobian(f, on("cpu", x))
    host = gx.numeric_jacobian(f, x, vectorized=False, executor=map)
    assert device.copies > 0 and host.copies == 0
    np.testing.assert_allclose(device.jacobian, host.jacobian, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(device.error, host.error, rtol=0.2, atol=1e-14)
    assert device.nfev == host.nfev


def test_copies_do_not_grow_with_the_number_of_inputs():
    def copies(n):
        x = on("cpu", torch.linspace(0.1, 1.0, n, dtype=torch.float64))
        return gx.check_grads(lambda x: torch.sin(x) * x.sum(), x, mode="fast").copies

    small, large = copies(5_000), copies(80_000)  # both reduced on the device
    assert large <= 2 * small, (small, large)


def opaque_softplus(wrong_at: int | None = None):
    """softplus whose forward and backward run outside autograd, as a Triton or
    CUDA kernel does: each writes its result into a fresh tensor, so autograd
    cannot follow the backward pass (nor derive a forward rule from it)."""

    def host(t: torch.Tensor) -> np.ndarray:
        return t.detach().cpu().numpy()

    class KernelSoftplus(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = torch.empty_like(x)
            y.copy_(torch.from_numpy(np.logaddexp(host(x), 0.0)))
            ctx.save_for_backward(x)
            return y

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            d = host(g) / (1.0 + np.exp(-host(x)))
            if wrong_at is not None:
                d[wrong_at] *= 1.001
            out = torch.empty_like(x)
            out.copy_(torch.from_numpy(d))
            return out

    return KernelSoftplus.apply


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("wrong_at", [None, 7])
@pytest.mark.parametrize("beside", [False, True])
def test_a_kernel_autograd_cannot_follow_is_judged_by_its_backward(device, wrong_at, beside):
    """A right kernel passes (forward mode is not derived from a backward pass
    autograd cannot follow: that gave a tangent of zero, and a false alarm at
    every entry), also added to ordinary operations (whose part of the tangent
    alone came through); a kernel wrong at one entry fails there alone."""
    x = on(device, torch.linspace(-2, 2, 30, dtype=torch.float64))
    kernel = opaque_softplus(wrong_at)
    f = (lambda x: kernel(x) + torch.sin(x) * x) if beside else kernel
    report = gx.check_grads(f, x)
    wrong = [(e.row, e.col) for e in report.mismatches]
    assert wrong == ([] if wrong_at is None else [(wrong_at, wrong_at)])
    assert any(
        "forward mode not checked: KernelSoftplus has no forward-mode" in n
        and "outside torch's autograd" in n
        for n in report.notes
    ) or (beside and any("forward mode not checked" in n for n in report.notes))
    if beside:  # an operator gives no numbers a kernel's missing part would make wrong
        with pytest.raises(NotImplementedError, match="outside torch's autograd"):
            gx.Rop(f, x, torch.ones_like(x))


@pytest.mark.parametrize("device", DEVICES)
def test_a_wrong_custom_function_is_found_at_its_entries_and_named(device):
    x, W = point(device)
    report = gx.check_grads(layer_with_wrong_kernel, x, W)
    assert not report.passed and report.wrong_count == 3 * 4 + 3 * 4
    loc = gx.locate(layer_with_wrong_kernel, x, W)
    assert loc.culprit is not None and loc.culprit.name == "WrongSoftplus"


@pytest.mark.parametrize("device", DEVICES)
def test_locate_records_a_function_passed_as_its_apply(device):
    """gradcheck's docs check ``MyFunction.apply`` itself; locate names it."""
    x, _ = point(device)
    loc = gx.locate(WrongSoftplus.apply, x)
    assert loc.culprit is loc.nodes[0] and loc.culprit.name == "WrongSoftplus"
    assert loc.culprit.source.startswith("tests/test_checks_devices.py:")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rule", ["vjp", "jvp"])
def test_hand_written_rules_on_tensors(device, rule):
    f, f_vjp, f_jvp, x = rule_point(device)
    check = gx.check_vjp(f, f_vjp, x) if rule == "vjp" else gx.check_jvp(f, f_jvp, x)
    assert check.passed

    def wrong(x):
        return f(x), lambda g: (g * torch.cos(x) * x,)

    assert not gx.check_vjp(f, wrong, x).passed


@pytest.mark.parametrize("device", DEVICES)
def test_a_module_keeps_its_parameters_on_their_device(device):
    layer = torch.nn.Linear(4, 2).double()
    layer.weight.data = on(device, layer.weight.data)
    layer.bias.data = on(device, layer.bias.data)
    x = on(device, torch.linspace(-1, 1, 4, dtype=torch.float64))
    report = gx.check_grads(layer, x)
    assert report.passed
    assert layer.weight.device.type == torch.device(device).type  # the user's, untouched


def test_a_device_without_float64_is_checked_in_float32(monkeypatch):
    """Apple's mps has no float64: checks run in float32, honest about what it resolves."""
    from gradexplorer.backends.torch import arrays

    monkeypatch.setattr(arrays, "NO_FLOAT64", frozenset({"cpu"}))
    seen = []

    def f(x):
        seen.append(x.dtype)
        return torch.exp(x) * x

    report = gx.check_grads(f, torch.linspace(0.1, 1.0, 5))
    assert report.passed and report.dtype == "float32"
    assert any("has no float64" in note for note in report.notes)
    assert torch.float64 not in seen

    def wrong(x):
        return WrongSoftplus.apply(x)

    assert not gx.check_grads(wrong, torch.linspace(0.1, 1.0, 5)).passed


def test_the_explorer_shows_a_device_function():
    pytest.importorskip("ipywidgets")
    f = Recorder()
    x, W = point("cpu")
    ex = gx.explore(lambda x: f(x, W), x)
    try:
        assert "PASSED" in ex.badge.value and not ex.error.value
        ex.point_sliders[0].value = 0.5
        assert "PASSED" in ex.badge.value and not ex.error.value
        for k, name in enumerate(ex.views):
            ex.tabs.selected_index = k
            assert not ex.error.value, name
    finally:
        ex.close()
    assert {d for d, _ in f.calls} == {"cpu"}


JAX_ON_A_SECOND_DEVICE = """
import contextlib
import warnings
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
import jax
import jax.numpy as jnp
import numpy as np
import gradexplorer as gx
from gradexplorer.backends.jax import device as kits
from gradexplorer.fd.evaluation import DeviceEvaluator

second = jax.devices("cpu")[1]
x = jax.device_put(jnp.linspace(0.1, 1.0, 6), second)
seen = set()

def f(x):
    if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
        seen.add(str(next(iter(x.devices()))))
    return jnp.sin(x) * jnp.sum(x**2)

report = gx.check_grads(f, x)
assert report.passed and report.device == "cpu:1", (report.device, report.outcome)
assert seen == {"TFRT_CPU_1"} or seen == {str(second)}, seen
fd = gx.numeric_jacobian(f, x)
assert fd.device == "cpu:1" and fd.copies > 0 and not fd.unresolved, (fd.device, fd)
assert seen == {"TFRT_CPU_1"} or seen == {str(second)}, seen

# the accelerator's path (samples reduced with jax.numpy on the device), on the CPU
from gradexplorer.fd import evaluation

x64 = jax.device_put(np.linspace(0.1, 1.0, 6), second)
F = lambda v: jnp.sin(v) * jnp.sum(v**2)
accelerator = kits.device_kit(x64, device_arithmetic=True)
few = DeviceEvaluator(F, accelerator, np.asarray(x64))
evaluation.FEW_OUTPUTS = 0  # as for 10^6 outputs: reduced on the device
on_device = DeviceEvaluator(F, accelerator, np.asarray(x64))
on_host = DeviceEvaluator(F, kits.device_kit(x64), np.asarray(x64))
h, offsets = np.full(6, 1e-3), np.array([1.0, -1.0])
a = on_device.to_host(on_device.points(None, np.arange(6), None, h, offsets))
b = np.asarray(on_host.points(None, np.arange(6), None, h, offsets))
c = few.points(None, np.arange(6), None, h, offsets)
assert np.allclose(a, b, rtol=0, atol=1e-14), abs(a - b).max()
assert np.array_equal(a, c), abs(a - c).max()
assert on_device.xp is not np and on_host.xp is np
# a few outputs: points and f on the device, the small samples reduced on the host
assert few.dxp is not np and few.xp is np and isinstance(c, np.ndarray)
print("ok")
"""


def test_jax_arrays_are_checked_on_their_own_device():
    pytest.importorskip("jax")
    env = {**os.environ, "JAX_ENABLE_X64": "1"}
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(JAX_ON_A_SECOND_DEVICE)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0 and "ok" in out.stdout, out.stdout + out.stderr[-3000:]


def _position_rounding(monkeypatch, size: float, past: int = 0) -> None:
    """Make torch's batched f round each row past the first ``past`` by its place
    in the batch (a fixed relative offset up to ``size`` per place), as a batched
    matrix product's edge tiles do (up to 7e-14 at n = 2000) — but not in the few
    rows of a noise probe, so that only the stencil sees it."""
    from gradexplorer.backends.torch import device

    mapped = device.Kit.batched

    def batched(self, F):
        run = mapped(self, F)

        def rounded(X):
            gen = torch.Generator().manual_seed(0)
            place = torch.rand(X.shape[0], generator=gen, dtype=X.dtype) * 2 - 1
            place[:past] = 0
            return run(X) * (1 + size * place[:, None])

        return rounded

    monkeypatch.setattr(device.Kit, "batched", batched)


def test_a_batch_that_rounds_rows_by_position_reports_its_spread(monkeypatch):
    """Samples from such a batch carry that rounding: the evaluator measures it
    (copies of x0 in one batch) and keeps batching."""
    from gradexplorer.backends.torch.device import device_kit
    from gradexplorer.fd.evaluation import DeviceEvaluator

    _position_rounding(monkeypatch, 1e-14)
    gen = torch.Generator().manual_seed(0)
    x0 = torch.linspace(0.1, 1.0, 5, dtype=torch.float64)
    ev = DeviceEvaluator(torch.sin, device_kit(x0), x0.numpy(), x0_device=x0)
    h, offsets = np.full(5, 1e-3), np.array([1.0, -1.0])
    got = ev.to_host(ev.points(None, np.arange(5), None, h, offsets))
    assert ev.vectorized
    place = torch.rand(16, generator=gen, dtype=torch.float64).numpy() * 2 - 1  # 16 rows:
    gap = np.max(np.abs(place - place[0]))  # x0 and 10 points, padded to a power of two
    np.testing.assert_allclose(ev.batch_spread, np.sin(x0.numpy()) * 1e-14 * gap, rtol=1e-2)
    want = np.sin(x0.numpy()[None, None, :] + np.zeros((5, 2, 1)))
    for k in range(5):
        for o, c in enumerate(offsets):
            want[k, o, k] = np.sin(x0[k].item() + c * 1e-3)
    assert np.all(np.abs(got - want) <= 2 * ev.batch_spread)


@pytest.mark.parametrize("wrong", [False, True])
def test_a_check_through_position_rounding_batches_keeps_its_verdict(monkeypatch, wrong):
    """With rows rounded by position (1e-12 apart, where the noise probes do not
    see it), a right derivative still passes (it failed, at 1.24x its allowance,
    before the spread was measured) and a wrong entry is still caught, at its entry."""
    _position_rounding(monkeypatch, 1e-12, past=32)
    gen = torch.Generator().manual_seed(3)
    W = torch.randn(100, 100, generator=gen, dtype=torch.float64) / 100**0.5
    x = torch.randn(100, generator=gen, dtype=torch.float64)

    class Tanh(torch.autograd.Function):
        generate_vmap_rule = True  # f is batched like torch.tanh itself

        @staticmethod
        def forward(v):
            return torch.tanh(v)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            d = 1 - y**2
            if wrong:
                d = d.clone()
                d[7] *= 1 + 1e-6
            return g * d

    report = gx.check_grads(lambda v: Tanh.apply(W @ v), x, mode="full")
    if wrong:
        assert not report.passed
        assert {e.row for e in report.mismatches} == {7}
    else:
        assert report.passed, report


def tf32(t: torch.Tensor) -> torch.Tensor:
    """t rounded to TF32's 10-bit mantissa, its gradient passed straight through."""
    bits = t.detach().contiguous().view(torch.int32)
    rounded = ((bits + 0x1000) & ~0x1FFF).view(torch.float32)
    return t + (rounded - t).detach()


class SimulatedTF32:
    """The torch backend's TF32 switch on a CPU: matmuls round to TF32 until
    ``full_float32`` switches that off (as it does torch's flags on CUDA)."""

    def __init__(self, monkeypatch):
        import gradexplorer.backends.torch as backend

        self.on = True
        monkeypatch.setattr(backend, "reduced_matmuls", lambda leaves: "TF32" if self.on else None)
        monkeypatch.setattr(backend, "full_float32", self.full_float32)

    @contextlib.contextmanager
    def full_float32(self):
        self.on = False
        try:
            yield
        finally:
            self.on = True

    def matmul(self, A, B):
        """TF32 touches float32 products only (the float64 reference is exact)."""
        return tf32(A) @ tf32(B) if self.on and A.dtype == torch.float32 else A @ B


@pytest.mark.parametrize("wrong", [False, True])
def test_tf32_is_named_when_it_decides_a_float32_verdict(monkeypatch, wrong):
    """A float32 layer fails check_precision under TF32 matmuls and passes in full
    float32: TF32 is named. A backward wrong by 1% fails with TF32 off too: TF32
    is not blamed for it."""
    modes = SimulatedTF32(monkeypatch)
    gen = torch.Generator().manual_seed(0)
    W = torch.randn(64, 64, generator=gen) / 8
    x = torch.randn(64, generator=gen)

    def layer(x, W):
        y = torch.tanh(modes.matmul(W, x[:, None])[:, 0])
        return WrongSoftplus.apply(y) if wrong else torch.nn.functional.softplus(y)

    report = gx.check_precision(layer, x, W, wrt=0)
    assert not report.passed
    if wrong:
        assert report.decided_by is None
    else:
        assert report.decided_by == "TF32"
        assert any(n.startswith("TF32 decides this verdict") for n in report.notes)
    assert modes.on  # the user's setting is back


def test_without_tf32_nothing_is_named():
    x = torch.linspace(-1, 1, 16)
    report = gx.check_precision(lambda x: torch.tanh(x) * x, x)
    assert report.passed and report.decided_by is None


MATMUL_SETTINGS = """
import torch
from gradexplorer.backends.torch import matmuls

class OnCuda(torch.Tensor):
    @property
    def is_cuda(self):
        return True

leaf = torch.zeros(2).as_subclass(OnCuda)
{setting}
before = matmuls._settings()
mode = matmuls.reduced_matmuls([leaf])
with matmuls.full_float32():
    inside = matmuls.reduced_matmuls([leaf])
assert matmuls._settings() == before, (before, matmuls._settings())
if before[0] == "old":  # the user's own API still answers
    torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32
else:
    torch.backends.cuda.matmul.fp32_precision
print(mode, inside)
"""


@pytest.mark.parametrize(
    "setting, mode",
    [
        ("pass", "TF32"),  # cuDNN's convolutions allow TF32 by default
        ("torch.backends.cudnn.allow_tf32 = False", "None"),
        ('torch.set_float32_matmul_precision("high")', "TF32"),
        ('torch.set_float32_matmul_precision("medium")', "BF16"),
        ('torch.backends.cuda.matmul.fp32_precision = "tf32"', "TF32"),
        ('torch.backends.fp32_precision = "tf32"', "TF32"),
        ('torch.backends.cudnn.conv.fp32_precision = "ieee"', "None"),
    ],
)
def test_matmul_modes_are_read_and_restored_in_the_users_own_api(setting, mode):
    """torch's old and new TF32 settings must not be mixed in one process (reading
    the old after setting the new raises): each is read and restored in its own."""
    if "fp32_precision" in setting and not hasattr(torch.backends.cuda.matmul, "fp32_precision"):
        pytest.skip("this torch has no fp32_precision API")
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", MATMUL_SETTINGS.format(setting=setting)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == [mode, "None"]


def test_jax_accelerator_columns_come_in_a_few_shapes(monkeypatch):
    """On an accelerator every eager jax operation compiles once per shape: the columns
    still unsettled at each step level (any count) are padded to a power of two, with the
    same samples as unpadded ones, and the evaluator's small steps are fused on the
    device only (bench/jax_compiles.py counts the programs)."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from gradexplorer.backends.jax import device
    from gradexplorer.fd import evaluation
    from gradexplorer.fd.evaluation import DeviceEvaluator

    monkeypatch.setattr(evaluation, "FEW_OUTPUTS", 0)  # reduced on the device
    with jax.enable_x64(True):
        x = jnp.linspace(0.1, 1.0, 9)
        F = lambda v: jnp.sin(v) * jnp.sum(v**2)  # noqa: E731
        seen = []
        add_at = device.Kit.add_at

        def spy(self, pts, rows, cols, vals):
            seen.append(tuple(pts.shape))
            return add_at(self, pts, rows, cols, vals)

        monkeypatch.setattr(device.Kit, "add_at", spy)
        accelerator = DeviceEvaluator(F, device.device_kit(x, True), np.asarray(x))
        on_host = DeviceEvaluator(F, device.device_kit(x, False), np.asarray(x))
        offsets = np.array([1.0, -1.0, 2.0])
        for k in (5, 6, 7, 8):
            columns, h = np.arange(k), np.full(k, 1e-3)
            a = accelerator.to_host(accelerator.points(None, columns, None, h, offsets))
            b = np.asarray(on_host.points(None, columns, None, h, offsets))
            assert a.shape == b.shape == (k, 3, 9)
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-14)
        assert set(seen) == {(8 * 3, 9)}, seen
        assert accelerator.dxp.fuse is device.xp.fuse and not hasattr(on_host.dxp, "fuse")


def test_jax_fused_reductions_give_the_eager_numbers(monkeypatch):
    """The FD reductions run as one program each on an accelerator (gradexplorer.fd.
    fusing): on the CPU with the accelerator's path forced, check_grads' estimates equal
    the eager operations' to a few ulps, its errors to 1% (a truncation error is the
    difference of two near-equal estimates: an ulp of either moves it by ~1e-3
    relative), and the verdicts, the wrong entries and the unresolved ones are the same;
    so do numeric_jacobian's."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from gradexplorer.backends.jax import device
    from gradexplorer.fd import evaluation

    plain = device.Kit.__init__
    monkeypatch.setattr(device.Kit, "__init__", lambda self, d, a=None: plain(self, d, True))
    monkeypatch.setattr(evaluation, "FEW_OUTPUTS", 0)  # reduced on the device

    @jax.custom_vjp
    def g(v):
        return jnp.sin(3 * v) * jnp.cumsum(v)

    g.defvjp(
        lambda v: (g(v), v),
        lambda v, ct: (
            jax.vjp(lambda u: jnp.sin(3 * u) * jnp.cumsum(u), v)[1](ct)[0].at[4].multiply(1 + 1e-6),
        ),
    )
    with jax.enable_x64(True):
        x = jnp.linspace(-1.0, 1.5, 9)
        runs, jacobians = [], []
        for fused in (True, False):
            if not fused:
                monkeypatch.delattr(device.xp, "fuse")
            runs.append(gx.check_grads(g, x, rng=0))
            jacobians.append(gx.numeric_jacobian(g, x))
    ra, rb = runs
    ja, jb = jacobians
    np.testing.assert_allclose(ja.jacobian, jb.jacobian, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ja.error, jb.error, rtol=1e-2)
    assert ja.unresolved == jb.unresolved and ja.copies > 0
    np.testing.assert_allclose(ra.numeric, rb.numeric, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ra.fd_error, rb.fd_error, rtol=1e-2)
    assert [e.label for e in ra.unresolved] == [e.label for e in rb.unresolved]
    assert ra.outcome is rb.outcome is gx.Outcome.FAILED
    named = {(e.out_index, e.in_index) for e in ra.mismatches}
    assert named == {(e.out_index, e.in_index) for e in rb.mismatches}
    assert {i for _, i in named} == {(4,)}  # column 4: the rule scales every cotangent's


@pytest.mark.parametrize("accelerator", [False, True])
def test_a_native_float32_jax_check_asks_jax_for_no_float64(monkeypatch, accelerator):
    """precision="native" runs without jax's 64-bit mode: the finite differences
    work in the widest float jax has then (float32), with no "float64 is not
    available" warnings, and still find the wrong entry."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from gradexplorer.backends.jax import device
    from gradexplorer.fd import evaluation

    if accelerator:
        plain = device.Kit.__init__
        monkeypatch.setattr(device.Kit, "__init__", lambda self, d, a=None: plain(self, d, True))
        monkeypatch.setattr(evaluation, "FEW_OUTPUTS", 0)

    def h(v):
        return jnp.sin(3 * v) * jnp.cumsum(v)

    @jax.custom_vjp
    def g(v):
        return h(v)

    g.defvjp(lambda v: (h(v), v), lambda v, ct: (jax.vjp(h, v)[1](ct)[0].at[4].multiply(1.01),))
    x = jnp.linspace(-1.0, 1.5, 9, dtype=jnp.float32)
    with jax.enable_x64(False), warnings.catch_warnings():
        warnings.simplefilter("error")
        right = gx.check_grads(h, x, precision="native", rng=0)
        wrong = gx.check_grads(g, x, precision="native", rng=0)
        fd = gx.numeric_jacobian(h, x, precision="native")
    assert right.passed and not wrong.passed
    assert {e.in_index for e in wrong.mismatches} == {(4,)}
    assert fd.copies > 0 and np.all(np.isfinite(fd.error))
