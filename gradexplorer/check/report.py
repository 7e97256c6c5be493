"""Results of a gradient check: :class:`Entry` and :class:`CheckReport`."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as onp

from ..core.tree import Leaf
from ..errors import GradientError
from ..fd.reasons import Unresolvable
from .verdicts import Comparison, Verdict, ratio_reading

__all__ = [
    "Entry", "CheckReport", "Blocks", "Outcome", "verdict_for", "format_fd_error", "plural",
    "Verdict", "Comparison", "Unresolvable",
]  # fmt: skip

#: FD errors below this are round-off of round-off (subnormal dust), not numbers to read.
_TINY = 1e-300


def format_fd_error(e: float) -> str:
    """An FD error for people: ``1.2e-09``, ``unresolvable`` or ``<1e-300``.

    >>> format_fd_error(1.23e-9), format_fd_error(float("inf")), format_fd_error(6.7e-320)
    ('1.2e-09', 'unresolvable', '<1e-300')
    """
    if not onp.isfinite(e):
        return "unresolvable"
    if e < _TINY:
        # below ~1e-300 an error is the float format's own floor, not a measurement
        return "<1e-300"
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
    no single row). ``verdict`` is a :class:`Verdict`; ``kind`` a
    :class:`Comparison` (reverse mode, forward mode, or a rule's linearity);
    ``reason`` why finite differences could not resolve it (an
    :class:`~gradexplorer.fd.reasons.Unresolvable`), ``one_sided`` its
    ``(right, left)`` derivatives where f is not differentiable; ``reading``
    says all of it in words.
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
    verdict: Verdict = Verdict.RIGHT
    kind: Comparison = Comparison.VJP
    reason: Unresolvable | None = None
    one_sided: tuple[float, float] | None = None
    detail: str = ""
    #: what was wrong, in words, where the numbers alone would mislead (a rule not
    #: linear in its cotangent, an imaginary tangent of a real output)
    summary: str = ""

    @property
    def reading(self) -> str:
        """The verdict in words, one line (for tables, tooltips, summaries)."""
        v = self.verdict
        if self.summary:
            return f"{self.summary}; {self.detail}" if self.detail else self.summary
        if v is Verdict.UNRESOLVABLE:
            text = "unresolvable: " + (self.reason.text if self.reason else "no estimate")
        elif v is Verdict.RIGHT_AT_KINK:
            text = "right at a kink: " + _kink_words(self.analytic, self.one_sided)
        elif v is Verdict.JUMP:
            text = "jump, not continuous here"
        else:
            text = verdict_for(self.violation, self.analytic, self.numeric, self.fd_error)
        return f"{text}; {self.detail}" if self.detail else text

    def __str__(self) -> str:
        fd = format_fd_error(self.fd_error)
        return (
            f"{self.label:<26} analytic {self.analytic: .6g}  numeric {self.numeric: .6g}  "
            f"diff {self.abs_err:.2e}  FD ± {fd}  ({self.reading})"
        )


def _kink_words(analytic: float, sides: tuple[float, float] | None) -> str:
    if sides is None:
        return "f is not differentiable here"
    right, left = sides
    which = "between them (a subgradient)"
    scale = max(abs(right), abs(left), abs(analytic)) or 1.0
    if abs(analytic - right) <= 1e-6 * scale:
        which = "the right one"
    elif abs(analytic - left) <= 1e-6 * scale:
        which = "the left one"
    return (
        f"f is not differentiable here (right derivative {right:.6g}, left {left:.6g}); "
        f"the analytic value is {which}"
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


def verdict_for(
    violation: float, analytic: float, numeric: float, fd_error: float, *, uneven: bool = False
) -> str:
    """A one-line reading of a judged entry's numbers.

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
    return ratio_reading(violation, analytic, numeric)


@dataclass(frozen=True, repr=False)
class CheckReport:
    """The outcome of :func:`gradexplorer.check_grads`.

    Matrices are 2-D: rows are the output leaves, flattened and stacked;
    columns the selected inputs' leaves, flattened and concatenated (complex
    leaves in the ``real_jacobian`` layout). In fast mode they are None and
    ``mismatches`` holds the entries that group testing located.

    ``outcome`` is PASSED (no entry wrong, and nothing left unresolved that
    could hide a wrong block), FAILED (``mismatches`` lists the wrong and
    imprecise entries; ``n_wrong`` counts every one found, also beyond those
    named) or INCONCLUSIVE (``inconclusive`` says why); ``passed`` is
    ``outcome is PASSED``. Entries that finite differences cannot resolve are
    in ``unresolved``, entries where f is not differentiable in ``kinks``
    (right at a kink, or at a jump); ``verdicts`` holds every entry's
    :class:`Verdict` code (``Verdict.from_code``); arguments and leaves that
    were not checked are in ``not_checked`` with the reason.
    """

    outcome: Outcome
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
    #: why the check is inconclusive (empty unless it is)
    inconclusive: str = ""
    #: every entry's verdict code (full mode), see :meth:`verdict_at`
    verdicts: onp.ndarray | None = field(default=None, repr=False)
    #: wrong entries found in all (fast mode may name fewer: ``max_named``)
    n_wrong: int = -1
    #: why this mode ran (``mode="auto"`` says which it chose and why)
    mode_reason: str = ""
    #: the Taylor-remainder test run to settle what finite differences left open
    taylor: Any = field(default=None, repr=False)
    #: the compiled gradient beside eager's (``compiled=True``): a
    #: :class:`~gradexplorer.check.compiled.CompiledComparison`
    compiled: Any = field(default=None, repr=False)
    #: registration checks of the custom operators f calls: an
    #: :class:`~gradexplorer.check.opcheck.OpcheckReport`
    opcheck: Any = field(default=None, repr=False)
    #: where f was evaluated (``"cpu"``, ``"cuda:0"``, a jax device ``"gpu:0"``)
    device: str = "cpu"
    #: host <-> device copies the finite differences made (0 on the host)
    copies: int = 0

    @property
    def passed(self) -> bool:
        """True when the check PASSED (not when it failed or was inconclusive)."""
        return self.outcome is Outcome.PASSED

    @property
    def wrong_count(self) -> int:
        """Wrong (and imprecise) entries found, named or not."""
        return self.n_wrong if self.n_wrong >= 0 else len(self.mismatches)

    def verdict_at(self, i: int, j: int) -> Verdict:
        """The :class:`Verdict` of entry (i, j) (full mode)."""
        if self.verdicts is None:
            raise ValueError("a fast-mode report has no dense verdicts; see report.mismatches")
        return Verdict.from_code(self.verdicts[i, j])

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
        if self.first_order is not None and self.first_order.outcome is Outcome.FAILED:
            out.append(1)
        if self.mismatches:
            out.append(self.order)
        return tuple(out)

    @property
    def status(self) -> str:
        """``"PASSED"``, ``"FAILED: 1 wrong entry"`` or ``"INCONCLUSIVE: ..."`` (badges, titles)."""
        from .report_text import status

        return status(self)

    def row_label(self, i: int) -> str:
        return self.rows.label(i)

    def col_label(self, j: int) -> str:
        return self.cols.label(j)

    def __repr__(self) -> str:
        from .report_text import headline

        return f"<CheckReport {headline(self)}>"

    def __str__(self) -> str:
        from .report_text import text

        return text(self)

    def raise_if_failed(self, *, inconclusive_ok: bool = False) -> CheckReport:
        """Raise :class:`GradientError` (carrying this report) unless it passed
        (an inconclusive check raises too, unless ``inconclusive_ok``)."""
        if self.outcome is Outcome.FAILED or (
            self.outcome is Outcome.INCONCLUSIVE and not inconclusive_ok
        ):
            raise GradientError(report=self, message=str(self))
        return self

    def to_dict(self, *, max_entries: int = 10_000) -> dict:
        """The report as JSON-ready data (see :mod:`gradexplorer.check.report_json`)."""
        from .report_json import report_dict

        return report_dict(self, max_entries=max_entries)

    def to_json(self, *, max_entries: int = 10_000, indent: int | None = 1) -> str:
        """The report as strict JSON text: non-finite numbers as ``"nan"``/``"inf"``."""
        from .report_json import report_json

        return report_json(self, max_entries=max_entries, indent=indent)

    def plot(self, fig: Any = None):
        """Draw analytic | numeric | difference | violation (needs matplotlib)."""
        from ..display import render

        return render(self, fig)

    def _repr_html_(self) -> str:
        from .report_text import html_report

        return html_report(self)

    def _repr_png_(self) -> bytes | None:
        if self.analytic is None and not self.mismatches:
            return None
        from ..display import render

        return render(self, png=True)
