"""Results of a gradient check: :class:`Entry` and :class:`CheckReport`."""

from __future__ import annotations

import base64
import enum
import html
from dataclasses import dataclass, field
from typing import Any

import numpy as onp

from ..core.tree import Leaf
from ..errors import GradientError

__all__ = [
    "Entry", "CheckReport", "Blocks", "Outcome", "verdict_for", "format_fd_error", "plural",
]  # fmt: skip

#: FD errors at or below the smallest normal float64 are its resolution floor
#: (:func:`gradexplorer.fd.directional.resolution_floor`), shown as such.
_TINY = float(onp.finfo(float).tiny)


def format_fd_error(e: float) -> str:
    """An FD error for people: ``1.2e-09``, ``unresolvable`` or ``<=2.2e-308``.

    >>> format_fd_error(1.23e-9), format_fd_error(float("inf")), format_fd_error(6.7e-320)
    ('1.2e-09', 'unresolvable', '<=2.2e-308')
    """
    if not onp.isfinite(e):
        return "unresolvable"
    if e <= _TINY:
        # below the normal range an error is round-off of round-off, not a number to read
        return f"<={_TINY:.1e}"
    return f"{e:.1e}"


def plural(n: int, one: str, many: str) -> str:
    """``"1 wrong entry"``, ``"2 wrong entries"``."""
    return f"{n} {one if n == 1 else many}"


class Outcome(enum.Enum):
    """A check's verdict: passed, failed, or inconclusive (entries finite
    differences could not resolve may hide a wrong block).

    >>> Outcome.PASSED.value, str(Outcome.FAILED)
    ('passed', 'FAILED')
    """

    PASSED = "passed"
    FAILED = "failed"
    INCONCLUSIVE = "inconclusive"

    def __str__(self) -> str:
        return self.name


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

    @property
    def reading(self) -> str:
        """The verdict in words, one line (for tables, tooltips, summaries)."""
        return str(self.verdict)

    def __str__(self) -> str:
        fd = format_fd_error(self.fd_error)
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


def verdict_for(
    violation: float, analytic: float, numeric: float, fd_error: float, *, uneven: bool = False
) -> str:
    """A one-line reading of an entry's numbers.

    A passing entry is described by how much of its allowance it uses (never
    as "off by": it is not); ``uneven`` says its row has a kink, jump or
    noise nearby, which is why its FD error (so its allowance) is wide.

    >>> verdict_for(0.18, 1.0, 1.0 + 1e-15, 1e-30)
    'ok: within tolerance, 0.18 of the allowed difference'
    >>> verdict_for(12.0, 1.5, 1.0, 1e-9)
    'analytic is 1.5x the numeric value'
    """
    if not onp.isfinite(analytic):
        return f"analytic is {analytic}"
    if not onp.isfinite(numeric) or not onp.isfinite(fd_error):
        return "unresolvable"
    if violation <= 1:
        if analytic == numeric:
            text = "ok: identical"
        else:
            text = f"ok: within tolerance, {violation:.2g} of the allowed difference"
        if uneven:
            text += "; f is uneven nearby (a kink, jump or noise), so the FD error is wide"
        return text
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
    # against the whole allowance (FD error, round-off, atol): the FD error alone
    # can be far smaller than what the entry is allowed (1e14x a 1e-30 FD error)
    return f"off by {rel:.2g} relative ({violation:.3g}x the allowed difference)"


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

    @property
    def outcome(self) -> Outcome:
        """:class:`Outcome`: PASSED, FAILED or INCONCLUSIVE."""
        return Outcome.PASSED if self.passed else Outcome.FAILED

    @property
    def status(self) -> str:
        """``"PASSED"`` or ``"FAILED: 1 wrong entry"`` (for badges and titles)."""
        if self.passed:
            return "PASSED"
        n = len(self.mismatches)
        if n == 0 and self.first_order is not None and not self.first_order.passed:
            return f"FAILED: first order, {self.first_order.status.removeprefix('FAILED: ')}"
        return f"FAILED: {plural(n, 'wrong entry', 'wrong entries')}"

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
        parts = [plural(len(self.mismatches), "wrong entry", "wrong entries")]
        if self.unresolved:
            parts.append(plural(len(self.unresolved), "unresolvable entry", "unresolvable entries"))
        if self.kinks:
            parts.append(plural(len(self.kinks), "kink", "kinks"))
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
            many = len(self.mismatches) > 1
            lines.append("  wrong entries (worst first):" if many else "  wrong entry:")
            lines.extend(f"    {e}" for e in self.mismatches[:10])
            if len(self.mismatches) > 10:
                lines.append(f"    ... and {len(self.mismatches) - 10} more")
        else:
            close = [e for e in self.worst if e.violation > 0 and onp.isfinite(e.fd_error)][:3]
            if close:
                lines.append("  closest to failing (all within tolerance; violation < 1 passes):")
                lines.extend(f"    {e}" for e in close)
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
                    format_fd_error(e.fd_error),
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
