"""Is the backward pass deterministic? Atomic adds on a GPU (scatter, index_add,
some convolutions) sum in a different order every run, so the same cotangent
gives gradients that differ in their last bits. That is not a wrong
derivative, but it is worth knowing, and the entries must be judged with the
spread allowed, or a right gradient could fail by its own jitter.
"""

from __future__ import annotations

import numpy as onp

from .rules import flat

__all__ = ["backward_spread", "RUNS"]

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
