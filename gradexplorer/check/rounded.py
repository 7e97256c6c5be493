"""Entries whose whole disagreement with f is what their rule sends through a rounding.

A cast to a narrow format on the way (``x² + 2·f16(100 + 0.6·x)``) makes f a staircase
in that term: flat at x on a stair, with the rest of f's slope beside it. AD gives the
slope *across* the stairs for the rounded term (a cast's backward passes its cotangent
on, rounded to the format), and where those stairs are too wide to measure across
within reach, the finite differences read only the rest. The rule's part through the
rounding is told apart from the rest by scaling the cotangent by ``1 + s``, s far below
any narrow format's half ulp: rounded paths do not move (they are piecewise constant),
the others move by s times themselves. Where the rest of the rule agrees with the
slope read beside the stairs, the entry is not wrong: its rounded part could not be
measured (unresolvable, a staircase).
"""

from __future__ import annotations

import numpy as onp

from ..fd.formats import FLOAT32, FORMATS, Format
from ..fd.reasons import Unresolvable
from .analytic import Reverse
from .estimates import Estimates
from .judging import FD_SAFETY, Judgement
from .roundings import same_bits
from .verdicts import Verdict, failing_codes

__all__ = [
    "rounded_parts", "settle_rounded_parts", "exact_parts", "rounded_notes", "ROUNDED_ROWS",
    "ABOVE_STEP", "rounded_splits", "rest_fits",
]  # fmt: skip

#: Rows whose rule is split into its rounded and exact paths, at most.
ROUNDED_ROWS = 64
#: The cotangent's move, in eps of the coarser formats, that splits off only their
#: roundings: far below their half ulp, far above a finer format's (float32's).
ABOVE_STEP = 1 / 32


def rounded_parts(
    vjp, m: int, rows, dtype=float, *, above: Format | None = None
) -> tuple[onp.ndarray, onp.ndarray]:
    """Per row i of ``rows`` (of m outputs), what the rule ``vjp`` sends through
    roundings at the unit cotangent e_i, and its error: ``R = vjp(e_i) - (vjp((1 +
    s)·e_i) - vjp(e_i)) / s``. Rounded paths stay put when their cotangent moves by
    ``1 + s`` (s ~ eps/4096 of the finest narrow format), exact ones move by s times
    themselves, so R is the rounded paths' share (0 for a rule with none). The error
    is R's disagreement at 2s, and the cotangent dtype's rounding over s; infinite
    where the rule does not scale exactly with its cotangent (``vjp(2·e_i) !=
    2·vjp(e_i)``, as every rounding to a binary format does: a term not multiplied
    by the cotangent moves less than s times itself too). ``above``: only the paths
    through formats coarser than it count as rounded (s = :data:`ABOVE_STEP` of the
    next one's eps); its paths move with the exact ones, each to within its own
    rounding over s (``above.eps / s`` of its size), which the error leaves out: the
    caller knows their size (the difference from the split without ``above``).

    >>> rule = lambda g: g[:1] * 2.0 + 3.0 * onp.asarray(g[:1], onp.float16).astype(float)
    >>> R, err = rounded_parts(rule, 1, [0])
    >>> round(float(R[0, 0]), 6), bool(err[0, 0] < 1e-3)
    (3.0, True)
    """
    dtype = onp.dtype(dtype).type
    eps_u = float(onp.finfo(dtype).eps)
    above_eps = 0.0 if above is None else above.eps
    coarser = [f.eps for f in FORMATS if f.eps > max(eps_u, above_eps)]
    s = 0.0  # (no narrower format to round to: no rounded part to tell apart)
    if coarser:
        fmt_eps = min(coarser)
        s = max(fmt_eps / 4096, float(onp.sqrt(eps_u * fmt_eps)))
        if above_eps > eps_u:
            s = fmt_eps * ABOVE_STEP  # (far above the finer format's rounding)
        s = float(onp.asarray(1 + s, dtype)) - 1.0  # (as the cotangent's dtype holds it)
    R, err = [], []
    for i in rows:
        u = onp.zeros(m, dtype)
        u[i] = 1
        r0 = onp.asarray(vjp(u), float)
        if not (s and same_bits(onp.asarray(vjp(2 * u), float), 2 * r0)):
            # no rounding to a binary format: an offset not multiplied by the cotangent
            # (g + c) moves less than s times itself too
            R.append(onp.zeros_like(r0))
            err.append(onp.full_like(r0, onp.inf))
            continue
        r1, r2 = (onp.asarray(vjp(u * dtype(1 + k * s)), float) for k in (1, 2))
        with onp.errstate(all="ignore"):
            exact1, exact2 = (r1 - r0) / s, (r2 - r0) / (2 * s)
            scale = onp.abs(r0) + onp.abs(r1) + onp.abs(r2)
            R.append(r0 - exact1)
            err.append(2 * onp.abs(exact1 - exact2) + 2 * eps_u * scale / s)
    return onp.array(R).reshape(len(rows), -1), onp.array(err).reshape(len(rows), -1)


def rounded_splits(vjp, m: int, rows, dtype=float) -> tuple[list, int]:
    """The ways the rule ``vjp`` may split into rounded and exact parts at the unit
    cotangents of ``rows`` (of m outputs), each ``(R, err)`` per row
    (:func:`rounded_parts`): nothing rounded; every rounding; and, for a float64
    cotangent, only roundings coarser than float32's (a float32 term's stairs are far
    narrower than a float16 one's: ``x.float()**2 + 2·f16(100 + 0.6·x)`` reads x²'s
    slope beside float16's stairs). And the derivative passes taken.

    >>> rule = lambda g: 2.0 * onp.asarray(g, onp.float32) + 3.0 * onp.asarray(g, onp.float16)
    >>> splits, _ = rounded_splits(rule, 1, [0])
    >>> [round(float(R[0, 0]), 3) for R, _ in splits]
    [0.0, 5.0, 3.0]
    """
    every, every_err = rounded_parts(vjp, m, rows, dtype)
    splits = [(onp.zeros_like(every), onp.zeros_like(every)), (every, every_err)]
    passes = 4 * len(rows)
    # (a rule with no measurable rounded part has no coarser one either)
    rounds = bool(onp.any(onp.abs(every) > FD_SAFETY * every_err))
    if onp.finfo(dtype).eps < FLOAT32.eps and rounds:
        coarse, err = rounded_parts(vjp, m, rows, dtype, above=FLOAT32)
        # float32's paths (the difference) moved with the exact ones, each to within
        # float32's rounding over the cotangent's move (a few paths, of either sign)
        s = min(f.eps for f in FORMATS if f.eps > FLOAT32.eps) * ABOVE_STEP
        err = err + 4 * FLOAT32.eps / s * (onp.abs(every - coarse) + every_err)
        splits.append((coarse, err))
        passes += 4 * len(rows)
    return splits, passes


def _staircase(jd: Judgement) -> onp.ndarray:
    """Entries left open on stairs (unresolvable, a staircase)."""
    unresolved = jd.verdicts == Verdict.UNRESOLVABLE.code
    return unresolved & (jd.reasons == Unresolvable.STAIRCASE)


def settle_rounded_parts(est: Estimates, jd: Judgement, rev: Reverse, A: onp.ndarray) -> int:
    """Failing entries of a rule that disagrees with itself (``rev.suspect``), where
    the rule less its rounded part agrees with the slope the differences read, and f
    was seen on stairs along their input within reach (``jd.stairs_seen``):
    unresolvable (a staircase too wide to measure across), the rounded part kept in
    ``jd.rounded`` (as it is for entries already unresolved so, for the Taylor test:
    :func:`exact_parts`). Where f showed no stairs, f is smooth within reach and its
    slope there is the derivative: the verdict stands (a bogus term on a rounded path,
    or stairs wider than the reach: ``jd.rounded_unseen``, which the report says).
    Entries whose slope across stairs was measured, or fitted coarsely and rules the
    rule out, keep their verdict, as do those where the differences read 0. Returns
    the derivative passes taken."""
    if not (rev.suspect.any() or rev.narrow is not None):
        return 0
    staircase = _staircase(jd)
    # (where the differences read 0, f may not depend on that input at all there: a
    # value that underflows to 0 in the format, which no stair excuses)
    cells = (failing_codes(jd.verdicts) | staircase) & onp.isfinite(est.N) & (est.N != 0)
    for ij, across in jd.across.items():
        a, bar = float(onp.real(A[ij])), FD_SAFETY * across.err + float(jd.allowance[ij])
        cells[ij] &= not (across.measured or (across.coarse and abs(a - across.est) > bar))
    rows = onp.flatnonzero(cells.any(axis=1))[:ROUNDED_ROWS]
    if not rows.size:
        return 0
    splits, passes = rounded_splits(rev.vjp, A.shape[0], rows, rev.y.dtype)
    for k, i in enumerate(rows):
        for j in onp.flatnonzero(cells[i]):
            a, n = float(onp.real(A[i, j])), float(est.N[i, j])
            # (the differences' own error, where an earlier stage left the entry open)
            e = float(jd.E[i, j] if onp.isfinite(jd.E[i, j]) else est.E[i, j])
            parts = [(R[k, j], r_err[k, j]) for R, r_err in splits[1:]]
            r = rest_fits(a, n, e, float(jd.allowance[i, j]), parts)
            if r is None:
                continue
            if (int(i), int(j)) not in jd.stairs_seen and not staircase[i, j]:
                # f is smooth within reach: its slope there is the derivative, and the
                # rounded part is wrong, or its stairs wider than the reach (said so)
                jd.rounded_unseen[(int(i), int(j))] = r
                continue
            jd.E[i, j], jd.V[i, j] = onp.inf, onp.nan  # (N: the slope read beside them)
            jd.verdicts[i, j] = Verdict.UNRESOLVABLE.code
            jd.reasons[i, j] = Unresolvable.STAIRCASE
            jd.rounded[(int(i), int(j))] = r
    return passes


def rest_fits(a: float, n: float, e: float, allowance: float, splits) -> float | None:
    """The rounded part of the first split ``(r, err)`` of the rule's value ``a``
    that is measurable and leaves a rest that agrees with the slope ``n`` ± ``e``
    read beside the stairs, both within ``FD_SAFETY·(e + err) + allowance``; None
    where none does.

    >>> rest_fits(3.2, 2.0, 1e-9, 0.0, [(0.0, 0.0), (1.2, 1e-9)])
    1.2
    """
    for r, r_err in splits:
        r, bar = float(r), FD_SAFETY * (e + float(r_err)) + allowance
        if abs(r) > bar and abs(a - r - n) <= bar:
            return r
    return None


def exact_parts(A: onp.ndarray, jd: Judgement) -> tuple[onp.ndarray, onp.ndarray]:
    """What the Taylor test is to test: A less the rounded parts of the entries
    :func:`settle_rounded_parts` left open, and the verdicts with every entry left
    open on stairs as judged. Across stairs f's remainder shrinks like h until h is
    within a stair, as a wrong rule's does, so its order says nothing of them
    (``x² + 2·f16(100 + 0.6·x)``: first order, a right rule called wrong)."""
    staircase = _staircase(jd)
    if not (jd.rounded or staircase.any()):
        return A, jd.verdicts
    A, verdicts = A.copy(), jd.verdicts.copy()
    for ij, r in jd.rounded.items():
        A[ij] -= r
    verdicts[staircase] = Verdict.RIGHT.code
    return A, verdicts


#: What the report says after :func:`_differ`, of entries left open on stairs too
#: wide to measure across, and of wrong ones where f showed no stairs.
_OPEN = (
    ": the backward of a cast, which passes its cotangent on): f is flat on that term's "
    "stairs at the step, and they are too wide to measure its slope across them within "
    "reach. The rest of the rule agrees with f; the rounded part is unresolvable."
)
_UNSEEN = (
    "), and f shows no stairs along that input within reach: f is smooth there, so that "
    "part of the rule is wrong, unless f rounds a value whose stairs are wider than the "
    "reach (a cast of a large intermediate that x moves weakly; checking at points "
    "further apart tells)."
)


def rounded_notes(p, jd: Judgement, A: onp.ndarray) -> list[str]:
    """What the report says of the entries :func:`settle_rounded_parts` looked at."""
    kinds = ((jd.rounded, "entr", _OPEN), (jd.rounded_unseen, "wrong entr", _UNSEEN))
    return [_differ(p, cells, A, what) + rest for cells, what, rest in kinds if cells]


def _differ(p, cells: dict, A: onp.ndarray, what: str) -> str:
    """``k entries (label, ...) differ ... (R of A there``, the note's common start."""
    (i, j), r = min(cells.items())
    count = len(cells)
    return (
        f"{count} {what}{'y' if count == 1 else 'ies'} ({p.rows.label(i)} / "
        f"{p.cols.label(j)}, ...) differ from f's slope by just what their rule sends "
        f"through a rounding to a narrow format ({r:.3g} of {float(onp.real(A[i, j])):.3g} "
        "there"
    )
