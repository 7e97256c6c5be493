"""The full check: both Jacobians built, every entry judged, as named stages.

1. :func:`~.analytic.reverse_stage` — the reverse-mode Jacobian, and whether
   its rule is linear in the cotangent and repeatable;
2. :func:`~.forward.forward_stage` — forward mode, where JVP rules exist;
3. :func:`~.estimates.fd_stage` — finite differences of every column, with
   errors, reasons, and one-sided derivatives at kinks;
4. :func:`~.judging.judge_stage` — every entry's verdict;
5. :func:`~.kinks.find_jumps` and :func:`~.kinks.settle_kinks` — where f is
   not continuous or not differentiable, the verdicts there;
6. linearity (:mod:`.linearity`) and forward mode (:func:`~.forward.judge_forward`);
7. :func:`settle_with_taylor` — the Taylor test on blocks finite differences
   left mostly unresolved; :func:`~.diagnosis.inconclusive_reason`;
8. :func:`assemble` — the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as onp

from ..fd.formats import BFLOAT16
from ..fd.reasons import Unresolvable
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
from .forward import forward_stage, judge_forward
from .judging import FD_SAFETY, Judgement, judge_stage
from .kinks import KinkProbe, find_jumps, flat_to_the_limit, least_change, settle_kinks
from .linearity import nonlinear_vjp
from .options import Options
from .problem import Problem
from .report import CheckReport, Entry, Outcome
from .stairs import across_stairs
from .taylor import Convergence, TaylorResult, taylor_blocks
from .verdicts import Comparison, Verdict, failing_verdict

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
    found.nfev += _mark_jumps(p, est, jd, rev.A)
    probe = KinkProbe(p, est, _kink_columns(est, jd.verdicts), opts.gen)
    settle_kinks(rev.A, jd.verdicts, jd.V, est, jd.rtol, jd.allowance, probe)
    found.mismatches += nonlinear_vjp(p, rev, est, jd, opts, found.notes)
    if fwd.J is not None:
        entries, ngrad = judge_forward(p, rev, fwd, est, jd, probe, opts)
        found.mismatches += entries
        found.notes += fwd.notes
        found.ngrad += ngrad
    found.nfev += probe.nfev
    settle_with_taylor(p, rev.A, est, jd.verdicts, opts, found, _stair_heights(p, jd))
    return assemble(p, opts, rev, est, jd, fwd.J, found)


def _mark_jumps(p: Problem, est: Estimates, jd: Judgement, A: onp.ndarray) -> int:
    """Entries at a jump of f get the verdict JUMP (no derivative to compare). Where
    the analytic side and the finite differences disagree on whether f moves at all
    (one says 0), f is looked at closely: exactly flat at x (a staircase whose stairs
    are narrower than the step, ``round(x, 3)``), its derivative there is 0, to
    within the last bit of f over the closest step, and the entry is judged so."""
    failing = _failing(jd.verdicts)
    unresolved = jd.verdicts == Verdict.UNRESOLVABLE.code
    never = unresolved & (jd.reasons == Unresolvable.NEVER_SETTLED)
    # passed only within a wide FD error, though the samples did not move and the rule
    # says f does, by more than its round-off (a flat stair seen coarsely)
    with onp.errstate(invalid="ignore"):
        moves = onp.abs(onp.real(A)) > jd.allowance
        vague = (jd.verdicts == Verdict.RIGHT.code) & (est.N == 0) & moves & (jd.E > 0)
    # on a staircase too coarse for the step, an entry whose samples never moved where
    # the rule says f does: f may be exactly constant along that input (a rule ignoring
    # its cotangent fills entries f does not depend on), which the quanta do not excuse
    still = unresolved & (jd.reasons == Unresolvable.STAIRCASE) & (est.N == 0) & moves
    jumps, flats, nfev = find_jumps(p, onp.argwhere(failing | never | vague | still), est)
    magnitude = onp.fmax(onp.abs(est.y0), est.noise.scale)
    for i, j in jumps:
        jd.verdicts[i, j] = Verdict.JUMP.code
        jd.reasons[i, j] = Unresolvable.JUMP
        jd.V[i, j] = 0.0
    jd.jumps.update(jumps)
    least = least_change(p, est)
    narrow: dict = {}  # flat cells whose stairs end within reach: judged across them
    for (i, j), step in flats.items():
        if (i, j) in jumps:
            continue
        # unchanged over x ± step (the widest seen): |f'| <= its least change / step: an
        # ulp of f, or the quantum of the staircase f moves on (cancellation: (1e12 x +
        # sin x) - 1e12 x moves in quanta of 0.25, flat over a step where cos x is not 0)
        change = float(least[i, j])
        within = not flat_to_the_limit(step, p.x0[j])
        if still[i, j]:
            # a stair's height need not be the quantum the samples show (float16's
            # ulp of h in h·w, a float64 w); where f stays flat as far as it was
            # followed, it ignores x there, up to the coarsest format's rounding
            if within:
                narrow[(i, j)] = step
                continue
            change = max(change, BFLOAT16.eps * float(magnitude[i]))
        local = max(change, onp.finfo(float).tiny) / step
        a = float(onp.real(A[i, j]))
        sharper = est.N[i, j] == 0 and jd.E[i, j] <= local  # the differences' 0 stands
        V = jd.V[i, j] if sharper else abs(a) / (FD_SAFETY * local + float(jd.allowance[i, j]))
        if V > 1 and within:
            # nonzero against a stair's flat, though f moves soon after: an ulp of f
            # is no stair's height (f rounds an intermediate, then goes on in float64)
            narrow[(i, j)] = step
        if not sharper:
            _judge_flat(jd, est, (i, j), a, 0.0, local, V)
    # the differences read 0 where the rule says f moves, and f is not flat either side
    # of x: x is near a stair's edge (the differences shrank onto the stair)
    base = p.steps("forward")
    for i, j in onp.argwhere(failing & (est.N == 0)):
        if (i, j) not in jumps and (i, j) not in flats:
            narrow[(int(i), int(j))] = 32.0 * float(base[j])  # changes by 64 steps
    # an output on stairs along some inputs is on them along all: its other failing
    # entries' differences knew no stair height (the values lie on no grid), so they
    # are judged across the stairs too
    stairs_rows = {i for i, _ in narrow}
    for i, j in onp.argwhere(failing):
        if int(i) in stairs_rows and (i, j) not in jumps:
            narrow.setdefault((int(i), int(j)), 32.0 * float(base[j]))
    return nfev + _judge_across(p, est, jd, A, narrow)


def _judge_flat(jd: Judgement, est: Estimates, ij, a: float, n: float, err: float, V: float):
    """Entry ij judged against ``n ± err`` (f's slope where it is flat, or across
    its stairs), with violation V."""
    est.N[ij], jd.E[ij], jd.V[ij] = n, err, V
    jd.verdicts[ij] = (Verdict.RIGHT if V <= 1 else failing_verdict(a, n)).code
    jd.reasons[ij] = 0
    jd.flat.add(ij)


def _judge_across(p: Problem, est: Estimates, jd: Judgement, A, narrow: dict) -> int:
    """Flat cells whose stairs end within reach, judged against the slope across
    many stairs (:func:`~.stairs.across_stairs`); those whose stairs are too wide
    are unresolved (a staircase), and where f does not move within reach, the
    verdict stands. Returns the evaluations it took."""
    if not narrow:
        return 0
    measured, nfev = across_stairs(p, narrow, est.y0)
    jd.across.update(measured)
    for ij in (ij for ij, across in measured.items() if not across.measured):
        # f moves within reach, in stairs too wide to measure the slope across: its
        # flat at x says nothing of the derivative the rule gives
        est.N[ij], jd.E[ij], jd.V[ij] = 0.0, onp.inf, onp.nan
        jd.verdicts[ij] = Verdict.UNRESOLVABLE.code
        jd.reasons[ij] = Unresolvable.STAIRCASE
        jd.flat.discard(ij)
    for ij, across in measured.items():
        if not across.measured:
            continue
        a = float(onp.real(A[ij]))
        V = abs(a - across.est) / (FD_SAFETY * across.err + float(jd.allowance[ij]))
        _judge_flat(jd, est, ij, a, across.est, across.err, V)
        jd.flat.discard(ij)
    return nfev


def _failing(verdicts: onp.ndarray) -> onp.ndarray:
    return (verdicts == Verdict.WRONG.code) | (verdicts == Verdict.IMPRECISE.code)


def _kink_columns(est: Estimates, verdicts: onp.ndarray) -> onp.ndarray:
    return onp.flatnonzero(onp.any(est.kink | _failing(verdicts), axis=0))


def _stair_heights(p: Problem, jd: Judgement) -> onp.ndarray:
    """Per output, the height of the stairs it was seen on (0 where none)."""
    heights = onp.zeros(p.m)
    for (i, _), across in jd.across.items():
        heights[i] = max(heights[i], across.height)
    return heights


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
    wrong = entries_where(_failing(verdicts), **common, verdicts=verdicts) + found.mismatches
    wrong.sort(key=lambda e: -e.violation if onp.isfinite(e.violation) else -onp.inf)
    unresolved = entries_where(
        verdicts == Verdict.UNRESOLVABLE.code, **common, verdicts=verdicts, reasons=jd.reasons
    )
    at_kink = (verdicts == Verdict.RIGHT_AT_KINK.code) | (verdicts == Verdict.JUMP.code)
    kinks = entries_where(at_kink, **common, verdicts=verdicts, reasons=jd.reasons, sides=sides)
    kinks = [_with_jump(e, jd.jumps) for e in kinks]
    notes = list(found.notes) + _count_notes(unresolved, kinks) + _flat_notes(p, jd)
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


def _flat_notes(p: Problem, jd: Judgement) -> list[str]:
    notes = _across_notes(p, jd)
    flat = sorted(jd.flat)
    if not flat:
        return notes
    i, j = flat[0]
    return notes + [
        f"{len(flat)} entr{'y is' if len(flat) == 1 else 'ies are'} where f is exactly flat at "
        f"x ({p.rows.label(i)} / {p.cols.label(j)}, ...): f does not change at all over "
        "steps far wider than the finite differences' (it does not depend on that input "
        "there, or sits on a stair of a staircase whose slope across stairs the finite "
        "differences saw). There the derivative is 0 (to within f's least change over the "
        "widest such step), and the analytic value was judged against that."
    ]


def _across_notes(p: Problem, jd: Judgement) -> list[str]:
    measured = {ij: a for ij, a in jd.across.items() if a.measured}
    if not measured:
        return []
    (i, j), first = min(measured.items())
    count = len(measured)
    return [
        f"{count} entr{'y' if count == 1 else 'ies'} the finite differences read as 0 "
        f"where the rule does not ({p.rows.label(i)} / {p.cols.label(j)}, ...) were measured "
        f"again over a wider step (~{first.step:.1g} there): f that rounds something to a "
        "narrow format on the way (a cast to float16, a float32 accumulator) is a staircase, "
        "flat at x, and the slope across many of its stairs is the derivative the rule "
        "computes. Each is judged against that, to within the stairs' height over the step."
    ]


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
    judged = (verdicts == Verdict.RIGHT.code) | _failing(verdicts)
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
