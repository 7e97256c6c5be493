"""Forward mode in the full check: the JVP Jacobian, where JVP rules exist,
judged against the same finite differences as reverse mode.

An operation without a JVP rule takes its tangent from its VJP (and is named
in a note); a rule that gives no tangent at all where its input moves (torch
returns None for a custom op with no forward rule) is "no forward rule",
never a wrong entry. An entry wrong only in forward mode is a wrong JVP.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as onp

from .analytic import Reverse
from .entries import make_entry
from .estimates import Estimates
from .exactness import Cause, precision_note, rule_exactness
from .judging import Judgement, judge
from .kinks import KinkProbe, settle_kinks
from .options import Options
from .problem import Problem
from .report import Entry
from .rules import (
    at_worst_probe,
    forward_columns,
    jvp_rule,
    linearity_gap,
    nonlinearity_explains,
    scale_allowance,
    solver_slack,
)
from .verdicts import Comparison, Verdict, failing_verdict

__all__ = ["Forward", "forward_stage", "judge_forward"]


@dataclass
class Forward:
    """The forward-mode Jacobian (None when forward mode could not run)."""

    J: onp.ndarray | None
    fallback_ops: list[str]
    note: str | None
    passes: int
    notes: list[str] = field(default_factory=list)


def forward_stage(p: Problem, rev: Reverse, eps: onp.ndarray, opts: Options) -> Forward:
    """Forward mode's Jacobian; where the rule is exact, two random tangents
    that reproduce A·d stand for all n columns (:func:`forward_columns`)."""
    J, ops, note, passes = forward_columns(p, rev.A if rev.exact else None, opts.gen, eps)
    return Forward(J, ops, note, passes)


def judge_forward(
    p: Problem,
    rev: Reverse,
    fwd: Forward,
    est: Estimates,
    jd: Judgement,
    probe: KinkProbe,
    opts: Options,
) -> tuple[list[Entry], int]:
    """Entries where forward mode is wrong and reverse mode right, and JVP
    rules not linear in their tangent; the derivative passes it took."""
    J, N, E = fwd.J, est.N, jd.E
    notes = fwd.notes
    eps = p.eps_matrix()
    ngrad = 3
    jvp = jvp_rule(p)
    jvp_ratio, jvp_rel, probes = linearity_gap(jvp, p.n, p.m, opts.gen, float, eps.max(axis=1))
    exact = rule_exactness(
        jvp_ratio, jvp_rel, probes, eps.max(axis=1), p.narrow_format, p.rows, rule=jvp
    )
    own, fmt = exact.entry_precision, exact.fmt
    own_rows = exact.per_coordinate()  # the JVP's coordinates are f's rows
    precision = onp.maximum(
        own_rows if onp.ndim(own_rows) == 0 else own_rows[:, None],
        rev.column_precision if fwd.fallback_ops else 0.0,
    )
    # (a solver's error grows with f's unevenness; a narrow format's rounding does not)
    adaptive = (own > 0 and fmt is None) or (bool(fwd.fallback_ops) and rev.adaptive)
    rtol = onp.maximum(jd.rtol, precision)
    if (exact.precision or exact.cause is Cause.ROUNDING) and not rev.precision:
        notes.append(precision_note("JVP", "tangent", exact))
    allowance = jd.atol + jd.wobble + scale_allowance(precision, onp.abs(J), N)
    if adaptive:
        slack = solver_slack(est.noise)[:, None]
        reach = (onp.asarray(precision) > 0).astype(float)  # the rows it reaches
        allowance = allowance + scale_allowance(reach, onp.abs(J), N) * slack
    Vf = judge(J, N, E, rtol, allowance)
    more = onp.setdiff1d(onp.flatnonzero(onp.any(Vf > 1, axis=1)), jd.wobble_rows)
    if more.size:  # the same round-off allowance, for rows only forward mode fails
        from .determinism import ROUNDING_SAMPLES, rounding_spread

        allowance = allowance + rounding_spread(p, rev.A, opts.gen, more)
        ngrad += ROUNDING_SAMPLES * (1 + more.size)
        Vf = judge(J, N, E, rtol, allowance)
    verdicts = onp.full(Vf.shape, Verdict.RIGHT.code, onp.int8)
    for i, j in onp.argwhere(Vf > 1):
        verdicts[i, j] = failing_verdict(float(onp.real(J[i, j])), N[i, j]).code
    settle_kinks(onp.real(J), verdicts, Vf, est, rtol, allowance, probe, jd.across_mask(*J.shape))
    reverse_bad = (jd.verdicts == Verdict.WRONG.code) | (jd.verdicts == Verdict.IMPRECISE.code)
    # at a jump there is no derivative to compare
    reverse_bad |= jd.verdicts == Verdict.JUMP.code
    only_fwd = (
        (verdicts == Verdict.WRONG.code) | (verdicts == Verdict.IMPRECISE.code)
    ) & ~reverse_bad
    entries = [_jvp_entry(p, J, N, E, Vf, verdicts, i, j) for i, j in onp.argwhere(only_fwd)]
    if entries:
        notes.append(
            f"forward mode (JVP) disagrees with the finite differences at {len(entries)} "
            "entr" + ("y" if len(entries) == 1 else "ies") + " where reverse mode (VJP) "
            "is right: a JVP rule (defjvp, custom_jvp, a Function's jvp) is wrong."
        )
    entries += _nonlinear_jvp(
        p,
        J,
        jvp_ratio,
        probes,
        N,
        E,
        rtol,
        jd.atol,
        jd.wobble,
        max(float(onp.max(precision)), exact.precision),
        notes,
    )
    if fwd.fallback_ops:
        ops = fwd.fallback_ops
        notes.append(
            "JVP rules checked for every operation except "
            + ", ".join(ops[:6])
            + (" ..." if len(ops) > 6 else "")
            + ", which ha"
            + ("s" if len(ops) == 1 else "ve")
            + " none (their tangents came from their VJPs)."
        )
    return entries, ngrad


def _jvp_entry(p, J, N, E, Vf, verdicts, i, j) -> Entry:
    a = J[i, j]
    summary, verdict = "", Verdict.from_code(verdicts[i, j])
    if onp.iscomplexobj(J) and a.imag != 0:
        summary = (
            f"the tangent of a real output has an imaginary part ({a.imag:.3g}): "
            "a JVP rule mishandles complex inputs"
        )
        verdict = Verdict.WRONG  # however right its real part is
    return make_entry(
        p.rows,
        p.cols,
        i,
        j,
        a.real,
        N[i, j],
        E[i, j],
        Vf[i, j],
        kind=Comparison.JVP,
        verdict=verdict,
        summary=summary,
    )


def _nonlinear_jvp(p, J, ratio, probes, N, E, rtol, atol, wobble, precision, notes) -> list[Entry]:
    """Rows where a random tangent's JVP (either probe: the one furthest from the
    finite differences) disagrees with them while the JVP is not linear in its tangent,
    by a gap its difference from ``J d`` (the unit tangents' columns) makes up a
    material part of (:func:`~.rules.nonlinearity_explains`)."""
    judged = []
    for d, jd in probes:
        with onp.errstate(all="ignore"):
            Jd = onp.where(onp.isfinite(J), J, 0.0) @ d
            num_d = onp.where(onp.isfinite(N), N, 0.0) @ d
            err_d = onp.where(onp.isfinite(E), E, onp.inf) @ onp.abs(d)
        # the rows' own round-off (measured at nearby points) along d, as for every entry
        roundoff = onp.abs(wobble) @ onp.abs(d)
        allowance = atol + roundoff + precision * float(onp.max(onp.abs(jd), initial=0.0))
        v = judge(jd, num_d, err_d, rtol.max(axis=1), allowance)
        judged.append((v, jd, num_d, err_d, Jd))
    v_jvp, jd, num_d, err_d, Jd = at_worst_probe(judged)
    explains = nonlinearity_explains(onp.real(jd), onp.real(Jd), num_d)
    bad_rows = onp.flatnonzero((ratio > 1) & (v_jvp > 1) & explains)
    if not bad_rows.size:
        return []
    i = int(bad_rows[onp.argmax(v_jvp[bad_rows])])
    notes.append(
        "the JVP is not linear in its tangent (jvp(a·d + b·e) != a·jvp(d) + b·jvp(e)) "
        f"at {len(bad_rows)} output(s) ({p.rows.label(i)}, ...): a JVP rule (defjvp, "
        "custom_jvp, a Function's jvp) ignores its tangent or adds a term not multiplied by it."
    )
    return [
        make_entry(
            p.rows,
            p.cols,
            int(i),
            -1,
            float(onp.real(jd[i])),
            float(num_d[i]),
            float(err_d[i]),
            float(v_jvp[i]),
            kind=Comparison.LINEARITY,
            verdict=Verdict.WRONG,
            summary=(
                "JVP not linear in its tangent: a random tangent d gives "
                f"{onp.real(jd[i]):.6g}, the finite differences {num_d[i]:.6g}"
            ),
        )
        for i in bad_rows[:50]
    ]
