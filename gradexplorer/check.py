"""check_grads: every Jacobian entry judged against its own finite-difference error.

The function is first turned into a map between real vectors (complex sides
realified, inputs concatenated), so one checker covers several inputs,
several outputs, complex functions and second derivatives alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import autograd.numpy as anp
import numpy as onp

from ._args import (
    Side,
)
from ._trace import trace_vjp
from .fd import directional_derivatives, exact_steps
from .jacobians import dense_real_jacobians
from .problem import Problem, as_rng, build_problem  # noqa: F401
from .report import Blocks, CheckReport, Entry, verdict_for

__all__ = ["check_grads", "as_rng", "Problem"]

_MODES = ("auto", "full", "fast")
#: Above this many dense entries (or inputs), mode="auto" switches to the fast check.
AUTO_FAST_ENTRIES = 1_000_000
AUTO_FAST_INPUTS = 1_000
FD_SAFETY = 4.0


def default_tolerances(eps: float, scale: float, atol=None, rtol=None) -> tuple[float, float]:
    """``rtol = sqrt(eps)``; ``atol = 100·eps·max|J|`` (eps of the lowest precision)."""
    rtol = float(onp.sqrt(eps)) if rtol is None else float(rtol)
    atol = 100 * eps * scale if atol is None else float(atol)
    return atol, rtol


def judge(analytic, numeric, fd_error, atol, rtol) -> onp.ndarray:
    """violation = |a - n| / (4·fd_error + rtol·max(|a|, |n|) + atol); > 1 fails."""
    with onp.errstate(invalid="ignore", divide="ignore", over="ignore"):
        diff = onp.abs(analytic - numeric)
        allowed = FD_SAFETY * fd_error + rtol * onp.maximum(onp.abs(analytic), onp.abs(numeric))
        allowed = allowed + atol
        v = onp.where(allowed > 0, diff / allowed, onp.where(diff > 0, onp.inf, 0.0))
    v[~(onp.isfinite(analytic) & onp.isfinite(numeric))] = onp.inf
    return v


def make_entry(p: Problem, rows: Blocks, cols: Blocks, i, j, a, n, e, v, suffix="") -> Entry:
    _, rside, ri = rows.locate(i)
    b, cside, cj = cols.locate(j)
    return Entry(
        wrt=int(p.argnums[b]),
        out_index=rside.index(ri),
        in_index=cside.index(cj),
        analytic=float(a),
        numeric=float(n),
        abs_err=float(abs(a - n)),
        fd_error=float(e),
        label=f"{rside.label(ri)} / {cside.label(cj)}{suffix}",
        violation=float(v),
        row=int(i),
        col=int(j),
        verdict=verdict_for(float(v), float(a), float(n), float(e)),
    )


def check_grads(
    f: Callable,
    *args: Any,
    wrt: Any = None,
    order: int = 1,
    mode: str = "auto",
    atol: float | None = None,
    rtol: float | None = None,
    rng: Any = None,
    method: str = "richardson",
    step: float | None = None,
    **kwargs: Any,
) -> CheckReport:
    """Check f's derivatives against finite differences, entry by entry.

    Parameters
    ----------
    f : callable
        Written with ``autograd.numpy``; may return one array or a list.
    *args
        The point (keyword arguments after the options go to f).
    wrt : int, str, sequence of them, or None
        Inputs to check (None: every float or complex argument).
    order : {1, 2}
        2 also checks second derivatives: the Hessian of a scalar f, or the
        Jacobian of the VJP with a random cotangent (the Hessian of u·f).
    mode : {"auto", "full", "fast"}
        ``full`` builds both Jacobians; ``fast`` compares random projections
        and, on failure, locates the wrong entries by group testing without
        building them. ``auto`` picks fast for large problems.
    atol, rtol : float, optional
        Added to the FD error estimate; defaults ``100·eps·max|J|`` and
        ``sqrt(eps)`` of the lowest precision involved.
    rng : Generator, RandomState or int, optional
        For the random projections and cotangents.
    method : str
        The finite-difference method (see :func:`numeric_jacobian`).
    step : float, optional
        A fixed step for every input instead of the per-dtype, per-scale default.

    Returns
    -------
    CheckReport

    Examples
    --------
    >>> import autograd.numpy as anp
    >>> check_grads(lambda x: anp.sin(x) * x, anp.linspace(0.1, 1.0, 4)).passed
    True
    """
    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2; got {order!r}.")
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {list(_MODES)}; got {mode!r}.")
    gen = as_rng(rng)
    from .fd import METHODS

    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}; got {method!r}.")
    if step is not None and not (onp.isfinite(step) and step > 0):
        raise ValueError(f"step must be a positive finite float; got {step!r}.")
    p = build_problem(f, args, kwargs, wrt)
    p.step = step
    n = sum(v.size for v in p.vs)
    m = sum(s.real_size for s in p.out_sides)
    chosen = mode
    if mode == "auto":
        chosen = "fast" if (n > AUTO_FAST_INPUTS or n * m > AUTO_FAST_ENTRIES) else "full"
    first = _check_problem(p, chosen, method, atol, rtol, gen, order=1)
    if order == 1:
        return first
    q = second_order_problem(p, gen)
    second = _check_problem(q, chosen, method, atol, rtol, gen, order=2)
    return _with(second, first_order=first, passed=first.passed and second.passed)


def _with(report: CheckReport, **changes) -> CheckReport:
    from dataclasses import replace

    return replace(report, **changes)


def second_order_problem(p: Problem, gen: onp.random.Generator) -> Problem:
    """The problem ``x -> grad(u·F)(x)``: its Jacobian is the Hessian of u·F."""
    m = sum(s.real_size for s in p.out_sides)
    scalar = m == 1
    u = onp.ones(1) if scalar else gen.standard_normal(m)
    F = p.F
    k = len(p.vs)

    def G(*vs):
        tr = trace_vjp(lambda *ws: anp.sum(F(*ws) * u), vs, {}, tuple(range(k)))
        return anp.concatenate([anp.ravel(g) for g in tr.backward(1.0)])

    prefix = "d" + ("y" if scalar and len(p.out_sides) == 1 else "(u·y)")
    rows = [Side(f"{prefix}/d{s.name}", s.shape, s.complex, s.dtype) for s in p.in_sides]
    return Problem(G, p.vs, p.argnums, p.in_sides, rows, p.eps, p.name, p.step)


def _check_problem(p, mode, method, atol, rtol, gen, order) -> CheckReport:
    if mode == "fast":
        from .grouptest import fast_check

        return fast_check(p, method, atol, rtol, gen, order)
    return full_check(p, method, atol, rtol, order)


def full_check(p: Problem, method: str, atol, rtol, order: int) -> CheckReport:
    rows, cols = Blocks(tuple(p.out_sides)), Blocks(tuple(p.in_sides))
    k = len(p.vs)
    y0, mats = dense_real_jacobians(p.F, p.vs, {}, tuple(range(k)), "rev")
    A = onp.hstack(mats).astype(float)
    ngrad = A.shape[0]
    fwd = None
    try:
        _, fmats = dense_real_jacobians(p.F, p.vs, {}, tuple(range(k)), "fwd")
        fwd = onp.hstack(fmats).astype(float)
        ngrad += fwd.shape[1]
    except NotImplementedError:
        pass
    x0 = p.x0
    y0 = onp.asarray(y0, dtype=float)
    steps = exact_steps(x0, p.steps(method))
    if method == "complex_step":
        from .fd import complex_step_derivatives

        N, E, nfev = complex_step_derivatives(p.realmap(), x0, steps)
    else:
        est, err, nfev = directional_derivatives(
            p.realmap().batch, x0, None, x0.size, steps, method, y0, x0.dtype
        )
        N, E = est.T, err.T
    scale = float(onp.max(onp.abs(N[onp.isfinite(N)]), initial=0.0))
    atol_, rtol_ = default_tolerances(p.eps, scale, atol, rtol)
    V = judge(A, N, E, atol_, rtol_)
    notes = []
    entries_fwd = []
    if fwd is not None:
        Vf = judge(fwd, N, E, atol_, rtol_)
        only_fwd = onp.argwhere((Vf > 1) & (V <= 1))
        if len(only_fwd):
            notes.append(
                f"forward mode (JVP) disagrees with the FD at {len(only_fwd)} entries where "
                "reverse mode (VJP) is right: a defjvp rule is wrong."
            )
            entries_fwd = [
                make_entry(p, rows, cols, i, j, fwd[i, j], N[i, j], E[i, j], Vf[i, j], " [fwd]")
                for i, j in only_fwd
            ]
    else:
        notes.append("forward mode not checked: an operation has no JVP rule.")
    bad = onp.argwhere(V > 1)
    kinks, kink_set = _kinks(p, bad, A, N, E, atol_, rtol_, rows, cols)
    nfev += 2 * len({j for _, j in bad[:200]}) if len(bad) else 0
    mism = [
        make_entry(p, rows, cols, i, j, A[i, j], N[i, j], E[i, j], V[i, j])
        for i, j in bad
        if (int(i), int(j)) not in kink_set
    ] + entries_fwd
    mism.sort(key=lambda e: -e.violation if onp.isfinite(e.violation) else -onp.inf)
    order_idx = onp.argsort(-onp.nan_to_num(V, posinf=onp.finfo(float).max), axis=None)[:10]
    worst = [
        make_entry(
            p,
            rows,
            cols,
            *onp.unravel_index(t, V.shape),
            A.flat[t],
            N.flat[t],
            E.flat[t],
            V.flat[t],
        )
        for t in order_idx
    ]
    notes.extend(diagnose_pattern(A, N, V, cols))
    unresolved = int(onp.sum(onp.isinf(E) & onp.isfinite(A) & onp.isfinite(N)))
    if unresolved:
        notes.append(
            f"{unresolved} entr{'y' if unresolved == 1 else 'ies'} could not be resolved by "
            "finite differences (f is too ill-conditioned or oscillates too fast here): "
            "neither passed nor failed; check them at another point."
        )
    if kinks:
        notes.append(
            f"{len(kinks)} entr{'y is' if len(kinks) == 1 else 'ies are'} at a kink (one-sided "
            "derivatives differ): not differentiable here, so not counted as gradient bugs."
        )
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
        rtol=rtol_,
        nfev=int(nfev) + 2,
        ngrad=int(ngrad),
        kinks=tuple(kinks),
        notes=tuple(notes),
        function=p.name,
    )


def diagnose_pattern(A, N, V, cols: Blocks) -> list[str]:
    """Name whole-block patterns of wrong entries: transposed, scaled, sign-flipped."""
    notes = []
    for name, sl in cols.slices.items():
        a, n, v = A[:, sl], N[:, sl], V[:, sl]
        if not onp.any(v > 1) or not (onp.all(onp.isfinite(a)) and onp.all(onp.isfinite(n))):
            continue
        scale = float(onp.max(onp.abs(n), initial=0.0)) or 1.0
        close = lambda p, q, s=scale: bool(onp.max(onp.abs(p - q), initial=0.0) <= 1e-6 * s)  # noqa: E731
        if a.shape[0] == a.shape[1] and close(a, n.T):
            notes.append(
                f"in the {name} block the analytic Jacobian is the transpose of the "
                "numeric one: a VJP that multiplies by A where it should use Aᵀ?"
            )
        elif close(a, -n):
            notes.append(
                f"in the {name} block the analytic Jacobian is the numeric one with "
                "its sign flipped."
            )
        else:
            big = onp.abs(n) > 1e-3 * scale
            ratios = a[big] / n[big]
            if ratios.size and onp.ptp(ratios) <= 1e-6 * abs(ratios.mean()):
                notes.append(
                    f"in the {name} block the analytic Jacobian is {ratios.mean():.4g}x "
                    "the numeric one everywhere: a constant factor is wrong."
                )
    return notes


def _kinks(p: Problem, bad, A, N, E, atol, rtol, rows, cols):
    """Failing entries whose left and right derivatives differ: kinks, not bugs."""
    if not len(bad):
        return [], set()
    columns = sorted({int(j) for _, j in bad})[:200]
    x0 = p.x0
    y0 = onp.asarray(p.F(*p.vs), dtype=float)
    gmap = p.realmap().batch
    one_sided = {}
    for method in ("forward", "backward"):
        steps = exact_steps(x0, p.steps(method))
        dirs = [onp.eye(1, x0.size, j, dtype=x0.dtype)[0] for j in columns]
        est, err, _ = directional_derivatives(
            gmap,
            x0,
            dirs.__getitem__,
            len(columns),
            onp.array([steps[j] for j in columns]),
            method,
            y0,
            x0.dtype,
        )
        one_sided[method] = (est, err)
    kinks, kink_set = [], set()
    pos = {j: t for t, j in enumerate(columns)}
    (ef, rf), (eb, rb) = one_sided["forward"], one_sided["backward"]
    for i, j in bad:
        t = pos.get(int(j))
        if t is None:
            continue
        right, left = ef[t, i], eb[t, i]
        gap = abs(right - left)
        if gap > FD_SAFETY * (rf[t, i] + rb[t, i]) + rtol * max(abs(right), abs(left)) + atol:
            e = make_entry(p, rows, cols, i, j, A[i, j], N[i, j], E[i, j], 0.0)
            verdict = f"not differentiable here: right derivative {right:.6g}, left {left:.6g}"
            kinks.append(_replace_verdict(e, verdict))
            kink_set.add((int(i), int(j)))
    return kinks, kink_set


def _replace_verdict(e: Entry, verdict: str) -> Entry:
    from dataclasses import replace

    return replace(e, verdict=verdict)
