"""One failed check's record and files: ``check-N.json`` (the whole report)
and ``check-N-jacobian.png``, ``-diff.png``, ``-violation.png`` (``-located.png``
for a fast-mode check) in a folder named after the test.

>>> import autograd.numpy as anp, gradexplorer as gx
>>> f = gx.primitive(lambda x: x**2)
>>> gx.defvjp(f, lambda ans, x: lambda g: 3 * g * x)  # should be 2 * g * x
>>> r = gx.check_grads(f, anp.array([1.0, 2.0]))
>>> rec = check_record(r, "tests/test_f.py::test_square", 1)
>>> rec["status"], rec["entries"][0]["text"] == str(r.mismatches[0]), rec["folder"]
('FAILED: 2 wrong entries', True, 'tests_test_f.py_test_square-53794e62')
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

__all__ = ["check_record", "write_check", "slug", "ENTRIES_SHOWN"]

#: Entries a record keeps (the worst first), as the report's text shows them.
ENTRIES_SHOWN = 5
#: Longest readable part of a folder name (file systems allow 255 bytes).
_SLUG_CHARS = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def slug(nodeid: str) -> str:
    """A folder name for a test: its node id made safe, and a hash of it, so
    that ids alike once made safe (``a/b``, ``a_b``) still get folders apart.

    >>> slug("tests/test_ops.py::test_grad[relu-x0]")
    'tests_test_ops.py_test_grad_relu-x0-396c6fae'
    """
    if not isinstance(nodeid, str) or not nodeid:
        raise ValueError(f"nodeid must be a non-empty string; got {nodeid!r}")
    readable = _UNSAFE.sub("_", nodeid)[:_SLUG_CHARS].strip("._") or "test"
    return f"{readable}-{hashlib.sha1(nodeid.encode()).hexdigest()[:8]}"


def check_record(report: Any, nodeid: str, number: int) -> dict:
    """Plain data about a failed check: enough for the terminal summary and the
    HTML page (its worst entries, with the report's own text of each)."""
    if not isinstance(number, int) or number < 1:
        raise ValueError(f"number counts a test's checks from 1; got {number!r}")
    d = report.to_dict(max_entries=0)
    shown = d["mismatches"] or d["unresolved"] or d["kinks"]
    total = report.wrong_count if d["mismatches"] else len(shown)
    return {
        "nodeid": nodeid,
        "number": number,
        "function": d["function"],
        "checker": d["checker"],
        "outcome": d["outcome"],
        "status": d["status"],
        "headline": d["headline"],
        "inconclusive": d["inconclusive"],
        "entries": shown[:ENTRIES_SHOWN],
        "more": max(total - ENTRIES_SHOWN, 0),
        "folder": slug(nodeid),
        "files": {},
        "note": "",
    }


def write_check(report: Any, record: dict, directory: str | Path) -> dict:
    """Write the report's JSON and pictures under ``directory/record["folder"]``;
    the record with ``files`` (paths relative to directory, by kind) and
    ``note`` (why there are no pictures, when there are none)."""
    root = Path(directory)
    folder = root / record["folder"]
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"check-{record['number']}"
    files = {"report": _write(root, folder / f"{stem}.json", report.to_json().encode())}
    note = ""
    try:
        from ..display.check_pictures import check_pictures
    except ImportError:
        note = "no pictures: matplotlib is not installed (pip install 'gradexplorer[widgets]')"
    else:
        try:
            pictures = check_pictures(report)
        except Exception as exc:  # a picture must never hide the check's own failure
            note = f"no pictures: drawing failed ({type(exc).__name__}: {exc})"
        else:
            for name, png in pictures.items():
                files[name] = _write(root, folder / f"{stem}-{name}.png", png)
    return {**record, "files": files, "note": note}


def _write(root: Path, path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return path.relative_to(root).as_posix()
