"""A VJP not linear in its cotangent: right rows from unit cotangents, a wrong
gradient for every other cotangent. Found where a random cotangent's VJP
differs from the combination of the rows it should be, *and* from the
finite differences (else the gap is round-off), by a gap the difference from the
rows makes up a material part of (else the rows are what is wrong)."""

from __future__ import annotations

import numpy as onp

from .analytic import Reverse
from .entries import make_entry
from .estimates import Estimates
from .judging import Judgement, judge
from .options import Options
from .problem import Problem
from .report import Entry
from .rules import at_worst_probe, nonlinearity_explains, solver_slack
from .verdicts import Comparison, Verdict

__all__ = ["nonlinear_vjp"]


def nonlinear_vjp(
    p: Problem, rev: Reverse, est: Estimates, jd: Judgement, opts: Options, notes: list[str]
) -> list[Entry]:
    """Entries (row -1) for the input columns where the VJP is not linear."""
    N, E = est.N, jd.E
    slack = float(onp.max(solver_slack(est.noise), initial=0.0)) * rev.adaptive
    # each column judged at the cotangent where the rule is furthest from the FD
    judged = []
    for u, ru, uA in rev.probes:
        with onp.errstate(all="ignore"):
            num = u @ onp.where(onp.isfinite(N), N, 0.0)
            err = onp.abs(u) @ onp.where(onp.isfinite(E), E, onp.inf)
        atol = jd.atol + (rev.column_precision + slack) * float(onp.max(onp.abs(ru), initial=0.0))
        judged.append((judge(ru, num, err, jd.rtol.max(axis=0), atol), ru, num, err, uA))
    v_lin, ru, num, err, uA = at_worst_probe(judged)
    bad = onp.flatnonzero(rev.suspect & (v_lin > 1) & nonlinearity_explains(ru, uA, num))
    if not bad.size:
        return []
    rule = opts.rule_name
    cols = p.cols
    notes.append(
        f"the {rule} is not linear in its cotangent at {len(bad)} input entr"
        f"{'y' if len(bad) == 1 else 'ies'} ({cols.label(int(bad[0]))}"
        f"{', ...' if len(bad) > 1 else ''}): vjp(a·u + b·v) != a·vjp(u) + b·vjp(v). "
        "A rule that ignores its cotangent g, or adds a term not multiplied by g "
        "(g - exp(ans) where g - exp(ans)·sum(g) was meant), builds a right Jacobian from "
        "unit cotangents and a wrong gradient for every other one."
    )
    return [
        make_entry(
            p.rows,
            cols,
            -1,
            j,
            ru[j],
            num[j],
            err[j],
            v_lin[j],
            kind=Comparison.LINEARITY,
            verdict=Verdict.WRONG,
            summary=(
                f"{rule} not linear in its cotangent: a random cotangent u gives "
                f"{ru[j]:.6g}, u·(its unit-cotangent rows) gives {uA[j]:.6g}"
            ),
        )
        for j in bad[:50]
    ]
