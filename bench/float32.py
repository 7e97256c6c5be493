"""Verdicts on float32 (float16, bfloat16) inside float64 functions: false alarms and misses.

    python bench/float32.py [--checks 10]

Each function takes float64 inputs, computes in float32 (``x.astype(np.float32)``)
and returns float64, as much numpy code does; its rule is the float64 derivative
of the ideal function. Two tables:

* right rules at 100 inputs (elementwise functions whose outputs cross zero or
  saturate, a softmax), full and fast mode: every FAILED is a false alarm;
* rules off by a relative 1e-3 .. 1e-5 in one entry at 12 inputs, full and fast
  mode: every PASSED is a miss (1e-5 is within a few float32 steps of some
  entries, where a miss is no fault);
* functions that read x through float16 or bfloat16 (``x.astype(float16)``,
  then float32 arithmetic, as mixed-precision code does) at 30 inputs, their
  right rules and rules off by 1e-2 and 1e-3 in one entry, full and fast mode.
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


def _softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


def _softmax_vjp(x, g):
    s = _softmax(x)
    return g @ (np.diag(s) - np.outer(s, s))


#: name -> (f's float32 body, the ideal rule's VJP in float64)
FUNCTIONS = {
    "sin(3x)": (lambda z: np.sin(3 * z), lambda x, g: g * 3 * np.cos(3 * x)),
    "cos(2x)": (lambda z: np.cos(2 * z), lambda x, g: -g * 2 * np.sin(2 * x)),
    "x^3 - x": (lambda z: z**3 - z, lambda x, g: g * (3 * x**2 - 1)),
    "tanh(2x)": (lambda z: np.tanh(2 * z), lambda x, g: g * 2 / np.cosh(2 * x) ** 2),
    "expm1(x)": (np.expm1, lambda x, g: g * np.exp(x)),
    "softmax": (_softmax, _softmax_vjp),
}


def in_float32(body, rule, off=0.0, at=2, read=np.float32):
    """f computing ``body`` in float32 on x read in ``read``, with ``rule`` (entry
    ``at`` off by ``off``)."""
    f = gx.primitive(
        lambda x: np.asarray(body(x.astype(read).astype(np.float32)), np.float32).astype(float)
    )

    def vjp(ans, x):
        def pulled(g):
            r = np.array(rule(x, g), dtype=float)
            r[at] *= 1 + off
            return r

        return pulled

    gx.defvjp(f, vjp)
    return f


def right_rules(checks: int) -> list:
    rows = []
    for name, (body, rule) in FUNCTIONS.items():
        f = in_float32(body, rule)
        for mode in ("full", "fast"):
            counts = dict.fromkeys(gx.Outcome, 0)
            for s in range(checks):
                x = np.random.default_rng(700 + s).standard_normal(100) * 1.5
                counts[gx.check_grads(f, x, mode=mode, rng=s).outcome] += 1
            rows.append((name, mode, *(counts[o] for o in gx.Outcome)))
    return rows


def wrong_rules(checks: int) -> list:
    rows = []
    for off in (1e-3, 1e-4, 1e-5):
        for mode in ("full", "fast"):
            counts = dict.fromkeys(gx.Outcome, 0)
            for body, rule in FUNCTIONS.values():
                f = in_float32(body, rule, off)
                for s in range(checks):
                    x = np.random.default_rng(500 + s).standard_normal(12) * 1.5
                    counts[gx.check_grads(f, x, mode=mode, rng=s).outcome] += 1
            rows.append((f"{off:g}", mode, *(counts[o] for o in gx.Outcome)))
    return rows


def _read_formats() -> dict:
    formats = {"float16": np.float16}
    try:  # bfloat16: numpy has none; jax brings ml_dtypes
        import ml_dtypes

        formats["bfloat16"] = ml_dtypes.bfloat16
    except ImportError:
        pass
    return formats


def narrow_reads(checks: int) -> list:
    """Per format, mode and rule (right, off by 1e-2, off by 1e-3): outcome counts
    over every function and ``checks`` points."""
    rows = []
    for name, read in _read_formats().items():
        for off in (0.0, 1e-2, 1e-3):
            for mode in ("full", "fast"):
                counts = dict.fromkeys(gx.Outcome, 0)
                for body, rule in FUNCTIONS.values():
                    f = in_float32(body, rule, off, read=read)
                    for s in range(checks):
                        x = np.random.default_rng(700 + s).standard_normal(30) * 1.5
                        counts[gx.check_grads(f, x, mode=mode, rng=s).outcome] += 1
                rows.append((name, f"{off:g}" if off else "right", mode, *counts.values()))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=10)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    outcomes = [o.value for o in gx.Outcome]
    print(table(right_rules(args.checks), ("right rule, 100 inputs", "mode", *outcomes)))
    print()
    print(table(wrong_rules(args.checks), ("one entry off by", "mode", *outcomes)))
    print()
    reads = narrow_reads(max(1, args.checks // 2))
    print(table(reads, ("x read in", "rule", "mode", *outcomes)))


if __name__ == "__main__":
    main()
