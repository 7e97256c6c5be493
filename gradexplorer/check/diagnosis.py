"""Reading a check's numbers: kinks and jumps, block patterns, f's own noise, empty problems."""

from __future__ import annotations

import numpy as onp

from ..fd.directional import directional_derivatives, exact_steps
from ..fd.noise import NoiseModel
from .judging import FD_SAFETY, make_entry
from .problem import Problem
from .report import Blocks, CheckReport

#: One-sided derivatives closer than this (relative) are not called a kink.
KINK_RTOL = 1e-6


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
        f"f itself is only accurate to ~{rel[worst]:.0e} (relative) here, at {where}, far "
        "below its precision: a small difference of large terms (cancellation), an "
        "iterative solver or an adaptive integrator. The finite differences account for "
        "it, so entries there are judged less sharply; a solver's tolerance can be "
        "tightened to see more, or pass rtol= to judge deliberately."
    ]


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
        verdict = None
        if jf[t, i] or jb[t, i]:
            size = jf[t, i] or jb[t, i]
            side = "right" if jf[t, i] else "left"
            verdict = (
                f"jump, not continuous here: f jumps by about {abs(size):.3g} just {side} of x"
            )
        elif onp.isfinite(rf[t, i]) and onp.isfinite(rb[t, i]):
            right, left = ef[t, i], eb[t, i]
            r = max(rtol[i, j] if onp.ndim(rtol) else rtol, KINK_RTOL)
            allowed = FD_SAFETY * (rf[t, i] + rb[t, i]) + r * max(abs(right), abs(left)) + atol
            if abs(right - left) > allowed:
                verdict = (
                    f"kink, not differentiable here: right derivative {right:.6g}, left {left:.6g}"
                )
        if verdict is not None:
            kinks.append(
                make_entry(p.rows, p.cols, i, j, A[i, j], N[i, j], E[i, j], 0.0, verdict=verdict)
            )
            kink_set.add((int(i), int(j)))
    return kinks, kink_set, nfev
