"""Results of a gradient check: :class:`Entry` and :class:`CheckReport`."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from typing import Any

import numpy as onp

from ..core.tree import Leaf
from ..errors import GradientError

__all__ = ["Entry", "CheckReport", "Blocks", "verdict_for"]


@dataclass(frozen=True)
class Entry:
    """One Jacobian entry as the checker saw it.

    ``wrt`` is the input's argument position (its name for a keyword-only
    argument); ``out_index``/``in_index`` are the path into the output / that
    input followed by the multi-index into the leaf (a 1-tuple into the
    realified vector for a complex leaf): ``params[1][0][2, 3]`` has
    ``in_index == (1, 0, 2, 3)``. ``row``/``col`` index the report's 2-D
    matrices (``row == -1`` for a check along a random cotangent, which has
    no single row). ``verdict`` is a one-line reading of the numbers; ``kind``
    says what was compared: ``"vjp"`` (reverse mode), ``"jvp"`` (forward
    mode), ``"linearity"`` (a rule not linear in its cotangent/tangent).
    """

    wrt: Any
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
    kind: str = "vjp"

    def __str__(self) -> str:
        fd = f"{self.fd_error:.1e}" if onp.isfinite(self.fd_error) else "unresolvable"
        return (
            f"{self.label:<26} analytic {self.analytic: .6g}  numeric {self.numeric: .6g}  "
            f"diff {self.abs_err:.2e}  FD ± {fd}  ({self.verdict})"
        )


@dataclass(frozen=True)
class Blocks:
    """Names and slices of the stacked rows (outputs) or columns (input leaves)."""

    sides: tuple[Leaf, ...]

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

    def locate(self, k: int) -> tuple[int, Leaf, int]:
        """(block number, leaf, index within the leaf) of stacked coordinate k."""
        for b, s in enumerate(self.sides):
            if k < s.real_size:
                return b, s, k
            k -= s.real_size
        raise IndexError(k)

    def label(self, k: int) -> str:
        _, s, j = self.locate(k)
        return s.label(j)


def _fmt_ratio(ratio: float) -> str | None:
    """A clean multiple such as ``2x`` or ``0.5x`` (None when not clean or ~1)."""
    if not onp.isfinite(ratio) or abs(ratio - 1) < 1e-3:
        return None
    short = float(f"{ratio:.3g}")
    if abs(ratio - short) <= 1e-7 * max(1.0, abs(ratio)):
        return f"{short:g}x"
    return None


def verdict_for(violation: float, analytic: float, numeric: float, fd_error: float) -> str:
    """A one-line reading of an entry's numbers."""
    if not onp.isfinite(analytic):
        return f"analytic is {analytic}"
    if not onp.isfinite(numeric) or not onp.isfinite(fd_error):
        return "unresolvable"
    if violation <= 1:
        return "ok"
    if numeric != 0 and abs(analytic + numeric) <= 1e-6 * abs(numeric):
        return "sign flipped"
    if analytic == 0 and numeric != 0:
        return "analytic is zero, the function is not"
    if numeric == 0:
        return "analytic is nonzero where the function does not change"
    ratio = analytic / numeric
    clean = _fmt_ratio(ratio)
    if clean:
        return f"analytic is {clean} the numeric value"
    rel = abs(analytic - numeric) / abs(numeric)
    times = abs(analytic - numeric) / fd_error if fd_error > 0 else onp.inf
    return f"off by {rel:.2g} relative ({times:.2g}x the FD error)"


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


@dataclass(frozen=True, repr=False)
class CheckReport:
    """The outcome of :func:`gradexplorer.check_grads`.

    Matrices are 2-D: rows are the output leaves, flattened and stacked;
    columns the selected inputs' leaves, flattened and concatenated (complex
    leaves in the ``real_jacobian`` layout). In fast mode they are None and
    ``mismatches`` holds the entries that group testing located.

    ``passed`` is True when no entry is wrong. Entries that finite
    differences cannot resolve are in ``unresolved`` (with the reason as
    their verdict), never counted right or wrong; arguments and leaves that
    were not checked are in ``not_checked`` with the reason.
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
    unresolved: tuple[Entry, ...] = ()
    not_checked: tuple[tuple[str, str], ...] = ()
    noise: onp.ndarray | None = field(default=None, repr=False)
    forward: onp.ndarray | None = field(default=None, repr=False)
    #: which check made it: check_grads, check_vjp, check_jvp
    checker: str = "check_grads"
    #: relative spread of repeated backward passes (None: deterministic)
    backward_spread: float | None = None

    @property
    def column_blocks(self) -> dict[str, slice]:
        """Each input leaf's slice of the columns, by its path name."""
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
        from ..display import render

        return render(self, fig)

    # ------------------------------------------------------------ text

    def _headline(self) -> str:
        what = {1: "Jacobian", 2: "second derivatives (Hessian / Jacobian of the VJP)"}
        verdict = "PASSED" if self.passed else "FAILED"
        m, n = self.shape
        parts = [_plural(len(self.mismatches), "wrong entry", "wrong entries")]
        if self.unresolved:
            parts.append(
                _plural(len(self.unresolved), "unresolvable entry", "unresolvable entries")
            )
        if self.kinks:
            parts.append(_plural(len(self.kinks), "kink", "kinks"))
        if self.not_checked:
            parts.append(f"{len(self.not_checked)} not checked")
        return (
            f"{self.checker}({self.function}) {verdict}: {what.get(self.order, self.order)}, "
            f"{m} x {n} ({self.mode} mode, {self.method} FD, {self.dtype}); "
            f"{', '.join(parts)}; {self.nfev} f evaluations, {self.ngrad} derivative passes"
        )

    def __str__(self) -> str:
        lines = [self._headline()]
        if self.first_order is not None:
            ok = "passed" if self.first_order.passed else "FAILED"
            lines.append(f"  first-order check {ok}; this report is order {self.order}.")
            if not self.first_order.passed:
                lines.extend("  " + ln for ln in str(self.first_order).splitlines())
        lines.extend(f"  note: {n}" for n in self.notes)
        if self.not_checked:
            lines.append("  not checked:")
            lines.extend(f"    {label}: {reason}" for label, reason in self.not_checked[:10])
        if self.mismatches:
            lines.append("  wrong entries (worst first):")
            lines.extend(f"    {e}" for e in self.mismatches[:10])
            if len(self.mismatches) > 10:
                lines.append(f"    ... and {len(self.mismatches) - 10} more")
        else:
            close = [e for e in self.worst if e.violation > 0 and onp.isfinite(e.fd_error)][:3]
            if close:
                lines.append("  closest to failing (violation < 1 passes):")
                lines.extend(f"    {e}  violation {e.violation:.2g}" for e in close)
        if self.unresolved:
            lines.append("  unresolvable by finite differences (neither right nor wrong):")
            lines.extend(f"    {e}" for e in self.unresolved[:5])
            if len(self.unresolved) > 5:
                lines.append(f"    ... and {len(self.unresolved) - 5} more")
        if self.kinks:
            lines.append("  not differentiable here (one-sided derivatives differ):")
            lines.extend(f"    {e}" for e in self.kinks[:5])
        lines.append(
            "  tolerance per entry: |analytic - numeric| <= FD error estimate"
            f" + {self.rtol:.1e}·|value|" + (f" + {self.atol:.1e}" if self.atol else "")
        )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        color = "#1a7f37" if self.passed else "#b42318"
        badge = (
            f'<span style="background:{color};color:white;padding:2px 8px;border-radius:4px;'
            f'font-weight:bold">{"PASSED" if self.passed else "FAILED"}</span>'
        )
        shown = list(self.mismatches or self.worst)[:10] + list(self.unresolved[:5])
        rows = "".join(
            "<tr>"
            + "".join(
                f"<td>{html.escape(str(c))}</td>"
                for c in (
                    e.label,
                    f"{e.analytic:.6g}",
                    f"{e.numeric:.6g}",
                    f"{e.abs_err:.2e}",
                    f"{e.fd_error:.1e}" if onp.isfinite(e.fd_error) else "unresolvable",
                    f"{e.violation:.3g}",
                    e.verdict,
                )
            )
            + "</tr>"
            for e in shown
        )
        head = "".join(
            f"<th>{h}</th>"
            for h in ("entry", "analytic", "numeric", "|diff|", "FD error", "violation", "verdict")
        )
        notes = [html.escape(n) for n in self.notes]
        notes += [
            f"not checked: {html.escape(lb)} ({html.escape(r)})" for lb, r in self.not_checked
        ]
        items = "".join(f"<li>{n}</li>" for n in notes)
        return (
            f"<div>{badge} <code>{html.escape(self._headline())}</code>"
            f"{f'<ul>{items}</ul>' if items else ''}{self._inline_png()}"
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
        from ..display import render

        return render(self, png=True)
