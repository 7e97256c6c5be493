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
from ..fd.reasons import Unresolvable
from .determinism import backward_spread
from .diagnosis import empty_report
from .exactness import Cause, precision_note, rule_exactness
from .fallbacks import mixed_precision, narrow_reading
from .fastctx import Along, FastContext, allowed
from .fastlinearity import nonlinear_jvp_rows, nonlinear_vjp_columns
from .full import full_check
from .grouptest import forward_rows, locate_entries, locate_forward
from .judging import FD_SAFETY, RTOL_ULPS
from .loose import VAGUE_SHARE
from .options import Options
from .problem import Problem
from .report import CheckReport, Entry, Outcome
from .rules import linearity_gap, solver_slack
from .verdicts import Comparison, Verdict

__all__ = ["fast_check", "N_PROJECTIONS", "AFFORDABLE_ENTRIES"]

N_PROJECTIONS = 2
#: The full check is affordable as a fallback up to this many dense entries, and
#: this many evaluations and derivative passes (about 10 per column, 1 per row).
AFFORDABLE_ENTRIES = 4_000_000
AFFORDABLE_PASSES = 50_000
#: A linearity gap this many times its round-off allowance is no round-off.
CLEARLY_NONLINEAR = 1e4


def fast_check(p: Problem, opts: Options) -> CheckReport:
    if p.m == 0 or p.n == 0:
        return empty_report(p, opts, "fast")
    method = opts.method
    notes = [f"fast mode: {N_PROJECTIONS} random projections uᵀ J d, then group testing"]
    if method in ("complex_step", "forward", "backward"):
        notes.append(f"fast mode projects along random directions: {method} replaced by richardson")
        method = "richardson"
    ctx, U, y0_ext, jitter_rel = _context(p, opts, method)
    ctx.notes.extend(notes)
    entries, precision, slack = _linearity(ctx, opts)
    failing, unresolved = None, 0
    why = ctx.mixed_precision or narrow_reading(p)
    if why and _affordable(p):
        entries += _fall_back(ctx, p, opts, why)
    else:
        failing, unresolved, forward_entries = _project(ctx, U, y0_ext, precision, slack, opts)
        entries += forward_entries
        entries += _locate_or_fall_back(ctx, p, opts, failing, unresolved, entries)
    entries = _dedupe(entries)
    kinks = [e for e in entries if e.verdict is Verdict.RIGHT_AT_KINK]
    wrong = [e for e in entries if e.verdict.failing]
    if kinks:
        ctx.notes.append(
            f"{len(kinks)} located entr{'y is' if len(kinks) == 1 else 'ies are'} where f is "
            "not differentiable, and the analytic value is one of its one-sided derivatives "
            "(or between them): right at a kink."
        )
    wrong.sort(key=lambda e: -e.violation if onp.isfinite(e.violation) else -onp.inf)
    named = wrong[: opts.max_named]
    if len(wrong) > len(named):
        ctx.notes.append(
            f"{len(wrong)} wrong entries found; the {len(named)} worst are named "
            f"(max_named={opts.max_named})."
        )
    if ctx.capped:
        ctx.notes.append(
            f"the search stopped after {ctx.budget} wrong rows or columns: more wrong entries "
            "may remain (a systematic bug?); mode='full' finds them all, or pass a larger "
            "max_named= to search further."
        )
    stairs = [e for e in entries if e.verdict is Verdict.UNRESOLVABLE]
    why = _inconclusive(ctx, wrong, unresolved, failing, stairs)
    if failing is None and ctx.loose > VAGUE_SHARE and ctx.fallback is None:
        ctx.notes.append(
            f"the random projections passed within finite-difference errors up to "
            f"{ctx.loose:.0%} of their value (f is uneven along random directions: stairs "
            "of a narrow format, or noise): a rule off by less would pass unseen there; "
            "mode='full' judges each entry to its own error, and checks a rule that "
            "rounds against f's slope within one stair."
        )
    outcome = Outcome.FAILED if wrong else Outcome.INCONCLUSIVE if why else Outcome.PASSED
    row_eps, col_eps = ctx.row_eps, ctx.col_eps
    rtol = opts.rtol
    return CheckReport(
        outcome=outcome,
        analytic=None,
        numeric=None,
        abs_err=None,
        rel_err=None,
        fd_error=None,
        violation=None,
        worst=tuple(named[:10]),
        mismatches=tuple(named),
        rows=p.rows,
        cols=p.cols,
        order=opts.order,
        mode="fast",
        method=method,
        dtype=p.dtype,
        atol=ctx.atol,
        rtol=float(RTOL_ULPS * max(row_eps.max(), col_eps.max())) if rtol is None else rtol,
        nfev=ctx.cost.nfev + 2 + p.charge(),
        ngrad=ctx.cost.ngrad,
        notes=tuple(ctx.notes) + tuple(p.extra_notes),
        function=p.name,
        not_checked=p.not_checked,
        noise=ctx.noise.coarse[: p.m],
        kinks=tuple(kinks),
        backward_spread=jitter_rel,
        inconclusive=why,
        unresolved=tuple(stairs) if ctx.fallback is None else ctx.fallback.unresolved,
        n_wrong=len(wrong),
        mode_reason=opts.mode_reason,
    )


def _inconclusive(ctx: FastContext, wrong: list, unresolved: int, failing, stairs: list) -> str:
    """Why the fast check cannot pass, where nothing is wrong: no projection resolved
    and no full check to fall back on, the full check it fell back on was itself
    inconclusive, or the entries a failing projection led to lie on stairs (a
    projection that failed on entries FD cannot resolve is no pass)."""
    if wrong:
        return ""
    if (full := ctx.fallback) is not None:  # it judged every entry: its verdict stands
        why = full.inconclusive if full.outcome is Outcome.INCONCLUSIVE else ""
        return why and f"fell back to the full check, which is inconclusive: {why}"
    if stairs:
        return (
            f"a projection failed, and the {len(stairs)} entr"
            f"{'y' if len(stairs) == 1 else 'ies'} it led to ({stairs[0].label}, ...) "
            f"cannot be judged: {Unresolvable.STAIRCASE.text}. The differences measure the "
            "slope over stairs, not the derivative between them; check at another point "
            "or on a part of the inputs with mode='full'."
        )
    if unresolved == N_PROJECTIONS and failing is None:
        return (
            "no random projection could be resolved by finite differences (f is too uneven "
            "along random directions here), and the full check is too large to fall back on: "
            "try another point, or mode='full' on a part of the inputs."
        )
    return ""


def _context(p: Problem, opts: Options, method: str):
    """The fast check's context: f's noise (and its projections'), the backward
    pass, its spread; the projection cotangents U and the extended f(x)."""
    gen = opts.gen
    x0 = p.x0
    y0 = p.evaluate_one(x0)
    m = y0.size
    tr = p.backend.vjp(p.F, p.vs)
    steps = p.steps(method)
    spacing = p.spacing()
    base = float(onp.max(steps)) if steps.size else 1.0
    row_eps = onp.concatenate([onp.full(s.real_size, s.eps) for s in p.rows.sides])
    col_eps = onp.concatenate([onp.full(s.real_size, s.eps) for s in p.cols.sides])
    U = gen.standard_normal((N_PROJECTIONS, m))
    ext = p.evaluator.projected(U)
    y0_ext = ext(x0[None])[0]  # as the evaluator itself computes it (on its device)
    ext_eps = onp.concatenate([row_eps, onp.full(N_PROJECTIONS, row_eps.max())])
    noise_ext, nf = probe_noise(ext, x0, y0_ext, steps, spacing, ext_eps, rng=gen, directions=1)
    ctx = FastContext(
        p, tr, x0, y0, noise_ext, base, steps / base, row_eps, col_eps,
        0.0 if opts.atol is None else opts.atol, opts.rtol, method, spacing,
        budget=max(opts.max_named, 1), ext=ext,
    )  # fmt: skip
    ctx.cost.nfev += nf + 1
    jitter, jitter_rel, jitter_note = backward_spread(p, tr, ctx.vjp, gen)
    if jitter_note:
        ctx.notes.append(jitter_note)
        ctx.atol = ctx.atol + 2.0 * float(jitter.max())
    return ctx, U, y0_ext, jitter_rel


def _linearity(ctx: FastContext, opts: Options):
    """The VJP must be linear in its cotangent; a gap counts where the finite
    differences confirm that the random-cotangent VJP is wrong. An adaptive
    rule (inexact everywhere, slightly) is judged to the precision it shows."""
    m, n = ctx.y0.size, ctx.x0.size
    lin, lin_rel, probes = linearity_gap(ctx.vjp, m, n, opts.gen, ctx.y_dtype, ctx.col_eps)
    exact = rule_exactness(
        lin, lin_rel, probes, ctx.col_eps, ctx.p.narrow_format, ctx.p.cols, rule=ctx.vjp
    )
    precision = exact.precision
    slack = 0.0
    if precision:
        # (a solver's error grows with f's unevenness; a narrow format's rounding does not)
        slack = 0.0 if exact.fmt else float(onp.max(solver_slack(ctx.row_noise), initial=0.0))
        ctx.rtol = max(ctx.rtol or 0.0, precision + slack, RTOL_ULPS * float(ctx.col_eps.max()))
        ctx.notes.append(precision_note("VJP", "cotangent", exact))
        lin = onp.zeros_like(lin)
        ctx.mixed_precision = mixed_precision(exact)
        if ctx.mixed_precision and not _affordable(ctx.p):
            ctx.notes.append(
                f"{ctx.mixed_precision}: too large to fall back on the full check, so here "
                "every entry is judged to that precision; mode='full' on a part of the "
                "inputs judges each to its own."
            )
    rounding = exact.cause is Cause.ROUNDING and not precision
    ctx.rounds = exact.cause is not Cause.EXACT
    if rounding:  # a float16 intermediate's rounding: no nonlinear rule
        ctx.notes.append(precision_note("VJP", "cotangent", exact))
        lin = onp.zeros_like(lin)
    entries: list[Entry] = []
    # a rule that ignores its cotangent is off by far more than round-off (which a
    # small difference of large terms can push past the linearity allowance in a
    # few of a million coordinates); those only the projections would see
    suspects = onp.flatnonzero(lin > CLEARLY_NONLINEAR)[: ctx.budget]
    if suspects.size:
        entries = nonlinear_vjp_columns(ctx, probes, suspects)
        if entries:
            ctx.notes.append(
                f"the VJP is not linear in its cotangent at {len(entries)} input entr"
                f"{'y' if len(entries) == 1 else 'ies'} ({entries[0].label.split(' / ')[1]}, "
                "...): a rule that ignores its cotangent g, or adds a term not multiplied by g."
            )
    # the row search may subtract VJPs only if they are linear
    ctx.linear = not suspects.size and not rounding
    return entries, precision, slack


def _project(ctx: FastContext, U, y0_ext, precision, slack, opts: Options):
    """``uᵀ J d`` for each projection, by the VJP and by finite differences (with
    J d for every row at once, which forward mode is checked against too).
    Returns the first failing projection ``(u, J d)`` or None, how many could
    not be resolved, and forward-mode entries."""
    m, n = ctx.y0.size, ctx.x0.size
    forward_ok, jvp_checked = True, False
    failing, unresolved = None, 0
    entries: list[Entry] = []
    rt = RTOL_ULPS * float(ctx.col_eps.max()) if opts.rtol is None else opts.rtol
    for k in range(N_PROJECTIONS):
        u = U[k]
        d = opts.gen.standard_normal(n) * ctx.scale
        res = directional_derivatives(
            ctx.ext,
            ctx.x0,
            y0_ext,
            ctx.noise,
            onp.array([ctx.base]),
            vectors=d[None],
            method=ctx.method,
            balance=onp.inf,
            spacing=ctx.spacing,
            coord_eps=ctx.col_eps,
        )
        ctx.cost.nfev += res.nfev
        d = res.vectors[0]
        jd = Along(d, res.est[0, :m], res.err[0, :m])
        if precision and k == 0:
            # an inexact rule's error is relative to the whole Jacobian's size, not to
            # each tiny sensitivity (as in the full check): J d / |d| gauges that size
            with onp.errstate(invalid="ignore"):
                # (an estimate the differences could not make, inf, gauges nothing)
                finite = onp.abs(jd.est[onp.isfinite(jd.est)])
                size = float(onp.max(finite, initial=0.0)) / max(
                    float(onp.max(onp.abs(d))), onp.finfo(float).tiny
                )
            ctx.atol = ctx.atol + (precision + slack) * size
        num, num_err = res.est[0, m + k], res.err[0, m + k]
        r = ctx.vjp(u)
        analytic = float(r @ d)
        magnitude = float(onp.abs(r) @ onp.abs(d))
        # known no better than the sum it projects (0.27 on terms summing to 0.09), a
        # projection resolves nothing: the others, or the fallback, must judge
        vacuous = 0 < magnitude < num_err and abs(num) < num_err
        tol = allowed(num_err, rt, magnitude, ctx.atol)
        if not onp.isfinite(num_err) or vacuous:
            unresolved += 1
        elif not onp.isfinite(analytic) or abs(analytic - num) > tol:
            failing = failing or (u, jd)
        else:
            # (how loosely the differences knew it: a rule's own allowance is no looseness)
            ctx.loose = max(ctx.loose, FD_SAFETY * num_err / max(abs(num), onp.finfo(float).tiny))
        if forward_ok:  # forward mode, where JVP rules exist: every row of J d at once
            try:
                jv = ctx.jvp(d)
            except NotImplementedError:
                forward_ok = False
                ctx.notes.append(
                    "forward mode not checked: an operation has neither a JVP rule nor a "
                    "differentiable VJP"
                )
            else:
                bad_rows = forward_rows(ctx, jd, jv)
                if bad_rows.size and not _same_as_reverse(ctx, u, jv, r, d, failing):
                    entries.extend(locate_forward(ctx, bad_rows, d))
                if not jvp_checked:  # a JVP must be linear in its tangent too
                    jvp_checked = True
                    entries.extend(nonlinear_jvp_rows(ctx, jd, jv, opts.gen))
        if failing is not None and not forward_ok:
            break  # one failing projection is enough to start locating
    return failing, unresolved, entries


def _locate_or_fall_back(ctx, p, opts, failing, unresolved, found) -> list[Entry]:
    """Group testing where a projection failed; the full check where that is
    affordable and group testing could not finish (nothing resolved, nothing
    located, or more wrong entries than its budget)."""
    affordable = _affordable(p)
    located: list[Entry] = []
    if failing is not None:
        ctx.notes.append(
            "a projection uᵀ(J_ad - J_fd)d exceeded its tolerance; locating the wrong entries"
        )
        located = locate_entries(ctx, *failing)
    stuck = failing is None and unresolved == N_PROJECTIONS and not found
    empty = failing is not None and not any(e.verdict.failing for e in located)
    if (stuck or empty or ctx.capped) and affordable:
        why = (
            "no projection could be resolved by finite differences"
            if stuck
            else "group testing found no single wrong entry"
            if empty
            else f"more than {ctx.budget} wrong rows or columns"
        )
        return _fall_back(ctx, p, opts, why)
    if empty and not found and not located:  # (located: entries on stairs, unjudged)
        ctx.notes.append(
            "no entry exceeds its own tolerance although a projection did: the error is "
            "spread thin over many entries, each within its FD error; run mode='full' "
            "to see every entry."
        )
    return located


def _affordable(p: Problem) -> bool:
    """Is the full check affordable as the fast check's fallback?"""
    return p.m * p.n <= AFFORDABLE_ENTRIES and p.m + 10 * p.n <= AFFORDABLE_PASSES


def _fall_back(ctx: FastContext, p: Problem, opts: Options, why: str) -> list[Entry]:
    """The full check in the fast check's place; its entries."""
    ctx.notes.append(f"{why}: fell back to the full check, which judges every entry")
    full = ctx.fallback = full_check(p, opts)
    # (what it says of the entries it judged: stairs, kinks, rounded parts)
    ctx.notes.extend(n for n in full.notes if n not in ctx.notes)
    ctx.cost.nfev += full.nfev
    ctx.cost.ngrad += full.ngrad
    ctx.capped = False
    return list(full.mismatches) + list(full.kinks)


def _same_as_reverse(ctx: FastContext, u, jv, r, d, failing) -> bool:
    """Forward mode fails where reverse mode does, with the same numbers along d
    (``u·(J_fwd d) == vjp(u)·d`` to round-off): one error, found by the reverse
    search (an operation without a forward rule takes its tangent from its VJP)."""
    if failing is None:
        return False
    with onp.errstate(all="ignore"):
        fwd, rev = float(u @ jv), float(r @ d)
        size = float(onp.abs(u) @ onp.abs(jv) + onp.abs(r) @ onp.abs(d))
    same = abs(fwd - rev) <= 1e3 * float(ctx.row_eps.max()) * size
    note = (
        "forward mode fails along the same direction with the same numbers as reverse "
        "mode (its tangents come from the same rule): located once, in reverse mode"
    )
    if same and note not in ctx.notes:  # said once, however many projections fail
        ctx.notes.append(note)
    return same


def _dedupe(entries: list[Entry]) -> list[Entry]:
    """One entry per place; a forward-mode entry only where reverse mode is right
    (an operation without a JVP rule takes its tangents from its VJP, so a wrong
    VJP shows in both)."""
    reverse = {(e.row, e.col) for e in entries if e.kind is Comparison.VJP}
    seen, out = set(), []
    for e in entries:
        key = (e.row, e.col, e.kind)
        if key in seen or (e.kind is Comparison.JVP and (e.row, e.col) in reverse):
            continue
        seen.add(key)
        out.append(e)
    return out
