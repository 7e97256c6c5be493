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

from dataclasses import dataclass, field

import numpy as onp

from ._trace import getval, trace_jvp, trace_vjp
from .directional import directional_derivatives
from .fullcheck import _precision_note, full_check, linearity_gap, rule_precision
from .judging import FD_SAFETY, RTOL_ULPS, make_entry
from .noise import NoiseModel, probe_noise
from .problem import Problem
from .report import CheckReport, Entry

__all__ = ["fast_check", "N_PROJECTIONS", "MAX_LOCATED"]

N_PROJECTIONS = 2
#: Stop localizing after this many wrong rows / columns (a systematic bug hits them all).
MAX_LOCATED = 32
#: Fall back to the dense check when localization fails below this many entries.
AFFORDABLE_ENTRIES = 250_000


@dataclass
class _Cost:
    nfev: int = 0
    ngrad: int = 0


@dataclass
class _Dir:
    """``J d`` by finite differences for one direction, rows with errors."""

    d: onp.ndarray
    est: onp.ndarray
    err: onp.ndarray


@dataclass
class _Ctx:
    p: Problem
    tr: object
    x0: onp.ndarray
    y0: onp.ndarray
    noise: NoiseModel
    base: float
    scale: onp.ndarray
    row_eps: onp.ndarray
    col_eps: onp.ndarray
    atol: float
    rtol: float | None
    method: str
    spacing: onp.ndarray
    cost: _Cost = field(default_factory=_Cost)
    notes: list = field(default_factory=list)
    linear: bool = True

    def vjp(self, u: onp.ndarray) -> onp.ndarray:
        self.cost.ngrad += 1
        g = self.tr.backward(u.astype(self.y_dtype))
        return onp.concatenate([onp.ravel(onp.asarray(getval(t), dtype=float)) for t in g])

    @property
    def y_dtype(self):
        return onp.asarray(getval(self.tr.value)).dtype

    def jvp(self, d: onp.ndarray) -> onp.ndarray:
        self.cost.ngrad += 1
        _, jv, _ = trace_jvp(self.p.F, self.p.vs, self.p.split(d), fallback=True)
        return onp.ravel(onp.asarray(jv, dtype=float))

    @property
    def row_noise(self) -> NoiseModel:
        return self.noise.take(slice(0, self.y0.size))

    def fd(self, d: onp.ndarray, evaluate=None, noise=None, y0=None) -> _Dir:
        """J d by differences, settled as soon as it is consistent: these
        tests only steer the search, every reported entry is judged alone."""
        evaluate = evaluate or self.p.batch
        res = directional_derivatives(
            evaluate,
            self.x0,
            self.y0 if y0 is None else y0,
            self.row_noise if noise is None else noise,
            onp.array([self.base]),
            vectors=d[None, :],
            method=self.method,
            balance=onp.inf,
            spacing=self.spacing,
            coord_eps=self.col_eps,
        )
        self.cost.nfev += res.nfev
        return _Dir(res.vectors[0], res.est[0], res.err[0])

    def rtol_rows(self) -> onp.ndarray:
        return RTOL_ULPS * self.row_eps if self.rtol is None else onp.full(self.y0.size, self.rtol)


def _allowed(fd_err, rt, magnitude, atol):
    return FD_SAFETY * fd_err + rt * magnitude + atol


def fast_check(p: Problem, method: str, atol, rtol, gen, order: int) -> CheckReport:
    notes = [f"fast mode: {N_PROJECTIONS} random projections uᵀ J d, then group testing"]
    if p.m == 0 or p.n == 0:
        from .fullcheck import empty_report

        return empty_report(p, method, order, "fast")
    if method in ("complex_step", "forward", "backward"):
        notes.append(f"fast mode projects along random directions: {method} replaced by richardson")
        method = "richardson"
    x0 = p.x0
    y0 = p.evaluate_one(x0)
    m, n = y0.size, x0.size
    tr = trace_vjp(p.F, p.vs)
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

    # the VJP must be linear in its cotangent; a gap counts where the finite
    # differences confirm that the random-cotangent VJP is wrong
    lin, lin_rel, (u_l, ru_l) = linearity_gap(ctx.vjp, m, n, gen, ctx.y_dtype, col_eps)
    precision = rule_precision(lin, lin_rel)
    if precision:
        from .fullcheck import solver_slack

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
    )


def _extended(Y: onp.ndarray, U: onp.ndarray) -> onp.ndarray:
    """f's rows followed by its projections ``u_k·f`` (measured as outputs of their own)."""
    with onp.errstate(all="ignore"):
        return onp.hstack([Y, Y @ U.T])


def _nonlinear_entries(ctx: _Ctx, u, ru, columns) -> list[Entry]:
    """Columns where vjp(u) for a random u disagrees with uᵀ·(FD column)."""
    from .directional import exact_steps

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
    from .fullcheck import _kinks

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


def _forward_rows(ctx: _Ctx, jd: _Dir, jv: onp.ndarray) -> onp.ndarray:
    rt = ctx.rtol_rows()
    with onp.errstate(all="ignore"):
        bad = onp.abs(jv - jd.est) > _allowed(jd.err, rt, onp.abs(jv), ctx.atol)
    return onp.flatnonzero(bad & onp.isfinite(jd.err))


# ---------------------------------------------------------------- localization


def _locate(ctx: _Ctx, u: onp.ndarray, jd: _Dir) -> list[Entry]:
    rows = _bisect_rows(ctx, u, jd)
    entries: list[Entry] = []
    if rows.size:
        A = onp.array([ctx.vjp(onp.eye(1, jd.est.size, i)[0]) for i in rows])
        # only the columns in [lo, hi): a NaN elsewhere in a row must not spread
        entries = _bisect_columns(
            ctx, rows, lambda dS, lo, hi: A[:, lo:hi] @ dS[lo:hi], "vjp", jd.d
        )
    if not entries:
        entries = _columns_then_rows(ctx, u)
    return entries


def _bisect_rows(ctx: _Ctx, u: onp.ndarray, jd: _Dir) -> onp.ndarray:
    """Rows i where the VJP disagrees with (J d)_i, by halving the cotangent's support.

    The VJP is linear (checked first), so the right half's VJP is the
    parent's minus the left half's: one backward pass per level.
    """
    m = u.size
    rt = ctx.rtol_rows()
    found: list[int] = []
    resolved = onp.isfinite(jd.err)
    est = onp.where(resolved, jd.est, 0.0)
    err = onp.where(resolved, jd.err, 0.0)

    def node(lo, hi, r):
        w = u[lo:hi]
        analytic = float(r @ jd.d)
        numeric = float(w @ est[lo:hi])
        mag = float(onp.abs(r) @ onp.abs(jd.d))
        if hi - lo == 1:
            allowed = _allowed(abs(u[lo]) * err[lo], rt[lo], mag, ctx.atol)
            return resolved[lo] and not abs(analytic - numeric) <= allowed
        # interior: errors of random sign add in quadrature (this only steers the search)
        e = w * err[lo:hi]
        allowed = _allowed(float(onp.sqrt(e @ e)), float(rt[lo:hi].max()), mag, ctx.atol)
        return not abs(analytic - numeric) <= allowed  # NaN fails too

    def vjp_on(lo, hi):
        w = onp.zeros(m)
        w[lo:hi] = u[lo:hi]
        return ctx.vjp(w)

    stack = [(0, m, vjp_on(0, m))]
    while stack and len(found) < MAX_LOCATED:
        lo, hi, r = stack.pop()
        if not node(lo, hi, r):
            continue
        if hi - lo == 1:
            found.append(lo)
            continue
        mid = (lo + hi) // 2
        left = vjp_on(lo, mid)
        right = r - left if ctx.linear else vjp_on(mid, hi)
        stack.append((mid, hi, right))
        stack.append((lo, mid, left))
    if len(found) >= MAX_LOCATED:
        ctx.notes.append(f"stopped locating after {MAX_LOCATED} wrong rows (a systematic bug?)")
    return onp.array(sorted(found), dtype=int)


#: Above this many inputs, a failing parent whose left half is tested lets the
#: right half be inferred (parent minus left) instead of differenced again.
INFER_ABOVE = 4096


def _bisect_columns(
    ctx: _Ctx, rows: onp.ndarray, analytic_along, kind: str, d_full: onp.ndarray
) -> list[Entry]:
    """Entries (i, j), i in rows, by halving the direction's support; each
    located column is then compared entry by entry."""
    n = ctx.x0.size
    rt = ctx.rtol_rows()[rows]
    found: list[Entry] = []
    cols_found = 0

    def measure(lo, hi):
        """Per row: the analytic-minus-numeric gap along d restricted to [lo, hi),
        and its allowance."""
        dS = onp.zeros(n)
        dS[lo:hi] = d_full[lo:hi]
        res = ctx.fd(dS)
        a = analytic_along(res.d, lo, hi)
        gap = a - res.est[rows]
        tol = _allowed(res.err[rows], rt, onp.abs(a), ctx.atol)
        known = onp.isfinite(res.err[rows])
        return onp.where(known, gap, 0.0), onp.where(known, tol, onp.inf)

    def fails(node):
        gap, tol = node
        return bool(onp.any(~(onp.abs(gap) <= tol)))  # NaN fails too

    stack = [(0, n, measure(0, n))]
    while stack and cols_found < MAX_LOCATED:
        lo, hi, node = stack.pop()
        if not fails(node):
            continue
        if hi - lo == 1:
            new = _column_entries(ctx, rows, lo, analytic_along, kind)
            if new:
                cols_found += 1
                found.extend(new)
            continue
        mid = (lo + hi) // 2
        left = measure(lo, mid)
        right = None
        if n > INFER_ABOVE:
            inferred = (node[0] - left[0], node[1] + left[1])
            if fails(inferred):
                right = inferred
            elif fails(left):
                right = inferred  # the left half explains the parent
        if right is None:
            right = measure(mid, hi)
        stack.append((mid, hi, right))
        stack.append((lo, mid, left))
    if cols_found >= MAX_LOCATED:
        ctx.notes.append(f"stopped locating after {MAX_LOCATED} wrong columns (a systematic bug?)")
    return found


def _column_entries(ctx: _Ctx, rows, j, analytic_along, kind) -> list[Entry]:
    """Rows of column j (among ``rows``) judged alone, with an exact-step FD column."""
    from .directional import exact_steps

    p = ctx.p
    spacing = p.spacing()
    step = exact_steps(ctx.x0[[j]], (ctx.scale[[j]] * ctx.base), spacing[[j]])
    res = directional_derivatives(
        p.batch,
        ctx.x0,
        ctx.y0,
        ctx.row_noise,
        step,
        columns=onp.array([j]),
        method=ctx.method,
        spacing=ctx.spacing,
        coord_eps=ctx.col_eps,
    )
    ctx.cost.nfev += res.nfev
    e_j = onp.zeros(ctx.x0.size)
    e_j[j] = 1.0
    a = analytic_along(e_j, j, j + 1)
    num, err = res.est[0][rows], res.err[0][rows]
    rt = ctx.rtol_rows()[rows]
    out = []
    with onp.errstate(all="ignore"):
        allowed = _allowed(err, rt, onp.maximum(onp.abs(a), onp.abs(num)), ctx.atol)
        viol = onp.abs(a - num) / allowed
    for k, i in enumerate(rows):
        if onp.isfinite(err[k]) and not viol[k] <= 1:
            out.append(make_entry(p.rows, p.cols, i, j, a[k], num[k], err[k], viol[k], kind=kind))
    return out


def _columns_then_rows(ctx: _Ctx, u: onp.ndarray) -> list[Entry]:
    """Fallback: columns where the projection fails, then each column's rows."""
    n, m = ctx.x0.size, u.size
    rn = ctx.row_noise
    proj = lambda v: onp.array([onp.sqrt((u * u) @ (v**2))])  # noqa: E731
    noise_u = NoiseModel(
        proj(rn.coarse), proj(rn.fine), proj(rn.floor), onp.array([abs(u @ ctx.y0)])
    )
    ev = lambda X: (ctx.p.batch(X) @ u)[:, None]  # noqa: E731
    y0u = onp.array([u @ ctx.y0])
    rt = RTOL_ULPS * float(ctx.col_eps.max()) if ctx.rtol is None else ctx.rtol
    r = ctx.vjp(u)
    columns: list[int] = []
    stack = [(0, n)]
    while stack and len(columns) < MAX_LOCATED:
        lo, hi = stack.pop()
        dS = onp.zeros(n)
        dS[lo:hi] = ctx.scale[lo:hi]
        res = ctx.fd(dS, evaluate=ev, noise=noise_u, y0=y0u)
        a = float(r @ res.d)
        mag = float(onp.abs(r) @ onp.abs(res.d))
        if not onp.isfinite(res.err[0]):
            continue
        if abs(a - res.est[0]) <= _allowed(res.err[0], rt, mag, ctx.atol):
            continue
        if hi - lo == 1:
            columns.append(lo)
            continue
        mid = (lo + hi) // 2
        stack.extend([(mid, hi), (lo, mid)])
    entries: list[Entry] = []
    for j in columns:
        e_j = onp.zeros(n)
        e_j[j] = 1.0
        res = ctx.fd(e_j)
        rows = _rows_of_column(ctx, j, res)
        if rows.size:
            A = onp.array([ctx.vjp(onp.eye(1, m, i)[0])[j] for i in rows])
            entries.extend(
                _column_entries(ctx, rows, j, lambda d, lo, hi, A=A, j=j: A * d[j], "vjp")
            )
    return entries


def _rows_of_column(ctx: _Ctx, j: int, col: _Dir) -> onp.ndarray:
    """Rows of column j where the VJP disagrees, by halving row weights."""
    m = col.est.size
    rt = ctx.rtol_rows()
    gen = onp.random.default_rng(j)
    found: list[int] = []
    stack = [(0, m)]
    while stack and len(found) < MAX_LOCATED:
        lo, hi = stack.pop()
        w = onp.zeros(m)
        w[lo:hi] = gen.standard_normal(hi - lo)
        resolved = onp.isfinite(col.err[lo:hi])
        a = float(ctx.vjp(w)[j])
        num = float(w[lo:hi][resolved] @ col.est[lo:hi][resolved])
        e = w[lo:hi][resolved] * col.err[lo:hi][resolved]
        tol = onp.sqrt(e @ e) if hi - lo > 1 else abs(e).sum()
        if abs(a - num) > _allowed(float(tol), float(rt[lo:hi].max()), abs(a), ctx.atol):
            if hi - lo == 1:
                found.append(lo)
            else:
                mid = (lo + hi) // 2
                stack.extend([(mid, hi), (lo, mid)])
    return onp.array(sorted(found), dtype=int)


def _locate_forward(ctx: _Ctx, bad_rows: onp.ndarray, d: onp.ndarray) -> list[Entry]:
    """Entries where forward mode (JVP) is wrong, in the rows that showed it."""
    rows = bad_rows[:MAX_LOCATED]
    return _bisect_columns(ctx, rows, lambda dS, lo, hi: ctx.jvp(dS)[rows], "jvp", d)
