"""gradexplorer on a GPU, beside torch's gradcheck and jax's check_grads, in one run.

A GPU machine runs this in one go (no pytest, no network; under ~5 minutes)::

    python bench/gpu.py                     # CUDA: every probe, table to bench/gpu.md
    python bench/gpu.py --device cpu --small   # the same probes on the CPU, small sizes

Each probe plants a known bug (or none) in code that runs on the device — a Triton
kernel, a CUDA ``autograd.Function``, a jax ``custom_vjp`` — and records what each
checker says and how long it took. A probe that crashes is a row that says so: the
table is the evidence, whatever it shows.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import signal
import sys
import time
import traceback
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import gradexplorer as gx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS: list[dict] = []
SETTINGS = {"probe_timeout": 90, "device": "cpu", "out": HERE}


class ProbeTimeout(Exception):
    """A probe ran past --probe-timeout: its row says so and the run goes on."""


def _alarm(signum, frame):
    raise ProbeTimeout(f"ran past {SETTINGS['probe_timeout']} s")


def probe(name: str, expected: str):
    """Run the decorated probe now; its dict (or its crash) becomes a row.

    The table is rewritten after every row, so a run cut short still leaves
    every probe it finished.
    """

    def run(fn: Callable[[], dict]) -> None:
        started = time.perf_counter()
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(SETTINGS["probe_timeout"])
        try:
            row = fn()
        except Exception as exc:  # a crash is a finding, not an end
            row = {"gx": f"CRASH {type(exc).__name__}: {str(exc)[:160]}"}
            traceback.print_exc()
        finally:
            signal.alarm(0)
        row = {"probe": name, "truth": expected, **row}
        row.setdefault("wall_s", round(time.perf_counter() - started, 2))
        ROWS.append(row)
        print(json.dumps(row, default=str), flush=True)
        write(SETTINGS["device"], quiet=True)

    return run


def timed(fn: Callable):
    started = _sync() or time.perf_counter()
    out = fn()
    _sync()
    return out, time.perf_counter() - started


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def entries(report) -> str:
    """The wrong entries a report names, as (row, col) pairs."""
    found = sorted({(e.row, e.col) for e in report.mismatches})
    more = f" (+{report.wrong_count - len(found)})" if report.wrong_count > len(found) else ""
    return f"{report.outcome.value} at {found[:4]}{more}"


def gradcheck(f, x, **kw) -> str:
    try:
        x = x.detach().requires_grad_(True)
        ok = torch.autograd.gradcheck(f, (x,), raise_exception=False, **kw)
        return "passed" if ok else "failed"
    except Exception as exc:
        return f"raised {type(exc).__name__}"


# ---------------------------------------------------------------- planted bugs


def elementwise_function(wrong_at: int | None, factor: float):
    """softplus as an autograd.Function whose backward is ``factor`` off at one entry."""

    class Softplus(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.nn.functional.softplus(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            grad = g * torch.sigmoid(x)
            if wrong_at is not None:
                grad = grad.clone()
                grad.view(-1)[wrong_at] *= factor
            return grad

    return Softplus.apply


def triton_softplus(wrong_at: int | None, factor: float):
    """softplus forward and backward as Triton kernels (the backward one entry off)."""
    import triton
    import triton.language as tl

    @triton.jit
    def fwd(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + i, mask=i < n)
        y = tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(x)))
        tl.store(y_ptr + i, y, mask=i < n)

    @triton.jit
    def bwd(x_ptr, g_ptr, out_ptr, n, wrong, factor, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + i, mask=i < n)
        g = tl.load(g_ptr + i, mask=i < n)
        d = g / (1.0 + tl.exp(-x))
        d = tl.where(i == wrong, d * factor, d)
        tl.store(out_ptr + i, d, mask=i < n)

    class TritonSoftplus(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x = x.contiguous()
            y = torch.empty_like(x)
            fwd[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
            ctx.save_for_backward(x)
            return y

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            out = torch.empty_like(x)
            k = -1 if wrong_at is None else wrong_at
            bwd[(triton.cdiv(x.numel(), 256),)](
                x, g.contiguous(), out, x.numel(), k, factor, BLOCK=256
            )
            return out

    return TritonSoftplus.apply


# ---------------------------------------------------------------- the probes


def plain_attention(q, k, v):
    scores = (q @ k.transpose(-2, -1)) / q.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1) @ v


def best_of(fn: Callable, rounds: int = 7) -> float:
    """The best time of one call (synchronised), after one warm-up call."""
    fn()
    return min(timed(fn)[1] for _ in range(rounds))


def operator_rows(device: str, n: int = 300) -> None:
    """gx.jacobian / gx.hessian on a torch layer beside torch.func, on the device."""
    gen = torch.Generator(device="cpu").manual_seed(1)
    for dtype in (torch.float32, torch.float64):
        W = (torch.randn(n, n, generator=gen, dtype=dtype) / n**0.5).to(device)
        x = torch.randn(n, generator=gen, dtype=dtype).to(device)

        def layer(v, W=W):
            return torch.tanh(W @ v) * v.sum()

        def loss(v, W=W):
            return torch.tanh(W @ v).square().sum()

        cases = (
            ("jacobian", gx.jacobian(layer), torch.func.jacrev(layer), "torch.func.jacrev"),
            ("hessian", gx.hessian(loss), torch.func.hessian(loss), "torch.func.hessian"),
        )
        for op, ours, theirs, anchor in cases:

            @probe(f"gx.{op}, torch {n}x{n} {dtype} layer on {device}", f"= {anchor}, <=1.5x")
            def _(ours=ours, theirs=theirs, anchor=anchor, x=x):
                J, want = ours(x), theirs(x)
                assert J.device == x.device and J.dtype == x.dtype, (J.device, J.dtype)
                err = (J - want).abs().max().item() / want.abs().max().item()
                t_ours, t_theirs = best_of(lambda: ours(x)), best_of(lambda: theirs(x))
                return {
                    "gx": f"same to {err:.0e} of max, on {J.device}",
                    "gx_s": f"{t_ours * 1e3:.2f} ms",
                    "note": f"{anchor} {t_theirs * 1e3:.2f} ms ({t_ours / t_theirs:.2f}x)",
                }


def check_row(f, x) -> dict:
    """gx's full check of f at x beside torch's gradcheck, as a row of the table."""
    report, t = timed(lambda: gx.check_grads(f, x))
    return {
        "gx": entries(report),
        "gx_s": round(t, 2),
        "device": report.device,
        "copies": report.copies,
        "gradcheck": gradcheck(f, x),
    }


def cast_rows(device: str, gen) -> None:
    """Mixed precision inside float64 code, on the device: a half model's output in a
    float64 loss, and a float32 branch beside a float64 residual (right rules: every
    check must pass; both are staircases in x, flat at x)."""
    W = torch.randn(8, 4, generator=gen, dtype=torch.float64).to(device)
    t = torch.randn(6, 4, generator=gen, dtype=torch.float64).to(device)
    x = torch.randn(6, 8, generator=gen, dtype=torch.float64).to(device)

    def loss(x):
        return ((torch.tanh(x @ W).half().double() - t) ** 2).mean()

    def residual(x):
        return x + torch.tanh(x @ W @ W.T / 8).float().double()

    cases = {
        "mse(tanh(x @ W).half().double(), t)": loss,
        "x + tanh(x @ W @ W.T / 8).float().double()": residual,
    }
    for name, f in cases.items():

        @probe(f"{name} on {device}, right", "PASSED")
        def _(f=f):
            return check_row(f, x)


def run_probes(device: str, small: bool) -> None:
    n_kernel, n_big = 300, (2_000 if small else 1_000_000)
    gen = torch.Generator(device="cpu").manual_seed(0)
    x300 = torch.randn(n_kernel, generator=gen, dtype=torch.float64).to(device)

    def kernel_rows(make, label):
        for wrong in (None, 137):
            f = make(wrong, 1.001)  # 0.1% off at one entry of 300

            @probe(
                f"{label} {'wrong (1 entry of 300, 0.1%)' if wrong else 'right'}",
                "FAILED at [(137, 137)]" if wrong else "PASSED",
            )
            def _(f=f):
                return check_row(f, x300)

    if device.startswith("cuda"):
        try:
            import triton  # noqa: F401

            kernel_rows(triton_softplus, "Triton kernel")
        except ImportError:
            ROWS.append({"probe": "Triton kernel", "gx": "skipped: no triton"})
    kernel_rows(elementwise_function, f"{device} autograd.Function")
    cast_rows(device, gen)
    operator_rows(device)

    @probe(f"locate MyFunction.apply on {device}", "culprit: Softplus")
    def _():
        loc = gx.locate(elementwise_function(137, 1.01), x300)
        return {"gx": str(loc).splitlines()[0][:100]}

    for dtype in (torch.bfloat16, torch.float16):

        @probe(f"SDPA {dtype} check_precision", "PASSED")
        def _(dtype=dtype):
            q, k, v = (torch.randn(1, 2, 16, 32, generator=gen).to(device, dtype) for _ in range(3))
            sdpa = torch.nn.functional.scaled_dot_product_attention
            report, t = timed(lambda: gx.check_precision(sdpa, q, k, v))
            # FlashAttention's oracle: plain attention in the same precision
            oracle = gx.check_precision(sdpa, q, k, v, reference=plain_attention)
            verdicts = f"{report.outcome.value}; against the oracle: {oracle.outcome.value}"
            return {"gx": verdicts, "gx_s": round(t, 2)}

    @probe("float32 layer W @ X (64x64 @ 64x16), TF32 on, check_precision", "FAILED, TF32 named")
    def _():
        if not device.startswith("cuda"):
            return {"gx": "skipped: TF32 is CUDA's"}
        # a matrix product (TF32 runs GEMMs on tensor cores; a matrix-vector product
        # is a GEMV, which it leaves alone)
        W = (torch.randn(64, 64, generator=gen) / 8).to(device)
        X = torch.randn(64, 16, generator=gen).to(device)

        def layer(X, W):
            return torch.tanh(W @ X)

        torch.set_float32_matmul_precision("high")  # TF32 for float32 matmuls
        try:
            report, t = timed(lambda: gx.check_precision(layer, X, W, wrt=0))
        finally:
            torch.set_float32_matmul_precision("highest")
        off = gx.check_precision(layer, X, W, wrt=0)
        return {
            "gx": f"{report.outcome.value}, decided by {report.decided_by}; "
            f"TF32 off: {off.outcome.value}, decided by {off.decided_by}",
            "gx_s": round(t, 2),
        }

    @probe("naive fp16 softmax check_precision", "FAILED")
    def _():
        x = (6 * torch.randn(64, generator=gen)).to(device, torch.float16)
        naive = lambda x: torch.exp(x) / torch.exp(x).sum()  # noqa: E731
        report, t = timed(lambda: gx.check_precision(naive, x))
        return {"gx": report.outcome.value, "gx_s": round(t, 2)}

    @probe("atomics backward (index_add, float32)", "spread reported, not FAILED")
    def _():
        idx = torch.randint(0, 8, (4096,), generator=gen).to(device)
        w = torch.randn(8, 16, generator=gen).to(device)

        def f(w):
            return torch.nn.functional.embedding(idx, w).sum(0) * 1.5

        report, t = timed(lambda: gx.check_grads(f, w, precision="native"))
        return {
            "gx": report.outcome.value,
            "gx_s": round(t, 2),
            "spread": report.backward_spread,
        }

    n_dense = 300 if small else 2000

    @probe(f"full check, dense tanh(W x), n = {n_dense}", "PASSED")
    def _():
        # a batched matrix product may round each row by its place in the batch; the
        # evaluator then evaluates point by point (report.copies shows which)
        W = (torch.randn(n_dense, n_dense, generator=gen, dtype=torch.float64) / n_dense**0.5).to(
            device
        )
        x = torch.randn(n_dense, generator=gen, dtype=torch.float64).to(device)
        report, t = timed(lambda: gx.check_grads(lambda v: torch.tanh(W @ v), x, mode="full"))
        verdict, t_gc = timed(lambda: gradcheck(lambda v: torch.tanh(W @ v), x))
        return {
            "gx": entries(report),
            "gx_s": round(t, 2),
            "copies": report.copies,
            "gradcheck": verdict,
            "gradcheck_s": round(t_gc, 2),
        }

    big = torch.randn(n_big, generator=gen, dtype=torch.float64).to(device)
    wrong_big = elementwise_function(n_big // 3, 1.01)

    @probe(f"fast check, {n_big:.0e} inputs, 1 wrong entry (1%)", f"FAILED at {n_big // 3}")
    def _():
        report, t_first = timed(lambda: gx.check_grads(wrong_big, big, mode="fast"))
        report, t = timed(lambda: gx.check_grads(wrong_big, big, mode="fast"))
        return {
            "gx": entries(report),
            "gx_s": round(t, 2),
            "passes": report.ngrad,
            "device": report.device,
            "copies": report.copies,
            "note": f"first call {t_first:.2f} s",
        }

    @probe(f"gradcheck fast_mode, {n_big:.0e} inputs", "failed")
    def _():
        verdict, t = timed(lambda: gradcheck(wrong_big, big, fast_mode=True))
        return {"gradcheck": verdict, "gradcheck_s": round(t, 2)}

    n_slow = 2_000

    @probe(f"gradcheck slow mode, {n_slow} inputs (10^6: a dense 10^12 Jacobian)", "failed")
    def _():
        x = big[:n_slow].clone()
        f = elementwise_function(n_slow // 3, 1.01)
        verdict, t = timed(lambda: gradcheck(f, x))
        return {"gradcheck": verdict, "gradcheck_s": round(t, 2)}

    jax_probes(n_big, device)


def jax_operator_row(ours: Callable, theirs: Callable, u) -> dict:
    """gx's operator beside jax's own (jitted) on the same point: agreement, times."""
    J, want = ours(u), theirs(u)
    err = float(abs(J - want).max() / abs(want).max())
    t_ours = best_of(lambda: ours(u).block_until_ready())
    t_theirs = best_of(lambda: theirs(u).block_until_ready())
    return {
        "gx": f"same to {err:.0e} of max, on {list(J.devices())[0]}",
        "gx_s": f"{t_ours * 1e3:.2f} ms",
        "note": f"jax.jit(jax.jacrev) {t_theirs * 1e3:.2f} ms ({t_ours / t_theirs:.2f}x)",
    }


def jax_probes(n_big: int, device: str) -> None:
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from jax.test_util import check_grads as jax_check_grads
    except ImportError:
        ROWS.append({"probe": "jax", "gx": "skipped: no jax"})
        return
    platform_ = "gpu" if device.startswith("cuda") else "cpu"
    where = jax.devices(platform_)[0]
    wrong_at = n_big // 3

    @jax.custom_vjp
    def softplus(x):
        return jnp.logaddexp(x, 0.0)

    def fwd(x):
        return softplus(x), x

    def bwd(x, g):
        d = g * jax.nn.sigmoid(x)
        return (d.at[wrong_at].multiply(1.01),)

    softplus.defvjp(fwd, bwd)
    x = jax.device_put(jnp.asarray(np.random.default_rng(0).standard_normal(n_big)), where)

    @probe(f"jax custom_vjp on {where}, {n_big:.0e} inputs, fast", f"FAILED at {wrong_at}")
    def _():
        report, t_first = timed(lambda: gx.check_grads(softplus, x, mode="fast"))
        report, t = timed(lambda: gx.check_grads(softplus, x, mode="fast"))
        return {
            "gx": entries(report),
            "gx_s": round(t, 2),
            "device": report.device,
            "copies": report.copies,
            "note": f"first call {t_first:.2f} s",
        }

    n = 300
    rng = np.random.default_rng(1)
    W = jax.device_put(jnp.asarray(rng.standard_normal((n, n)) / n**0.5), where)
    v = jax.device_put(jnp.asarray(rng.standard_normal(n)), where)

    n2 = 2000
    W2 = jax.device_put(jnp.asarray(rng.standard_normal((n2, n2)) / n2**0.5), where)
    v2 = jax.device_put(jnp.asarray(rng.standard_normal(n2)), where)
    for size, M, u in ((n, W, v), (n2, W2, v2)):

        @probe(f"gx.jacobian, jax {size}x{size} float64 layer on {where}", "= jax.jit(jax.jacrev)")
        def _(M=M, u=u):
            def layer(w):
                return jnp.tanh(M @ w) * jnp.sum(w)

            return jax_operator_row(gx.jacobian(layer), jax.jit(jax.jacrev(layer)), u)

    @probe(f"jax full check, tanh(W x) n = 300 on {where}, first and second call", "PASSED")
    def _():
        def dense(u, M):
            return jnp.tanh(M @ u)

        report, t_first = timed(lambda: gx.check_grads(dense, v, W, wrt=0, mode="full"))
        report, t = timed(lambda: gx.check_grads(dense, v, W, wrt=0, mode="full"))
        return {
            "gx": entries(report),
            "gx_s": round(t, 2),
            "copies": report.copies,
            "note": f"first call {t_first:.2f} s",
        }

    @probe("jax.test_util.check_grads, the same custom_vjp", "raises (finds it)")
    def _():
        started = time.perf_counter()
        try:
            jax_check_grads(softplus, (x,), order=1, modes=("rev",))
            verdict = "passed (missed)"
        except AssertionError:
            verdict = "raised (found)"
        return {"jax_check_grads": verdict, "jax_s": round(time.perf_counter() - started, 2)}

    @probe(f"jax float32 W @ X (64x64 @ 64x16) on {where}, default precision", "TF32 named if used")
    def _():
        W32 = jnp.asarray(rng.standard_normal((64, 64)) / 8, jnp.float32)
        X32 = jnp.asarray(rng.standard_normal((64, 16)), jnp.float32)
        W32, X32 = jax.device_put(W32, where), jax.device_put(X32, where)

        def layer32(X, M):
            return jnp.tanh(M @ X)

        report, t = timed(lambda: gx.check_precision(layer32, X32, W32, wrt=0))
        with jax.default_matmul_precision("highest"):
            full = gx.check_precision(layer32, X32, W32, wrt=0)
        return {
            "gx": f"{report.outcome.value}, decided by {report.decided_by}; "
            f"highest: {full.outcome.value}",
            "gx_s": round(t, 2),
        }


def versions() -> str:
    """The libraries the run used: a GPU table means little without them."""
    found = [f"torch {torch.__version__}", f"numpy {np.__version__}"]
    for name in ("triton", "jax", "autograd"):
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    return ", ".join(found)


def write(device: str, quiet: bool = False) -> None:
    name = torch.cuda.get_device_name(0) if device.startswith("cuda") else platform.processor()
    header = (
        f"# gradexplorer on {device} ({name or 'CPU'})\n\n"
        f"{versions()}; {time.strftime('%Y-%m-%d')}; `python bench/gpu.py`\n\n"
    )
    keys = [
        "probe", "truth", "gx", "gx_s", "device", "copies", "passes", "gradcheck",
        "gradcheck_s", "jax_check_grads", "jax_s", "spread", "note",
    ]  # fmt: skip
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for row in ROWS:
        cells = (str(row.get(k, "")).replace("|", "/").replace("\n", " ") for k in keys)
        lines.append("| " + " | ".join(cells) + " |")
    suffix = "" if device.startswith("cuda") else "_cpu"
    with open(os.path.join(SETTINGS["out"], f"gpu{suffix}.md"), "w") as fh:
        fh.write(header + "\n".join(lines) + "\n")
    with open(os.path.join(SETTINGS["out"], f"gpu{suffix}.json"), "w") as fh:
        json.dump(
            {"device": device, "name": name, "versions": versions(), "rows": ROWS},
            fh,
            indent=1,
            default=str,
        )
    if not quiet:
        print(header + "\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--small", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--out", default=HERE, help="folder for gpu.md / gpu.json")
    parser.add_argument("--probe-timeout", type=int, default=90, help="seconds one probe may run")
    opts = parser.parse_args()
    SETTINGS.update(device=opts.device, out=opts.out, probe_timeout=opts.probe_timeout)
    torch.backends.cuda.matmul.allow_tf32 = False  # TF32 would decide float32 verdicts
    run_probes(opts.device, opts.small)
    write(opts.device)


if __name__ == "__main__":
    main()
