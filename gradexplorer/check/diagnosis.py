"""Reading a check's numbers: block patterns, f's own noise and staircases, when a
check is inconclusive, empty problems."""

from __future__ import annotations

import numpy as onp

from ..fd.noise import NoiseModel
from .options import Options
from .problem import Problem
from .report import Blocks, CheckReport, Outcome
from .verdicts import Verdict

__all__ = [
    "noise_notes", "staircase_notes", "empty_report", "diagnose_pattern", "inconclusive_reason",
    "domain_notes",
    "INCONCLUSIVE_SHARE", "INCONCLUSIVE_BLOCK",
]  # fmt: skip

#: Unresolvable entries above this share of all entries make a check inconclusive,
INCONCLUSIVE_SHARE = 0.05
#: and so do those above this share of one output-by-input block.
INCONCLUSIVE_BLOCK = 0.5


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


def empty_report(p: Problem, opts: Options, mode: str) -> CheckReport:
    """Nothing to compare: f's output (or the selected input) has no entries."""
    what = "f's output is empty" if p.m == 0 else "the selected inputs are empty"
    z = onp.zeros((p.m, p.n))
    method, order = opts.method, opts.order
    return CheckReport(
        outcome=Outcome.PASSED,
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


#: A staircase is worth a note when it is this many times coarser than the output's ulp.
NOTABLE_STAIRS = 2.0**20


def staircase_notes(p: Problem, noise: NoiseModel) -> list[str]:
    """Name the outputs that move in quanta far coarser than their precision
    (more than 20 bits lost: a finer grid is ordinary cancellation)."""
    if noise.quantum is None:
        return []
    out_eps = onp.concatenate([onp.full(s.real_size, s.eps) for s in p.rows.sides])
    notable = noise.quantum >= NOTABLE_STAIRS * out_eps * noise.scale
    stairs = onp.flatnonzero(notable & (noise.quantum > 0))
    if not stairs.size:
        return []
    worst = stairs[onp.argmax(noise.quantum[stairs])]
    where = p.rows.label(int(worst)) + (
        f" and {stairs.size - 1} more output(s)" if stairs.size > 1 else ""
    )
    return [
        f"f moves in quanta of {noise.quantum[worst]:.2g} at {where} (a rounding staircase: "
        "the output is a small difference of large terms, or passes through a lower-precision "
        "value). The steps were kept wide enough to span many quanta, and each entry's FD "
        "error counts the quantum."
    ]


def inconclusive_reason(
    p: Problem, verdicts: onp.ndarray, settled=None, analytic: onp.ndarray | None = None
) -> str:
    """Why the entries finite differences could not resolve may hide a wrong
    block (empty when they cannot): more than :data:`INCONCLUSIVE_BLOCK` of an
    output-by-input block, a whole output or input, or more than
    :data:`INCONCLUSIVE_SHARE` of all entries (three at least), other than in
    blocks ``settled`` (by the Taylor test); or, given the ``analytic``
    Jacobian, more than that share of the outputs (or inputs) whose every
    nonzero derivative is unresolved (a diagonal Jacobian none of whose
    diagonal could be resolved: only its zeros were checked)."""
    unresolved = verdicts == Verdict.UNRESOLVABLE.code
    total = int(unresolved.sum())
    if not total:
        return ""
    open_ = unresolved.copy()
    for rname, rs in p.rows.slices.items():
        for cname, cs in p.cols.slices.items():
            if (rname, cname) in (settled or set()):
                open_[rs, cs] = False
    where = []
    for rname, rs in p.rows.slices.items():
        for cname, cs in p.cols.slices.items():
            block = open_[rs, cs]
            if block.size and block.mean() > INCONCLUSIVE_BLOCK:
                where.append(f"{rname} / {cname} ({block.mean():.0%})")
    rows = onp.flatnonzero(onp.all(open_, axis=1))
    cols = onp.flatnonzero(onp.all(open_, axis=0))
    where += [f"every entry of {p.rows.label(int(i))}" for i in rows[:2]]
    where += [f"every entry of {p.cols.label(int(j))}" for j in cols[:2]]
    if analytic is not None:
        where += _unchecked_lines(p, open_, analytic)
    many = open_.sum() >= 3 and open_.mean() > INCONCLUSIVE_SHARE
    if not where and not many:
        return ""
    detail = f", including {'; '.join(where[:4])}" if where else ""
    return (
        f"{total} of {unresolved.size} entries ({total / unresolved.size:.0%}) could not be "
        f"resolved by finite differences{detail}: a wrong entry there would go unseen. Check "
        "at another point, pass reseed= if f draws random numbers, or judge those inputs "
        "with gx.taylor_test."
    )


def _unchecked_lines(p: Problem, open_: onp.ndarray, analytic: onp.ndarray) -> list[str]:
    """Outputs (inputs) whose derivatives were checked only where they are 0, when
    more than :data:`INCONCLUSIVE_SHARE` of them are."""
    nonzero = ~(analytic == 0)  # NaN too
    out = []
    for axis, side, kind in ((1, p.rows, "output"), (0, p.cols, "input")):
        bare = onp.any(open_ & nonzero, axis=axis) & ~onp.any(~open_ & nonzero, axis=axis)
        if bare.sum() and bare.mean() > INCONCLUSIVE_SHARE:
            first = side.label(int(onp.flatnonzero(bare)[0]))
            out.append(f"every nonzero derivative of {bare.sum()} {kind}(s) such as {first}")
    return out


def domain_notes(p: Problem) -> list[str]:
    """Say so when f raised at points within the step (the edge of its domain)."""
    errors = p.evaluator.domain_errors or getattr(p.rmap, "domain_errors", None)
    if not errors:
        return []
    exc = errors[0]
    return [
        f"f raised {type(exc).__name__}: {str(exc)[:120]} at points within the step of x (x "
        "is at the edge of f's domain): entries there were estimated by one-sided "
        "differences from the side where f is defined, or are unresolvable where neither is."
    ]
