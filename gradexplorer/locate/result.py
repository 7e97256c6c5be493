"""The outcome of :func:`gradexplorer.locate`: the traced operations and the culprit."""

from __future__ import annotations

import enum
import html
from dataclasses import dataclass, field
from typing import Any

import numpy as onp

from ..check.report import CheckReport
from .sites import Site

__all__ = ["OpNode", "Localization", "OpVerdict", "CutInput"]


class OpVerdict(str, enum.Enum):
    """What the local check of one traced operation found.

    >>> OpVerdict.WRONG_VJP.wrong, OpVerdict.WRONG_JVP.rule, str(OpVerdict.OK)
    (True, 'JVP', 'ok')
    """

    OK = "ok"
    WRONG_VJP = "wrong VJP"
    WRONG_JVP = "wrong JVP"
    NOT_CHECKED = "not checked"
    BOOKKEEPING = "bookkeeping"  # autograd's own gradient plumbing, not f's operation

    def __str__(self) -> str:
        return self.value

    @property
    def wrong(self) -> bool:
        return self in (OpVerdict.WRONG_VJP, OpVerdict.WRONG_JVP)

    @property
    def rule(self) -> str:
        """The kind of rule a wrong verdict blames: ``"VJP"`` or ``"JVP"``."""
        return "JVP" if self is OpVerdict.WRONG_JVP else "VJP"


@dataclass(frozen=True)
class OpNode:
    """One traced operation.

    ``name`` is the primitive's own name (``softplus``, ``dot``; autograd's
    internal helpers by the name users know: ``array``, ``getitem``);
    ``source`` where the user's code called it (``path/file.py:LINE``, or in a
    notebook ``cell [N], line L``; ``... (definition)`` when f itself is the
    operation) and ``code`` that line's text, ``site`` the same as a
    :class:`~gradexplorer.locate.sites.Site`; ``verdict`` an :class:`OpVerdict`
    (ok, wrong VJP, wrong JVP, not checked, bookkeeping) and ``reason`` why an
    operation was not checked; ``local_error`` the
    largest violation of its local check (> 1 fails). ``call`` names the
    library function the user's line called when the operation is one of
    several it is made of (``stack`` for the ``array``, ``getitem`` and
    ``concatenate`` inside ``anp.stack``), and ``group`` is the index of that
    call's first operation (the node's own index when it is not part of one).
    For the culprit, ``rule`` is where its wrong rule is written (the function
    given to ``defvjp``, a Function's ``backward``), when that is user code.
    ``cut`` holds the operation's inputs (:class:`CutInput`) that depend on x but
    reach it outside the AD graph (``detach()``, ``.data``, ``.item()``,
    ``stop_gradient``, a trip through numpy): f's derivative ignores how they move.
    """

    index: int
    name: str
    source: str
    verdict: OpVerdict
    local_error: float
    parents: tuple[int, ...]
    in_shapes: tuple
    out_shape: tuple
    report: CheckReport | None = field(default=None, repr=False, compare=False)
    code: str = ""
    site: Site | None = field(default=None, repr=False)
    call: str = ""
    group: int = -1
    rule: Site | None = field(default=None, repr=False)
    reason: str = ""
    cut: tuple[CutInput, ...] = ()
    #: per cut input, the operation whose value it is (``sin at file.py:3``), or ""
    cut_from: tuple[str, ...] = ()

    @property
    def rule_elsewhere(self) -> bool:
        """Whether ``rule`` is known and is not the line ``site`` already shows."""
        if self.rule is None:
            return False
        return self.site is None or (self.rule.path, self.rule.line) != (
            self.site.path,
            self.site.line,
        )

    @property
    def label(self) -> str:
        """The name as the user wrote the call: ``stack`` rather than its parts."""
        return self.call or self.name

    @property
    def wrong(self) -> bool:
        return self.verdict.wrong

    @property
    def checked(self) -> bool:
        return self.verdict not in (OpVerdict.NOT_CHECKED, OpVerdict.BOOKKEEPING)

    @property
    def reading(self) -> str:
        """The verdict in words, with the reason an operation was not checked."""
        reading = f"{self.verdict}: {self.reason}" if self.reason else str(self.verdict)
        if self.cut:
            which = ", ".join(str(a) for a in self.cut)
            reading += f"; {which} cut off"
        return reading

    @property
    def cut_text(self) -> str:
        """The cut inputs in words, with where they are (empty where none is)."""
        if not self.cut:
            return ""
        which = " and ".join(str(a) for a in self.cut)
        made = [m for m in self.cut_from if m]
        whose = f" (the value of {' and '.join(made)})" if made else ""
        one = len(self.cut) == 1
        return (
            f"the {which} of {self.label} at {self.source}{whose} "
            f"depend{'s' if one else ''} on x but reach{'es' if one else ''} it "
            "outside the AD graph (detach(), .data, .item(), stop_gradient or a trip through "
            "numpy): f's derivative ignores how it moves (harmless only where its effects "
            "cancel, as a max subtracted for stability and added back)"
        )

    def __str__(self) -> str:
        return self.row()

    def row(self, width: int = 12) -> str:
        """The node as a line of the table, its verdict padded to ``width``."""
        err = f"{self.local_error:.3g}" if onp.isfinite(self.local_error) else "-"
        name = f"{self.call}: {self.name}" if self.call and self.call != self.name else self.name
        return f"#{self.index:<3} {name:<16} {self.source:<36} {self.reading:<{width}} {err}"


def _ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


@dataclass(frozen=True)
class CutInput:
    """An operation's input that depends on x but reaches it outside the AD graph: a
    whole positional argument (``position`` an int), a keyword argument (a str), or
    one ``leaf`` of either (the second tensor of ``torch.cat([a, b.detach()])``).

    >>> str(CutInput(1)), str(CutInput(0, 1)), str(CutInput("bias"))
    ('2nd input', '2nd element of the 1st input', 'keyword input bias')
    """

    position: int | str
    leaf: int | None = None

    def __str__(self) -> str:
        where = (
            f"keyword input {self.position}"
            if isinstance(self.position, str)
            else f"{_ordinal(self.position + 1)} input"
        )
        return where if self.leaf is None else f"{_ordinal(self.leaf + 1)} element of the {where}"

    def value_in(self, args: tuple, kwargs: dict) -> Any:
        """This input's value among an operation's ``args`` and ``kwargs``."""
        from ..core.tree import flatten

        value = kwargs[self.position] if isinstance(self.position, str) else args[self.position]
        return value if self.leaf is None else flatten(value)[0][self.leaf]

    @property
    def order(self) -> tuple:
        """Positional inputs first, then keywords; leaves in order."""
        named = isinstance(self.position, str)
        return (named, str(self.position) if named else self.position, self.leaf or -1)


@dataclass(frozen=True, repr=False)
class Localization:
    """The traced operations of f and the first one with a wrong derivative."""

    nodes: tuple[OpNode, ...]
    culprit: OpNode | None
    function: str = "f"

    @property
    def unchecked(self) -> tuple[OpNode, ...]:
        return tuple(n for n in self.nodes if not n.checked)

    @property
    def cuts(self) -> tuple[OpNode, ...]:
        """Operations with an input that depends on x outside the AD graph."""
        return tuple(n for n in self.nodes if n.cut)

    def __repr__(self) -> str:
        return f"<Localization of {self.function}: {self._headline()}>"

    def _headline(self) -> str:
        n, skipped = len(self.nodes), len(self.unchecked)
        if self.culprit is not None:
            c = self.culprit
            return f"culprit: {c.name} at {c.source} ({c.verdict}), operation {c.index + 1} of {n}"
        if not n:
            return "no operation depends on the input"
        if skipped:
            head = (
                f"{n - skipped} of {n} operations checked, all with right derivatives; "
                f"{skipped} not checked (see below)"
            )
        else:
            head = f"all {n} operations have right derivatives"
        if self.cuts:
            k = len(self.cuts)
            head += (
                f", but {k} {'takes an input' if k == 1 else 'take inputs'} that depend"
                f"{'s' if k == 1 else ''} on x outside the AD graph (see below)"
            )
        return head

    def __str__(self) -> str:
        width = max([12] + [len(n.reading) for n in self.nodes])
        lines = [
            f"locate({self.function}): {self._headline()}",
            f"  {'#':<4} {'operation':<16} {'called at':<36} {'verdict':<{width}} violation",
        ]
        for n in self.nodes:
            mark = ">" if n is self.culprit else " "
            lines.append(f"{mark} {n.row(width)}")
        for n in self.cuts:
            lines.append(f"  ! {n.cut_text}" + (f"\n    {n.source}: {n.code}" if n.code else ""))
        c = self.culprit
        if c is not None and c.code:
            lines.append(f"  {c.source}: {c.code}")
        if c is not None and c.rule_elsewhere:
            lines.append(f"  its {c.verdict.rule} rule, {c.rule.where}: {c.rule.code}")
        if c is not None and c.report is not None:
            lines.append("  the culprit's own derivative:")
            lines.extend("    " + ln for ln in str(c.report).splitlines()[:8])
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = []
        for n in self.nodes:
            style = ' style="background:#fde2d0;font-weight:bold"' if n is self.culprit else ""
            err = f"{n.local_error:.3g}" if onp.isfinite(n.local_error) else "–"
            code = f"<br><code>{html.escape(n.code)}</code>" if n.code and n is self.culprit else ""
            if n is self.culprit and n.rule_elsewhere:
                code += (
                    f"<br>its {n.verdict.rule} rule, <code>{html.escape(n.rule.where)}"
                    f"</code>: <code>{html.escape(n.rule.code)}</code>"
                )
            rows.append(
                f"<tr{style}><td>{n.index}</td><td>{html.escape(n.name)}</td>"
                f"<td><code>{html.escape(n.source)}</code>{code}</td>"
                f"<td>{html.escape(n.reading)}</td><td>{err}</td></tr>"
            )
        cuts = "".join(
            f"<li>{html.escape(n.cut_text)}: <code>{html.escape(n.code)}</code></li>"
            for n in self.cuts
        )
        return (
            f"<div><b>{html.escape(self._headline())}</b><table><tr><th>#</th>"
            "<th>operation</th><th>called at</th><th>verdict</th><th>violation</th></tr>"
            f"{''.join(rows)}</table>{f'<ul>{cuts}</ul>' if cuts else ''}</div>"
        )

    def _repr_png_(self) -> bytes:
        from ..display import render

        return render(self, png=True)

    def plot(self, fig: Any = None):
        """The traced graph coloured by verdict, and the culprit's local check."""
        from ..display import render

        return render(self, fig)
