"""Fast-mode localization cost, and full-mode check time, one run.

    python bench/check.py

1. A 100,000-input elementwise function whose VJP is wrong in one entry:
   check_grads(mode="fast") must flag it and locate that entry; we count f
   evaluations and derivative (VJP/JVP) passes. Target: <= ~200 in all.
2. Full-mode check of a dense n=2000 function, tanh(W @ v), written for autograd
   and for torch; torch's gradcheck (slow mode: 2 f evaluations per column, no
   error estimate) checks the torch one in the same run. Target: gx's full check
   of the torch function faster than gradcheck's slow mode.
"""

import sys
import time
from pathlib import Path

import autograd.numpy as anp
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _util import table  # noqa: E402

import gradexplorer as gx  # noqa: E402

N_FAST = 100_000
BAD = 61_803


def buggy_sin():
    def vjp(ans, x):
        def v(g):
            out = g * np.cos(x)
            out[BAD] *= 1.001  # a 0.1% error in one of 100,000 entries
            return out

        return v

    p = gx.primitive(lambda x: np.sin(x))
    gx.defvjp(p, vjp)
    gx.defjvp(p, lambda g, ans, x: g * np.cos(x))
    return p


def timed_check(name, f, x, **options):
    """A table row: a correct f's check, its time, its cost and whether it passed."""
    t0 = time.perf_counter()
    r = gx.check_grads(f, x, **options)
    verdict = "passed" if r.passed else "FALSE ALARM"
    return (name, f"{time.perf_counter() - t0:.2f} s", r.nfev, r.ngrad, r.nfev + r.ngrad, verdict)


def main():
    rows = []
    x = np.random.default_rng(0).standard_normal(N_FAST)
    f = buggy_sin()
    t0 = time.perf_counter()
    r = gx.check_grads(lambda v: f(v) * 2.0, x, mode="fast", rng=0)
    dt = time.perf_counter() - t0
    located = [(e.row, e.col) for e in r.mismatches]
    assert located == [(BAD, BAD)], r
    rows.append(
        (
            f"fast, n={N_FAST:,}, 1 wrong entry",
            f"{dt:.2f} s",
            r.nfev,
            r.ngrad,
            r.nfev + r.ngrad,
            f"located {r.mismatches[0].label}",
        )
    )
    ok = gx.check_grads(lambda v: anp.sin(v) * 2.0, x, mode="fast", rng=0)
    rows.append(
        (
            f"fast, n={N_FAST:,}, correct",
            "",
            ok.nfev,
            ok.ngrad,
            ok.nfev + ok.ngrad,
            "passed" if ok.passed else "FALSE ALARM",
        )
    )

    n = 2000
    rng = np.random.default_rng(1)
    W = rng.standard_normal((n, n)) / np.sqrt(n)
    g = lambda v: anp.tanh(W @ v)  # noqa: E731
    xv = rng.standard_normal(n)
    rows.append(timed_check(f"full, dense n={n}", g, xv, mode="full"))
    rows.append(timed_check(f"fast, dense n={n}", g, xv, mode="fast", rng=0))
    try:
        import torch

        Wt = torch.tensor(W)
        xt = torch.tensor(xv, requires_grad=True)
        name = f"full, dense n={n}, torch (the function gradcheck checks)"
        rows.append(timed_check(name, lambda v: torch.tanh(Wt @ v), xt, mode="full"))
        t0 = time.perf_counter()
        torch.autograd.gradcheck(lambda v: torch.tanh(Wt @ v), (xt,))
        rows.append(
            (f"torch gradcheck slow, n={n}", f"{time.perf_counter() - t0:.2f} s", "", "", "", "")
        )
        t0 = time.perf_counter()
        torch.autograd.gradcheck(lambda v: torch.tanh(Wt @ v), (xt,), fast_mode=True)
        rows.append(
            (
                f"torch gradcheck fast, n={n}",
                f"{time.perf_counter() - t0:.2f} s",
                "",
                "",
                "",
                "pass/fail only",
            )
        )
    except ImportError:
        rows.append(("torch gradcheck", "not installed", "", "", "", ""))
    print(table(rows, ("case", "time", "f evals", "derivative passes", "total", "result")))


if __name__ == "__main__":
    main()
