"""How well the analytic side itself is known, before it is judged.

Non-determinism: atomic adds on a GPU (scatter, index_add, some
convolutions) sum in a different order every run, so the same cotangent gives
gradients that differ in their last bits. That is not a wrong derivative, but
it is worth knowing, and entries are judged with the spread allowed.

Conditioning: an entry that is a small difference of large terms (the
gradient of a variance of data offset by 1e4 is ``2(x_i - mean)/(n-1)``) is
computed with round-off relative to the terms, not to the result. Its size
shows in how much the analytic Jacobian moves when x moves by its own
rounding (a few ulps): a right implementation's error is of that order.
"""

from __future__ import annotations

import numpy as onp

from .rules import flat

__all__ = ["backward_spread", "rounding_spread", "RUNS", "ROUNDING_SAFETY"]

#: The rounding spread comes from a few nearby points: this covers the others.
ROUNDING_SAFETY = 4.0
#: Nearby points (each one more Jacobian) for the rounding spread.
ROUNDING_SAMPLES = 2

#: Backward passes compared (on one trace, and on a fresh trace).
RUNS = 3


def backward_spread(p, tr, vjp, gen) -> tuple[onp.ndarray | None, float | None, str | None]:
    """``(per-column spread, relative spread, note)``; ``(None, None, None)`` when
    repeated backward passes agree to the last bit.

    The spread of column j is the largest difference of ``(uᵀJ)_j`` between
    runs with one random cotangent u: an allowance for every entry of that
    column (it bounds each entry's jitter up to the cotangent's spread).
    """
    u = gen.standard_normal(p.m)
    first = vjp(u)
    runs = [vjp(u) for _ in range(RUNS - 1)]
    fresh = p.backend.vjp(p.F, p.vs)
    dtype = onp.asarray(p.backend.to_numpy(fresh.value)).dtype
    runs.append(flat(fresh.backward(p.backend.to_array(onp.asarray(u, dtype))), p.backend))
    with onp.errstate(invalid="ignore"):
        diffs = onp.max([onp.abs(g - first) for g in runs], axis=0)
    diffs = onp.where(onp.isfinite(diffs), diffs, 0.0)
    if not onp.any(diffs):
        return None, None, None
    size = float(onp.max(onp.abs(first[onp.isfinite(first)]), initial=0.0)) or 1.0
    rel = float(diffs.max()) / size
    eps = float(max(s.eps for s in p.cols.sides))
    note = (
        f"the backward pass is not deterministic: {RUNS + 1} runs with the same cotangent "
        f"differ by up to {diffs.max():.2g} ({rel:.2g} relative, ~{rel / eps:.0f} ulp), as "
        "atomic adds in a GPU kernel make it; entries are judged with that spread allowed."
    )
    return diffs, rel, note


def rounding_spread(
    p, A: onp.ndarray, gen, rows: onp.ndarray, samples: int = ROUNDING_SAMPLES
) -> onp.ndarray:
    """For the given rows, per entry, how much the analytic Jacobian moves when
    x moves by a few ulps of its own precision (times :data:`ROUNDING_SAFETY`):
    the round-off a right implementation may have there (zero in other rows).

    Only rows that would otherwise fail are asked (two backward passes each),
    so a passing check costs nothing more. Every coordinate moves by 4 ulps up
    or down, in ``samples`` random patterns; the largest change counts.
    """
    eps = p.coord_eps()
    x0 = p.x0
    spread = onp.zeros_like(A, dtype=float)
    if not len(rows):
        return spread
    for _ in range(samples):
        # every coordinate moves by 4 ulps, up or down: a move smaller than half
        # an ulp would round away and leave its entries looking exact
        signs = gen.integers(0, 2, x0.size) * 2.0 - 1.0
        moved = x0 * (1.0 + 4.0 * eps * signs)
        tr = p.backend.vjp(p.F, p.split(moved))
        dtype = onp.asarray(p.backend.to_numpy(tr.value)).dtype
        basis = onp.zeros(p.m, dtype)
        for i in rows:
            basis[i] = 1
            row = flat(tr.backward(p.backend.to_array(basis.copy())), p.backend)
            basis[i] = 0
            with onp.errstate(invalid="ignore"):
                moved_by = onp.abs(row - A[i])
            spread[i] = onp.fmax(spread[i], onp.where(onp.isfinite(moved_by), moved_by, 0.0))
    return ROUNDING_SAFETY * spread
