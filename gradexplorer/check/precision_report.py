"""The result of :func:`check_precision`: entries in eps of the low precision."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from typing import Any

import numpy as onp

from .report import Blocks, CheckReport, Outcome
from .verdicts import Verdict

__all__ = ["PrecisionEntry", "PrecisionReport"]


@dataclass(frozen=True)
class PrecisionEntry:
    """One Jacobian entry: the low-precision value against float64.

    ``eps_units`` is ``|low - reference|`` in eps of the low precision times
    the block's scale; ``allowed_units`` what the precision makes unavoidable
    there; ``violation = eps_units / allowed_units`` (> 1: worse than allowed).
    ``out_index``, ``in_index``, ``label`` and ``verdict`` mean what they mean
    in a :class:`~gradexplorer.check.report.Entry` (the verdict: right, or
    imprecise / wrong where the entry is worse than its precision allows).
    """

    label: str
    row: int
    col: int
    low: float
    reference: float
    abs_err: float
    eps_units: float
    allowed_units: float
    violation: float
    out_index: tuple = ()
    in_index: tuple = ()
    verdict: Verdict = Verdict.RIGHT

    @property
    def reading(self) -> str:
        """The verdict in words."""
        if self.verdict is Verdict.RIGHT:
            return f"ok: {self.eps_units:.3g} eps (allowed {self.allowed_units:.3g})"
        return f"{self.verdict}: {self.eps_units:.3g} eps, allowed {self.allowed_units:.3g}"

    def __str__(self) -> str:
        return (
            f"{self.label:<26} low {self.low: .7g}  float64 {self.reference: .7g}  "
            f"diff {self.abs_err:.2e} = {self.eps_units:.3g} eps  "
            f"(allowed {self.allowed_units:.3g})"
        )


@dataclass(frozen=True)
class PrecisionReport:
    """A low-precision gradient judged against float64, entry by entry."""

    passed: bool
    low_dtype: str
    eps: float
    analytic: onp.ndarray
    reference: onp.ndarray
    abs_err: onp.ndarray
    eps_units: onp.ndarray
    allowed_units: onp.ndarray
    violation: onp.ndarray
    worst: tuple[PrecisionEntry, ...]
    mismatches: tuple[PrecisionEntry, ...]
    rows: Blocks
    cols: Blocks
    reference_check: CheckReport
    notes: tuple[str, ...] = ()
    function: str = "f"
    samples: int = 4
    #: a reduced-precision matmul mode ("TF32") that alone makes the gradient fail:
    #: with float32 matmuls in full float32 every entry is within what float32 allows
    decided_by: str | None = None

    @property
    def outcome(self) -> Outcome:
        """FAILED where an entry is worse than the precision allows or the float64
        gradient itself is wrong; INCONCLUSIVE where that float64 check was."""
        ref = self.reference_check.outcome
        if self.mismatches or ref is Outcome.FAILED:
            return Outcome.FAILED
        return Outcome.INCONCLUSIVE if ref is Outcome.INCONCLUSIVE else Outcome.PASSED

    @property
    def shape(self) -> tuple[int, int]:
        return self.analytic.shape

    @property
    def column_blocks(self) -> dict[str, slice]:
        return self.cols.slices

    @property
    def row_blocks(self) -> dict[str, slice]:
        return self.rows.slices

    def row_label(self, i: int) -> str:
        return self.rows.label(i)

    def col_label(self, j: int) -> str:
        return self.cols.label(j)

    def _headline(self) -> str:
        verdict = "PASSED" if self.passed else "FAILED"
        m, n = self.shape
        finite = self.eps_units[onp.isfinite(self.eps_units)]
        worst = f"{finite.max():.3g}" if finite.size else "inf"
        if finite.size < self.eps_units.size:
            worst = "inf (non-finite entries)"
        return (
            f"check_precision({self.function}) {verdict}: {self.low_dtype} gradient against "
            f"float64, {m} x {n}; {len(self.mismatches)} entries worse than {self.low_dtype} "
            f"allows; worst error {worst} eps (eps = {self.eps:.3g})"
        )

    def __repr__(self) -> str:
        return f"<PrecisionReport {self._headline()}>"

    def __str__(self) -> str:
        lines = [self._headline()]
        ok = "passed" if self.reference_check.passed else "FAILED"
        lines.append(f"  float64 gradient against finite differences: {ok}")
        lines.extend(f"  note: {n}" for n in self.notes)
        shown = self.mismatches or self.worst[:3]
        lines.append(
            "  worse than the precision allows:" if self.mismatches else "  largest errors:"
        )
        lines.extend(f"    {e}" for e in shown[:10])
        if len(self.mismatches) > 10:
            lines.append(f"    ... and {len(self.mismatches) - 10} more")
        lines.append(
            "  eps = the low precision's machine epsilon times the entry's block scale "
            "(max |J| of its output x input block)"
        )
        return "\n".join(lines)

    def raise_if_failed(self) -> PrecisionReport:
        from ..errors import GradientError

        if not self.passed:
            raise GradientError(report=self, message=str(self))
        return self

    def plot(self, fig: Any = None):
        """low | float64 | error in eps | violation (needs matplotlib)."""
        from ..display import render

        return render(self, fig)

    def _repr_png_(self) -> bytes:
        from ..display import render

        return render(self, png=True)

    def _repr_html_(self) -> str:
        color = "#1a7f37" if self.passed else "#b42318"
        badge = (
            f'<span style="background:{color};color:white;padding:2px 8px;border-radius:4px;'
            f'font-weight:bold">{"PASSED" if self.passed else "FAILED"}</span>'
        )
        head = "".join(
            f"<th>{h}</th>"
            for h in ("entry", self.low_dtype, "float64", "|diff|", "eps", "allowed")
        )
        body = "".join(
            "<tr>"
            + "".join(
                f"<td>{html.escape(c)}</td>"
                for c in (
                    e.label,
                    f"{e.low:.7g}",
                    f"{e.reference:.7g}",
                    f"{e.abs_err:.2e}",
                    f"{e.eps_units:.3g}",
                    f"{e.allowed_units:.3g}",
                )
            )
            + "</tr>"
            for e in (self.mismatches or self.worst)[:10]
        )
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        try:
            img = base64.b64encode(self._repr_png_()).decode()
            img = f'<br><img src="data:image/png;base64,{img}" style="max-width:100%">'
        except ImportError:
            img = ""
        return (
            f"<div>{badge} <code>{html.escape(self._headline())}</code>"
            f"{f'<ul>{notes}</ul>' if notes else ''}{img}"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
        )
