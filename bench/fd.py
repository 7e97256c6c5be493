"""Finite-difference Jacobians: accuracy, error-estimate coverage and speed, one run.

    python bench/fd.py

Function tanh(Wx + b) * x, n = 300, float64. Compared with numdifftools.Jacobian
and scipy.differentiate.jacobian; "speed-up" is their time / ours.
"""

import sys
from pathlib import Path

import autograd.numpy as anp
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _util import best_time, table  # noqa: E402

import gradexplorer as gx  # noqa: E402

N = 300
rng = np.random.default_rng(0)
W = rng.standard_normal((N, N)) / np.sqrt(N)
b = rng.standard_normal(N)
x0 = rng.standard_normal(N)


def f(x):
    return np.tanh(W @ x + b) * x


def f_batched(X):  # (k, N) -> (k, N)
    return np.tanh(X @ W.T + b) * X


J_true = gx.jacobian(lambda x: anp.tanh(W @ x + b) * x)(x0)
scale = np.max(np.abs(J_true))


def accuracy(J):
    err = np.abs(J - J_true)
    return float(np.max(err) / scale)


def main():
    rows = []
    r = gx.numeric_jacobian(f, x0)
    t_ours = best_time(lambda: gx.numeric_jacobian(f, x0), repeat=3)
    true_err = np.abs(r.jacobian - J_true)
    coverage = float(np.mean(r.error >= true_err))
    rows.append(
        ("gradexplorer richardson", f"{t_ours * 1e3:.1f} ms", f"{accuracy(r.jacobian):.1e}", "1.0x")
    )
    rv = gx.numeric_jacobian(f_batched, x0, vectorized=True)
    t_vec = best_time(lambda: gx.numeric_jacobian(f_batched, x0, vectorized=True), repeat=3)
    rows.append(
        (
            "gradexplorer richardson, vectorized",
            f"{t_vec * 1e3:.1f} ms",
            f"{accuracy(rv.jacobian):.1e}",
            f"{t_ours / t_vec:.1f}x",
        )
    )
    # the anchor: f alone at as many points as that run sampled, in one call (the
    # stencil's own cost; the target is vectorized Richardson <= 1.5x of it)
    X = x0[None, :] + 1e-3 * rng.standard_normal((rv.nfev, N))
    t_f = best_time(lambda: f_batched(X), repeat=5)
    rows.append(
        (
            f"f alone at the stencil's {rv.nfev} points (anchor)",
            f"{t_f * 1e3:.1f} ms",
            "",
            f"vectorized / anchor = {t_vec / t_f:.2f}",
        )
    )
    rc = gx.numeric_jacobian(f, x0, method="central")
    t_c = best_time(lambda: gx.numeric_jacobian(f, x0, method="central"), repeat=3)
    rows.append(
        (
            "gradexplorer central",
            f"{t_c * 1e3:.1f} ms",
            f"{accuracy(rc.jacobian):.1e}",
            f"{t_ours / t_c:.1f}x",
        )
    )
    rows.extend(framework_rows(t_ours))
    extra = {}
    try:
        import numdifftools as nd

        jac = nd.Jacobian(f)
        Jn = jac(x0)
        t_nd = best_time(lambda: jac(x0), repeat=1, min_time=0)
        extra["numdifftools"] = t_nd
        rows.append(
            (
                "numdifftools.Jacobian",
                f"{t_nd * 1e3:.1f} ms",
                f"{accuracy(Jn):.1e}",
                f"{t_ours / t_nd:.3f}x",
            )
        )
    except ImportError:
        pass
    try:
        from scipy.differentiate import jacobian as sjac

        fs = lambda X: (
            np.tanh(np.einsum("ij,j...->i...", W, X) + b.reshape((N,) + (1,) * (X.ndim - 1))) * X
        )  # noqa: E731
        Js = sjac(fs, x0).df
        t_sp = best_time(lambda: sjac(fs, x0), repeat=1, min_time=0)
        extra["scipy (defaults)"] = t_sp
        rows.append(
            (
                "scipy.differentiate.jacobian",
                f"{t_sp * 1e3:.1f} ms",
                f"{accuracy(Js):.1e}",
                f"{t_ours / t_sp:.3f}x",
            )
        )
        # The fair comparison: scipy's cheapest setting that is at least as accurate as ours.
        ours = accuracy(r.jacobian)
        best = None
        for order in (2, 4, 6, 8):
            for maxiter in (1, 2, 3):
                kw = dict(order=order, maxiter=maxiter)
                if accuracy(sjac(fs, x0, **kw).df) <= ours:
                    t = best_time(lambda kw=kw: sjac(fs, x0, **kw), repeat=1, min_time=0)
                    if best is None or t < best[0]:
                        best = (t, kw)
        if best:
            t, kw = best
            extra[f"scipy at equal accuracy {kw}"] = t
            rows.append(
                (
                    f"scipy, cheapest as accurate {kw}",
                    f"{t * 1e3:.1f} ms",
                    "<= ours",
                    f"{t_ours / t:.3f}x",
                )
            )
    except ImportError:
        pass
    print(table(rows, ("method", "time", "max |err| / max |J|", "time vs ours (ours/theirs)")))
    print()
    print(f"error estimate covers the true error on {coverage:.2%} of entries")
    print(f"median error estimate / max|J| = {np.median(r.error) / scale:.1e}")
    for name, t in extra.items():
        print(f"speed-up vs {name}: {t / t_ours:.1f}x (default), {t / t_vec:.1f}x (vectorized)")


def framework_rows(t_ours: float) -> list:
    """The same Jacobian of f written in torch and in jax: the stencils are built,
    evaluated (mapped over batches) and reduced with the framework's own arrays."""
    rows = []
    for name, make in (("torch", _torch_f), ("jax", _jax_f)):
        try:
            g, x = make()
        except ImportError:
            continue
        r = gx.numeric_jacobian(g, x)
        t = best_time(lambda g=g, x=x: gx.numeric_jacobian(g, x), repeat=3)
        label = f"gradexplorer richardson, {name} arrays ({r.device}, {r.copies} copies)"
        rows.append(
            (label, f"{t * 1e3:.1f} ms", f"{accuracy(r.jacobian):.1e}", f"{t_ours / t:.1f}x")
        )
    return rows


def _torch_f():
    import torch

    Wt, bt = torch.from_numpy(W), torch.from_numpy(b)
    return (lambda x: torch.tanh(Wt @ x + bt) * x), torch.from_numpy(x0)


def _jax_f():
    import jax
    import jax.numpy as jnp

    with jax.enable_x64(True):
        Wj, bj, xj = jnp.asarray(W), jnp.asarray(b), jnp.asarray(x0)
    return (lambda x: jnp.tanh(Wj @ x + bj) * x), xj


if __name__ == "__main__":
    main()
