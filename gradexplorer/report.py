"""Results of a gradient check: :class:`Entry` and :class:`CheckReport`."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from typing import Any

import numpy as onp

from ._args import Side
from .errors import GradientError

__all__ = ["Entry", "CheckReport", "Blocks"]


@dataclass(frozen=True)
class Entry:
    """One Jacobian entry as the checker saw it.

    ``wrt`` is the input's argument position; ``out_index``/``in_index`` are
    multi-indices into the output and that input (1-tuples into the realified
    vector for a complex side); ``row``/``col`` index the report's 2-D
    matrices. ``verdict`` is a one-line reading of the numbers.
    """

    wrt: int
    out_index: tuple
    in_index: tuple
    analytic: float
    numeric: float
    abs_err: float
    fd_error: float
    label: str
    violation: float = 0.0
    row: int = 0
    col: int = 0
    verdict: str = ""

    def __str__(self) -> str:
        return (
            f"{self.label:<24} analytic {self.analytic: .6g}  numeric {self.numeric: .6g}  "
            f"diff {self.abs_err:.2e}  FD ± {self.fd_error:.1e}  ({self.verdict})"
        )


@dataclass(frozen=True)
class Blocks:
    """Names and slices of the stacked rows (outputs) or columns (inputs)."""

    sides: tuple[Side, ...]

    @property
    def slices(self) -> dict[str, slice]:
        out, start = {}, 0
        for s in self.sides:
            out[s.name] = slice(start, start + s.real_size)
            start += s.real_size
        return out

    @property
    def size(self) -> int:
        return sum(s.real_size for s in self.sides)

    def locate(self, k: int) -> tuple[int, Side, int]:
        """(block number, side, index within the side) of stacked coordinate k."""
        for b, s in enumerate(self.sides):
            if k < s.real_size:
                return b, s, k
            k -= s.real_size
        raise IndexError(k)

    def label(self, k: int) -> str:
        _, s, j = self.locate(k)
        return s.label(j)


def verdict_for(violation: float, analytic: float, numeric: float, fd_error: float) -> str:
    if not onp.isfinite(analytic) or not onp.isfinite(numeric):
        return "non-finite value"
    if violation <= 1:
        return "ok"
    if numeric != 0 and abs(analytic + numeric) <= 1e-6 * abs(numeric):
        return "sign flipped"
    if analytic == 0 and numeric != 0:
        return "analytic is zero, function is not"
    if numeric == 0:
        return "analytic is nonzero where the function does not change"
    ratio = analytic / numeric
    if abs(ratio - float(f"{ratio:.3g}")) < 1e-7 * max(1.0, abs(ratio)):
        return f"analytic is {ratio:.3g}x the numeric value"
    times = abs(analytic - numeric) / max(fd_error, 1e-300)
    return f"wrong by {times:.2g}x the FD error (ratio {ratio:.4g})"


@dataclass(frozen=True, repr=False)
class CheckReport:
    """The outcome of :func:`gradexplorer.check_grads`.

    Matrices are 2-D: rows are the output(s), flattened and stacked; columns
    the selected inputs, flattened and concatenated (complex sides in the
    ``real_jacobian`` layout). In fast mode they are None and ``mismatches``
    holds the entries that group testing located.
    """

    passed: bool
    analytic: onp.ndarray | None
    numeric: onp.ndarray | None
    abs_err: onp.ndarray | None
    rel_err: onp.ndarray | None
    fd_error: onp.ndarray | None
    violation: onp.ndarray | None
    worst: tuple[Entry, ...]
    mismatches: tuple[Entry, ...]
    rows: Blocks
    cols: Blocks
    order: int = 1
    mode: str = "full"
    method: str = "richardson"
    dtype: str = "float64"
    atol: float = 0.0
    rtol: float = 0.0
    nfev: int = 0
    ngrad: int = 0
    kinks: tuple[Entry, ...] = ()
    notes: tuple[str, ...] = ()
    function: str = "f"
    first_order: CheckReport | None = field(default=None, repr=False)

    @property
    def column_blocks(self) -> dict[str, slice]:
        """Each input's slice of the columns, by name."""
        return self.cols.slices

    @property
    def row_blocks(self) -> dict[str, slice]:
        return self.rows.slices

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows.size, self.cols.size)

    @property
    def failed_orders(self) -> tuple[int, ...]:
        out = []
        if self.first_order is not None and not self.first_order.passed:
            out.append(1)
        if self.mismatches:
            out.append(self.order)
        return tuple(out)

    def row_label(self, i: int) -> str:
        return self.rows.label(i)

    def col_label(self, j: int) -> str:
        return self.cols.label(j)

    def __repr__(self) -> str:
        return f"<CheckReport {self._headline()}>"

    def raise_if_failed(self) -> CheckReport:
        """Raise :class:`GradientError` (carrying this report) unless it passed."""
        if not self.passed:
            raise GradientError(report=self, message=str(self))
        return self

    def plot(self, fig: Any = None):
        """Draw analytic | numeric | difference | violation (needs matplotlib)."""
        from .plot import plot_check

        return plot_check(self, fig=fig)

    # ------------------------------------------------------------ text

    def _headline(self) -> str:
        what = {1: "Jacobian", 2: "second derivatives (Hessian / Jacobian of the VJP)"}
        verdict = "PASSED" if self.passed else "FAILED"
        m, n = self.shape
        return (
            f"check_grads({self.function}) {verdict}: {what.get(self.order, self.order)}, "
            f"{m} x {n} ({self.mode} mode, {self.method} FD, {self.dtype}); "
            f"{len(self.mismatches)} wrong entr{'y' if len(self.mismatches) == 1 else 'ies'}"
            f"{f', {len(self.kinks)} kink(s)' if self.kinks else ''}; "
            f"{self.nfev} f evaluations, {self.ngrad} derivative passes"
        )

    def __str__(self) -> str:
        lines = [self._headline()]
        if self.first_order is not None:
            ok = "passed" if self.first_order.passed else "FAILED"
            lines.append(f"  first-order check {ok}; this report is order {self.order}.")
            if not self.first_order.passed:
                lines.extend("  " + ln for ln in str(self.first_order).splitlines())
        lines.extend(f"  note: {n}" for n in self.notes)
        if self.mismatches:
            lines.append("  wrong entries (worst first):")
            lines.extend(f"    {e}" for e in self.mismatches[:10])
            if len(self.mismatches) > 10:
                lines.append(f"    ... and {len(self.mismatches) - 10} more")
        elif self.worst:
            lines.append("  closest to failing:")
            lines.extend(f"    {e}" for e in self.worst[:3])
        if self.kinks:
            lines.append("  not differentiable here (one-sided derivatives differ):")
            lines.extend(f"    {e}" for e in self.kinks[:5])
        lines.append(
            f"  tolerance: |analytic - numeric| <= 4·FD error + {self.rtol:.0e}·|value|"
            f" + {self.atol:.1e}"
        )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        color = "#1a7f37" if self.passed else "#b42318"
        badge = (
            f'<span style="background:{color};color:white;padding:2px 8px;border-radius:4px;'
            f'font-weight:bold">{"PASSED" if self.passed else "FAILED"}</span>'
        )
        rows = "".join(
            "<tr>"
            + "".join(
                f"<td>{html.escape(str(c))}</td>"
                for c in (
                    e.label,
                    f"{e.analytic:.6g}",
                    f"{e.numeric:.6g}",
                    f"{e.abs_err:.2e}",
                    f"{e.fd_error:.1e}",
                    f"{e.violation:.3g}",
                    e.verdict,
                )
            )
            + "</tr>"
            for e in (self.mismatches or self.worst)[:10]
        )
        head = "".join(
            f"<th>{h}</th>"
            for h in ("entry", "analytic", "numeric", "|diff|", "FD error", "violation", "verdict")
        )
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (
            f"<div>{badge} <code>{html.escape(self._headline())}</code>"
            f"{f'<ul>{notes}</ul>' if notes else ''}{self._inline_png()}"
            f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>"
        )

    def _inline_png(self) -> str:
        """The heatmaps inside the HTML repr (notebooks show one MIME type)."""
        try:
            png = self._repr_png_()
        except ImportError:  # no matplotlib: the table alone
            return ""
        if not png:
            return ""
        data = base64.b64encode(png).decode()
        return f'<br><img src="data:image/png;base64,{data}" style="max-width:100%">'

    def _repr_png_(self) -> bytes | None:
        if self.analytic is None and not self.mismatches:
            return None
        from .plot import png_of

        return png_of("check", self)
