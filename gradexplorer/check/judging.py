"""The rule every check applies to an entry, and the entries it reports.

An entry is wrong when ``|analytic - numeric|`` exceeds its own allowance:
``FD_SAFETY·fd_error + rtol·max(|analytic|, |numeric|) + atol``. The FD error
is the finite differences' own estimate for that entry; ``rtol`` covers the
round-off of the analytic derivative, in units of the entry's precision (the
lower of its row's and column's); ``atol`` is zero unless the user sets it.
No entry is excused by the size of another. An entry whose FD error is
infinite is not judged at all: it is *unresolvable*.
"""

from __future__ import annotations

from typing import Any

import numpy as onp

from .report import Blocks, Entry, verdict_for

__all__ = ["FD_SAFETY", "RTOL_ULPS", "tolerances", "judge", "make_entry", "validate_tolerance"]

#: The FD error estimate is a bound with margin already; this covers its spread.
FD_SAFETY = 2.0
#: Round-off allowed in an analytic derivative, in ulps of the entry's precision.
RTOL_ULPS = 256.0


def validate_tolerance(value: Any, name: str) -> float | None:
    """None stays None; anything else must be a finite float >= 0."""
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a float >= 0 or None; got {value!r:.40}.") from None
    if not onp.isfinite(v) or v < 0:
        raise ValueError(
            f"{name} must be a finite float >= 0 (or None for the default); got {value!r}."
        )
    return v


def tolerances(eps: onp.ndarray, atol: float | None, rtol: float | None):
    """Per-entry rtol (an array like ``eps``) and a scalar atol."""
    r = RTOL_ULPS * eps if rtol is None else onp.full_like(eps, rtol, dtype=float)
    return (0.0 if atol is None else float(atol)), r


def judge(analytic, numeric, fd_error, rtol, atol) -> onp.ndarray:
    """violation = |a - n| / allowance (> 1 fails); NaN where FD cannot resolve.

    An analytic NaN/Inf where the numeric derivative is finite and resolved is
    a violation (infinite).
    """
    a, n, e = onp.asarray(analytic), onp.asarray(numeric), onp.asarray(fd_error)
    with onp.errstate(invalid="ignore", divide="ignore", over="ignore"):
        diff = onp.abs(a - n)
        allowed = FD_SAFETY * e + rtol * onp.maximum(onp.abs(a), onp.abs(n)) + atol
        v = onp.where(allowed > 0, diff / allowed, onp.where(diff > 0, onp.inf, 0.0))
    resolved = onp.isfinite(e) & onp.isfinite(n)
    v = onp.where(resolved & ~onp.isfinite(a), onp.inf, v)
    return onp.where(resolved, v, onp.nan)


def make_entry(
    rows: Blocks,
    cols: Blocks,
    i: int,
    j: int,
    a: float,
    n: float,
    e: float,
    v: float,
    *,
    kind: str = "vjp",
    verdict: str | None = None,
    row_label: str | None = None,
) -> Entry:
    """An :class:`Entry` for row i (``-1``: a random cotangent) and column j."""
    _, cside, cj = cols.locate(int(j))
    if i >= 0:
        _, rside, ri = rows.locate(int(i))
        out_index, rlabel = rside.index(ri), rside.label(ri)
    else:
        out_index, rlabel = (), "(u·y)"
    label = f"{row_label or rlabel} / {cside.label(cj)}" + (" [fwd]" if kind == "jvp" else "")
    return Entry(
        wrt=cside.wrt,
        out_index=out_index,
        in_index=cside.index(cj),
        analytic=float(a),
        numeric=float(n),
        abs_err=float(abs(a - n)),
        fd_error=float(e),
        label=label,
        violation=float(v),
        row=int(i),
        col=int(j),
        verdict=verdict if verdict is not None else verdict_for(float(v), a, n, e),
        kind=kind,
    )
