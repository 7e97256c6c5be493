"""The explorer's text: verdict badge, worst entries, selected entry, errors (HTML)."""

from __future__ import annotations

import html
import traceback
from typing import Any

from ..check.report import format_fd_error

__all__ = [
    "badge_html", "stale_badge_html", "status_html", "worst_html", "entry_html", "error_html",
    "point_text", "STYLE", "SAVED_NOTE",
]  # fmt: skip

#: The explorer's own CSS (an HTML widget's <style> applies to the page): stale views
#: dimmed, tables aligned, numbers in tabular figures.
STYLE = """<style>
.gx-stale .widget-tab-contents { opacity: 0.35; filter: grayscale(60%); }
.gx-table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
.gx-table th, .gx-table td { padding: 1px 10px; text-align: right; }
.gx-table th:first-child, .gx-table td:first-child,
.gx-table th:last-child, .gx-table td:last-child { text-align: left; }
.gx-table tr:nth-child(even) { background: #f4f4f4; }
.gx-explorer canvas:focus { outline: none; }
.gx-explorer .gx-note-line { color: #8a5a00; }
/* ipywidgets lays a toggle group's label out as a block: its buttons fell below it */
.gx-explorer .widget-toggle-buttons { display: flex; align-items: center; margin-left: 12px; }
.gx-explorer.jupyter-widgets-disconnected::before,
.gx-explorer .jupyter-widgets-disconnected::before { content: none; }
.gx-saved { display: none; color: #555; font-style: italic; }
.gx-explorer:has(.jupyter-widgets-disconnected) .gx-saved { display: block; }
</style>"""

#: Shown only when the explorer is a saved picture with no kernel behind it (a notebook
#: reopened): one note, instead of a broken-link icon on every control.
SAVED_NOTE = (
    '<div class="gx-saved">The pictures saved with this notebook. Run the cell to explore '
    "again: the controls are not connected to a running kernel.</div>"
)


def badge_html(r: Any) -> str:
    """A coloured PASSED/FAILED badge with the check's size and method.

    >>> import gradexplorer as gx, numpy as np
    >>> "PASSED" in badge_html(gx.check_grads(np.sin, np.ones(2)))
    True
    """
    outcome = getattr(getattr(r, "outcome", None), "value", None)
    outcome = outcome or ("passed" if r.passed else "failed")
    # green, red, or amber: an inconclusive check neither passed nor found a wrong entry
    color = {"passed": "#1a7f37", "failed": "#b42318"}.get(outcome, "#b26b00")
    verdict = r.status
    return (
        f'<span style="background:{color};color:white;padding:3px 10px;border-radius:4px;'
        f'font-weight:bold">{verdict}</span> <span style="color:#555">'
        f"{r.shape[0]} x {r.shape[1]}, {r.method}, {r.dtype}, {r.nfev} evaluations</span>"
    )


def stale_badge_html(last_point: str) -> str:
    """A grey badge: the pictures below are from an earlier point."""
    shown = f" showing the last good point, {html.escape(last_point)}" if last_point else ""
    return (
        '<span style="background:#6e7781;color:white;padding:3px 10px;border-radius:4px;'
        f'font-weight:bold">STALE</span> <span style="color:#555">{shown}</span>'
    )


def status_html(state: str, generation: int, todo: int = 0) -> str:
    """ "computing…" while busy; the state, the change's number and how many views are
    still to compute in the background (for the saved pictures) as data attributes
    (the browser test waits on them, not on time).

    >>> status_html("idle", 3, todo=2)[:57]
    '<span data-state="idle" data-generation="3" data-todo="2"'
    """
    text = "computing…" if state == "busy" else ""
    return (
        f'<span data-state="{state}" data-generation="{generation}" data-todo="{todo}" '
        f'style="color:#555;margin-left:8px">{text}</span>'
    )


def point_text(names: list, values: list, limit: int = 4) -> str:
    """``x = [0.1, 2.5, …]``: the point, short enough for a message.

    >>> import numpy as np
    >>> point_text(["x"], [np.array([0.25, 3.0, 1.0, 2.0, 5.0])])
    'x = [0.25, 3, 1, 2, …]'
    """
    parts = []
    for name, value in zip(names, values):
        try:
            flat = [complex(v) for v in _ravel(value)]
        except Exception:
            parts.append(f"{name} = {type(value).__name__}")
            continue
        nums = [f"{v.real:.3g}" if v.imag == 0 else f"{v:.3g}" for v in flat[:limit]]
        more = ", …" if len(flat) > limit else ""
        parts.append(f"{name} = [{', '.join(nums)}{more}]")
    return "; ".join(parts)


def _ravel(value: Any) -> list:
    import numpy as np

    if hasattr(value, "detach"):  # torch
        value = value.detach().cpu().numpy()
    return list(np.ravel(np.asarray(value)))


def worst_html(r: Any, limit: int = 8) -> str:
    """The wrong entries (or, when all pass, those closest to failing) as a table."""
    rows = (r.mismatches or r.worst)[:limit]
    head = "wrong entries" if r.mismatches else "closest to failing (all within tolerance)"
    body = "".join(
        f"<tr><td>{html.escape(e.label)}</td><td>{e.analytic:.6g}</td><td>{e.numeric:.6g}"
        f"</td><td>{e.abs_err:.2e}</td><td>{format_fd_error(e.fd_error)}</td><td>{html.escape(e.reading)}"
        "</td></tr>"
        for e in rows
    )
    return (
        f'<b>{head}</b><table class="gx-table"><tr><th>entry</th><th>analytic</th><th>numeric</th>'
        f"<th>|diff|</th><th>FD error</th><th>verdict</th></tr>{body}</table>"
    )


def entry_html(r: Any, i: int, j: int) -> str:
    """The numbers of entry (i, j) of a full-mode report."""
    a, n, e, v = r.analytic[i, j], r.numeric[i, j], r.fd_error[i, j], r.violation[i, j]
    label = f"{r.row_label(i)} / {r.col_label(j)}"
    return (
        f"<b>{html.escape(label)}</b>: analytic {a:.10g}, numeric {n:.10g}, "
        f"|diff| {abs(a - n):.3e}, FD error ± {format_fd_error(e)}, violation {v:.3g} "
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
