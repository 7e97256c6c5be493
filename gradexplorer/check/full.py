"""The full check: both Jacobians built, every entry judged, as named stages.

1. :func:`~.analytic.reverse_stage` — the reverse-mode Jacobian, and whether
   its rule is linear in the cotangent and repeatable;
2. :func:`~.forward.forward_stage` — forward mode, where JVP rules exist;
3. :func:`~.estimates.fd_stage` — finite differences of every column, with
   errors, reasons, and one-sided derivatives at kinks;
4. :func:`~.judging.judge_stage` — every entry's verdict;
5. :func:`~.flats.mark_flats` and :func:`~.kinks.settle_kinks` — where f is
   flat, on stairs, not continuous or not differentiable, the verdicts there;
6. linearity (:mod:`.linearity`) and forward mode (:func:`~.forward.judge_forward`);
7. :func:`settle_with_taylor` — the Taylor test on blocks finite differences
   left mostly unresolved; :func:`~.diagnosis.inconclusive_reason`;
8. :func:`assemble` — the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as onp

from .analytic import Reverse, reverse_stage
from .diagnosis import (
    INCONCLUSIVE_BLOCK,
    diagnose_pattern,
    domain_notes,
    empty_report,
    inconclusive_reason,
    noise_notes,
    staircase_notes,
)
from .entries import entries_where, make_entry
from .estimates import Estimates, fd_stage
from .flats import flat_notes, mark_flats, stair_heights
from .forward import forward_stage, judge_forward
from .judging import Judgement, judge_stage
from .kinks import KinkProbe, settle_kinks
from .linearity import nonlinear_vjp
from .onstair import exact_notes, settle_exact_parts
from .options import Options
from .problem import Problem
from .report import CheckReport, Entry, Outcome
from .rounded import exact_parts, rounded_notes, settle_rounded_parts
from .taylor import Convergence, TaylorResult, taylor_blocks
from .verdicts import Comparison, Verdict, failing_codes

__all__ = ["full_check", "settle_with_taylor", "assemble"]


@dataclass
class _Found:
    """What the later stages add: entries, notes, costs."""

    mismatches: list[Entry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    nfev: int = 0
    ngrad: int = 0
    taylor: TaylorResult | None = None
    settled: set = field(default_factory=set)


def full_check(p: Problem, opts: Options) -> CheckReport:
    if p.m == 0 or p.n == 0:
        return empty_report(p, opts, "full")
    eps = p.eps_matrix()
    rev = reverse_stage(p, opts, eps)
    fwd = forward_stage(p, rev, eps, opts)
    est = fd_stage(p, opts)
    jd = judge_stage(p, rev, est, opts)
    found = _Found(notes=list(rev.notes) + ([fwd.note] if fwd.note else []))
    found.nfev, found.ngrad = est.nfev, rev.ngrad + fwd.passes + jd.ngrad
    found.nfev += mark_flats(p, est, jd, rev.A, rounded=rev.suspect)
    across = jd.across_mask(p.m, p.n)
    probe = KinkProbe(p, est, _kink_columns(est, jd.verdicts, across), opts.gen)
    settle_kinks(rev.A, jd.verdicts, jd.V, est, jd.rtol, jd.allowance, probe, across)
    found.ngrad += settle_rounded_parts(est, jd, rev, rev.A)
    ngrad, nfev = settle_exact_parts(p, est, jd, rev, rev.A, opts)
    found.ngrad, found.nfev = found.ngrad + ngrad, found.nfev + nfev
    found.mismatches += nonlinear_vjp(p, rev, est, jd, opts, found.notes)
    if fwd.J is not None:
        entries, ngrad = judge_forward(p, rev, fwd, est, jd, probe, opts)
        found.mismatches += entries
        found.notes += fwd.notes
        found.ngrad += ngrad
    found.nfev += probe.nfev
    # (entries left open by their rule's rounded part: their exact part is tested)
    A_exact, open_ = exact_parts(rev.A, jd)
    settle_with_taylor(p, A_exact, est, open_, opts, found, stair_heights(p, jd))
    return assemble(p, opts, rev, est, jd, fwd.J, found)


def _kink_columns(est: Estimates, verdicts: onp.ndarray, settled: onp.ndarray) -> onp.ndarray:
    return onp.flatnonzero(onp.any(est.kink | (failing_codes(verdicts) & ~settled), axis=0))


def settle_with_taylor(
    p: Problem, A, est: Estimates, verdicts, opts: Options, found, stairs=None
) -> None:
    """Blocks finite differences left mostly unresolvable get the Taylor test:
    second-order convergence settles them, first order fails them. ``stairs``: per
    output, the height of the stairs it moves on (a remainder below it is rounding)."""
    unresolved = verdicts == Verdict.UNRESOLVABLE.code
    which = {
        (rname, cname)
        for rname, rs in p.rows.slices.items()
        for cname, cs in p.cols.slices.items()
        if unresolved[rs, cs].size and unresolved[rs, cs].mean() > INCONCLUSIVE_BLOCK
    }
    if not which and unresolved.mean() <= 0.05:
        return
    if not which:
        which = {(r, c) for r in p.rows.slices for c in p.cols.slices}
    from ..fd.schemes import NOISE_SIGMAS

    floor = NOISE_SIGMAS * est.noise.level0
    if stairs is not None:
        floor = onp.fmax(floor, stairs)
    safe_A = onp.where(onp.isfinite(A), A, 0.0)
    if p.reading is not None:
        # f reads x + h·v rounded to its format's grid: off by up to half an ulp in
        # each coordinate, at every h, an error no remainder's order shows through
        floor = floor + onp.abs(safe_A) @ (p.spacing() / 2)
    # along columns that need it, away from kinks (f must be differentiable along v)
    support = onp.any(unresolved, axis=0) & ~onp.any(est.kink, axis=0)
    blocks, nfev = taylor_blocks(
        p.evaluator,
        p.x0,
        est.y0,
        lambda v: safe_A @ v,
        p.rows,
        p.cols,
        p.steps("richardson"),
        floor,
        opts.gen,
        which=which,
        support=support,
        out_eps=onp.concatenate([onp.full(s.real_size, s.eps) for s in p.rows.sides]),
    )
    found.nfev += nfev
    found.taylor = TaylorResult(tuple(blocks), p.name, nfev)
    for b in blocks:
        rs, cs = p.rows.slices[b.output], p.cols.slices[b.input]
        open_rows = onp.flatnonzero(onp.any(unresolved[rs, cs], axis=1))
        if b.convergence is Convergence.SECOND and b.settles(open_rows):
            found.settled.add((b.output, b.input))
        elif b.convergence is Convergence.FIRST:
            found.mismatches.append(_taylor_entry(p, b))
            found.notes.append(
                f"the Taylor remainder of {b.output} / {b.input} shrinks like h^{b.order:.2g}, "
                "not h²: that block's derivative is wrong, though finite differences could not "
                "pin down its entries one by one."
            )


def _taylor_entry(p: Problem, b) -> Entry:
    """A whole block found wrong by the Taylor test (no single entry to name)."""
    _, side, _ = p.cols.locate(p.cols.slices[b.input].start)
    return Entry(
        side.wrt, (), (), onp.nan, onp.nan, onp.nan, onp.inf, f"{b.output} / {b.input}",
        onp.inf, -1, -1, Verdict.WRONG, Comparison.TAYLOR,
        summary=f"its Taylor remainder shrinks like h^{b.order:.2g}, not h²: the block is wrong",
    )  # fmt: skip


def assemble(p, opts, rev: Reverse, est: Estimates, jd: Judgement, fwd, found) -> CheckReport:
    """The report: entries by verdict, notes, the outcome."""
    A, N, E, V, verdicts = rev.A, est.N, jd.E, jd.V, jd.verdicts
    sides = (est.right, est.left)
    common = dict(rows=p.rows, cols=p.cols, analytic=A, numeric=N, fd_error=E, violation=V)
    wrong = entries_where(failing_codes(verdicts), **common, verdicts=verdicts) + found.mismatches
    wrong.sort(key=lambda e: -e.violation if onp.isfinite(e.violation) else -onp.inf)
    unresolved = entries_where(
        verdicts == Verdict.UNRESOLVABLE.code, **common, verdicts=verdicts, reasons=jd.reasons
    )
    at_kink = (verdicts == Verdict.RIGHT_AT_KINK.code) | (verdicts == Verdict.JUMP.code)
    kinks = entries_where(at_kink, **common, verdicts=verdicts, reasons=jd.reasons, sides=sides)
    kinks = [_with_jump(e, jd.jumps) for e in kinks]
    notes = list(found.notes) + _count_notes(unresolved, kinks) + flat_notes(p, jd, A)
    notes += rounded_notes(p, jd, A) + exact_notes(p, jd)
    kink_rows = frozenset(e.row for e in kinks)
    notes += noise_notes(p, est.y0, est.noise, kink_rows) + staircase_notes(p, est.noise)
    notes += diagnose_pattern(A, N, V, p.cols) + domain_notes(p) + list(p.extra_notes)
    why = "" if wrong else inconclusive_reason(p, verdicts, found.settled, A)
    outcome = Outcome.FAILED if wrong else Outcome.INCONCLUSIVE if why else Outcome.PASSED
    with onp.errstate(invalid="ignore", divide="ignore"):
        rel = onp.abs(A - N) / onp.maximum(onp.maximum(onp.abs(A), onp.abs(N)), 1e-300)
    return CheckReport(
        outcome=outcome,
        analytic=A,
        numeric=N,
        abs_err=onp.abs(A - N),
        rel_err=rel,
        fd_error=E,
        violation=V,
        worst=tuple(_worst(p, A, N, E, V, verdicts, est.noise)),
        mismatches=tuple(wrong),
        rows=p.rows,
        cols=p.cols,
        order=opts.order,
        mode="full",
        method=opts.method,
        dtype=p.dtype,
        atol=jd.atol,
        rtol=float(onp.max(jd.rtol, initial=0.0)),
        nfev=int(found.nfev) + 1 + p.charge(),
        ngrad=int(found.ngrad),
        kinks=tuple(kinks),
        notes=tuple(notes),
        function=p.name,
        unresolved=tuple(unresolved),
        not_checked=p.not_checked,
        noise=est.noise.coarse,
        forward=fwd,
        backward_spread=rev.jitter_rel,
        inconclusive=why,
        verdicts=verdicts,
        n_wrong=len(wrong),
        mode_reason=opts.mode_reason,
        taylor=found.taylor,
    )


def _with_jump(e: Entry, jumps: dict) -> Entry:
    size = jumps.get((e.row, e.col))
    if size is None:
        return e
    side = "right" if size > 0 else "left"
    return replace(e, detail=f"f jumps by about {abs(size):.3g} just {side} of x")


def _count_notes(unresolved: list, kinks: list) -> list[str]:
    notes = []
    if unresolved:
        notes.append(
            f"{len(unresolved)} entr{'y' if len(unresolved) == 1 else 'ies'} could not be "
            "resolved by finite differences (neither right nor wrong; the reason is beside "
            "each): check them at another point or with a different step."
        )
    if kinks:
        notes.append(
            f"{len(kinks)} entr{'y is' if len(kinks) == 1 else 'ies are'} where f is not "
            "differentiable (a kink, a tie or a jump): at a kink the analytic value is judged "
            "against f's one-sided derivatives, and is right when it is one of them or "
            "between them."
        )
    return notes


def _worst(p, A, N, E, V, verdicts, noise) -> list[Entry]:
    """Up to ten judged entries, the closest to failing first."""
    judged = (verdicts == Verdict.RIGHT.code) | failing_codes(verdicts)
    score = onp.where(judged & onp.isfinite(V), V, -1.0)
    flat = -onp.nan_to_num(score, posinf=onp.finfo(float).max).ravel()
    # the ten smallest without sorting the whole matrix (4e6 entries at n = 2000)
    top = onp.argpartition(flat, 9)[:10] if flat.size > 10 else onp.arange(flat.size)
    order = top[onp.argsort(flat[top], kind="stable")]
    out = []
    for t in order:
        if score.flat[t] < 0:
            continue
        i, j = onp.unravel_index(t, V.shape)
        # a passing entry in a row that is uneven (kink, jump, noise) owes its wide
        # allowance to that: say so rather than let a large FD error go unexplained
        detail = ""
        if V[i, j] <= 1 and noise.rel[i] > 0:
            detail = "f is uneven nearby (a kink, jump or noise), so the FD error is wide"
        out.append(
            make_entry(
                p.rows, p.cols, i, j, A[i, j], N[i, j], E[i, j], V[i, j],
                verdict=Verdict.from_code(verdicts[i, j]), detail=detail,
            )
        )  # fmt: skip
    return out
