"""Registered custom operators f calls, checked by their AD system's own registration
checker (torch.library's ``opcheck``), the findings joined to the gradient check.

The gradient check compares an operator's registered backward with finite
differences; the registration checker sees what values cannot show: a schema
that lies about mutation, a backward registered where autograd does not look
(right today by accident), a fake kernel with the wrong shapes (torch.compile
and export fail, or silently mis-plan). A failing finding fails the check.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from .problem import Problem
from .report import CheckReport, Outcome, plural

__all__ = ["OpcheckFinding", "OpcheckReport", "run_opcheck", "with_opcheck"]

#: opcheck's test names in words.
_TESTS = {
    "test_schema": "schema",
    "test_autograd_registration": "autograd registration",
    "test_faketensor": "fake tensor (meta) kernel",
    "test_aot_dispatch_dynamic": "AOT dispatch (torch.compile)",
    "opcheck": "opcheck itself",
}


@dataclass(frozen=True)
class OpcheckFinding:
    """One test of one operator: ``status`` is ``"SUCCESS"``, ``"SKIP"`` or
    ``"FAILURE"`` (``message`` then says what failed).

    >>> OpcheckFinding("lib::op", "test_schema", "SUCCESS", "").failed
    False
    """

    op: str
    test: str
    status: str
    message: str

    @property
    def failed(self) -> bool:
        return self.status == "FAILURE"

    @property
    def what(self) -> str:
        return _TESTS.get(self.test, self.test)

    def __str__(self) -> str:
        text = f"{self.op}: {self.what} {self.status.lower()}"
        return f"{text}: {self.message}" if self.message else text


@dataclass(frozen=True)
class OpcheckReport:
    """Every custom operator f called, and every opcheck test of each.

    >>> ok = OpcheckFinding("lib::op", "test_schema", "SUCCESS", "")
    >>> r = OpcheckReport(("lib::op",), (ok,), 0.1)
    >>> r.passed, r.lines()[0]
    (True, 'opcheck (torch.library): lib::op passed schema')
    """

    ops: tuple[str, ...]
    findings: tuple[OpcheckFinding, ...]
    seconds: float

    @property
    def failures(self) -> tuple[OpcheckFinding, ...]:
        return tuple(f for f in self.findings if f.failed)

    @property
    def passed(self) -> bool:
        return not self.failures

    def lines(self) -> list[str]:
        """The findings in words, for the report's text."""
        out = []
        for op in self.ops:
            mine = [f for f in self.findings if f.op == op]
            ok = [f.what for f in mine if f.status == "SUCCESS"]
            skipped = [f.what for f in mine if f.status == "SKIP"]
            bad = [f for f in mine if f.failed]
            head = f"opcheck (torch.library): {op} "
            head += f"FAILED {', '.join(f.what for f in bad)}" if bad else "passed"
            if ok:
                head += ("; passed " if bad else " ") + ", ".join(ok)
            if skipped:
                head += "; skipped " + ", ".join(skipped)
            out.append(head)
            out.extend(f"    {f.what}: {f.message}" for f in bad)
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def run_opcheck(p: Problem) -> OpcheckReport | None:
    """opcheck on every custom operator f calls at the check's point (None when its
    AD system has none, or f calls none)."""
    backend = p.backend
    if backend is None or not getattr(backend.capabilities, "custom_ops", False) or p.call is None:
        return None
    start = time.perf_counter()
    calls = backend.custom_op_calls(p.call)
    if not calls:
        return None
    findings = tuple(
        OpcheckFinding(c.name, test, status, message)
        for c in calls
        for test, status, message in backend.opcheck(c)
    )
    return OpcheckReport(tuple(c.name for c in calls), findings, time.perf_counter() - start)


def with_opcheck(report: CheckReport, found: OpcheckReport | None) -> CheckReport:
    """The report with opcheck's findings; a failing one fails the check."""
    if found is None:
        return report
    if found.passed:
        return replace(report, opcheck=found)
    return replace(report, opcheck=found, outcome=Outcome.FAILED, inconclusive="")


def opcheck_status(found: OpcheckReport) -> str:
    """``"opcheck: 2 failing tests of gxtest::cube"`` (the report's status line)."""
    n = len(found.failures)
    ops = ", ".join(dict.fromkeys(f.op for f in found.failures))
    return f"opcheck: {plural(n, 'failing test', 'failing tests')} of {ops}"
