"""The summary of a test run's failed checks: ``index.html`` (every check with
its worst entries and its pictures inline; no script, no external file),
``summary.json`` (the records, for machines) and the terminal's lines.

>>> lines = terminal_lines([{"nodeid": "t.py::test_f", "number": 1, "headline": "f FAILED",
...     "entries": [{"text": "y[0] / x[0]  analytic 2  numeric 1"}], "more": 0}])
>>> print("\\n".join(lines))
t.py::test_f  (check 1)
  f FAILED
    y[0] / x[0]  analytic 2  numeric 1
"""

from __future__ import annotations

import html
import json
import re
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..check.report import Outcome
from ..check.report_text import OUTCOME_COLOURS

__all__ = ["write_summary", "clear_previous", "terminal_lines", "GENERATOR", "PICTURES"]

GENERATOR = "gradexplorer"
#: The pictures of a check in the order the page shows them, with their captions.
PICTURES = {
    "jacobian": "Jacobian: analytic (AD) beside numeric (FD), one colour scale",
    "diff": "|analytic − numeric|",
    "violation": "violation = |diff| / allowed error (above 1 fails)",
    "located": "entries located by group testing (fast mode)",
}
_FOLDER = re.compile(r"^[A-Za-z0-9._-]+-[0-9a-f]{8}$")


def terminal_lines(records: Iterable[Mapping], index: str | Path | None = None) -> list[str]:
    """Each failed check: the test, the report's headline and the text of its
    worst entries, as the report prints them; then where the page is."""
    lines = []
    for r in _ordered(records):
        lines.append(f"{r['nodeid']}  (check {r['number']})")
        lines.append(f"  {r['headline']}")
        if r.get("inconclusive"):
            lines.append(f"  inconclusive: {r['inconclusive']}")
        lines.extend(f"    {e['text']}" for e in r["entries"][:3])
        more = r["more"] + max(len(r["entries"]) - 3, 0)
        if more:
            lines.append(f"    ... and {more} more")
    if index is not None:
        lines.append(f"reports and heatmaps: {index}")
    return lines


def clear_previous(directory: str | Path) -> None:
    """Remove what an earlier run of the writer left in directory (the folders
    its summary.json lists, index.html, summary.json) and nothing else."""
    root = Path(directory)
    try:
        old = json.loads((root / "summary.json").read_text())
    except (OSError, ValueError):
        return
    if not isinstance(old, dict) or old.get("generator") != GENERATOR:
        return
    for r in old.get("checks", []):
        folder = r.get("folder", "") if isinstance(r, dict) else ""
        if _FOLDER.match(folder) and (root / folder).is_dir():
            shutil.rmtree(root / folder)
    for name in ("index.html", "summary.json"):
        (root / name).unlink(missing_ok=True)


def write_summary(
    records: Iterable[Mapping],
    directory: str | Path,
    *,
    tests: Mapping[str, str] | None = None,
    version: str = "",
) -> Path:
    """Write ``index.html`` and ``summary.json`` into directory; the page's path.

    ``tests`` maps a test's node id to its outcome (a check can fail inside a
    test that expected it to: the page says which).
    """
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    checks = _ordered(records)
    summary = {"generator": GENERATOR, "format": 1, "version": version, "checks": checks}
    (root / "summary.json").write_text(json.dumps(summary, indent=1, allow_nan=False))
    index = root / "index.html"
    index.write_text(_page(checks, tests or {}, version), encoding="utf-8")
    return index


def _ordered(records: Iterable[Mapping]) -> list[dict]:
    """Sorted by test, then check: the same page whatever order workers ran in."""
    return sorted((dict(r) for r in records), key=lambda r: (r["nodeid"], r["number"]))


def _e(v) -> str:
    return html.escape(str(v), quote=True)


def _colour(outcome: str) -> str:
    try:
        return OUTCOME_COLOURS[Outcome(outcome)]
    except (ValueError, KeyError):
        return "#555"


def _page(checks: list[dict], tests: Mapping[str, str], version: str) -> str:
    n_tests = len({c["nodeid"] for c in checks})
    title = (
        f"{len(checks)} failed derivative check{'s' * (len(checks) != 1)} "
        f"in {n_tests} test{'s' * (n_tests != 1)}"
        if checks
        else "no failed derivative checks"
    )
    nav = "".join(
        f'<li><a href="#{_anchor(c)}"><code>{_e(c["nodeid"])}</code></a> '
        f"check {c['number']}: {_badge(c)}</li>"
        for c in checks
    )
    body = "".join(_section(c, tests.get(c["nodeid"], "")) for c in checks)
    made_by = f"gradexplorer {_e(version)}" if version else "gradexplorer"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="generator" content="{GENERATOR}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>gradexplorer: {_e(title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{_e(title)}</h1><p>Written by {made_by}'s pytest plugin "
        "(<code>--gx-results</code>). Each check: its worst entries, then its heatmaps "
        "(click one for full size); failing entries are outlined in orange, the worst "
        "has a star.</p></header>"
        + (f'<nav><h2>Checks</h2><ol class="toc">{nav}</ol></nav>' if checks else "")
        + f"<main>{body}</main></body></html>\n"
    )


def _anchor(c: Mapping) -> str:
    return f"{c['folder']}-{c['number']}"


def _badge(c: Mapping) -> str:
    return (
        f'<span class="badge" style="background:{_colour(c["outcome"])}">{_e(c["status"])}</span>'
    )


def _section(c: Mapping, test_outcome: str) -> str:
    parts = [
        f'<section id="{_anchor(c)}"><h2><code>{_e(c["nodeid"])}</code> '
        f'<span class="num">check {c["number"]}</span> {_badge(c)}</h2>',
        f'<p class="headline"><code>{_e(c["headline"])}</code></p>',
    ]
    if test_outcome:
        parts.append(f'<p class="test">test outcome: <b>{_e(test_outcome)}</b></p>')
    if c.get("inconclusive"):
        parts.append(f"<p>inconclusive: {_e(c['inconclusive'])}</p>")
    parts.append(_table(c))
    files = c.get("files", {})
    shown = [k for k in PICTURES if k in files]
    if shown:
        figures = "".join(
            f'<figure class="{k}"><a href="{_e(files[k])}"><img src="{_e(files[k])}" '
            f'alt="{_e(PICTURES[k])} of {_e(c["function"])}"></a>'
            f"<figcaption>{_e(PICTURES[k])}</figcaption></figure>"
            for k in shown
        )
        parts.append(f'<div class="pictures">{figures}</div>')
    if c.get("note"):
        parts.append(f'<p class="note">{_e(c["note"])}</p>')
    if files:
        links = " · ".join(f'<a href="{_e(p)}">{_e(Path(p).name)}</a>' for p in files.values())
        parts.append(f'<p class="files">files: {links}</p>')
    parts.append("</section>")
    return "".join(parts)


def _table(c: Mapping) -> str:
    heads = ("entry", "analytic", "numeric", "|diff|", "FD error", "violation", "verdict")
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{_e(v)}</td>"
            for v in (
                e["label"],
                _num(e["analytic"]),
                _num(e["numeric"]),
                _num(e["abs_err"], ".2e"),
                _num(e["fd_error"], ".1e"),
                _num(e["violation"], ".3g"),
                e["reading"],
            )
        )
        + "</tr>"
        for e in c["entries"]
    )
    more = (
        f'<tr><td colspan="7" class="more">... and {c["more"]} more</td></tr>' if c["more"] else ""
    )
    head = "".join(f"<th>{h}</th>" for h in heads)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}{more}</tbody></table>"


def _num(v, spec: str = ".6g") -> str:
    return format(v, spec) if isinstance(v, (int, float)) else str(v)


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
max-width:1320px;padding:16px 24px;color:#1f2328;background:#fff;line-height:1.45}
h1{font-size:1.6rem;margin:.2em 0}h2{font-size:1.1rem;margin:.2em 0 .5em}
code{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,monospace;font-size:.9em}
header p{color:#57606a;margin:.3em 0 1em}
.toc{padding-left:1.6em}.toc li{margin:.25em 0}
.badge{color:#fff;padding:1px 8px;border-radius:4px;font-weight:600;font-size:.85rem;
white-space:nowrap}
section{border-top:2px solid #d0d7de;padding:14px 0 22px}
.num{color:#57606a;font-weight:400;font-size:.95rem}
.headline code{background:#f6f8fa;padding:2px 4px;border-radius:3px;display:inline-block}
.test,.note{color:#57606a}
table{border-collapse:collapse;margin:8px 0 14px;font-size:.9rem}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td:nth-child(n+2):nth-child(-n+6){font-family:ui-monospace,
"DejaVu Sans Mono",monospace;text-align:right;white-space:nowrap}
td.more{color:#57606a;text-align:left}
.pictures{display:grid;grid-template-columns:1fr 1fr;gap:12px 18px;align-items:start}
.pictures figure{margin:0}.pictures figure.jacobian,.pictures figure.located{grid-column:1/-1}
.pictures img{max-width:100%;height:auto;border:1px solid #d0d7de;display:block}
figcaption{color:#57606a;font-size:.85rem;margin-top:3px}
.files{font-size:.85rem}
"""
