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

from ._trace import getval, trace_jvp, trace_vjp
from .directional import REASONS, directional_derivatives, exact_steps
from .fd import complex_step_derivatives, fd_columns
from .judging import FD_SAFETY, judge, make_entry, tolerances
from .noise import NoiseModel
from .problem import Problem
from .report import Blocks, CheckReport, Entry

__all__ = ["full_check", "diagnose_pattern", "linearity_gap", "noise_notes"]

#: Round-off allowed when comparing a rule with itself (linearity), in ulps.
LINEARITY_ULPS = 1024.0


def _flat(grads: list) -> onp.ndarray:
    return onp.concatenate([onp.ravel(onp.asarray(getval(g), dtype=float)) for g in grads])


def reverse_rows(tr, m: int, y_dtype) -> onp.ndarray:
    rows = []
    basis = onp.zeros(m, y_dtype)
    for i in range(m):
        basis[i] = 1
        rows.append(_flat(tr.backward(basis)))
        basis[i] = 0
    return onp.array(rows).reshape(m, -1)


#: One-sided derivatives closer than this (relative) are not called a kink.
KINK_RTOL = 1e-6
#: A rule inconsistent with itself by less than this (relative) is an adaptive
#: or iterative computation with that precision, not a rule with a missing g.
RULE_NOISE_MAX = 1e-4


def linearity_gap(rule, size_in: int, size_out: int, gen, dtype, eps):
    """Per output coordinate of ``rule``, ``|rule(a·u + b·v) - a·rule(u) - b·rule(v)|``
    divided by its round-off allowance (> 1: the rule is not linear there).

    Returns ``(ratio, relative_gap, (u, rule(u)))`` so callers can compare
    ``rule(u)`` too; ``relative_gap`` is the gap over the values' size.
    """
    u = gen.standard_normal(size_in).astype(dtype)
    v = gen.standard_normal(size_in).astype(dtype)
    a, b = 0.75, -1.25  # exact in binary: the combination adds no rounding of its own
    ru, rv, ruv = rule(u), rule(v), rule(a * u + b * v)
    gap = onp.abs(ruv - (a * ru + b * rv))
    size = onp.abs(a * ru) + onp.abs(b * rv) + onp.abs(ruv)
    allowed = LINEARITY_ULPS * eps * size
    with onp.errstate(invalid="ignore", divide="ignore"):
        ratio = onp.where(allowed > 0, gap / allowed, onp.where(gap > 0, onp.inf, 0.0))
        rel = onp.where(size > 0, gap / size, onp.where(gap > 0, onp.inf, 0.0))
    return ratio, rel, (u, ru)


def rule_precision(ratio: onp.ndarray, rel: onp.ndarray) -> float:
    """The relative tolerance a rule earns by disagreeing with itself: 0 for an
    exact rule; for one visibly above round-off yet small (an adaptive backward
    pass, an iterative solver), whose systematic error (a solver's tolerance)
    is far larger than its scatter, ``min(1e3·scatter, sqrt(scatter))``."""
    visible = ratio > 1
    if not visible.any():
        return 0.0
    scatter = float(onp.max(rel[visible]))
    if scatter > RULE_NOISE_MAX:
        return 0.0
    return min(1e3 * scatter, float(onp.sqrt(scatter)))


def solver_slack(noise: NoiseModel) -> onp.ndarray:
    """sqrt of each output's relative unevenness, where f is measurably uneven."""
    from .noise import NOISY

    with onp.errstate(all="ignore"):
        rho = noise.coarse / onp.maximum(noise.scale, onp.finfo(float).tiny)
    uneven = noise.coarse > NOISY * onp.maximum(noise.floor, onp.finfo(float).tiny)
    return onp.where(uneven & onp.isfinite(rho), onp.sqrt(rho), 0.0)


def _scale_allowance(precision: float, A, N) -> onp.ndarray | float:
    """For an inexact rule: its precision relative to the size of the entries
    around each one (the largest of its row and column), since a solver's
    error is relative to the whole solution, not to each tiny sensitivity."""
    if not precision:
        return 0.0
    with onp.errstate(invalid="ignore"):
        big = onp.fmax(
            onp.abs(onp.where(onp.isfinite(A), A, 0.0)), onp.abs(onp.where(onp.isfinite(N), N, 0.0))
        )
    return precision * onp.maximum(big.max(axis=1, keepdims=True), big.max(axis=0, keepdims=True))


def _precision_note(rule: str, precision: float, what: str) -> str:
    return (
        f"the {rule} is not exactly linear in its {what} (as an adaptive or iterative "
        "backward pass makes it: an ODE adjoint, a solver with a tolerance), so it is "
        f"judged to ~{precision:.0e} relative to the size of the Jacobian around each "
        "entry; tighten the solver's tolerance to judge it more sharply."
    )


def forward_columns(p: Problem) -> tuple[onp.ndarray | None, list[str], str | None]:
    """The forward-mode Jacobian (m, n), the operations whose tangents came
    from their VJPs, and a note when forward mode could not run at all."""
    n, m = p.n, p.m
    zeros = [onp.zeros_like(v) for v in p.vs]
    cols = onp.zeros((m, n), complex)
    used: list[str] = []
    start = 0
    try:
        for k, v in enumerate(p.vs):
            basis = onp.zeros(v.size, v.dtype)
            for c in range(v.size):
                basis[c] = 1
                tangents = list(zeros)
                tangents[k] = basis
                _, jv, ops = trace_jvp(p.F, p.vs, tangents, fallback=True)
                # a real output's tangent must be real: keep any imaginary part to judge it
                cols[:, start + c] = onp.ravel(onp.asarray(jv, dtype=complex))
                used.extend(o for o in ops if o not in used)
                basis[c] = 0
            start += v.size
    except NotImplementedError as exc:
        return None, used, f"forward mode not checked: {exc}"
    if not onp.any(cols.imag):
        cols = cols.real.copy()
    return cols, used, None


def _fd(p: Problem, method: str, gen):
    x0 = p.x0
    y0 = p.evaluate_one(x0)
    if method == "complex_step":
        if p.rmap is None:
            raise ValueError(
                "method='complex_step' applies to f itself, not to its derivatives (order=2); "
                "use method='richardson' for second derivatives."
            )
        N, E, nfev = complex_step_derivatives(p.rmap, x0, y0, p.steps(method))
        return y0, N, E, onp.zeros(N.shape, onp.int8), nfev + 1, NoiseModel.quiet(y0.size)
    out_eps = onp.concatenate([onp.full(s.real_size, s.eps) for s in p.rows.sides])
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


def noise_notes(
    p: Problem, y0: onp.ndarray, noise: NoiseModel, kink_rows: frozenset = frozenset()
) -> list[str]:
    """Say so when f is far from smooth at the scale of the step, or noisy."""
    rel = noise.rel
    uneven = onp.flatnonzero(rel > 0)
    if not uneven.size:
        return []
    worst = uneven[onp.argmax(rel[uneven])]
    where = p.rows.label(int(worst)) + (
        f" and {uneven.size - 1} more output(s)" if uneven.size > 1 else ""
    )
    if noise.structured[worst] or int(worst) in kink_rows:
        return [
            f"f is uneven on scales finer than the step at {where}: a kink, a jump or an "
            "oscillation near the point, or an iterative solver's jitter. Steps there were "
            "shrunk until f looked smooth, entries on a kink are listed as such, and the rest "
            f"carry f's unevenness (~{rel[worst]:.0e} relative) in their FD error."
        ]
    return [
        f"f itself is only accurate to ~{rel[worst]:.0e} (relative) here, at {where}: an "
        "iterative solver or an adaptive integrator? The finite differences account for it, "
        "so entries are judged less sharply; tighten its tolerance to see more, or pass "
        "rtol= to judge deliberately."
    ]


def full_check(
    p: Problem, method: str, atol: Any, rtol: Any, gen, order: int, *, rule_name: str = "VJP"
) -> CheckReport:
    rows, cols = p.rows, p.cols
    m, n = p.m, p.n
    if m == 0 or n == 0:
        return empty_report(p, method, order, "full")
    tr = trace_vjp(p.F, p.vs)
    y_ad = onp.asarray(getval(tr.value))
    A = reverse_rows(tr, m, y_ad.dtype)
    ngrad = m
    eps = p.eps_matrix()
    atol_, rtol_m = tolerances(eps, atol, rtol)
    notes: list[str] = []

    # a VJP must be linear in its cotangent: unit cotangents alone cannot tell
    col_eps = eps.max(axis=0)
    lin_ratio, lin_rel, (u, ru) = linearity_gap(
        lambda w: _flat(tr.backward(w)), m, n, gen, y_ad.dtype, col_eps
    )
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

    fwd, fallback_ops, fwd_note = forward_columns(p)
    if fwd is not None:
        ngrad += n
    else:
        notes.append(fwd_note)

    y0, N, E, R, nfev, noise = _fd(p, method, gen)
    # where f is uneven, an entry known only to within its own size is not known
    with onp.errstate(invalid="ignore"):
        vague = (noise.rel[:, None] > 0) & (E > 0.5 * onp.maximum(onp.abs(N), onp.abs(A)))
        vague &= (N != 0) | (A != 0)
    E = onp.where(vague, onp.inf, E)
    R = onp.where(vague & (R == 0), 4, R)
    atol_rev = atol_ + _scale_allowance(vjp_precision, A, N)
    if vjp_precision:
        # an inexact rule over an f that is itself inexact (a solver at its tolerance):
        # the computed f's derivative is only defined to ~sqrt of f's relative accuracy
        atol_rev = atol_rev + _scale_allowance(1.0, A, N) * solver_slack(noise)[:, None]
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
        jvp_ratio, jvp_rel, (d, jd) = linearity_gap(
            lambda d: onp.ravel(
                onp.asarray(trace_jvp(p.F, p.vs, p.split(d), fallback=True)[1], dtype=complex)
            ),
            n,
            m,
            gen,
            onp.result_type(*p.vs),
            eps.max(axis=1),
        )
        ngrad += 3
        jvp_precision = max(
            rule_precision(jvp_ratio, jvp_rel), vjp_precision if fallback_ops else 0.0
        )
        rtol_fwd = onp.maximum(rtol_m, jvp_precision)
        if jvp_precision and not vjp_precision:
            notes.append(_precision_note("JVP", jvp_precision, "tangent"))
        atol_fwd = atol_ + _scale_allowance(jvp_precision, onp.abs(fwd), N)
        if jvp_precision:
            atol_fwd = (
                atol_fwd + _scale_allowance(1.0, onp.abs(fwd), N) * solver_slack(noise)[:, None]
            )
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
    worst = [
        make_entry(
            rows, cols, *onp.unravel_index(t, V.shape), A.flat[t], N.flat[t], E.flat[t], V.flat[t]
        )
        for t in order_idx
        if judged.flat[t] >= 0
    ]
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
    )


def empty_report(p: Problem, method: str, order: int, mode: str) -> CheckReport:
    """Nothing to compare: f's output (or the selected input) has no entries."""
    what = "f's output is empty" if p.m == 0 else "the selected inputs are empty"
    z = onp.zeros((p.m, p.n))
    return CheckReport(
        passed=True,
        analytic=z,
        numeric=z,
        abs_err=z,
        rel_err=z,
        fd_error=z,
        violation=z,
        worst=(),
        mismatches=(),
        rows=p.rows,
        cols=p.cols,
        order=order,
        mode=mode,
        method=method,
        dtype=p.dtype,
        nfev=2,
        ngrad=0,
        notes=(f"nothing to compare: {what} ({p.m} x {p.n} Jacobian).",),
        function=p.name,
        not_checked=p.not_checked,
    )


def diagnose_pattern(A, N, V, cols: Blocks) -> list[str]:
    """Name whole-block patterns of wrong entries: transposed, scaled, sign-flipped."""
    notes = []
    for name, sl in cols.slices.items():
        a, n, v = A[:, sl], N[:, sl], V[:, sl]
        if not onp.any(v > 1) or not (onp.all(onp.isfinite(a)) and onp.all(onp.isfinite(n))):
            continue
        scale = float(onp.max(onp.abs(n), initial=0.0))
        if scale == 0 or int(onp.sum(v > 1)) < 2:
            continue  # a pattern needs a scale and more than one wrong entry
        close = lambda p, q, s=scale: bool(onp.max(onp.abs(p - q), initial=0.0) <= 1e-6 * s)  # noqa: E731
        square = a.shape[0] == a.shape[1] and a.shape[0] > 1
        if square and close(a, n.T) and not close(n, n.T):
            notes.append(
                f"in the {name} block the analytic Jacobian is the transpose of the "
                "numeric one: a VJP that multiplies by A where it should use Aᵀ?"
            )
        elif close(a, -n) and scale > 0:
            notes.append(
                f"in the {name} block the analytic Jacobian is the numeric one with "
                "its sign flipped."
            )
        else:
            big = onp.abs(n) > 1e-3 * scale
            ratios = a[big] / n[big]
            if ratios.size > 1 and onp.ptp(ratios) <= 1e-6 * abs(ratios.mean()):
                clean = abs(ratios.mean() - 1) > 1e-3
                if clean:
                    notes.append(
                        f"in the {name} block the analytic Jacobian is {ratios.mean():.4g}x "
                        "the numeric one everywhere: a constant factor is wrong."
                    )
    return notes


def _kinks(p: Problem, bad, A, N, E, rtol, atol, noise, y0):
    """Entries whose right and left derivatives differ: kinks, not bugs.

    Each one-sided derivative is estimated at two step sizes, 64x apart, with
    errors from the rounding of f alone; it counts only where the two agree
    (a slope, not noise), and the two sides must then differ beyond both.
    """
    if not len(bad):
        return [], set(), 0
    columns = onp.array(sorted({int(j) for _, j in bad})[:200])
    x0 = p.x0
    spacing = p.spacing()
    quiet = NoiseModel(noise.resolved, noise.resolved, noise.floor, noise.scale)
    sides, nfev = {}, 0
    for method in ("forward", "backward"):
        base = p.steps(method)[columns]
        ests = []
        for factor in (2.0**6, 2.0**12):
            steps = exact_steps(x0[columns], base * factor, spacing[columns])
            d = directional_derivatives(
                p.batch,
                x0,
                y0,
                quiet,
                steps,
                columns=columns,
                method=method,
                adapt=False,
                coord_eps=p.coord_eps(),
            )
            nfev += d.nfev
            ests.append((d.est, d.err))
        (e1, r1), (e2, r2) = ests
        # a jump: the one-sided quotient scales like 1/h (64x between the steps)
        with onp.errstate(all="ignore"):
            jump = (onp.abs(e1 / e2 - 64.0) < 0.064) & (onp.abs(e1) > 0)
        # a slope: both steps agree, and the sharper of the two pins it down
        best = onp.where(r1 <= r2, e1, e2)
        r_best = onp.minimum(r1, r2)
        agree = ~jump & (onp.abs(e1 - e2) <= FD_SAFETY * (r1 + r2))
        agree &= r_best <= 0.25 * onp.maximum(onp.abs(e1), onp.abs(e2)) + onp.finfo(float).tiny
        sign = 1 if method == "forward" else -1
        size = onp.where(jump, e1 * base[:, None] * 2.0**6 * sign, 0.0)
        sides[method] = (best, onp.where(agree, r_best, onp.inf), size)
    kinks, kink_set = [], set()
    pos = {int(j): t for t, j in enumerate(columns)}
    (ef, rf, jf), (eb, rb, jb) = sides["forward"], sides["backward"]
    for i, j in bad:
        t = pos.get(int(j))
        if t is None:
            continue
        if jf[t, i] or jb[t, i]:
            size = jf[t, i] or jb[t, i]
            side = "right" if jf[t, i] else "left"
            e = make_entry(
                p.rows,
                p.cols,
                i,
                j,
                A[i, j],
                N[i, j],
                E[i, j],
                0.0,
                verdict=f"not continuous here: f jumps by about {abs(size):.3g} just {side} of x",
            )
            kinks.append(e)
            kink_set.add((int(i), int(j)))
            continue
        if not (onp.isfinite(rf[t, i]) and onp.isfinite(rb[t, i])):
            continue
        right, left = ef[t, i], eb[t, i]
        gap = abs(right - left)
        r = max(rtol[i, j] if onp.ndim(rtol) else rtol, KINK_RTOL)
        if gap > FD_SAFETY * (rf[t, i] + rb[t, i]) + r * max(abs(right), abs(left)) + atol:
            e = make_entry(
                p.rows,
                p.cols,
                i,
                j,
                A[i, j],
                N[i, j],
                E[i, j],
                0.0,
                verdict=f"not differentiable here: right derivative {right:.6g}, left {left:.6g}",
            )
            kinks.append(e)
            kink_set.add((int(i), int(j)))
    return kinks, kink_set, nfev
