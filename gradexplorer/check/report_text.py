"""A :class:`~gradexplorer.check.report.CheckReport` in words: the headline, the
text of ``str(report)`` and the HTML a notebook shows."""

from __future__ import annotations

import base64
import html
from typing import Any

import numpy as onp

from .judging import FD_SAFETY
from .report import Outcome, format_fd_error, plural

__all__ = ["headline", "status", "text", "html_report", "OUTCOME_COLOURS"]

#: Badge colours by outcome (shared with the pictures and the explorer).
OUTCOME_COLOURS = {
    Outcome.PASSED: "#1a7f37",
    Outcome.FAILED: "#b42318",
    Outcome.INCONCLUSIVE: "#b54708",
}

_WHAT = {1: "Jacobian", 2: "second derivatives (Hessian / Jacobian of the VJP)"}


def status(r: Any) -> str:
    """``PASSED``, ``FAILED: 2 wrong entries`` or ``INCONCLUSIVE: <why, short>``."""
    if r.outcome is Outcome.PASSED:
        return "PASSED"
    if r.outcome is Outcome.INCONCLUSIVE:
        return "INCONCLUSIVE: " + (
            plural(len(r.unresolved), "unresolvable entry", "unresolvable entries")
            if r.unresolved
            else "see the notes"
        )
    n = r.wrong_count
    found = getattr(r, "opcheck", None)
    if n == 0 and found is not None and not found.passed:
        from .opcheck import opcheck_status

        return f"FAILED: {opcheck_status(found)}"
    first = r.first_order
    if n == 0 and first is not None and first.outcome is Outcome.FAILED:
        return f"FAILED: first order, {first.status.removeprefix('FAILED: ')}"
    return f"FAILED: {plural(n, 'wrong entry', 'wrong entries')}"


def _where(r: Any) -> str:
    """The device f ran on, where it is not the host's only one."""
    device = getattr(r, "device", "cpu")
    return "" if device in ("cpu", "cpu:0") else f" on {device}"


def headline(r: Any) -> str:
    m, n = r.shape
    parts = [plural(r.wrong_count, "wrong entry", "wrong entries")]
    if r.unresolved:
        parts.append(plural(len(r.unresolved), "unresolvable entry", "unresolvable entries"))
    if r.kinks:
        parts.append(plural(len(r.kinks), "entry at a kink", "entries at kinks"))
    if r.not_checked:
        parts.append(f"{len(r.not_checked)} not checked")
    found = getattr(r, "opcheck", None)
    if found is not None and not found.passed:
        from .opcheck import opcheck_status

        parts.append(opcheck_status(found))
    return (
        f"{r.checker}({r.function}) {r.outcome}: {_WHAT.get(r.order, r.order)}, "
        f"{m} x {n} ({r.mode} mode, {r.method} FD, {r.dtype}{_where(r)}); "
        f"{', '.join(parts)}; {r.nfev} f evaluations, {r.ngrad} derivative passes"
    )


def text(r: Any) -> str:
    lines = [headline(r)]
    if r.inconclusive:
        lines.append(f"  inconclusive: {r.inconclusive}")
    if r.first_order is not None:
        ok = {Outcome.PASSED: "passed", Outcome.FAILED: "FAILED"}.get(
            r.first_order.outcome, "INCONCLUSIVE"
        )
        lines.append(f"  first-order check {ok}; this report is order {r.order}.")
        if not r.first_order.passed:
            lines.extend("  " + ln for ln in str(r.first_order).splitlines())
    if r.mode_reason:
        lines.append(f"  mode: {r.mode_reason}")
    lines.extend(f"  note: {n}" for n in r.notes)
    if r.not_checked:
        lines.append("  not checked:")
        lines.extend(f"    {label}: {reason}" for label, reason in r.not_checked[:10])
    if r.mismatches:
        many = len(r.mismatches) > 1
        lines.append("  wrong entries (worst first):" if many else "  wrong entry:")
        lines.extend(f"    {e}" for e in r.mismatches[:10])
        more = r.wrong_count - min(10, len(r.mismatches))
        if more > 0:
            lines.append(f"    ... and {more} more")
    else:
        close = [e for e in r.worst if e.violation > 0 and onp.isfinite(e.fd_error)][:3]
        if close:
            lines.append("  closest to failing (all within tolerance; violation < 1 passes):")
            lines.extend(f"    {e}" for e in close)
    if r.unresolved:
        lines.append("  unresolvable by finite differences (neither right nor wrong):")
        lines.extend(f"    {e}" for e in r.unresolved[:5])
        if len(r.unresolved) > 5:
            lines.append(f"    ... and {len(r.unresolved) - 5} more")
    if r.kinks:
        lines.append("  not differentiable here (one-sided derivatives differ):")
        lines.extend(f"    {e}" for e in r.kinks[:5])
        if len(r.kinks) > 5:
            lines.append(f"    ... and {len(r.kinks) - 5} more")
    if r.taylor is not None:
        lines.append(f"  Taylor test: {r.taylor.summary()}")
    # compiled=True; the custom operators f calls
    for extra in (getattr(r, "compiled", None), getattr(r, "opcheck", None)):
        if extra is not None:
            lines.extend(f"  {ln}" for ln in extra.lines())
    lines.append(
        f"  tolerance per entry: |analytic - numeric| <= {FD_SAFETY:g}·FD error"
        f" + {r.rtol:.1e}·|value|"
        + (f" + {r.atol:.1e}" if r.atol else "")
        + " (+ the analytic side's round-off where measured)"
    )
    return "\n".join(lines)


def html_report(r: Any) -> str:
    color = OUTCOME_COLOURS[r.outcome]
    badge = (
        f'<span style="background:{color};color:white;padding:2px 8px;border-radius:4px;'
        f'font-weight:bold">{r.outcome}</span>'
    )
    shown = list(r.mismatches or r.worst)[:10] + list(r.unresolved[:5]) + list(r.kinks[:5])
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
                e.reading,
            )
        )
        + "</tr>"
        for e in shown
    )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("entry", "analytic", "numeric", "|diff|", "FD error", "violation", "verdict")
    )
    notes = [f"inconclusive: {html.escape(r.inconclusive)}"] if r.inconclusive else []
    notes += [html.escape(n) for n in r.notes]
    for extra in (getattr(r, "compiled", None), getattr(r, "opcheck", None)):
        if extra is not None:
            notes.append("<br>".join(html.escape(ln) for ln in extra.lines()))
    notes += [f"not checked: {html.escape(lb)} ({html.escape(why)})" for lb, why in r.not_checked]
    items = "".join(f"<li>{n}</li>" for n in notes)
    return (
        f"<div>{badge} <code>{html.escape(headline(r))}</code>"
        f"{f'<ul>{items}</ul>' if items else ''}{_inline_png(r)}"
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>"
    )


def _inline_png(r: Any) -> str:
    """The heatmaps inside the HTML repr (notebooks show one MIME type)."""
    try:
        png = r._repr_png_()
    except ImportError:  # no matplotlib: the table alone
        return ""
    if not png:
        return ""
    data = base64.b64encode(png).decode()
    return f'<br><img src="data:image/png;base64,{data}" style="max-width:100%">'
