"""The fast check's linearity stage: entries where a rule is not linear in its seed.

A VJP must be linear in its cotangent and a JVP in its tangent. Where the
random probes show a gap, the columns (VJP) or rows (JVP) that show it are
judged against finite differences one by one, by the same tolerance as any
other entry.
"""

from __future__ import annotations

import numpy as onp

from ..fd.directional import directional_derivatives, exact_steps
from .entries import make_entry
from .exactness import Cause, rule_exactness
from .fastctx import Along, FastContext, allowed
from .report import Entry
from .rules import linearity_gap
from .stairs import across_stairs_along, across_stairs_columns
from .verdicts import Comparison, Verdict


def nonlinear_vjp_columns(ctx: FastContext, probes, columns) -> list[Entry]:
    """Columns where vjp(u) for a random u (either probe) disagrees with uᵀ·(FD column)."""
    p = ctx.p
    spacing = p.spacing()
    steps = exact_steps(ctx.x0[columns], ctx.scale[columns] * ctx.base, spacing[columns])
    res = directional_derivatives(
        p.evaluator, ctx.x0, ctx.y0, ctx.row_noise, steps, columns=columns,
        method=ctx.method, spacing=ctx.spacing, coord_eps=ctx.col_eps, out_eps=ctx.row_eps,
    )  # fmt: skip
    ctx.cost.nfev += res.nfev
    # (a 0 the differences read on a stair of f is no slope: the one across stairs is)
    ests, errs, _, used = across_stairs_columns(p, columns, res.est, res.err, ctx.y0)
    ctx.cost.nfev += used
    out = []
    rt = float(ctx.rtol_rows().max())
    for t, j in enumerate(columns):
        est, err = ests[t], errs[t]
        if not onp.isfinite(err).all():
            continue
        judged = []  # (analytic, numeric, FD error, violation) at each probe
        for u, ru in probes:
            num, e = float(u @ est), float(onp.abs(u) @ err)
            tol = allowed(e, rt, max(abs(num), abs(ru[j])), ctx.atol)
            gap = abs(ru[j] - num)
            judged.append((ru[j], num, e, gap / tol if tol > 0 else (onp.inf if gap > 0 else 0.0)))
        worst = max(judged, key=lambda jd: jd[3])
        if worst[3] > 1:
            out.append(
                make_entry(
                    p.rows, p.cols, -1, j, *worst,
                    kind=Comparison.LINEARITY, verdict=Verdict.WRONG,
                    summary="VJP not linear in its cotangent",
                )
            )  # fmt: skip
    return out


def nonlinear_jvp_rows(ctx: FastContext, jd: Along, jv: onp.ndarray, gen) -> list[Entry]:
    """Rows where the JVP is not linear in its tangent, confirmed by J d."""
    n = ctx.x0.size
    ratio, rel, probes = linearity_gap(ctx.jvp, n, jd.est.size, gen, float, ctx.row_eps)
    exact = rule_exactness(
        ratio, rel, probes, ctx.row_eps, ctx.p.narrow_format, ctx.p.rows, rule=ctx.jvp
    )
    if exact.precision or exact.cause is Cause.ROUNDING or not onp.any(ratio > 1):
        return []
    rt = ctx.rtol_rows()
    out = []
    est, err = _across_zeros(ctx, jd, (ratio > 1) & (jd.est == 0) & (jv != 0))
    with onp.errstate(all="ignore"):
        viol = onp.abs(jv - est) / allowed(err, rt, onp.abs(jv), ctx.atol)
    p = ctx.p
    for i in onp.flatnonzero((ratio > 1) & onp.isfinite(err))[: ctx.budget]:
        if not viol[i] <= 1:
            out.append(
                make_entry(
                    p.rows, p.cols, int(i), -1, jv[i], est[i], err[i], viol[i],
                    kind=Comparison.LINEARITY, verdict=Verdict.WRONG,
                    summary="JVP not linear in its tangent",
                )
            )  # fmt: skip
    if out:
        ctx.notes.append(
            f"the JVP is not linear in its tangent at {len(out)} output(s) "
            f"({p.rows.label(out[0].row)}, ...): a JVP rule (defjvp, custom_jvp, a "
            "Function's jvp) ignores its tangent or adds a term not multiplied by it."
        )
    return out


def _across_zeros(ctx: FastContext, jd: Along, rows: onp.ndarray):
    """J d with the 0s the differences read in ``rows`` (a mask) replaced by the slope
    across f's stairs along d, where f moves within reach (inf error where its stairs
    are too wide): a 0 read on a stair is no slope."""
    est, err = jd.est.copy(), jd.err.copy()
    if not rows.any():
        return est, err
    d = jd.d
    support = onp.flatnonzero(d)
    reach = 32.0 * float(onp.min(ctx.p.steps("forward")[support] / onp.abs(d[support])))
    found, used = across_stairs_along(ctx.p, d, onp.flatnonzero(rows), reach, ctx.y0)
    ctx.cost.nfev += used
    for i, across in found.items():
        est[i], err[i] = (across.est, across.err) if across.measured else (0.0, onp.inf)
    return est, err
