"""The explorer's text: verdict badge, worst entries, selected entry, errors (HTML)."""

from __future__ import annotations

import html
import traceback
from typing import Any

__all__ = ["badge_html", "worst_html", "entry_html", "error_html"]


def badge_html(r: Any) -> str:
    """A coloured PASSED/FAILED badge with the check's size and method.

    >>> import gradexplorer as gx, numpy as np
    >>> "PASSED" in badge_html(gx.check_grads(np.sin, np.ones(2)))
    True
    """
    color = "#1a7f37" if r.passed else "#b42318"
    verdict = "PASSED" if r.passed else f"FAILED: {len(r.mismatches)} wrong entries"
    return (
        f'<span style="background:{color};color:white;padding:3px 10px;border-radius:4px;'
        f'font-weight:bold">{verdict}</span> <span style="color:#555">'
        f"{r.shape[0]} x {r.shape[1]}, {r.method}, {r.dtype}, {r.nfev} evaluations</span>"
    )


def worst_html(r: Any, limit: int = 8) -> str:
    """The wrong entries (or, when all pass, those closest to failing) as a table."""
    rows = (r.mismatches or r.worst)[:limit]
    head = "wrong entries" if r.mismatches else "closest to failing"
    body = "".join(
        f"<tr><td>{html.escape(e.label)}</td><td>{e.analytic:.6g}</td><td>{e.numeric:.6g}"
        f"</td><td>{e.abs_err:.2e}</td><td>{e.fd_error:.1e}</td><td>{html.escape(e.verdict)}"
        "</td></tr>"
        for e in rows
    )
    return (
        f"<b>{head}</b><table><tr><th>entry</th><th>analytic</th><th>numeric</th>"
        f"<th>|diff|</th><th>FD error</th><th>verdict</th></tr>{body}</table>"
    )


def entry_html(r: Any, i: int, j: int) -> str:
    """The numbers of entry (i, j) of a full-mode report."""
    a, n, e, v = r.analytic[i, j], r.numeric[i, j], r.fd_error[i, j], r.violation[i, j]
    label = f"{r.row_label(i)} / {r.col_label(j)}"
    return (
        f"<b>{html.escape(label)}</b>: analytic {a:.10g}, numeric {n:.10g}, "
        f"|diff| {abs(a - n):.3e}, FD error ± {e:.2e}, violation {v:.3g} "
        f"({'fails' if v > 1 else 'ok'})"
    )


def error_html(exc: BaseException, where: str = "") -> str:
    """The exception's type and message in a red box (no traceback noise)."""
    text = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return (
        '<div style="border:1px solid #b42318;background:#fdecea;color:#b42318;'
        f'padding:6px;font-family:monospace">Error{(" " + where) if where else ""}: '
        f"{html.escape(text)}</div>"
    )
