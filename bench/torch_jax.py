"""gradexplorer against torch.autograd.gradcheck and jax.test_util.check_grads, one run.

    python bench/torch_jax.py

1. The same functions (right ones, and custom rules that are subtly wrong) through
   each checker: verdict, time (each checker's second run: warm), and what each
   names on a wrong one.
2. A torch model with 10^6 parameters whose custom backward is wrong in one entry:
   flagged and located by the fast check, with its evaluation counts.

Needs torch and jax (``pip install -e ".[torch,jax]"``); each part is skipped
when its library is missing.
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
from _util import table  # noqa: E402

import gradexplorer as gx  # noqa: E402

RIGHT_GALLERY = ["sin", "tanh_affine", "softmax", "logsumexp", "logdet", "rosenbrock", "polar"]


def _gx(f, args):
    gx.check_grads(f, *args, rng=0)  # warm: jax compiles each operation on first use
    t0 = time.perf_counter()
    r = gx.check_grads(f, *args, rng=0)
    dt = time.perf_counter() - t0
    if r.passed:
        return "pass", dt, ""
    named = r.mismatches[0].label + (
        f" (+{len(r.mismatches) - 1})" if len(r.mismatches) > 1 else ""
    )
    try:
        loc = gx.locate(f, *args, wrt=0)
        if loc.culprit is not None:
            named += f"; culprit {loc.culprit.name} at {Path(loc.culprit.source).name}"
    except Exception as exc:  # locate is an extra: report, do not stop the bench
        named += f"; locate: {type(exc).__name__}"
    return "FAIL", dt, named


def _run(fn):
    try:
        fn()  # warm, as for gradexplorer
    except Exception:
        pass
    t0 = time.perf_counter()
    try:
        fn()
        return "pass", time.perf_counter() - t0, ""
    except Exception as exc:
        first = str(exc).strip().splitlines()[0][:60] if str(exc).strip() else type(exc).__name__
        return "FAIL", time.perf_counter() - t0, first


def torch_rows():
    import torch
    import torch_cases as tc

    from gradexplorer.gallery.for_torch import examples

    ex = examples()
    cases = [(name, True, ex[name].f, ex[name].args()) for name in RIGHT_GALLERY]
    cases.append(
        (
            "custom Function softplus",
            True,
            lambda x: tc.Softplus.apply(x),
            (torch.linspace(-2, 2, 6).double(),),
        )
    )
    x4 = torch.randn(4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    W = torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    cases += [
        ("backward 1e-4 too big", False, tc.uses_wrong_backward, (x4, W)),
        (
            "softmax, one row 1e-3 off",
            False,
            lambda x: tc.ScaleRow.apply(torch.softmax(x, 0)),
            (x4,),
        ),
        ("jvp wrong, backward right", False, tc.uses_wrong_jvp, (x4,)),
        ("custom op, backward wrong", False, tc.uses_custom_op, (x4.abs() + 0.2,)),
    ]
    tc.OneWrongEntry.index = 77
    x200 = torch.linspace(-3, 3, 200, dtype=torch.float64)
    cases.append(
        ("n=200, one entry 1% off", False, lambda x: tc.OneWrongEntry.apply(x) ** 2, (x200,))
    )
    rows = []
    for name, right, f, args in cases:
        targs = tuple(a.detach().clone().requires_grad_(True) for a in args)
        g = _gx(f, args)
        slow = _run(lambda f=f, a=targs: torch.autograd.gradcheck(f, a, fast_mode=False))
        fast = _run(lambda f=f, a=targs: torch.autograd.gradcheck(f, a, fast_mode=True))
        fwd = _run(
            lambda f=f, a=targs: torch.autograd.gradcheck(
                f, a, check_forward_ad=True, check_backward_ad=False, fast_mode=True
            )
        )
        expect = "right" if right else "WRONG"
        rows.append(
            (
                f"torch: {name}",
                expect,
                *_cells(g),
                *_cells(slow)[:2],
                *_cells(fast)[:2],
                fwd[0],
                _named(slow[2]),
            )
        )
    return rows


def _cells(res):
    verdict, dt, named = res
    return verdict, f"{dt * 1e3:.0f} ms", named


def _named(msg):
    return msg if msg else ""


def jax_rows():
    import jax
    import jax.numpy as jnp
    import jax_cases as jc
    from jax.test_util import check_grads

    from gradexplorer.gallery.for_jax import examples

    ex = examples()
    with jax.enable_x64(True):
        cases = [
            (n, True, ex[n].f, tuple(jnp.asarray(a, jnp.float64) for a in ex[n].args()))
            for n in RIGHT_GALLERY
        ]
        x = jnp.array([0.3, -1.2, 0.8, 0.1])
        Wj = jnp.array(np.random.default_rng(0).standard_normal((3, 4)))
        cases += [
            ("custom_vjp softplus", True, jc.softplus, (x,)),
            ("custom_vjp 1e-4 too big", False, jc.uses_wrong_vjp, (x, Wj)),
            ("custom_jvp wrong", False, jc.uses_wrong_jvp, (x,)),
            ("softmax, one row 1e-3 off", False, lambda v: jc.scale_row(jax.nn.softmax(v)), (x,)),
        ]
        rows = []
        for name, right, f, args in cases:
            g = _gx(f, args)
            rev = _run(lambda f=f, a=args: check_grads(f, a, order=1, modes=("rev",)))
            rows.append(
                (
                    f"jax: {name}",
                    "right" if right else "WRONG",
                    *_cells(g),
                    *_cells(rev)[:2],
                    "",
                    "",
                    "",
                    _named(rev[2]),
                )
            )
    return rows


def big_model_row():
    import torch

    class Linear(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, W):
            ctx.save_for_backward(x, W)
            return x @ W.T

        @staticmethod
        def backward(ctx, g):
            x, W = ctx.saved_tensors
            gW = g.T @ x
            gW[123, 456] *= 1.01  # one wrong entry of 10^6
            return g @ W, gW

    gen = torch.Generator().manual_seed(0)
    W = torch.randn(1000, 1000, generator=gen) / 30
    x = torch.randn(8, 1000, generator=gen)
    loss = lambda W, x: torch.tanh(Linear.apply(x, W)).square().sum()  # noqa: E731
    t0 = time.perf_counter()
    r = gx.check_grads(loss, W, x, wrt=0, rng=0)
    dt = time.perf_counter() - t0
    located = ", ".join(e.label for e in r.mismatches) or "nothing"
    return (
        "torch, 10^6 parameters, 1 wrong entry",
        f"{dt:.1f} s",
        r.mode,
        r.nfev,
        r.ngrad,
        located,
    )


def big_jax_row():
    """10^5 inputs to a jax custom_vjp whose backward is wrong in one entry."""
    import jax
    import jax.numpy as jnp

    bad = 61_803

    @jax.custom_vjp
    def sine(x):
        return jnp.sin(x)

    def backward(x, g):
        return ((g * jnp.cos(x)).at[bad].multiply(1.001),)

    sine.defvjp(lambda x: (jnp.sin(x), x), backward)
    with jax.enable_x64(True):
        x = jnp.asarray(np.random.default_rng(0).standard_normal(100_000))
        t0 = time.perf_counter()
        r = gx.check_grads(lambda v: sine(v) * 2.0, x, mode="fast", rng=0)
        dt = time.perf_counter() - t0
    located = ", ".join(e.label for e in r.mismatches) or "nothing"
    return ("jax, 10^5 inputs, 1 wrong entry", f"{dt:.1f} s", r.mode, r.nfev, r.ngrad, located)


def main():
    rows = []
    try:
        rows += torch_rows()
    except ImportError:
        print("torch not installed: torch rows skipped")
    try:
        rows += jax_rows()
    except ImportError:
        print("jax not installed: jax rows skipped")
    headers = (
        "function", "truth", "gx", "gx time", "gx names", "gradcheck / check_grads",
        "time", "gradcheck fast", "time", "gradcheck fwd", "what the other names",
    )  # fmt: skip
    print(table(rows, headers))
    big = []
    for row in (big_model_row, big_jax_row):
        try:
            big.append(row())
        except ImportError:
            pass
    print()
    print(table(big, ("case", "time", "mode", "f evals", "derivative passes", "located")))


if __name__ == "__main__":
    main()
