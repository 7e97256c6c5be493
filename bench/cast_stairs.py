"""Verdicts on torch functions that round an intermediate to a narrow format and go on
in float64 (``exp(tanh(x @ W).half().double())``, a float64 loss of a half model's
output), right and wrong, attention whose scores are cast to float16, saturated float16 terms
beside the identity, and casts that round a value to a constant while AD passes a
derivative through.

    python bench/cast_stairs.py [--seeds 4]

Each cell counts passed / failed / inconclusive over seeds, per mode. A right
derivative FAILED is a false alarm; a wrong one not FAILED is a miss. The last
column but one counts "not linear in its cotangent / tangent" entries over all checks of
the row (a cast's backward rounds its seed, which is no nonlinear rule); the last, the
f evaluations of all its checks.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _util import table  # noqa: E402

import gradexplorer as gx  # noqa: E402

MODES = ("full", "fast")


def cases(torch) -> list:
    from gradexplorer.gallery.mixed_torch import planted_exp

    gen = np.random.default_rng(0)
    W = torch.tensor(gen.standard_normal((4, 3)))
    t = torch.tensor(gen.standard_normal((2, 3)))

    def h(x, dt=torch.float16):
        return torch.tanh(x @ W).to(dt).double()

    out = [
        ("sum(h16²)", "right", lambda x: (h(x) ** 2).sum()),
        ("mse(h16, t)", "right", lambda x: ((h(x) - t) ** 2).mean()),
        ("sum(exp(h16))", "right", lambda x: torch.exp(h(x)).sum()),
        ("exp(h16)", "right", lambda x: torch.exp(h(x))),
        ("h16 @ t.T", "right", lambda x: h(x) @ t.T),
        ("mse(h_bf16, t)", "right", lambda x: ((h(x, torch.bfloat16) - t) ** 2).mean()),
        ("mse(h32, t)", "right", lambda x: ((h(x, torch.float32) - t) ** 2).mean()),
    ]
    for scale in (1.03, 1.1, 2.0):
        bad = planted_exp(scale)
        out += [
            ("exp(h16)", f"one entry x{scale}", lambda x, bad=bad: bad(h(x))),
            ("mse(exp(h16), t)", f"one entry x{scale}",
             lambda x, bad=bad: ((bad(h(x)) - t) ** 2).mean()),
        ]  # fmt: skip
    out += _attention_rows(torch, gen) + _beside_identity_rows(torch, gen)
    out += [
        ("(1e-9·x).half()", "AD nonzero, f flat", lambda x: (1e-9 * x).half().double()),
        ("(1e-50·x).float()", "AD nonzero, f flat", lambda x: (1e-50 * x).float().double()),
        ("(1 + 1e-3·x).bfloat16()", "AD nonzero, f flat",
         lambda x: (1 + 1e-3 * x).bfloat16().double()),
    ]  # fmt: skip
    return out


def _scaled(torch, factor: float):
    """The identity, its rule scaled by ``factor``."""
    from gradexplorer.gallery.mixed_torch import with_rule

    return with_rule(lambda z: z * 1.0, lambda z, g: g * factor)


def _attention_rows(torch, gen) -> list:
    """Row sums of softmax(f16(q @ k.T) / 2) @ v over x's 2 tokens, right and with the
    scores' rule 1% off: each score rounds on a float16 grid of its own."""
    Wq, Wk, Wv = (torch.tensor(gen.standard_normal((4, 4)) / 2) for _ in range(3))

    def attention(factor):
        off = _scaled(torch, factor)

        def f(x):
            A = torch.softmax(off((x @ Wq) @ (x @ Wk).T).half().double() / 2.0, dim=1)
            return (A @ (x @ Wv)).sum(dim=1)

        return f

    name = "softmax(f16(q·kᵀ))·v"
    return [(name, "right", attention(1.0)), (name, "scores x1.01", attention(1.01))]


def _beside_identity_rows(torch, gen) -> list:
    """x + exp(f16(tanh(x @ 3W))): saturated tanh, whose float16 stairs are wider than
    the reach, beside the identity (its rule right, and 1% off)."""
    W = torch.tensor(3 * gen.standard_normal((4, 4)))

    def beside(factor):
        off = _scaled(torch, factor)
        return lambda x: off(x) + torch.exp(torch.tanh(x @ W).half().double())

    name = "x + exp(f16(tanh(x·3W)))"
    return [(name, "right", beside(1.0)), (name, "identity x1.01", beside(1.01))]


def rows(seeds: int) -> list:
    import torch

    out = []
    for name, derivative, f in cases(torch):
        cells, linear, nfev = [], 0, 0
        for mode in MODES:
            counts = {"P": 0, "F": 0, "I": 0}
            for s in range(seeds):
                x = torch.tensor(np.random.default_rng(s).standard_normal((2, 4)))
                r = gx.check_grads(f, x, mode=mode, rng=s)
                counts[r.outcome.name[0]] += 1
                nfev += r.nfev
                linear += sum(e.kind is gx.Comparison.LINEARITY for e in r.mismatches)
            cells.append(" / ".join(str(counts[k]) for k in "PFI"))
        out.append((name, derivative, *cells, linear, nfev))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    headers = (
        "function",
        "derivative",
        "full P / F / I",
        "fast P / F / I",
        "'not linear'",
        "f evals",
    )
    print(table(rows(args.seeds), headers))


if __name__ == "__main__":
    main()
