"""The numbers of the map views (Jacobian, Check, Complex, Hessian), as the page draws them.

Each function returns a frame: ``(spec, slots)``, the JSON the page reads and the
float32 arrays by slot. Maps larger than :data:`PAGE_CELLS` a side are pooled in the
kernel (each block keeps its entry of largest magnitude, so one bad entry is never
averaged away); the page asks for a window at full resolution when the user zooms
(:func:`tile`). Colour scales come from :mod:`gradexplorer.display.scales`, as the
static pictures' do.
"""

from __future__ import annotations

from typing import Any

import numpy as onp

from ..display.scales import nonfinite_words, scale_for
from ..display.values import max_abs, pool_max_abs
from .pane import f32

__all__ = [
    "PAGE_CELLS", "panel", "report_labels", "jacobian_frame", "check_frame", "complex_frame",
    "hessian_frame", "tile", "ENTRY_SLOTS", "verdict_color",
]  # fmt: skip

#: Maps up to this many cells a side are sent whole; larger ones pooled to it.
PAGE_CELLS = 256
#: Where a report's per-entry matrices go (the Jacobian and Check views alike: hover
#: shows all five wherever the pointer is).
ENTRY_SLOTS = {
    "analytic": "b0",
    "numeric": "b1",
    "abs_err": "b2",
    "fd_error": "b3",
    "violation": "b4",
}
VERDICT_COLORS = {"passed": "#1a7f37", "failed": "#b42318", "inconclusive": "#b26b00"}


def verdict_color(report: Any) -> str:
    """Green, red, or amber for an inconclusive check."""
    outcome = getattr(report, "outcome", None)
    value = getattr(outcome, "value", None) or ("passed" if report.passed else "failed")
    return VERDICT_COLORS.get(value, "#b42318")


def panel(
    M: Any, kind: str, title: str, vmax: float | None = None, slot: str = "b0", at: Any = None
) -> tuple[dict, bytes]:
    """One map: its spec (shape, pooling, scale, caption) and its pooled values.

    >>> spec, data = panel(onp.eye(3), "signed", "J")
    >>> spec["rows"], spec["block"], spec["scale"]["vmax"], len(data)
    (3, [1, 1], 1.0, 36)
    """
    M = onp.asarray(M, dtype=float)
    if M.ndim != 2:
        M = M.reshape(M.shape[0] if M.ndim else 1, -1)
    P, block = pool_max_abs(M, PAGE_CELLS)
    parts = []
    if block != (1, 1):
        parts.append(
            f"{M.shape[0]} x {M.shape[1]} in {block[0]}x{block[1]} blocks: "
            "each shows its largest |value|"
        )
    words = nonfinite_words(M)
    if words:
        parts.append(f"grey: {words}")
    spec = {
        "title": title,
        "slot": slot,
        "scale": scale_for(P, kind, vmax).to_json(),
        "rows": int(P.shape[0]),
        "cols": int(P.shape[1]),
        "block": [int(block[0]), int(block[1])],
        "full": [int(M.shape[0]), int(M.shape[1])],
        "caption": "\n".join(parts),
    }
    if at is not None:
        spec["at"] = list(at)
    return spec, f32(P)


def report_labels(r: Any) -> dict:
    """Row / column labels by path, axis titles and block separators of a report."""
    ins, outs = list(r.column_blocks), list(r.row_blocks)
    m, n = r.shape
    return {
        "rows": [r.row_label(i) for i in range(m)],
        "cols": [r.col_label(j) for j in range(n)],
        "xlabel": ("input " if len(ins) == 1 else "inputs ") + ", ".join(ins) + " (flattened)",
        "ylabel": ("output " if len(outs) == 1 else "outputs ") + ", ".join(outs) + " (flattened)",
        "row_seps": [s.start for s in list(r.row_blocks.values())[1:]],
        "col_seps": [s.start for s in list(r.column_blocks.values())[1:]],
    }


def _entry_slots(r: Any) -> dict:
    return {slot: panel(getattr(r, name), "signed", name)[1] for name, slot in ENTRY_SLOTS.items()}


def jacobian_frame(A: Any, r: Any | None, key: str) -> tuple[dict, dict]:
    """The Jacobian view: the AD Jacobian ``A``; hover shows the report's numbers once
    its check is done (``r`` None: the check is still running)."""
    head, data = panel(A, "signed", "Jacobian (AD)")
    spec = {"kind": "maps", "key": key, "height": 520, "panels": [head]}
    if r is None:
        spec["hover"] = {"analytic": "b0", "pending": "checking…"}
        return spec, {"b0": data}
    slots = _entry_slots(r)
    slots["b0"] = data
    spec["hover"] = dict(ENTRY_SLOTS)
    return spec, slots


def check_frame(r: Any, key: str, early: Any = None, last: dict | None = None) -> tuple[dict, dict]:
    """The Check view: analytic | numeric | |diff| | violation, wrong entries outlined.
    ``early`` (the AD Jacobian, before the check ends) redraws the first map only, the
    others labelled "checking…" over their last numbers (``last``: the last spec)."""
    if early is not None and last and len(last.get("panels", ())) == 4:
        first, data = panel(early, "signed", "analytic (AD)", vmax=max_abs(early))
        spec = dict(last, panels=[first, *last["panels"][1:]], pending=[1, 2, 3])
        spec["hover"] = {"analytic": "b0", "pending": "checking…"}
        spec["marks"], spec["worst"] = [], None
        return spec, {"b0": data}
    vmax = max_abs(r.numeric, r.analytic)
    panels = [
        panel(r.analytic, "signed", "analytic (AD)", vmax, "b0")[0],
        panel(r.numeric, "signed", "numeric (FD)", vmax, "b1")[0],
        panel(r.abs_err, "log", "|analytic - numeric|", None, "b2")[0],
        panel(r.violation, "violation", "violation = |diff| / allowed", None, "b4")[0],
    ]
    slots = _entry_slots(r)
    slots["b0"] = panel(r.analytic, "signed", "", vmax)[1]
    slots["b1"] = panel(r.numeric, "signed", "", vmax)[1]
    bad = r.mismatches[:400]
    spec = {
        "kind": "maps",
        "key": key,
        "height": 680,
        "grid": [2, 2],
        "title": f"{r.checker}({r.function}) {r.status}  [{r.mode} mode, {r.method}, {r.dtype}]",
        "title_color": verdict_color(r),
        "panels": panels,
        "hover": dict(ENTRY_SLOTS),
        "marks": [[int(e.row), int(e.col)] for e in bad],
        "worst": [int(bad[0].row), int(bad[0].col)] if bad else None,
    }
    return spec, slots


def complex_frame(b: Any, key: str) -> tuple[dict, dict]:
    """The four real blocks of a complex Jacobian (one scale) and the Cauchy–Riemann
    residual (white at 0)."""
    blocks = (b.dre_dre, b.dre_dim, b.dim_dre, b.dim_dim)
    vmax = max_abs(*blocks) or 1.0
    x, y = b.in_name, b.out_name
    titles = (f"dRe {y}/dRe {x}", f"dRe {y}/dIm {x}", f"dIm {y}/dRe {x}", f"dIm {y}/dIm {x}")
    places = ((0, 0), (0, 1), (1, 0), (1, 1))
    panels, slots = [], {}
    for k, (M, t, at) in enumerate(zip(blocks, titles, places)):
        spec, slots[f"b{k}"] = panel(M, "signed", t, vmax, f"b{k}", at)
        panels.append(spec)
    spec, slots["b4"] = panel(
        b.cr_residual, "magnitude", "Cauchy–Riemann residual (0: holomorphic)", None, "b4", (0, 2)
    )
    panels.append(spec)
    residual = float(onp.max(b.cr_residual, initial=0.0))
    holo = "holomorphic" if b.is_holomorphic() else "not holomorphic"
    spec = {
        "kind": "maps",
        "key": key,
        "height": 620,
        "grid": [2, 3],
        "title": f"{holo} here (max Cauchy–Riemann residual {residual:.3g})",
        "panels": panels,
        "hover": {},
    }
    return spec, slots


def hessian_frame(H: Any, key: str) -> tuple[dict, dict]:
    """The Hessian, its asymmetry H - Hᵀ, and the eigenvalues of its symmetric part."""
    H = onp.asarray(H, dtype=float)
    n = int(round(onp.sqrt(H.size)))
    H = H.reshape(n, n)
    a, da = panel(H, "signed", "Hessian", None, "b0", (0, 0))
    s, ds = panel(H - H.T, "signed", "asymmetry H - Hᵀ", None, "b1", (0, 1))
    sym = (H + H.T) / 2
    if onp.all(onp.isfinite(sym)):
        ev = onp.linalg.eigvalsh(sym)
        kind = (
            "positive definite"
            if onp.all(ev > 0)
            else "negative definite"
            if onp.all(ev < 0)
            else "indefinite"
        )
    else:
        ev, kind = onp.full(n, onp.nan), "non-finite entries: no eigenvalues"
    spec = {
        "kind": "maps",
        "key": key,
        "height": 700,
        "grid": [1, 2],
        "panels": [a, s],
        "hover": {},
        "points": {
            "slot": "b2",
            "title": "eigenvalues of (H + Hᵀ)/2",
            "xlabel": "index (ascending)",
            "text": kind,
        },
    }
    return spec, {"b0": da, "b1": ds, "b2": f32(ev)}


def tile(r: Any, names: dict, r0: int, r1: int, c0: int, c1: int, key: str) -> dict:
    """A window of a pooled map at full resolution (pooled again only if still larger
    than :data:`PAGE_CELLS`): the arrays by slot, the window and its block."""
    m, n = r.shape
    r0, r1 = max(0, int(r0)), min(m, int(r1))
    c0, c1 = max(0, int(c0)), min(n, int(c1))
    slots, block, shape = {}, (1, 1), (0, 0)
    for name, slot in names.items():
        M = getattr(r, name, None)
        if M is None:
            continue
        P, block = pool_max_abs(onp.asarray(M, dtype=float)[r0:r1, c0:c1], PAGE_CELLS)
        slots[slot], shape = f32(P), P.shape
    return {
        "key": key, "r0": r0, "r1": r1, "c0": c0, "c1": c1,
        "rows": int(shape[0]), "cols": int(shape[1]), "block": [int(block[0]), int(block[1])],
        "slots": slots,
    }  # fmt: skip
