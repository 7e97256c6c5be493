"""Verdicts on oscillations of every frequency: sin(c x), its right derivative.

    python bench/oscillations.py [--cases 1000]

For c drawn log-uniformly from each band and x from [-2, 2]^3, counts how often
``check_grads`` passes, fails (a false alarm: the derivative is right) or is
inconclusive, with the f evaluations it took. Fast oscillations (c >= 1e10 for
|x| ~ 1) cannot be resolved by finite differences at all; there, inconclusive
is the right answer and every failure is a false alarm.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import autograd.numpy as anp
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _util import table  # noqa: E402

import gradexplorer as gx  # noqa: E402

BANDS = ((2, 9), (10, 14))


def band(lo: float, hi: float, cases: int, seed: int) -> tuple:
    gen = np.random.default_rng(seed)
    counts = dict.fromkeys(gx.Outcome, 0)
    nfev, started = 0, time.perf_counter()
    for i in range(cases):
        c, x = 10 ** gen.uniform(lo, hi), gen.uniform(-2, 2, 3)
        r = gx.check_grads(lambda v, c=c: anp.sin(c * v), x, rng=i)
        counts[r.outcome] += 1
        nfev += r.nfev
    spent = time.perf_counter() - started
    return (
        f"1e{lo} .. 1e{hi}",
        counts[gx.Outcome.PASSED],
        counts[gx.Outcome.FAILED],
        counts[gx.Outcome.INCONCLUSIVE],
        f"{nfev / cases:.0f}",
        f"{spent:.1f} s",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = [band(lo, hi, args.cases, seed) for seed, (lo, hi) in enumerate(BANDS, start=5)]
    head = ("c", "passed", "failed (false alarms)", "inconclusive", "f evals / check", "time")
    print(table(rows, head))


if __name__ == "__main__":
    main()
