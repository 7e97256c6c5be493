"""Entries measured across stairs whose slope is known only loosely: the report says
how loosely, and one known no better than its own size gets no verdict.

bfloat16's stairs within reach are few, and the slope fitted across them is known to
5-40% (LayerNorm -> float16 -> GELU -> bfloat16 beside a residual); a rule off by
less there passes. The full check's flats stage calls :func:`unknown_across` last;
its report takes :func:`loose_notes`.
"""

from __future__ import annotations

import numpy as onp

from ..fd.reasons import Unresolvable
from .judging import FD_SAFETY, Judgement
from .problem import Problem
from .verdicts import Verdict

__all__ = ["VAGUE_SHARE", "unknown_across", "loose_notes"]

#: An entry whose allowed difference is wider than this share of its value cannot
#: tell a rule off by that much from a right one.
VAGUE_SHARE = 0.01


def unknown_across(jd: Judgement, A) -> None:
    """Entries measured across stairs (or judged flat) within a bar as wide as their
    value or wider cannot tell the rule from 0, or from its opposite: no verdict
    (unresolvable, a staircase), not a pass (bfloat16 attention: a few per check,
    known to 1-9x their value). Unless the bar is below :data:`VAGUE_SHARE` of their output's
    largest derivative: a scalar loss's small entries, known to 1e-3 beside
    entries of 1, leave its gradient well checked."""
    with onp.errstate(invalid="ignore"):
        largest = onp.nanmax(onp.abs(onp.real(onp.where(onp.isfinite(A), A, 0.0))), axis=1)
    # (and entries judged flat within a bar as wide: f "unchanged" over an ulp of x,
    # whose output's float32 grid is coarser than x²'s change there)
    bars = {ij: (across.est, across.err) for ij, across in jd.across.items() if across.measured}
    bars |= {ij: (0.0, float(jd.E[ij])) for ij in jd.flat}
    for ij, (est, err) in bars.items():
        value = max(abs(float(onp.real(A[ij]))), abs(est))
        bar = FD_SAFETY * err
        if jd.verdicts[ij] == Verdict.RIGHT.code and value > 0:
            if bar >= value and bar >= VAGUE_SHARE * float(largest[ij[0]]):
                jd.E[ij], jd.V[ij] = onp.inf, onp.nan
                jd.verdicts[ij] = Verdict.UNRESOLVABLE.code
                jd.reasons[ij] = Unresolvable.STAIRCASE
                jd.flat.discard(ij)


def loose_notes(p: Problem, jd: Judgement, A: onp.ndarray) -> list[str]:
    """Entries that passed across stairs within a bar wider than :data:`VAGUE_SHARE`
    of their value: a rule off by less there passes unseen, which the report says
    (a bfloat16 staircase within reach holds few stairs, and the slope across them
    is known to 5-40%)."""
    loose = {}
    for ij, across in jd.across.items():
        if across.measured and jd.verdicts[ij] == Verdict.RIGHT.code:
            value = abs(float(onp.real(A[ij])))
            bar = FD_SAFETY * float(jd.E[ij])
            if bar > VAGUE_SHARE * value:
                loose[ij] = bar / max(value, onp.finfo(float).tiny)
    if not loose:
        return []
    (i, j), count = max(loose.items(), key=lambda kv: kv[1])[0], len(loose)
    shares = onp.array(list(loose.values()))
    sharp = len(set(loose) & jd.exact_ok)
    checked = (
        f" The rule less its part through the roundings was checked sharply against f's "
        f"slope within one stair at {sharp} of them: there only that part is known so loosely."
        if sharp
        else ""
    )
    return [
        f"{count} entr{'y' if count == 1 else 'ies'} measured across stairs passed within "
        f"a bar wider than {VAGUE_SHARE:.0%} of their value (median {onp.median(shares):.1%}; "
        f"{p.rows.label(i)} / {p.cols.label(j)}: {loose[(i, j)]:.0%}): the few stairs "
        "within reach pin the slope across them down only that far, and a rule off by "
        f"less there would pass unseen.{checked} The rule's own arithmetic is checked far "
        "more sharply with the casts taken out (in float64), and the rounding's effect "
        "with gx.check_precision."
    ]
