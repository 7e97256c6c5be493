"""The compiled gradient beside the eager one, both judged against the same finite differences.

``check_grads(f, *args, compiled=True)`` checks eager f as always, then builds
the Jacobian of the compiled f (torch.compile, through the backend's
``compile_function``) from the same unit cotangents. Where the two agree to
round-off, the compiled entry shares eager's verdict. Where they differ, the
compiled entry is judged against the finite-difference truth by the same rule
(:func:`~.judging.judge`), and each entry names the side that is wrong: the
compiled gradient (eager right), both, or eager (compiled right). A compiled
gradient wrong where eager's is right fails the check, as a wrong entry.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

import numpy as onp

from .entries import make_entry
from .judging import FD_SAFETY, judge, tolerances
from .options import Options
from .problem import Problem, traceable
from .report import CheckReport, Entry, Outcome, format_fd_error, plural
from .rules import reverse_rows, vjp_rule
from .verdicts import Comparison, Verdict, failing_codes, failing_verdict

__all__ = [
    "WhichWrong", "CompiledEntry", "CompiledComparison", "compare_compiled", "refuse_uncompilable",
]  # fmt: skip


class WhichWrong(str, enum.Enum):
    """Which gradient is wrong at an entry where the compiled and eager ones are compared."""

    COMPILED = "compiled"  # eager is right: the compiled gradient is the defect
    EAGER = "eager"  # the compiled gradient is right
    BOTH = "both"
    UNKNOWN = "unknown"  # they differ where finite differences cannot tell which is right

    def __str__(self) -> str:
        return self.value


_WORDS = {
    WhichWrong.COMPILED: "the compiled gradient is wrong (eager is right)",
    WhichWrong.EAGER: "eager is wrong (the compiled gradient is right)",
    WhichWrong.BOTH: "both are wrong",
    WhichWrong.UNKNOWN: "they differ where finite differences cannot tell which is right",
}


@dataclass(frozen=True)
class CompiledEntry:
    """One entry where the compiled gradient, eager's, or both, are wrong (or differ
    where finite differences cannot judge)."""

    label: str
    row: int
    col: int
    eager: float
    compiled: float
    numeric: float
    fd_error: float
    eager_violation: float
    compiled_violation: float
    wrong: WhichWrong

    def __str__(self) -> str:
        return (
            f"{self.label:<26} eager {self.eager: .6g}  compiled {self.compiled: .6g}  "
            f"numeric {self.numeric: .6g}  FD ± {format_fd_error(self.fd_error)}  "
            f"({_WORDS[self.wrong]})"
        )


@dataclass(frozen=True, repr=False)
class CompiledComparison:
    """The compiled gradient, compared with eager's entry by entry.

    ``analytic``, ``violation`` and ``verdicts`` are the compiled Jacobian's,
    as the report's are eager's; ``entries`` every entry where either side is
    wrong (``wrong`` says which) or where they differ unjudged; ``differ``
    counts the entries that differ beyond round-off; ``value_gap`` is the
    largest difference of the compiled forward value from eager's, relative to
    its output's size. ``backend`` is the torch.compile backend that ran and
    ``fallback`` why it is not the one asked for; ``seconds`` the compile and
    first passes; ``graphs`` how many graphs dynamo compiled (more than one:
    graph breaks; 0: graphs compiled earlier were reused).
    """

    backend: str
    fallback: str
    analytic: onp.ndarray
    violation: onp.ndarray
    verdicts: onp.ndarray
    entries: tuple[CompiledEntry, ...]
    differ: int
    value_gap: float
    seconds: float
    graphs: int

    def which(self, wrong: WhichWrong) -> tuple[CompiledEntry, ...]:
        return tuple(e for e in self.entries if e.wrong is wrong)

    @property
    def compiled_wrong(self) -> bool:
        """Whether the compiled gradient is wrong anywhere (alone, or with eager)."""
        return any(e.wrong in (WhichWrong.COMPILED, WhichWrong.BOTH) for e in self.entries)

    def lines(self) -> list[str]:
        """The comparison in words, for the report's text."""
        counts = ", ".join(
            plural(len(self.which(w)), f"entry where {_WORDS[w]}", f"entries where {_WORDS[w]}")
            for w in WhichWrong
            if self.which(w)
        )
        graphs = f", {plural(self.graphs, 'graph', 'graphs')}" if self.graphs else ""
        head = (
            f"compiled (torch.compile, backend='{self.backend}'{graphs}, "
            f"{self.seconds:.1f} s to compile and run): "
        )
        head += counts or (
            "agrees with eager to round-off at every entry"
            if not self.differ
            else f"differs from eager at {plural(self.differ, 'entry', 'entries')}, "
            "each within its finite-difference allowance"
        )
        out = [head]
        if self.fallback:
            out.append(f"  compiled: {self.fallback}")
        if self.value_gap > 0:
            out.append(
                f"  compiled: the forward value differs from eager's by up to {self.value_gap:.2g} "
                "(relative to each output's size): compiling changed f itself, not only its "
                "gradient"
            )
        out += [f"    {e}" for e in self.entries[:10]]
        if len(self.entries) > 10:
            out.append(f"    ... and {len(self.entries) - 10} more")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def refuse_uncompilable(p: Problem, chosen: tuple[str, str]) -> None:
    """Refuse, before any work, a check the compiled comparison cannot join: f not
    written for a system that compiles, or a problem the fast mode checks."""
    backend = p.backend
    if backend is None or not getattr(backend.capabilities, "compiling", False):
        name = getattr(backend, "name", "numpy")
        raise TypeError(
            f"compiled=True checks torch.compile(f)'s gradient, but f is checked with the "
            f"{name} backend (its arguments are not torch tensors), which compiles nothing. "
            "Pass torch tensors (or a torch nn.Module), or drop compiled=True."
        )
    mode, why = chosen
    if mode == "fast":
        raise ValueError(
            "compiled=True compares every entry of the compiled and eager Jacobians, but this "
            f"check would run in fast mode ({why or 'as asked'}); pass mode='full' to "
            "compare them entry by entry."
        )


def compare_compiled(
    p: Problem, report: CheckReport, how: str | None, opts: Options
) -> CheckReport:
    """``report`` with the compiled gradient compared (``how``: a torch.compile
    backend, or None for inductor falling back to aot_eager)."""
    base = report.first_order if report.order == 2 and report.first_order else report
    backend, call = p.backend, p.F.call
    y_eager = onp.asarray(p.evaluate_one(p.x0), dtype=float)

    def probe(compiled_f):
        F = traceable(replace(call, f=compiled_f), p.F.layout, p.reseed, backend)
        tr = backend.vjp(F, p.vs)
        y = onp.asarray(backend.to_numpy(tr.value))
        A = reverse_rows(vjp_rule(tr, backend, y.dtype), p.m)
        return onp.asarray(y, dtype=float).ravel(), A

    done = backend.compile_function(call.f, how, probe, p.name)
    y_compiled, Ac = done.result
    cmp = _judged(p, base, Ac, opts, done, _value_gap(y_eager, y_compiled, p))
    return _joined(report, base, cmp, p)


def _value_gap(y: onp.ndarray, yc: onp.ndarray, p: Problem) -> float:
    """The largest difference of the compiled value from eager's beyond round-off
    (relative to its output leaf's size), or 0."""
    gap = 0.0
    for s, sl in zip(p.rows.sides, p.rows.slices.values()):
        scale = float(onp.max(onp.abs(y[sl]), initial=0.0)) or 1.0
        rel = float(onp.max(onp.abs(yc[sl] - y[sl]), initial=0.0)) / scale
        if rel > 256 * s.eps:
            gap = max(gap, rel)
    return gap


def _judged(p: Problem, r: CheckReport, Ac, opts: Options, done, gap: float) -> CompiledComparison:
    A, N, E, V = r.analytic, r.numeric, r.fd_error, r.violation
    atol, rtol = tolerances(p.eps_matrix(), opts.atol, opts.rtol)
    with onp.errstate(invalid="ignore"):
        same = (onp.abs(Ac - A) <= rtol * onp.maximum(onp.abs(A), onp.abs(Ac)) + atol) | (
            onp.isnan(A) & onp.isnan(Ac)
        )
    Vc = onp.where(same, V, _violation(Ac, r, rtol, atol))
    verdicts = r.verdicts.copy()
    hull = {(e.row, e.col): e.one_sided for e in r.kinks}
    for i, j in onp.argwhere(~same):
        verdicts[i, j] = _verdict(Ac[i, j], N[i, j], Vc[i, j], verdicts[i, j], hull.get((i, j)))
    entries = []
    for i, j in onp.argwhere(
        failing_codes(verdicts) | failing_codes(r.verdicts) | (~same & onp.isnan(Vc))
    ):
        eager_bad, compiled_bad = failing_codes(r.verdicts[i, j]), failing_codes(verdicts[i, j])
        wrong = (
            WhichWrong.BOTH
            if eager_bad and compiled_bad
            else WhichWrong.COMPILED
            if compiled_bad
            else WhichWrong.EAGER
            if eager_bad
            else WhichWrong.UNKNOWN
        )
        label = f"{r.rows.label(i)} / {r.cols.label(j)}"
        entries.append(
            CompiledEntry(
                label, int(i), int(j), float(A[i, j]), float(Ac[i, j]), float(N[i, j]),
                float(E[i, j]), float(V[i, j]), float(Vc[i, j]), wrong,
            )
        )  # fmt: skip
    entries.sort(key=lambda e: -onp.nan_to_num(e.compiled_violation, nan=-1.0, posinf=1e300))
    return CompiledComparison(
        done.backend, done.fallback, Ac, Vc, verdicts, tuple(entries),
        int(onp.count_nonzero(~same)), gap, done.seconds, done.graphs,
    )  # fmt: skip


def _violation(Ac, r: CheckReport, rtol, atol: float) -> onp.ndarray:
    """The compiled entries' violations, each allowed what eager's entry was allowed
    (its FD error, round-off, and the allowances eager's judging added: a backward
    pass's measured round-off or spread), never less than the rule gives Ac itself."""
    A, N, E, V = r.analytic, r.numeric, r.fd_error, r.violation
    own = judge(Ac, N, E, rtol, atol)  # NaN where finite differences cannot judge
    with onp.errstate(invalid="ignore", divide="ignore", over="ignore"):
        eager_allowed = onp.where((V > 0) & onp.isfinite(V), onp.abs(A - N) / V, 0.0)
        allowed = onp.fmax(
            FD_SAFETY * E + rtol * onp.maximum(onp.abs(Ac), onp.abs(N)) + atol, eager_allowed
        )
        diff = onp.abs(Ac - N)
        v = onp.where(allowed > 0, diff / allowed, onp.where(diff > 0, onp.inf, 0.0))
    v = onp.where(onp.isfinite(Ac), v, onp.inf)
    return onp.where(onp.isnan(own), onp.nan, v)


def _verdict(ac: float, n: float, v: float, eager_code: int, one_sided) -> int:
    """The compiled entry's verdict code where it differs from eager's value."""
    eager = Verdict.from_code(eager_code)
    if eager is Verdict.JUMP:
        return eager.code  # f jumps here: no derivative for either side
    if one_sided is not None:  # a kink: right when between f's one-sided derivatives
        lo, hi = sorted(one_sided)
        slack = 1e-6 * max(abs(lo), abs(hi), abs(ac), 1e-300)
        return (Verdict.RIGHT_AT_KINK if lo - slack <= ac <= hi + slack else Verdict.WRONG).code
    if onp.isnan(v):
        return Verdict.UNRESOLVABLE.code
    return (failing_verdict(ac, n) if v > 1 else Verdict.RIGHT).code


def _joined(report: CheckReport, base: CheckReport, cmp: CompiledComparison, p) -> CheckReport:
    """The report with the comparison, its compiled-only wrong entries among the wrong ones."""
    extra: list[Entry] = []
    for e in cmp.which(WhichWrong.COMPILED):
        entry = make_entry(
            p.rows, p.cols, e.row, e.col, e.compiled, e.numeric, e.fd_error,
            e.compiled_violation, kind=Comparison.COMPILED,
            verdict=Verdict.from_code(cmp.verdicts[e.row, e.col]),
            summary=f"the compiled gradient is wrong; eager's {e.eager:.6g} is right",
        )  # fmt: skip
        extra.append(replace(entry, label=entry.label + " [compiled]"))
    if not extra:
        return replace(report, compiled=cmp)
    mismatches = tuple(report.mismatches) + tuple(extra) if base is report else report.mismatches
    first = report.first_order
    if base is not report:  # order 2: the first-order report holds the compiled failures
        first = replace(
            base,
            compiled=cmp,
            mismatches=tuple(base.mismatches) + tuple(extra),
            n_wrong=base.wrong_count + len(extra),
            outcome=Outcome.FAILED,
            inconclusive="",
        )
    n_wrong = report.wrong_count + (len(extra) if base is report else 0)
    return replace(
        report,
        compiled=cmp,
        mismatches=mismatches,
        n_wrong=n_wrong,
        first_order=first,
        outcome=Outcome.FAILED,
        inconclusive="",
    )
