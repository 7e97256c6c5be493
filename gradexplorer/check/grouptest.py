"""Group testing: the rows, then the columns, where a projection's failure comes from.

One directional difference gives ``(J d)_i`` for every row i, so the rows
where the VJP is wrong are found by halving the cotangent's support (VJPs
only); the columns of those rows by halving the direction's support (one
directional difference per test). Intermediate tests only steer the search:
every entry reported is judged alone, by the same rule as the full check."""

from __future__ import annotations

import numpy as onp

from ..fd.directional import directional_derivatives
from ..fd.noise import NoiseModel
from ..fd.reasons import Unresolvable
from .entries import make_entry
from .fastctx import Along, FastContext, allowed
from .judging import FD_SAFETY, RTOL_ULPS, coarse_stairs, judge
from .report import Entry
from .rounded import rest_fits, rounded_splits
from .stairs import across_stairs_columns, across_stairs_entries
from .verdicts import Comparison, Verdict

__all__ = ["forward_rows", "locate_entries", "locate_forward"]


def forward_rows(ctx: FastContext, jd: Along, jv: onp.ndarray) -> onp.ndarray:
    rt = ctx.rtol_rows()
    with onp.errstate(all="ignore"):
        bad = onp.abs(jv - jd.est) > allowed(jd.err, rt, onp.abs(jv), ctx.atol)
    return onp.flatnonzero(bad & onp.isfinite(jd.err))


def locate_entries(ctx: FastContext, u: onp.ndarray, jd: Along) -> list[Entry]:
    rows = _bisect_rows(ctx, u, jd)
    entries: list[Entry] = []
    if rows.size:
        A = onp.array([ctx.vjp(onp.eye(1, jd.est.size, i)[0]) for i in rows])
        # only the columns in [lo, hi): a NaN elsewhere in a row must not spread
        entries = _bisect_columns(
            ctx, rows, lambda dS, lo, hi: A[:, lo:hi] @ dS[lo:hi], Comparison.VJP, jd.d, jd
        )
    if not entries:
        entries = _columns_then_rows(ctx, u)
    return entries


def _bisect_rows(ctx: FastContext, u: onp.ndarray, jd: Along) -> onp.ndarray:
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
    abs_d = onp.abs(jd.d)
    scratch = onp.empty_like(abs_d)  # |r|, without a new array per node

    def node(lo, hi, r):
        w = u[lo:hi]
        analytic = float(r @ jd.d)
        numeric = float(w @ est[lo:hi])
        mag = float(onp.abs(r, out=scratch) @ abs_d)
        if hi - lo == 1:
            tol = allowed(abs(u[lo]) * err[lo], rt[lo], mag, ctx.atol)
            return resolved[lo] and not abs(analytic - numeric) <= tol
        # interior: errors of random sign add in quadrature (this only steers the search)
        e = w * err[lo:hi]
        tol = allowed(float(onp.sqrt(e @ e)), float(rt[lo:hi].max()), mag, ctx.atol)
        return not abs(analytic - numeric) <= tol  # NaN fails too

    def vjp_on(lo, hi):
        w = onp.zeros(m)
        w[lo:hi] = u[lo:hi]
        return ctx.vjp(w)

    stack = [(0, m, vjp_on(0, m))]
    while stack and len(found) < ctx.budget:
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
    if stack and len(found) >= ctx.budget:
        ctx.capped = True
    return onp.array(sorted(found), dtype=int)


#: Above this many inputs, a failing parent whose left half is tested lets the
#: right half be inferred (parent minus left) instead of differenced again.
INFER_ABOVE = 4096


def _bisect_columns(
    ctx: FastContext,
    rows: onp.ndarray,
    analytic_along,
    kind: str,
    d_full: onp.ndarray,
    whole: Along | None = None,
) -> list[Entry]:
    """Entries (i, j), i in rows, by halving the direction's support; each
    located column is then compared entry by entry."""
    n = ctx.x0.size
    rt = ctx.rtol_rows()[rows]
    found: list[Entry] = []
    cols_found = 0

    def measure(lo, hi, sharp=False):
        """Per row: the analytic-minus-numeric gap along d restricted to [lo, hi),
        its allowance, and whether Richardson measured it. Central differences (4
        evaluations) first; Richardson (8) only where their verdict is not clear by
        a factor of 3 either way: these tests only steer the search. Below a node
        that needed Richardson, straight to Richardson (``sharp``): a wrong entry's
        gap stays the same as the support halves, and so does central's noise."""
        dS = onp.zeros(n)
        dS[lo:hi] = d_full[lo:hi]
        if not sharp:
            node = _gap(ctx.fd(dS, outputs=rows, method="central"), lo, hi)
            gap, tol = node
            clear = onp.all(onp.abs(gap) > 3 * tol) | onp.all(onp.abs(gap) * 3 < tol)
            if clear and bool(onp.all(onp.isfinite(tol))):
                return node, False
        return _gap(ctx.fd(dS, outputs=rows), lo, hi), True

    def _gap(res, lo, hi):
        a = analytic_along(res.d, lo, hi)
        gap = a - res.est
        tol = allowed(res.err, rt, onp.abs(a), ctx.atol)
        known = onp.isfinite(res.err)
        return onp.where(known, gap, 0.0), onp.where(known, tol, onp.inf)

    def fails(node):
        gap, tol = node
        return bool(onp.any(~(onp.abs(gap) <= tol)))  # NaN fails too

    # the whole direction was measured already, for every row, by the projection
    top = Along(d_full, whole.est[rows], whole.err[rows]) if whole is not None else None
    stack = [(0, n, *((_gap(top, 0, n), False) if top is not None else measure(0, n)))]
    while stack and cols_found < ctx.budget:
        lo, hi, node, sharp = stack.pop()
        if not fails(node):
            continue
        if hi - lo == 1:
            new = _column_entries(ctx, rows, lo, analytic_along, kind)
            if new:
                cols_found += 1
                found.extend(new)
            continue
        mid = (lo + hi) // 2
        left, left_sharp = measure(lo, mid, sharp)
        right = None
        if n > INFER_ABOVE:
            # parent minus left: where only one of the two fails, it says which half
            # holds the failure; where both seem to, the right half is measured (a
            # second wrong column, or the two measurements' errors adding up)
            inferred = (node[0] - left[0], node[1] + left[1])
            if fails(inferred) != fails(left):
                right, right_sharp = inferred, left_sharp
        if right is None:
            right, right_sharp = measure(mid, hi, sharp)
        stack.append((mid, hi, right, right_sharp))
        stack.append((lo, mid, left, left_sharp))
    if stack and cols_found >= ctx.budget:
        ctx.capped = True
    return found


def _column_entries(ctx: FastContext, rows, j, analytic_along, kind) -> list[Entry]:
    """Rows of column j (among ``rows``) judged alone, with an exact-step FD column;
    where f has a kink along it, against its one-sided derivatives."""
    from ..fd.directional import exact_steps

    p = ctx.p
    spacing = p.spacing()
    step = exact_steps(ctx.x0[[j]], (ctx.scale[[j]] * ctx.base), spacing[[j]])
    res = directional_derivatives(
        p.evaluator,
        ctx.x0,
        ctx.y0,
        ctx.row_noise,
        step,
        columns=onp.array([j]),
        method=ctx.method,
        spacing=ctx.spacing,
        coord_eps=ctx.col_eps,
        out_eps=ctx.row_eps,  # an output's staircase, seen along e_j, is its rounding floor
    )
    ctx.cost.nfev += res.nfev
    e_j = onp.zeros(ctx.x0.size)
    e_j[j] = 1.0
    a = analytic_along(e_j, j, j + 1)
    # where the differences read 0 and the rule does not: f may sit on a stair
    claims = onp.zeros(ctx.y0.size, bool)
    claims[rows] = a != 0
    est, err, wide, used = across_stairs_columns(
        p, onp.array([j]), res.est[:1], res.err[:1], ctx.y0, claims
    )
    ctx.cost.nfev += used
    num, err = est[0][rows], err[0][rows]
    rt = ctx.rtol_rows()[rows]
    out = []
    viol = judge(a, num, err, rt, ctx.atol)  # inf where the analytic value is not finite
    kink = res.reason[0][rows] == Unresolvable.KINK
    # a slope read on an output uneven at the scale of the step: stairs beside a smooth
    # term, whose steps shrank onto a stair (as the full check's flats stage)
    shrunk = float(onp.max(res.steps[0])) < float(step[0]) / 4  # (onto a stair?)
    uneven = ctx.row_noise.structured[rows] | shrunk
    # (and any failing entry of a rule that rounds: its stairs may be too wide to make
    # f uneven at the step, x² + 2·f16(100 + 0.6·x))
    failing = (viol > 1) & (num != 0) & ~kink
    again = failing & (uneven | ctx.rounds | _rounding_rows(ctx, rows, failing & ~uneven, kind))
    seen = onp.zeros(len(rows), bool)  # (f seen on stairs along x_j within reach)
    if again.any():
        sub = onp.flatnonzero(again)
        num[sub], err[sub], unresolved, seen_sub, used = across_stairs_entries(
            p, j, onp.asarray(rows)[sub], num[sub], err[sub], ctx.y0, a[sub]
        )
        seen[sub] = seen_sub
        ctx.cost.nfev += used
        wide |= {(int(onp.asarray(rows)[k]), j) for k in sub[unresolved]}
        viol = judge(a, num, err, rt, ctx.atol)
    quantum = None if res.quantum is None else res.quantum[0][rows][:, None]
    stairs = coarse_stairs(num[:, None], a[:, None], quantum, step, ctx.y0[rows])[:, 0]
    for k, i in enumerate(rows):
        if (stairs[k] and viol[k] > 1) or (int(i), j) in wide:  # as the full check: not at all
            out.append(
                make_entry(
                    p.rows, p.cols, i, j, a[k], num[k], onp.inf, onp.nan, kind=kind,
                    verdict=Verdict.UNRESOLVABLE, reason=Unresolvable.STAIRCASE,
                )
            )  # fmt: skip
        elif kink[k]:
            r, l, e = res.right[0][i], res.left[0][i], res.side_err[0][i]
            excess = max(min(r, l) - a[k], a[k] - max(r, l), 0.0) / max(
                FD_SAFETY * e + rt[k] * max(abs(r), abs(l)) + ctx.atol, onp.finfo(float).tiny
            )
            verdict = Verdict.WRONG if excess > 1 else Verdict.RIGHT_AT_KINK
            out.append(
                make_entry(
                    p.rows, p.cols, i, j, a[k], num[k], err[k], excess if excess > 1 else 0.0,
                    kind=kind, verdict=verdict, reason=Unresolvable.KINK, one_sided=(r, l),
                )
            )  # fmt: skip
        elif viol[k] > 1 and seen[k] and _all_rounded(ctx, i, j, a[k], num[k], err[k], rt[k], kind):
            out.append(
                make_entry(
                    p.rows, p.cols, i, j, a[k], num[k], onp.inf, onp.nan, kind=kind,
                    verdict=Verdict.UNRESOLVABLE, reason=Unresolvable.STAIRCASE,
                )
            )  # fmt: skip
        elif viol[k] > 1:
            out.append(make_entry(p.rows, p.cols, i, j, a[k], num[k], err[k], viol[k], kind=kind))
    return out


def _row_splits(ctx: FastContext, i: int) -> list:
    """Row i's rule split into rounded and exact parts, once per check."""
    if i not in ctx.splits:
        ctx.splits[i] = rounded_splits(ctx.vjp, ctx.y0.size, [i], ctx.y0.dtype)[0]
    return ctx.splits[i]


def _rounding_rows(ctx: FastContext, rows, ask, kind) -> onp.ndarray:
    """Which of the rows ``ask`` marks send part of their rule through a rounding
    where the linearity probes saw none (a scalar output's two random cotangents can
    both round the same way: ``x² + 2·f16(100 + 0.6·x)`` at some seeds)."""
    out = onp.zeros(len(rows), bool)
    if ctx.rounds or kind is not Comparison.VJP:
        return out
    for k in onp.flatnonzero(ask):
        _, (every, err) = _row_splits(ctx, int(rows[k]))[:2]
        out[k] = bool(onp.any(onp.abs(every) > FD_SAFETY * err))
    return out


def _all_rounded(ctx: FastContext, i, j, a, num, err, rtol, kind) -> bool:
    """Whether a failing entry, where f was seen on stairs within reach, differs from
    the slope read by just its rule's part through a rounding (stairs too wide to
    measure it across), as the full check asks
    (:func:`~.rounded.settle_rounded_parts`): the VJP's at cotangent e_i, or the
    JVP's at tangent e_j."""
    if num == 0 or not onp.isfinite(err):
        return False
    if kind is Comparison.VJP:
        splits, at = _row_splits(ctx, int(i)), j
    elif kind is Comparison.JVP and ctx.rounds:
        splits, _ = rounded_splits(ctx.jvp, ctx.x0.size, [int(j)], ctx.x0.dtype)
        at = i
    else:
        return False
    parts = [(R[0, at], r_err[0, at]) for R, r_err in splits[1:]]
    return rest_fits(a, num, err, allowed(0.0, rtol, abs(a), ctx.atol), parts) is not None


def _columns_then_rows(ctx: FastContext, u: onp.ndarray) -> list[Entry]:
    """Fallback: columns where the projection fails, then each column's rows."""
    n, m = ctx.x0.size, u.size
    rn = ctx.row_noise
    proj = lambda v: onp.array([onp.sqrt((u * u) @ (v**2))])  # noqa: E731
    noise_u = NoiseModel(
        proj(rn.coarse), proj(rn.fine), proj(rn.floor), onp.array([abs(u @ ctx.y0)])
    )
    ev = ctx.p.evaluator.projected(u[None, :], keep=False)
    y0u = onp.array([u @ ctx.y0])
    rt = RTOL_ULPS * float(ctx.col_eps.max()) if ctx.rtol is None else ctx.rtol
    r = ctx.vjp(u)
    columns: list[int] = []
    stack = [(0, n)]
    while stack and len(columns) < ctx.budget:
        lo, hi = stack.pop()
        dS = onp.zeros(n)
        dS[lo:hi] = ctx.scale[lo:hi]
        res = ctx.fd(dS, evaluate=ev, noise=noise_u, y0=y0u)
        a = float(r @ res.d)
        mag = float(onp.abs(r) @ onp.abs(res.d))
        if not onp.isfinite(res.err[0]):
            continue
        if abs(a - res.est[0]) <= allowed(res.err[0], rt, mag, ctx.atol):
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
                _column_entries(ctx, rows, j, lambda d, lo, hi, A=A, j=j: A * d[j], Comparison.VJP)
            )
    return entries


def _rows_of_column(ctx: FastContext, j: int, col: Along) -> onp.ndarray:
    """Rows of column j where the VJP disagrees, by halving row weights."""
    m = col.est.size
    rt = ctx.rtol_rows()
    gen = onp.random.default_rng(j)
    found: list[int] = []
    stack = [(0, m)]
    while stack and len(found) < ctx.budget:
        lo, hi = stack.pop()
        w = onp.zeros(m)
        w[lo:hi] = gen.standard_normal(hi - lo)
        resolved = onp.isfinite(col.err[lo:hi])
        a = float(ctx.vjp(w)[j])
        num = float(w[lo:hi][resolved] @ col.est[lo:hi][resolved])
        e = w[lo:hi][resolved] * col.err[lo:hi][resolved]
        tol = onp.sqrt(e @ e) if hi - lo > 1 else abs(e).sum()
        if abs(a - num) > allowed(float(tol), float(rt[lo:hi].max()), abs(a), ctx.atol):
            if hi - lo == 1:
                found.append(lo)
            else:
                mid = (lo + hi) // 2
                stack.extend([(mid, hi), (lo, mid)])
    return onp.array(sorted(found), dtype=int)


def locate_forward(ctx: FastContext, bad_rows: onp.ndarray, d: onp.ndarray) -> list[Entry]:
    """Entries where forward mode (JVP) is wrong, in the rows that showed it."""
    rows = bad_rows[: ctx.budget]
    if bad_rows.size > ctx.budget:
        ctx.capped = True
    return _bisect_columns(ctx, rows, lambda dS, lo, hi: ctx.jvp(dS)[rows], Comparison.JVP, d)
