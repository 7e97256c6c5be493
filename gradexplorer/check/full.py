"""The full check: both Jacobians built, every entry judged.

Reverse mode builds the analytic Jacobian row by row from unit cotangents;
a VJP that is not linear in its cotangent can still build a right matrix that
way, so random cotangents are checked too. Forward mode (where JVP rules
exist; an operation without one gets its tangent from its VJP) is checked
against the same finite differences.
"""

from __future__ import annotations

from typing import Any

import numpy as onp

from ..errors import ComplexStepError
from ..fd.applicability import named_culprit
from ..fd.complexstep import complex_step_jacobian
from ..fd.directional import REASONS
from ..fd.jacobian import fd_columns
from ..fd.noise import NoiseModel
from ..fd.steps import steps_for
from .determinism import ROUNDING_SAMPLES, RUNS, backward_spread, rounding_spread
from .diagnosis import _kinks, diagnose_pattern, empty_report, noise_notes
from .judging import judge, make_entry, tolerances
from .problem import Problem
from .progress import analytic_ready
from .report import CheckReport, Entry, verdict_for
from .rules import (
    _precision_note,
    _scale_allowance,
    forward_columns,
    jvp_rule,
    linearity_gap,
    reverse_rows,
    rule_precision,
    solver_slack,
    vjp_rule,
)

__all__ = ["full_check", "diagnose_pattern", "linearity_gap", "noise_notes"]


def _fd(p: Problem, method: str, gen):
    x0 = p.x0
    y0 = p.evaluate_one(x0)
    out_eps = onp.concatenate([onp.full(s.real_size, s.eps) for s in p.rows.sides])
    if method == "complex_step":
        if p.rmap is None:
            raise ValueError(
                "method='complex_step' applies to f itself, not to its derivatives (order=2); "
                "use method='richardson' for second derivatives."
            )
        fd_steps = steps_for(p.call, None, "richardson") if p.call else p.steps("richardson")
        try:
            N, E, nfev = complex_step_jacobian(
                p.rmap,
                p.batch,
                x0,
                y0,
                p.steps(method),
                fd_steps,
                p.spacing(),
                out_eps=out_eps,
                coord_eps=p.coord_eps(),
                rng=gen,
            )
        except ComplexStepError as exc:
            named = named_culprit(exc, p.call, p.backend)
            if named is exc:
                raise
            raise named from exc
        return y0, N, E, onp.zeros(N.shape, onp.int8), nfev + 1, NoiseModel.quiet(y0.size)
    N, E, R, nfev, noise = fd_columns(
        p.batch,
        x0,
        y0,
        p.steps(method),
        p.spacing(),
        method,
        rng=gen,
        out_eps=out_eps,
        coord_eps=p.coord_eps(),
        grow_to=p.grow_to(method),
    )
    return y0, N, E, R, nfev + 1, noise


def full_check(
    p: Problem, method: str, atol: Any, rtol: Any, gen, order: int, *, rule_name: str = "VJP"
) -> CheckReport:
    rows, cols = p.rows, p.cols
    m, n = p.m, p.n
    if m == 0 or n == 0:
        return empty_report(p, method, order, "full")
    tr = p.backend.vjp(p.F, p.vs)
    y_ad = onp.asarray(p.backend.to_numpy(tr.value))
    vjp = vjp_rule(tr, p.backend, y_ad.dtype)
    A = reverse_rows(vjp, m)
    if order == 1:
        analytic_ready(A)
    ngrad = m
    eps = p.eps_matrix()
    atol_, rtol_m = tolerances(eps, atol, rtol)
    notes: list[str] = []

    # a VJP must be linear in its cotangent: unit cotangents alone cannot tell
    col_eps = eps.max(axis=0)
    lin_ratio, lin_rel, (u, ru) = linearity_gap(vjp, m, n, gen, y_ad.dtype, col_eps)
    ngrad += 3
    with onp.errstate(all="ignore"):
        uA = u @ A
        unit_gap = onp.abs(ru - uA) / (
            256 * col_eps * (onp.abs(u) @ onp.abs(A) + onp.abs(ru)) + onp.finfo(float).tiny
        )
    suspect = (lin_ratio > 1) | (unit_gap > 1)
    vjp_precision = rule_precision(lin_ratio, lin_rel)
    rtol_rev = onp.maximum(rtol_m, vjp_precision)
    if vjp_precision:
        notes.append(_precision_note(rule_name, vjp_precision, "cotangent"))

    jitter, jitter_rel, jitter_note = backward_spread(p, tr, vjp, gen)
    ngrad += RUNS + 1
    if jitter_note:
        notes.append(jitter_note)

    # reverse mode stands for forward mode only where it is exact and repeatable: an
    # adaptive or non-deterministic backward pass is judged with allowances of its own
    exact = jitter is None and not vjp_precision
    fwd, fallback_ops, fwd_note, passes = forward_columns(p, A if exact else None, gen, eps)
    ngrad += passes
    if fwd is None:
        notes.append(fwd_note)

    y0, N, E, R, nfev, noise = _fd(p, method, gen)
    # where f is uneven, an entry known only to within its own size is not known
    with onp.errstate(invalid="ignore"):
        vague = (noise.rel[:, None] > 0) & (E > 0.5 * onp.maximum(onp.abs(N), onp.abs(A)))
        vague &= (N != 0) | (A != 0)
    E = onp.where(vague, onp.inf, E)
    R = onp.where(vague & (R == 0), 4, R)
    atol_rev = atol_ + _scale_allowance(vjp_precision, A, N)
    if jitter is not None:
        atol_rev = atol_rev + 2.0 * jitter[None, :]
    if vjp_precision:
        # an inexact rule over an f that is itself inexact (a solver at its tolerance):
        # the computed f's derivative is only defined to ~sqrt of f's relative accuracy
        atol_rev = atol_rev + _scale_allowance(1.0, A, N) * solver_slack(noise)[:, None]
    V = judge(A, N, E, rtol_rev, atol_rev)
    # rows that fail may be a small difference of large terms: allow the analytic
    # side's own round-off there (measured at nearby points) and judge them again
    wobble_rows = onp.flatnonzero(onp.any(V > 1, axis=1))
    wobble = rounding_spread(p, A, gen, wobble_rows)
    ngrad += ROUNDING_SAMPLES * (1 + len(wobble_rows)) if len(wobble_rows) else 0
    atol_rev = atol_rev + wobble
    V = judge(A, N, E, rtol_rev, atol_rev)
    mism: list[Entry] = []
    failing = onp.argwhere(V > 1)
    # entries that fail, never settled, or sit where f is uneven may be on a kink
    uneven = (noise.rel > 0)[:, None] & onp.ones((1, n), bool)
    candidates = onp.argwhere((V > 1) | (onp.isnan(V) & (R >= 3)) | uneven)
    kinks, kink_set, nk = _kinks(p, candidates, A, N, E, rtol_rev, atol_, noise, y0)
    nfev += nk
    for i, j in failing:
        if (int(i), int(j)) not in kink_set:
            mism.append(make_entry(rows, cols, i, j, A[i, j], N[i, j], E[i, j], V[i, j]))

    # a gap between random and unit cotangents counts only where the random one
    # is also wrong against the finite differences (else it is round-off)
    with onp.errstate(all="ignore"):
        num = u @ onp.where(onp.isfinite(N), N, 0.0)
        err = onp.abs(u) @ onp.where(onp.isfinite(E), E, onp.inf)
    v_lin = judge(
        ru,
        num,
        err,
        rtol_rev.max(axis=0),
        atol_
        + (vjp_precision + float(onp.max(solver_slack(noise), initial=0.0)) * bool(vjp_precision))
        * float(onp.max(onp.abs(ru), initial=0.0)),
    )
    nonlinear = suspect & (v_lin > 1)
    if nonlinear.any():
        bad = onp.flatnonzero(nonlinear)
        for j in bad[:50]:
            verdict = (
                f"{rule_name} not linear in its cotangent: a random cotangent u gives "
                f"{ru[j]:.6g}, u·(its unit-cotangent rows) gives {uA[j]:.6g}"
            )
            mism.append(
                make_entry(
                    rows,
                    cols,
                    -1,
                    j,
                    ru[j],
                    num[j],
                    err[j],
                    v_lin[j],
                    kind="linearity",
                    verdict=verdict,
                )
            )
        notes.append(
            f"the {rule_name} is not linear in its cotangent at {len(bad)} input entr"
            f"{'y' if len(bad) == 1 else 'ies'} ({cols.label(int(bad[0]))}"
            f"{', ...' if len(bad) > 1 else ''}): vjp(a·u + b·v) != a·vjp(u) + b·vjp(v). "
            "A rule that ignores its cotangent g, or adds a term not multiplied by g "
            "(g - exp(ans) where g - exp(ans)·sum(g) was meant), builds a right Jacobian from "
            "unit cotangents and a wrong gradient for every other one."
        )

    if fwd is not None:
        jvp_ratio, jvp_rel, (d, jd) = linearity_gap(jvp_rule(p), n, m, gen, float, eps.max(axis=1))
        ngrad += 3
        jvp_precision = max(
            rule_precision(jvp_ratio, jvp_rel), vjp_precision if fallback_ops else 0.0
        )
        rtol_fwd = onp.maximum(rtol_m, jvp_precision)
        if jvp_precision and not vjp_precision:
            notes.append(_precision_note("JVP", jvp_precision, "tangent"))
        atol_fwd = atol_ + wobble + _scale_allowance(jvp_precision, onp.abs(fwd), N)
        if jvp_precision:
            atol_fwd = (
                atol_fwd + _scale_allowance(1.0, onp.abs(fwd), N) * solver_slack(noise)[:, None]
            )
        Vf = judge(fwd, N, E, rtol_fwd, atol_fwd)
        more = onp.setdiff1d(onp.flatnonzero(onp.any(Vf > 1, axis=1)), wobble_rows)
        if more.size:  # the same round-off allowance, for rows only forward mode fails
            atol_fwd = atol_fwd + rounding_spread(p, A, gen, more)
            ngrad += ROUNDING_SAMPLES * (1 + more.size)
            Vf = judge(fwd, N, E, rtol_fwd, atol_fwd)
        only_fwd = onp.argwhere((Vf > 1) & ~(V > 1))
        for i, j in only_fwd:
            if (int(i), int(j)) not in kink_set:
                a = fwd[i, j]
                verdict = None
                if onp.iscomplexobj(fwd) and a.imag != 0:
                    verdict = (
                        f"the tangent of a real output has an imaginary part ({a.imag:.3g}): "
                        "a JVP rule mishandles complex inputs"
                    )
                mism.append(
                    make_entry(
                        rows,
                        cols,
                        i,
                        j,
                        a.real,
                        N[i, j],
                        E[i, j],
                        Vf[i, j],
                        kind="jvp",
                        verdict=verdict,
                    )
                )
        if len(only_fwd):
            notes.append(
                f"forward mode (JVP) disagrees with the finite differences at {len(only_fwd)} "
                "entr" + ("y" if len(only_fwd) == 1 else "ies") + " where reverse mode (VJP) "
                "is right: a defjvp rule is wrong."
            )
        with onp.errstate(all="ignore"):
            num_d = onp.where(onp.isfinite(N), N, 0.0) @ d
            err_d = onp.where(onp.isfinite(E), E, onp.inf) @ onp.abs(d)
        v_jvp = judge(
            jd,
            num_d,
            err_d,
            rtol_fwd.max(axis=1),
            atol_ + jvp_precision * float(onp.max(onp.abs(jd), initial=0.0)),
        )
        bad_rows = onp.flatnonzero((jvp_ratio > 1) & (v_jvp > 1))
        if bad_rows.size:
            i = int(bad_rows[onp.argmax(v_jvp[bad_rows])])
            notes.append(
                "the JVP is not linear in its tangent (jvp(a·d + b·e) != a·jvp(d) + b·jvp(e)) "
                f"at {len(bad_rows)} output(s) ({rows.label(i)}, ...): a defjvp rule ignores "
                "its tangent g or adds a term not multiplied by it."
            )
            for i in bad_rows[:50]:
                mism.append(
                    Entry(
                        cols.sides[0].wrt,
                        (),
                        (),
                        float(onp.real(jd[i])),
                        float(num_d[i]),
                        float(abs(jd[i] - num_d[i])),
                        float(err_d[i]),
                        f"{rows.label(int(i))} / (d·x) [fwd]",
                        float(v_jvp[i]),
                        int(i),
                        -1,
                        "JVP not linear in its tangent: a random tangent d gives "
                        f"{onp.real(jd[i]):.6g}, the finite differences {num_d[i]:.6g}",
                        "linearity",
                    )
                )
        if fallback_ops:
            notes.append(
                "JVP rules checked for every operation except "
                + ", ".join(fallback_ops[:6])
                + (" ..." if len(fallback_ops) > 6 else "")
                + ", which ha"
                + ("s" if len(fallback_ops) == 1 else "ve")
                + " none (their tangents came from their VJPs)."
            )

    mism.sort(key=lambda e: -e.violation if onp.isfinite(e.violation) else -onp.inf)
    unresolved = [
        make_entry(
            rows,
            cols,
            i,
            j,
            A[i, j],
            N[i, j],
            E[i, j],
            onp.nan,
            verdict="unresolvable: " + REASONS[int(R[i, j]) or 3],
        )
        for i, j in onp.argwhere(onp.isnan(V))
        if (int(i), int(j)) not in kink_set
    ]
    if unresolved:
        notes.append(
            f"{len(unresolved)} entr{'y' if len(unresolved) == 1 else 'ies'} could not be "
            "resolved by finite differences (neither right nor wrong; the reason is beside "
            "each): check them at another point or with a different step."
        )
    if kinks:
        notes.append(
            f"{len(kinks)} entr{'y is' if len(kinks) == 1 else 'ies are'} at a kink or a jump "
            "(one-sided derivatives differ): not differentiable here, so neither right nor "
            "wrong."
        )
    notes.extend(noise_notes(p, y0, noise, frozenset(i for i, _ in kink_set)))
    notes.extend(diagnose_pattern(A, N, V, cols))
    notes.extend(p.extra_notes)
    judged = onp.where(onp.isnan(V), -1.0, V)
    for i, j in kink_set:
        judged[i, j] = -1.0
    order_idx = onp.argsort(-onp.nan_to_num(judged, posinf=onp.finfo(float).max), axis=None)[:10]
    worst = []
    for t in order_idx:
        if judged.flat[t] < 0:
            continue
        i, j = onp.unravel_index(t, V.shape)
        a, n_, e, v = A.flat[t], N.flat[t], E.flat[t], V.flat[t]
        # a passing entry in a row that is uneven (kink, jump, noise) owes its wide
        # allowance to that: say so rather than let a large FD error go unexplained
        verdict = verdict_for(float(v), a, n_, e, uneven=bool(noise.rel[i] > 0))
        worst.append(make_entry(rows, cols, i, j, a, n_, e, v, verdict=verdict))
    with onp.errstate(invalid="ignore", divide="ignore"):
        rel = onp.abs(A - N) / onp.maximum(onp.maximum(onp.abs(A), onp.abs(N)), 1e-300)
    return CheckReport(
        passed=not mism,
        analytic=A,
        numeric=N,
        abs_err=onp.abs(A - N),
        rel_err=rel,
        fd_error=E,
        violation=V,
        worst=tuple(worst),
        mismatches=tuple(mism),
        rows=rows,
        cols=cols,
        order=order,
        mode="full",
        method=method,
        dtype=p.dtype,
        atol=atol_,
        rtol=float(onp.max(rtol_rev, initial=0.0)),
        nfev=int(nfev) + 2,
        ngrad=int(ngrad),
        kinks=tuple(kinks),
        notes=tuple(notes),
        function=p.name,
        unresolved=tuple(unresolved),
        not_checked=p.not_checked,
        noise=noise.coarse,
        forward=fwd,
        backward_spread=jitter_rel,
    )
