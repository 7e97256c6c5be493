"""The fast check: random projections, then group testing to locate wrong entries.

The difference ``E = J_analytic - J_numeric`` is zero when the derivative is
right. With random u and d, ``uᵀ E d`` is nonzero (with probability one)
whenever E is, at the cost of one VJP and one directional finite difference.
One directional difference gives ``(J d)_i`` for every row i, so the rows
where the VJP is wrong are found by halving the cotangent's support (VJPs
only); the columns of those rows by halving the direction's support (one
directional difference per test). k wrong entries cost O(k log n)
differences. Intermediate tests only steer the search: every entry reported
is judged alone, by the same rule as the full check.
"""

from __future__ import annotations

import numpy as onp

from ..fd.directional import directional_derivatives
from ..fd.noise import probe_noise
from .determinism import backward_spread
from .fastctx import MAX_LOCATED, _allowed, _Ctx, _Dir
from .full import _precision_note, full_check, linearity_gap, rule_precision
from .grouptest import _forward_rows, _locate, _locate_forward
from .judging import RTOL_ULPS, make_entry
from .problem import Problem
from .report import CheckReport, Entry

__all__ = ["fast_check", "N_PROJECTIONS", "MAX_LOCATED"]

N_PROJECTIONS = 2
#: Fall back to the dense check when localization fails below this many entries.
AFFORDABLE_ENTRIES = 250_000


def fast_check(p: Problem, method: str, atol, rtol, gen, order: int) -> CheckReport:
    notes = [f"fast mode: {N_PROJECTIONS} random projections uᵀ J d, then group testing"]
    if p.m == 0 or p.n == 0:
        from .full import empty_report

        return empty_report(p, method, order, "fast")
    if method in ("complex_step", "forward", "backward"):
        notes.append(f"fast mode projects along random directions: {method} replaced by richardson")
        method = "richardson"
    x0 = p.x0
    y0 = p.evaluate_one(x0)
    m, n = y0.size, x0.size
    tr = p.backend.vjp(p.F, p.vs)
    steps = p.steps(method)
    spacing = p.spacing()
    base = float(onp.max(steps)) if steps.size else 1.0
    row_eps = onp.concatenate([onp.full(s.real_size, s.eps) for s in p.rows.sides])
    col_eps = onp.concatenate([onp.full(s.real_size, s.eps) for s in p.cols.sides])
    U = gen.standard_normal((N_PROJECTIONS, m))
    ext = lambda X: _extended(p.batch(X), U)  # noqa: E731
    y0_ext = _extended(y0[None], U)[0]
    ext_eps = onp.concatenate([row_eps, onp.full(N_PROJECTIONS, row_eps.max())])
    noise_ext, nf = probe_noise(ext, x0, y0_ext, steps, spacing, ext_eps, rng=gen, directions=1)
    ctx = _Ctx(
        p,
        tr,
        x0,
        y0,
        noise_ext,
        base,
        steps / base,
        row_eps,
        col_eps,
        0.0 if atol is None else atol,
        rtol,
        method,
        spacing,
    )
    ctx.cost.nfev += nf + 1
    ctx.notes.extend(notes)
    jitter, jitter_rel, jitter_note = backward_spread(p, tr, ctx.vjp, gen)
    if jitter_note:
        ctx.notes.append(jitter_note)
        ctx.atol = ctx.atol + 2.0 * float(jitter.max())

    # the VJP must be linear in its cotangent; a gap counts where the finite
    # differences confirm that the random-cotangent VJP is wrong
    lin, lin_rel, (u_l, ru_l) = linearity_gap(ctx.vjp, m, n, gen, ctx.y_dtype, col_eps)
    precision = rule_precision(lin, lin_rel)
    slack = 0.0
    if precision:
        from .full import solver_slack

        slack = float(onp.max(solver_slack(ctx.row_noise), initial=0.0))
        ctx.rtol = max(ctx.rtol or 0.0, precision + slack, RTOL_ULPS * float(col_eps.max()))
        ctx.notes.append(_precision_note("VJP", precision, "cotangent"))
        lin = onp.zeros_like(lin)
    entries: list[Entry] = []
    suspects = onp.flatnonzero(lin > 1)[:MAX_LOCATED]
    if suspects.size:
        entries.extend(_nonlinear_entries(ctx, u_l, ru_l, suspects))
        if entries:
            ctx.notes.append(
                f"the VJP is not linear in its cotangent at {len(entries)} input entr"
                f"{'y' if len(entries) == 1 else 'ies'} ({entries[0].label.split(' / ')[1]}, "
                "...): a rule that ignores its cotangent g, or adds a term not multiplied by g."
            )

    ctx.linear = not suspects.size  # the row search may subtract VJPs only if they are linear
    forward_ok = True
    failing = None
    unresolved = 0
    jvp_checked = False
    for k in range(N_PROJECTIONS):
        u = U[k]
        d = gen.standard_normal(n) * ctx.scale
        res = directional_derivatives(
            ext,
            x0,
            y0_ext,
            noise_ext,
            onp.array([base]),
            vectors=d[None],
            method=method,
            balance=onp.inf,
            spacing=spacing,
            coord_eps=col_eps,
        )
        ctx.cost.nfev += res.nfev
        d = res.vectors[0]
        jd = _Dir(d, res.est[0, :m], res.err[0, :m])
        if precision and k == 0:
            # an inexact rule's error is relative to the whole Jacobian's size, not to
            # each tiny sensitivity (as in the full check): J d / |d| gauges that size
            with onp.errstate(invalid="ignore"):
                size = float(onp.nanmax(onp.abs(jd.est), initial=0.0)) / max(
                    float(onp.max(onp.abs(d))), onp.finfo(float).tiny
                )
            ctx.atol = ctx.atol + (precision + slack) * size
        num, num_err = res.est[0, m + k], res.err[0, m + k]
        r = ctx.vjp(u)
        analytic = float(r @ d)
        magnitude = float(onp.abs(r) @ onp.abs(d))
        rt = RTOL_ULPS * float(col_eps.max()) if rtol is None else rtol
        if not onp.isfinite(num_err):
            unresolved += 1  # this projection cannot judge; the others, or the fallback, must
        elif not onp.isfinite(analytic) or abs(analytic - num) > _allowed(
            num_err, rt, magnitude, ctx.atol
        ):
            failing = failing or (u, jd)
        # forward mode, where JVP rules exist: every row of J d at once
        if forward_ok:
            try:
                jv = ctx.jvp(d)
            except NotImplementedError:
                forward_ok = False
                ctx.notes.append(
                    "forward mode not checked: an operation has neither a JVP rule nor a "
                    "differentiable VJP"
                )
            else:
                bad_rows = _forward_rows(ctx, jd, jv)
                if bad_rows.size:
                    entries.extend(_locate_forward(ctx, bad_rows, d))
                if not jvp_checked:  # a JVP must be linear in its tangent too
                    jvp_checked = True
                    entries.extend(_nonlinear_jvp(ctx, jd, jv, gen))
        if failing is not None and not forward_ok:
            break  # one failing projection is enough to start locating
    if failing is None and unresolved == N_PROJECTIONS and not entries:
        if m * n <= AFFORDABLE_ENTRIES:
            ctx.notes.append(
                "no projection could be resolved by finite differences: fell back to the full check"
            )
            full = full_check(p, method, atol, rtol, gen, order)
            entries.extend(full.mismatches)
            ctx.cost.nfev += full.nfev
            ctx.cost.ngrad += full.ngrad
        else:
            ctx.notes.append(
                "no projection could be resolved by finite differences (f is too uneven "
                "along random directions here): the check is inconclusive; try another point "
                "or mode='full' on a part of the inputs."
            )
    if failing is not None:
        u, jd = failing
        ctx.notes.append(
            "a projection uᵀ(J_ad - J_fd)d exceeded its tolerance; locating the wrong entries"
        )
        located = _locate(ctx, u, jd)
        if not located and m * n <= AFFORDABLE_ENTRIES:
            ctx.notes.append(
                "group testing found no single wrong entry: fell back to the full check"
            )
            full = full_check(p, method, atol, rtol, gen, order)
            located = [e for e in full.mismatches if e.kind == "vjp"]
            ctx.cost.nfev += full.nfev
            ctx.cost.ngrad += full.ngrad
        if not located and not entries:
            ctx.notes.append(
                "no entry exceeds its own tolerance although a projection did: the error is "
                "spread thin over many entries, each within its FD error; run mode='full' "
                "to see every entry."
            )
        entries.extend(located)
    entries = _dedupe(entries)
    entries, kinks, nk = _split_kinks(ctx, entries)
    ctx.cost.nfev += nk
    if kinks:
        ctx.notes.append(
            f"{len(kinks)} located entr{'y is' if len(kinks) == 1 else 'ies are'} at a kink or "
            "a jump (one-sided derivatives differ): not differentiable here, so neither right "
            "nor wrong."
        )
    entries.sort(key=lambda e: -e.violation if onp.isfinite(e.violation) else -onp.inf)
    return CheckReport(
        passed=not entries,
        analytic=None,
        numeric=None,
        abs_err=None,
        rel_err=None,
        fd_error=None,
        violation=None,
        worst=tuple(entries[:10]),
        mismatches=tuple(entries),
        rows=p.rows,
        cols=p.cols,
        order=order,
        mode="fast",
        method=method,
        dtype=p.dtype,
        atol=ctx.atol,
        rtol=float(RTOL_ULPS * max(row_eps.max(), col_eps.max())) if rtol is None else rtol,
        nfev=ctx.cost.nfev + 2,
        ngrad=ctx.cost.ngrad,
        notes=tuple(ctx.notes) + tuple(p.extra_notes),
        function=p.name,
        not_checked=p.not_checked,
        noise=noise_ext.coarse[:m],
        kinks=tuple(kinks),
        backward_spread=jitter_rel,
    )


def _extended(Y: onp.ndarray, U: onp.ndarray) -> onp.ndarray:
    """f's rows followed by its projections ``u_k·f`` (measured as outputs of their own)."""
    with onp.errstate(all="ignore"):
        return onp.hstack([Y, Y @ U.T])


def _nonlinear_entries(ctx: _Ctx, u, ru, columns) -> list[Entry]:
    """Columns where vjp(u) for a random u disagrees with uᵀ·(FD column)."""
    from ..fd.directional import exact_steps

    p = ctx.p
    spacing = p.spacing()
    steps = exact_steps(ctx.x0[columns], ctx.scale[columns] * ctx.base, spacing[columns])
    res = directional_derivatives(
        p.batch,
        ctx.x0,
        ctx.y0,
        ctx.row_noise,
        steps,
        columns=columns,
        method=ctx.method,
        spacing=ctx.spacing,
        coord_eps=ctx.col_eps,
    )
    ctx.cost.nfev += res.nfev
    out = []
    rt = float(ctx.rtol_rows().max())
    for t, j in enumerate(columns):
        est, err = res.est[t], res.err[t]
        ok = onp.isfinite(err)
        num = float(u[ok] @ est[ok])
        e = float(onp.abs(u[ok]) @ err[ok])
        allowed = _allowed(e, rt, max(abs(num), abs(ru[j])), ctx.atol)
        if ok.all() and abs(ru[j] - num) > allowed:
            out.append(
                make_entry(
                    p.rows,
                    p.cols,
                    -1,
                    j,
                    ru[j],
                    num,
                    e,
                    abs(ru[j] - num) / allowed,
                    kind="linearity",
                    verdict="VJP not linear in its cotangent",
                )
            )
    return out


def _split_kinks(ctx: _Ctx, entries: list[Entry]):
    """Located reverse-mode entries whose one-sided derivatives differ are kinks."""
    from .full import _kinks

    cand = [e for e in entries if e.kind == "vjp" and e.row >= 0]
    if not cand:
        return entries, [], 0
    A = {(e.row, e.col): e.analytic for e in cand}
    N = {(e.row, e.col): e.numeric for e in cand}
    E = {(e.row, e.col): e.fd_error for e in cand}
    bad = onp.array([(e.row, e.col) for e in cand])
    rt = float(ctx.rtol_rows().max())
    kinks, kink_set, nfev = _kinks(ctx.p, bad, A, N, E, rt, ctx.atol, ctx.row_noise, ctx.y0)
    return [e for e in entries if (e.row, e.col) not in kink_set or e.kind != "vjp"], kinks, nfev


def _nonlinear_jvp(ctx: _Ctx, jd: _Dir, jv: onp.ndarray, gen) -> list[Entry]:
    """Rows where the JVP is not linear in its tangent, confirmed by J d."""
    n = ctx.x0.size
    ratio, rel, _ = linearity_gap(ctx.jvp, n, jd.est.size, gen, float, ctx.row_eps)
    if rule_precision(ratio, rel) or not onp.any(ratio > 1):
        return []
    rt = ctx.rtol_rows()
    out = []
    with onp.errstate(all="ignore"):
        viol = onp.abs(jv - jd.est) / _allowed(jd.err, rt, onp.abs(jv), ctx.atol)
    p = ctx.p
    for i in onp.flatnonzero((ratio > 1) & onp.isfinite(jd.err))[:MAX_LOCATED]:
        if not viol[i] <= 1:
            out.append(
                Entry(
                    p.cols.sides[0].wrt,
                    (),
                    (),
                    float(jv[i]),
                    float(jd.est[i]),
                    float(abs(jv[i] - jd.est[i])),
                    float(jd.err[i]),
                    f"{p.rows.label(int(i))} / (d·x) [fwd]",
                    float(viol[i]),
                    int(i),
                    -1,
                    "JVP not linear in its tangent",
                    "linearity",
                )
            )
    if out:
        ctx.notes.append(
            f"the JVP is not linear in its tangent at {len(out)} output(s) "
            f"({p.rows.label(out[0].row)}, ...): a defjvp rule ignores its tangent g or adds "
            "a term not multiplied by it."
        )
    return out


def _dedupe(entries: list[Entry]) -> list[Entry]:
    """One entry per place; a forward-mode entry only where reverse mode is right
    (an operation without a JVP rule takes its tangents from its VJP, so a wrong
    VJP shows in both)."""
    reverse = {(e.row, e.col) for e in entries if e.kind == "vjp"}
    seen, out = set(), []
    for e in entries:
        key = (e.row, e.col, e.kind)
        if key in seen or (e.kind == "jvp" and (e.row, e.col) in reverse):
            continue
        seen.add(key)
        out.append(e)
    return out


# ---------------------------------------------------------------- localization
