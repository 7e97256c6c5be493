"""Verdicts on torch and jax functions that compute in float16 / bfloat16 inside a
float64 check: their frameworks' own derivatives (right), a custom backward in the
same format off by a known amount in one entry (wrong), and a mixed-precision loss
(a narrow model plus a float64 regulariser); and an adversarial review's cases
(outputs in the narrow format too, a float64 input beside a narrow one, a rule that
ignores its cotangent, saturated outputs).

    python bench/mixed_precision.py [--seeds 4]

Each row counts passed / failed / inconclusive over seeds and both modes. A right
derivative FAILED is a false alarm; a wrong one that is not FAILED at exactly its
entry is a miss (bfloat16's 8 bits resolve little: inconclusive is no fault there).
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

FORMATS = ("float16", "bfloat16", "float32")
MODES = ("full", "fast")


def _torch_cases(torch, dt, W):
    return {
        "sin(3x)": lambda x: torch.sin(3 * x.to(dt)).double(),
        "sin(3x), float32 after the read": lambda x: torch.sin(3 * x.to(dt).float()).double(),
        "tanh layer": lambda x: torch.tanh(x.to(dt) @ W.to(dt)).double(),
        "softmax": lambda x: torch.softmax(x.to(dt), -1).double(),
        "loss + 1e-3·|x|² (float64)": lambda x: (
            torch.tanh(x.to(dt) @ W.to(dt)).double().sum() + 1e-3 * (x**2).sum()
        ),
    }


def _count(outcomes: list) -> str:
    return " / ".join(str(sum(o == k for o in outcomes)) for k in ("P", "F", "I"))


def torch_rows(seeds: int) -> list:
    import torch

    from gradexplorer.gallery.mixed_torch import sin3

    rows = []
    W = torch.from_numpy(np.random.default_rng(0).standard_normal((12, 6)))
    for name in FORMATS:
        for case, f in _torch_cases(torch, getattr(torch, name), W).items():
            out = []
            for s in range(seeds):
                gen = torch.Generator().manual_seed(s)
                x = torch.randn(3, 12, dtype=torch.float64, generator=gen)
                out += [gx.check_grads(f, x, mode=m, rng=s).outcome.value[0].upper() for m in MODES]
            rows.append(("torch", name, case, "right", _count(out)))
    for name in ("float16", "bfloat16"):
        for off in (0.03, 0.1):
            f = sin3(off, getattr(torch, name))
            out = []
            for s in range(seeds):
                x = torch.randn(
                    4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(s)
                )
                for m in MODES:
                    out.append(_exactly(gx.check_grads(f, x, mode=m, rng=s), {(0, (1, 0))}))
            rows.append(("torch", name, "custom backward", f"off by {off:g}", _count(out)))
    return rows


def jax_rows(seeds: int) -> list:
    import jax
    import jax.numpy as jnp

    rows = []
    W = np.random.default_rng(0).standard_normal((16, 8))
    with jax.enable_x64(True):
        for name in FORMATS:
            dt = getattr(jnp, name)
            cases = {
                "sin(3x)": lambda x, dt=dt: jnp.sin(3 * x.astype(dt)).astype(jnp.float64),
                "tanh layer": lambda x, dt=dt: jnp.tanh(x.astype(dt) @ jnp.asarray(W, dt)).astype(
                    jnp.float64
                ),
                "sin(3x), float32 after the read": lambda x, dt=dt: jnp.sin(
                    3 * x.astype(dt).astype(jnp.float32)
                ).astype(jnp.float64),
            }
            for case, f in cases.items():
                out = []
                for s in range(seeds):
                    x = jnp.asarray(np.random.default_rng(s).standard_normal((2, 16)))
                    out += [
                        gx.check_grads(f, x, mode=m, rng=s).outcome.value[0].upper() for m in MODES
                    ]
                rows.append(("jax", name, case, "right", _count(out)))
    return rows


def _exactly(r, where) -> str:
    """F where the check FAILED at exactly the entries ``where`` (``(wrt, in_index)``)."""
    found = {(e.wrt, e.in_index) for e in r.mismatches}
    if r.outcome is gx.Outcome.FAILED and found == where:
        return "F"
    return "I" if r.outcome is gx.Outcome.INCONCLUSIVE else "P"


def _outcome(r) -> str:
    return r.outcome.value[0].upper()


def _ignoring_cotangent():
    """softsign read in float16 whose VJP returns its float16 derivative whatever g."""

    @gx.primitive
    def softsign(x):
        h = x.astype(np.float16)
        return (h / (1 + np.abs(h))).astype(np.float64)

    def vjp(ans, x):
        d = (1 / (1 + np.abs(x.astype(np.float16))) ** 2).astype(np.float16)
        return lambda g: d.astype(np.float64)

    gx.defvjp(softsign, vjp)
    return softsign


def review_rows(seeds: int) -> list:
    """An adversarial review's cases: outputs in the narrow format too, a float64 input
    beside a narrow one, a rule ignoring its cotangent, saturated outputs."""
    import torch
    import torch.nn.functional as F

    from gradexplorer.gallery.mixed_torch import gelu_layer, scaled_layer

    def tensor(s, *shape):
        return torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(s))

    def counted(check) -> str:  # check(seed, mode) -> "P", "F" or "I"
        return _count([check(s, m) for s in range(seeds) for m in MODES])

    def verdicts(f, args, where=None):
        """Each check's outcome (``where``: FAILED counts only at exactly those entries)."""

        def check(s, m):
            r = gx.check_grads(f, *args(s), mode=m, rng=s)
            return _outcome(r) if where is None else _exactly(r, where)

        return counted(check)

    rows = []
    for name in ("float16", "bfloat16"):
        dt = getattr(torch, name)
        zeros = torch.zeros(20, dtype=dt)
        rows += [
            ("torch", name, "tanh(10x), saturating", "right", verdicts(
                lambda x, dt=dt: torch.tanh(10 * x.to(dt)).double(), lambda s: (tensor(s, 12),))),
            ("torch", name, "mse_loss, a scalar in the format", "right", verdicts(
                lambda x, dt=dt, z=zeros: F.mse_loss(x.to(dt), z).double(),
                lambda s: (tensor(s, 20),))),
            ("torch", name, "gelu layer, output in the format", "right", verdicts(
                gelu_layer(0.0, dt), lambda s: (tensor(s, 4, 8),))),
            ("torch", name, "gelu layer, output in the format", "off by 1", verdicts(
                gelu_layer(1.0, dt), lambda s: (tensor(s, 4, 8),), {(0, (0, 5))})),
        ]  # fmt: skip
    two = lambda s: (tensor(s, 3, 6), tensor(50 + s, 4))  # noqa: E731
    rows += [
        ("torch", "float16", "tanh(x.half() @ W)·w, w float64", "right",
         verdicts(scaled_layer(0.0), two)),
        ("torch", "float16", "tanh(x.half() @ W)·w, w float64", "w[2] off by 1e-3",
         verdicts(scaled_layer(1e-3), two, {(1, (2,))})),
        ("autograd", "float16", "softsign, rule ignores g", "wrong", verdicts(
            _ignoring_cotangent(), lambda s: (np.random.default_rng(s).standard_normal(10),))),
    ]  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = torch_rows(args.seeds) + jax_rows(args.seeds) + review_rows(args.seeds)
    print(
        table(rows, ("framework", "format", "function", "derivative", "passed / failed / inconcl."))
    )


if __name__ == "__main__":
    main()
