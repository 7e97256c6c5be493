"""Fast checking: random projections, then group testing to locate wrong entries.

The difference ``E = J_analytic - J_numeric`` is zero when the derivative is
right. With random u and d, ``uᵀ E d`` is nonzero (with probability one)
whenever E is, at the cost of one VJP and one directional finite difference.
Restricting d to a block of columns asks "is anything wrong in these
columns?"; halving blocks finds k wrong columns in O(k log n) directional
differences. Each wrong column is then compared entry by entry.
"""

from __future__ import annotations

import numpy as onp

from ._trace import trace_jvp, trace_vjp
from .check import FD_SAFETY, Problem, default_tolerances, make_entry
from .fd import directional_derivatives, exact_steps
from .report import Blocks, CheckReport

__all__ = ["fast_check"]

#: Stop localizing after this many wrong columns (a systematic bug hits them all).
MAX_LOCATED_COLUMNS = 20
N_PROJECTIONS = 2


class _Counter:
    def __init__(self):
        self.nfev = 0
        self.ngrad = 0


def fast_check(p: Problem, method: str, atol, rtol, gen, order: int) -> CheckReport:
    if method == "complex_step":  # projections need a difference scheme; use the default
        method = "richardson"
    rows, cols = Blocks(tuple(p.out_sides)), Blocks(tuple(p.in_sides))
    x0 = p.x0
    k = len(p.vs)
    cost = _Counter()
    tr = trace_vjp(p.F, p.vs, {}, tuple(range(k)))
    y0 = onp.asarray(tr.value, dtype=float)
    m = y0.size
    gmap = p.realmap()
    scale_x = onp.abs(p.steps(method))  # per-coordinate step: the input's own scale
    base = float(onp.max(scale_x)) if scale_x.size else 1.0
    notes = [f"fast mode: {N_PROJECTIONS} random projections uᵀ J d"]
    failing = None
    for _ in range(N_PROJECTIONS):
        u = gen.standard_normal(m)
        d = gen.standard_normal(x0.size) * scale_x / base
        r = onp.concatenate([onp.ravel(g) for g in tr.backward(u.reshape(y0.shape))])
        cost.ngrad += 1
        diff, allowed = _projection_gap(gmap, x0, y0, u, d, r, base, method, p, atol, rtol, cost)
        if abs(diff) > allowed:
            failing = (u, d, r, diff, allowed)
            break
    if failing is None:
        return _report(p, rows, cols, (), order, method, cost, notes, passed=True)
    u, d, r, diff, allowed = failing
    bad_cols = _bisect_columns(
        gmap, x0, y0, u, d, r, base, method, p, atol, rtol, cost, diff, allowed
    )
    notes.append(
        f"projection failed (|uᵀ(J_ad - J_fd)d| = {abs(diff):.3g} > {allowed:.3g}); group "
        f"testing located {len(bad_cols)} wrong column(s)"
        + (f" (stopped at {MAX_LOCATED_COLUMNS})" if len(bad_cols) >= MAX_LOCATED_COLUMNS else "")
    )
    entries = []
    steps = exact_steps(x0, p.steps(method))
    for j in bad_cols:
        entries.extend(
            _column_entries(
                p, tr, gmap, x0, y0, steps[j], j, method, atol, rtol, rows, cols, cost, notes
            )
        )
    entries.sort(key=lambda e: -e.violation)
    if not entries:
        notes.append(
            "no single entry stands out: the error is spread thin over many entries, "
            "or only forward mode is wrong; run mode='full' to see it."
        )
    return _report(p, rows, cols, tuple(entries), order, method, cost, notes, passed=False)


def _projection_gap(gmap, x0, y0, u, d, r, base, method, p, atol, rtol, cost, mask=None):
    """``uᵀ J_ad d - uᵀ J_fd d`` (restricted to mask) and the allowed gap."""
    dd = d if mask is None else onp.where(mask, d, 0.0)
    analytic = float(r @ dd)
    uy0 = onp.array([float(u @ y0)])
    est, err, nfev = directional_derivatives(
        lambda P: (gmap.batch(P) @ u)[:, None],
        x0,
        lambda _: dd.astype(x0.dtype),
        1,
        onp.array([base]),
        method,
        uy0,
        x0.dtype,
    )
    cost.nfev += nfev
    numeric, fd_err = float(est[0, 0]), float(err[0, 0])
    # Per-entry AD errors of random sign add like a 2-norm, not a 1-norm.
    terms = r * dd
    magnitude = float(onp.sqrt(terms @ terms))
    atol_, rtol_ = default_tolerances(p.eps, magnitude, atol, rtol)
    allowed = FD_SAFETY * fd_err + rtol_ * max(magnitude, abs(numeric)) + atol_
    return analytic - numeric, allowed


def _bisect_columns(gmap, x0, y0, u, d, r, base, method, p, atol, rtol, cost, diff, allowed):
    n = x0.size
    found = []
    stack = [(0, n, diff, allowed)]
    while stack and len(found) < MAX_LOCATED_COLUMNS:
        lo, hi, D, A = stack.pop()
        if abs(D) <= A:
            continue
        if hi - lo == 1:
            found.append(lo)
            continue
        mid = (lo + hi) // 2
        mask = onp.zeros(n, bool)
        mask[lo:mid] = True
        DL, AL = _projection_gap(gmap, x0, y0, u, d, r, base, method, p, atol, rtol, cost, mask)
        # The right half's gap follows from the parent's without another evaluation,
        # unless that inference is too blurred to tell (neither half stands out).
        DR, AR = D - DL, A + AL
        if abs(DL) <= AL and abs(DR) <= AR:
            DR, AR = _projection_gap(
                gmap,
                x0,
                y0,
                u,
                d,
                r,
                base,
                method,
                p,
                atol,
                rtol,
                cost,
                ~mask & (onp.arange(n) < hi) & (onp.arange(n) >= mid),
            )
        stack.append((mid, hi, DR, AR))
        stack.append((lo, mid, DL, AL))
    return sorted(found)


def _column_entries(p, tr, gmap, x0, y0, step, j, method, atol, rtol, rows, cols, cost, notes):
    """The wrong entries of column j: the numeric column from one directional
    difference, the reverse-mode rows located by halving with VJPs."""
    from .check import judge

    e_j = onp.zeros(x0.size, x0.dtype)
    e_j[j] = 1
    est, err, nfev = directional_derivatives(
        gmap.batch, x0, lambda _: e_j, 1, onp.array([step]), method, y0, x0.dtype
    )
    cost.nfev += nfev
    numeric, fd_err = est[0], err[0]
    scale = float(onp.max(onp.abs(numeric), initial=0.0))
    atol_, rtol_ = default_tolerances(p.eps, scale, atol, rtol)

    def vjp_entry(weights):
        cost.ngrad += 1
        g = tr.backward(weights.reshape(y0.shape))
        return float(onp.concatenate([onp.ravel(t) for t in g])[j])

    entries = []
    stack = [(0, y0.size)]
    while stack:
        lo, hi = stack.pop()
        if hi - lo == 1:
            a = vjp_entry(onp.eye(1, y0.size, lo)[0])
            v = judge(onp.array([a]), numeric[lo : lo + 1], fd_err[lo : lo + 1], atol_, rtol_)[0]
            if v > 1:
                entries.append(make_entry(p, rows, cols, lo, j, a, numeric[lo], fd_err[lo], v))
            continue
        w = onp.zeros(y0.size)
        w[lo:hi] = onp.random.default_rng(lo * 7919 + hi).standard_normal(hi - lo)
        gap = abs(vjp_entry(w) - float(w @ numeric))
        allowed = float(onp.abs(w) @ (FD_SAFETY * fd_err + rtol_ * onp.abs(numeric) + atol_))
        if gap > allowed:
            mid = (lo + hi) // 2
            stack.extend([(mid, hi), (lo, mid)])
    _check_forward_column(p, e_j, numeric, fd_err, atol_, rtol_, j, cost, notes)
    return entries


def _check_forward_column(p, e_j, numeric, fd_err, atol, rtol, j, cost, notes):
    """Forward mode, where JVP rules exist, is judged on the same column."""
    from .check import judge

    try:
        _, col = trace_jvp(p.F, p.vs, {}, tuple(range(len(p.vs))), p.split(e_j))
    except NotImplementedError:
        return
    cost.ngrad += 1
    v = judge(onp.asarray(col, dtype=float).ravel(), numeric, fd_err, atol, rtol)
    if onp.any(v > 1):
        count = int(onp.sum(v > 1))
        notes.append(
            f"forward mode (JVP) is also wrong in column {Blocks(tuple(p.in_sides)).label(j)} "
            f"at {count} entr{'y' if count == 1 else 'ies'}."
        )


def _report(p, rows, cols, entries, order, method, cost, notes, passed):
    return CheckReport(
        passed=passed,
        analytic=None,
        numeric=None,
        abs_err=None,
        rel_err=None,
        fd_error=None,
        violation=None,
        worst=entries[:10],
        mismatches=entries,
        rows=rows,
        cols=cols,
        order=order,
        mode="fast",
        method=method,
        dtype=p.dtype,
        nfev=cost.nfev + 2,
        rtol=float(onp.sqrt(p.eps)),
        ngrad=cost.ngrad,
        notes=tuple(notes),
        function=p.name,
    )
