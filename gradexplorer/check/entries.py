"""Entries of a report, made from the matrices the stages judged."""

from __future__ import annotations

import numpy as onp

from ..fd.reasons import Unresolvable
from .report import Blocks, Entry
from .verdicts import Comparison, Verdict, failing_verdict

__all__ = ["make_entry", "entries_where"]


def make_entry(
    rows: Blocks,
    cols: Blocks,
    i: int,
    j: int,
    a: float,
    n: float,
    e: float,
    v: float,
    *,
    kind: Comparison = Comparison.VJP,
    verdict: Verdict | None = None,
    reason: Unresolvable | None = None,
    one_sided: tuple[float, float] | None = None,
    detail: str = "",
    summary: str = "",
    row_label: str | None = None,
) -> Entry:
    """An :class:`Entry` for row i (``-1``: a random cotangent) and column j
    (``-1``: a random tangent).

    Without a ``verdict`` one is read from the violation: right (≤ 1), wrong
    or imprecise (> 1), unresolvable (NaN).
    """
    if j >= 0:
        _, cside, cj = cols.locate(int(j))
        clabel, in_index, wrt = cside.label(cj), cside.index(cj), cside.wrt
    else:
        clabel, in_index, wrt = "(d·x)", (), cols.sides[0].wrt
    if i >= 0:
        _, rside, ri = rows.locate(int(i))
        out_index, rlabel = rside.index(ri), rside.label(ri)
    else:
        out_index, rlabel = (), "(u·y)"
    kind = Comparison(kind)
    label = f"{row_label or rlabel} / {clabel}" + (
        " [fwd]" if kind is Comparison.JVP or j < 0 else ""
    )
    if verdict is None:
        if onp.isnan(v):
            verdict = Verdict.UNRESOLVABLE
        else:
            verdict = failing_verdict(float(a), float(n)) if v > 1 else Verdict.RIGHT
    return Entry(
        wrt=wrt,
        out_index=out_index,
        in_index=in_index,
        analytic=float(a),
        numeric=float(n),
        abs_err=float(abs(a - n)),
        fd_error=float(e),
        label=label,
        violation=float(v),
        row=int(i),
        col=int(j),
        verdict=verdict,
        kind=kind,
        reason=reason,
        one_sided=one_sided,
        detail=detail,
        summary=summary,
    )


def entries_where(
    mask: onp.ndarray,
    rows: Blocks,
    cols: Blocks,
    analytic: onp.ndarray,
    numeric: onp.ndarray,
    fd_error: onp.ndarray,
    violation: onp.ndarray,
    verdicts: onp.ndarray,
    *,
    kind: Comparison = Comparison.VJP,
    reasons: onp.ndarray | None = None,
    sides: tuple | None = None,
    limit: int | None = None,
) -> list[Entry]:
    """The entries where ``mask`` holds, each with its verdict (and reason, and
    one-sided derivatives where f has a kink), at most ``limit`` of them."""
    out = []
    for i, j in onp.argwhere(mask)[:limit]:
        reason = None
        if reasons is not None and reasons[i, j]:
            reason = Unresolvable(int(reasons[i, j]))
        one = None
        if sides is not None and sides[0] is not None and onp.isfinite(sides[0][i, j]):
            one = (float(sides[0][i, j]), float(sides[1][i, j]))
        out.append(
            make_entry(
                rows,
                cols,
                i,
                j,
                analytic[i, j],
                numeric[i, j],
                fd_error[i, j],
                violation[i, j],
                kind=kind,
                verdict=Verdict.from_code(verdicts[i, j]),
                reason=reason,
                one_sided=one,
            )
        )
    return out
