"""A :class:`~gradexplorer.check.report.CheckReport` as plain JSON data, for
files a test run leaves behind (CI artifacts, the pytest plugin's results).

Non-finite numbers are written as the strings ``"nan"``, ``"inf"`` and
``"-inf"`` (strict JSON has no such numbers); matrices are kept up to
``max_entries`` entries, larger ones are named with their shape only.

>>> import autograd.numpy as anp, gradexplorer as gx, json
>>> d = json.loads(gx.check_grads(anp.sin, anp.ones(2)).to_json())
>>> d["outcome"], d["shape"], d["matrices"]["analytic"][0][0] == d["worst"][0]["analytic"]
('passed', [2, 2], True)
"""

from __future__ import annotations

import enum
import json
import math
from typing import Any

import numpy as onp

from .report_text import headline

__all__ = ["report_dict", "report_json", "MATRICES", "FORMAT"]

#: The dense matrices a full-mode report holds, in the order the pictures draw them.
MATRICES = ("analytic", "numeric", "abs_err", "rel_err", "fd_error", "violation")
#: Bumped when a key changes meaning, so readers of old files can tell.
FORMAT = 1


def report_dict(r: Any, *, max_entries: int = 10_000) -> dict:
    """The report as JSON-ready data (dicts, lists, str, int, float, bool, None)."""
    if max_entries < 0:
        raise ValueError(f"max_entries must be >= 0; got {max_entries}")
    m, n = r.shape
    d = {
        "format": FORMAT,
        "outcome": r.outcome.value,
        "status": r.status,
        "headline": headline(r),
        "text": str(r),
        "function": r.function,
        "checker": r.checker,
        "order": r.order,
        "mode": r.mode,
        "mode_reason": r.mode_reason,
        "method": r.method,
        "dtype": r.dtype,
        "shape": [m, n],
        "atol": r.atol,
        "rtol": r.rtol,
        "nfev": r.nfev,
        "ngrad": r.ngrad,
        "wrong_count": r.wrong_count,
        "inconclusive": r.inconclusive,
        "notes": list(r.notes),
        "not_checked": [{"label": lb, "reason": why} for lb, why in r.not_checked],
        "row_blocks": {k: [s.start, s.stop] for k, s in r.row_blocks.items()},
        "column_blocks": {k: [s.start, s.stop] for k, s in r.column_blocks.items()},
        "backward_spread": r.backward_spread,
        "taylor": r.taylor.summary() if r.taylor is not None else None,
    }
    for name in ("mismatches", "worst", "unresolved", "kinks"):
        d[name] = [entry_dict(e) for e in getattr(r, name)]
    d["matrices"] = _matrices(r, max_entries)
    d["first_order"] = (
        report_dict(r.first_order, max_entries=max_entries) if r.first_order is not None else None
    )
    return _plain(d)


def report_json(r: Any, *, max_entries: int = 10_000, indent: int | None = 1) -> str:
    """:func:`report_dict` as strict JSON text."""
    return json.dumps(report_dict(r, max_entries=max_entries), indent=indent, allow_nan=False)


def entry_dict(e: Any) -> dict:
    """One :class:`~gradexplorer.check.report.Entry`, with its reading in words."""
    return {
        "label": e.label,
        "wrt": e.wrt,
        "out_index": e.out_index,
        "in_index": e.in_index,
        "row": e.row,
        "col": e.col,
        "analytic": e.analytic,
        "numeric": e.numeric,
        "abs_err": e.abs_err,
        "fd_error": e.fd_error,
        "violation": e.violation,
        "verdict": e.verdict,
        "kind": e.kind,
        "reason": e.reason.text if e.reason is not None else None,
        "one_sided": e.one_sided,
        "reading": e.reading,
        "text": str(e),
    }


def _matrices(r: Any, max_entries: int) -> dict:
    out = {}
    for name in MATRICES:
        M = getattr(r, name)
        if M is None:
            continue
        if M.size > max_entries:
            out[name] = {"omitted": f"{M.shape[0]} x {M.shape[1]} is over {max_entries} entries"}
        else:
            out[name] = onp.asarray(M, dtype=float).tolist()
    return out


def _plain(v: Any) -> Any:
    """numpy scalars, enums and tuples as JSON values; non-finite floats as words."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, enum.Enum):
        return v.value
    if isinstance(v, (bool, onp.bool_)):
        return bool(v)
    if isinstance(v, (int, onp.integer)):
        return int(v)
    if isinstance(v, (float, onp.floating)):
        v = float(v)
        if math.isfinite(v):
            return v
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if v is None or isinstance(v, str):
        return v
    return str(v)
