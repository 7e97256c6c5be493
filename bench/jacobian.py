"""gx.jacobian against autograd.jacobian (and jax/torch when installed), one run.

    python bench/jacobian.py

Prints the time per Jacobian and the ratio other / gradexplorer (> 1 means
gradexplorer is faster); torch's ``autograd.functional.jacobian`` and jax's jitted
jacfwd/jacrev join the table when installed. Targets: tall >= 50x; square and wide >= 1/1.1.

A second table (when torch / jax are installed) times ``gx.jacobian`` on the torch and
the jax version of the same function against the framework called directly (the
anchor): ``torch.func.jacrev`` / ``jacfwd`` and ``jax.jit(jax.jacrev / jacfwd)``, the
mode gx's "auto" picks (forward for the tall case), measured in alternation. gx / anchor
is the price of gx's conventions (binding ``wrt``, structures, layout, the finite check
of f's value); target <= 1.5x. gx - anchor is that price in time: a fixed cost per call
(Python), which decides the ratio where the framework's own call is tens of microseconds.
A last pair of rows takes gx.grad over a dict of parameters (a model's loss).
The last column calibrates that price on this machine: what ~4 us of plain Python
(a loop) costs beside jax's call. Where it costs far more than 4 us (XLA's CPU
threads compete with Python for a few cores), any fixed cost is inflated as much.
"""

import sys
from pathlib import Path

import autograd
import autograd.numpy as anp
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _util import best_time, table  # noqa: E402

import gradexplorer as gx  # noqa: E402

rng = np.random.default_rng(0)
CASES = {
    "square 300->300": (rng.standard_normal((300, 300)) / 17, 300),
    "tall 10->2000": (rng.standard_normal((2000, 10)) / 3, 10),
    "wide 2000->10": (rng.standard_normal((10, 2000)) / 45, 2000),
}


def optional_rows(name, W, x):
    rows = []
    try:
        import jax
        import jax.numpy as jnp

        Wj = jnp.asarray(W)
        fj = jax.jit(
            jax.jacfwd(lambda v: jnp.tanh(Wj @ v) * jnp.sum(v))
            if W.shape[0] > W.shape[1]
            else jax.jacrev(lambda v: jnp.tanh(Wj @ v) * jnp.sum(v))
        )
        fj(x).block_until_ready()
        rows.append(("jax (jit)", best_time(lambda: fj(x).block_until_ready())))
    except ImportError:
        pass
    try:
        import torch

        Wt, xt = torch.tensor(W), torch.tensor(x)
        ft = lambda v: torch.tanh(Wt @ v) * v.sum()  # noqa: E731
        rows.append(("torch", best_time(lambda: torch.autograd.functional.jacobian(ft, xt))))
    except ImportError:
        pass
    return rows


def interleaved(*calls, rounds=9):
    """Best times of calls measured in alternation (a shared machine's load falls
    on all alike)."""
    times = [[] for _ in calls]
    for _ in range(rounds):
        for t, call in zip(times, calls):
            t.append(best_time(call, repeat=1))
    return tuple(min(t) for t in times)


def python_work():
    """About 4 us of plain Python (a loop of 250 additions)."""
    total = 0
    for i in range(250):
        total += i
    return total


def framework_rows(name, W, x):
    """gx.jacobian on the torch / jax version of f beside the framework itself."""
    rows = []
    tall = W.shape[0] > W.shape[1]
    try:
        import torch

        Wt, xt = torch.tensor(W), torch.tensor(x)
        ft = lambda v: torch.tanh(Wt @ v) * v.sum()  # noqa: E731
        direct = (torch.func.jacfwd if tall else torch.func.jacrev)(ft)
        J = gx.jacobian(ft)(xt)
        assert J.dtype == xt.dtype and J.device == xt.device
        assert torch.allclose(J, direct(xt), rtol=1e-12, atol=1e-12)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # on 2 cores, torch's pool and XLA's would fight
        try:
            t_direct, t_gx = interleaved(lambda: direct(xt), lambda: gx.jacobian(ft)(xt))
        finally:
            torch.set_num_threads(threads)
        anchor = f"torch.func.{'jacfwd' if tall else 'jacrev'}"
        rows.append((name, "torch", anchor, t_direct, t_gx, None))
    except ImportError:
        pass
    try:
        import jax
        import jax.numpy as jnp

        Wj, xj = jnp.asarray(W), jnp.asarray(x)
        fj = lambda v: jnp.tanh(Wj @ v) * jnp.sum(v)  # noqa: E731
        direct = jax.jit((jax.jacfwd if tall else jax.jacrev)(fj))
        J = gx.jacobian(fj)(xj)
        assert J.dtype == xj.dtype and np.allclose(J, direct(xj), rtol=1e-5, atol=1e-6)
        t_direct, t_gx, t_taxed = interleaved(
            lambda: direct(xj).block_until_ready(),
            lambda: gx.jacobian(fj)(xj).block_until_ready(),
            lambda: (python_work(), direct(xj).block_until_ready()),
        )
        anchor = f"jax.jit(jax.{'jacfwd' if tall else 'jacrev'})"
        rows.append((name, "jax", anchor, t_direct, t_gx, t_taxed))
    except ImportError:
        pass
    return rows


def parameter_rows():
    """gx.grad of a two-layer model's loss over a dict of parameters (a batch held
    constant beside it), against the framework's own gradient."""
    rows = []
    rng = np.random.default_rng(2)
    shapes = {"W1": (64, 32), "b1": (64,), "W2": (10, 64), "b2": (10,)}
    values = {k: rng.standard_normal(s) / 8 for k, s in shapes.items()}
    X = rng.standard_normal((32, 128))
    name = "grad, dict of 4 params"
    try:
        import torch

        p = {k: torch.tensor(v) for k, v in values.items()}
        Xt = torch.tensor(X)

        def tloss(p, X):
            h = torch.tanh(p["W1"] @ X + p["b1"][:, None])
            return ((p["W2"] @ h + p["b2"][:, None]) ** 2).sum()

        direct = torch.func.grad(tloss)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            t_direct, t_gx = interleaved(lambda: direct(p, Xt), lambda: gx.grad(tloss)(p, Xt))
        finally:
            torch.set_num_threads(threads)
        rows.append((name, "torch", "torch.func.grad", t_direct, t_gx, None))
    except ImportError:
        pass
    try:
        import jax
        import jax.numpy as jnp

        p = {k: jnp.asarray(v) for k, v in values.items()}
        Xj = jnp.asarray(X)

        def jloss(p, X):
            h = jnp.tanh(p["W1"] @ X + p["b1"][:, None])
            return jnp.sum((p["W2"] @ h + p["b2"][:, None]) ** 2)

        direct = jax.jit(jax.grad(jloss))
        t_direct, t_gx, t_taxed = interleaved(
            lambda: jax.block_until_ready(direct(p, Xj)),
            lambda: jax.block_until_ready(gx.grad(jloss)(p, Xj)),
            lambda: (python_work(), jax.block_until_ready(direct(p, Xj))),
        )
        rows.append((name, "jax", "jax.jit(jax.grad)", t_direct, t_gx, t_taxed))
    except ImportError:
        pass
    return rows


def main():
    rows = []
    for name, (W, n) in CASES.items():
        f = lambda v, W=W: anp.tanh(W @ v) * anp.sum(v)  # noqa: E731
        x = rng.standard_normal(n)
        J_ag = autograd.jacobian(f)(x)
        J_gx = gx.jacobian(f)(x)
        assert np.allclose(J_ag, J_gx, rtol=1e-12, atol=1e-12)
        t_ag = best_time(lambda f=f, x=x: autograd.jacobian(f)(x), repeat=3)
        t_gx = best_time(lambda f=f, x=x: gx.jacobian(f)(x), repeat=3)
        rows.append(
            (
                name,
                f"{t_gx * 1e3:.2f} ms",
                "autograd.jacobian",
                f"{t_ag * 1e3:.2f} ms",
                f"{t_ag / t_gx:.1f}x",
            )
        )
        for other, t in optional_rows(name, W, x):
            rows.append(("", "", other, f"{t * 1e3:.2f} ms", f"{t / t_gx:.2f}x"))
    print(table(rows, ("case", "gradexplorer", "other", "other's time", "other / gx")))
    native = []
    for name, (W, n) in CASES.items():
        x = np.random.default_rng(1).standard_normal(n)
        rows_here = framework_rows(name, W, x)
        if name == list(CASES)[-1]:
            rows_here += parameter_rows()
        for case, system, anchor, t_direct, t_gx, t_taxed in rows_here:
            taxed = "" if t_taxed is None else f"{(t_taxed - t_direct) * 1e6:+.0f} us"
            native.append(
                (case, system, anchor, f"{t_direct * 1e3:.3f} ms", f"{t_gx * 1e3:.3f} ms",
                 f"{t_gx / t_direct:.2f}x", f"{(t_gx - t_direct) * 1e6:+.0f} us", taxed)
            )  # fmt: skip
    if native:
        print()
        print(
            table(native, ("case", "f written with", "anchor (direct)", "anchor's time",
                           "gx.jacobian", "gx / anchor", "gx - anchor",
                           "4 us of Python + anchor"))
        )  # fmt: skip


if __name__ == "__main__":
    main()
