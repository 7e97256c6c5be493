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

from dataclasses import dataclass, field
from typing import Any

import numpy as onp

from ..fd.formats import values_format
from ..fd.reasons import Unresolvable
from .verdicts import Verdict, failing_verdict

__all__ = [
    "FD_SAFETY", "RTOL_ULPS", "tolerances", "judge", "validate_tolerance", "Judgement",
    "judge_stage", "coarse_stairs", "format_rounding",
]  # fmt: skip

#: The FD error estimate is a bound with margin already; this covers its spread.
FD_SAFETY = 2.0
#: Round-off allowed in an analytic derivative, in ulps of the entry's precision.
RTOL_ULPS = 256.0
#: A change under ulp moves of x above this share of its row's size is no round-off.
ROUNDING_AT_MOST = 1e-3


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


@dataclass
class Judgement:
    """Every reverse-mode entry judged: violations, allowances and verdicts."""

    V: onp.ndarray  # (m, n) |a - n| / allowance; NaN where unresolvable
    rtol: onp.ndarray  # (m, n)
    atol: float  # the user's (or 0)
    allowance: onp.ndarray  # (m, n) what each entry may differ by, besides the FD error
    wobble: onp.ndarray  # (m, n) the analytic side's round-off, measured at nearby points
    wobble_rows: onp.ndarray
    verdicts: onp.ndarray  # (m, n) int8 Verdict codes
    reasons: onp.ndarray  # (m, n) int8 Unresolvable codes (0 where judged)
    E: onp.ndarray  # the FD errors as judged (inf where f is too uneven to pin an entry down)
    ngrad: int
    jumps: dict = field(default_factory=dict)  # (i, j) -> size of f's jump there
    #: where f is exactly flat at x (a staircase with stairs narrower than the step):
    #: judged against its local derivative, 0
    flat: set = field(default_factory=set)
    #: where f is flat at x on a stair that ends within reach: the slope across many
    #: stairs it was judged against (or its stairs, too wide for that), ``(i, j) -> Across``
    across: dict = field(default_factory=dict)
    #: where f read a slope on an output seen on stairs along other inputs, and no
    #: stairs along this one within reach: judged to their height over the reach
    unseen: set = field(default_factory=set)
    #: failing entries whose whole disagreement is their rule's part through a rounding
    #: (stairs too wide to measure it across): ``(i, j) -> that part``, unresolved
    rounded: dict = field(default_factory=dict)
    #: entries along whose input f was seen on stairs within reach (measured across
    #: them or not)
    stairs_seen: set = field(default_factory=set)
    #: failing entries that differ by just their rule's rounded part where f showed
    #: no stairs within reach (the part is wrong, or the stairs wider than the reach)
    rounded_unseen: dict = field(default_factory=dict)
    #: entries whose rule, less its rounded part, disagrees with f's slope on a stair:
    #: ``(i, j) -> (that exact part, the slope, its error)``, wrong
    exact_off: dict = field(default_factory=dict)
    #: entries of a rule that rounds whose exact part agreed with f's slope on a stair
    exact_ok: set = field(default_factory=set)

    def across_mask(self, m: int, n: int) -> onp.ndarray:
        """The entries judged across a staircase's stairs, as an (m, n) mask."""
        mask = onp.zeros((m, n), bool)
        for (i, j), a in self.across.items():
            mask[i, j] = a.measured
        return mask


#: A staircase whose steps span fewer quanta than this is coarse against the step.
STAIRS_SPANNED = 100.0


def coarse_stairs(
    N: onp.ndarray, A: onp.ndarray, quantum: onp.ndarray | None, steps: onp.ndarray, y0
) -> onp.ndarray:
    """Entries on a staircase with fewer than :data:`STAIRS_SPANNED` quanta across a
    step: the slope over stairs there says nothing of the derivative in between.

    ``N`` and ``A`` are the numeric and analytic entries (rows by columns), ``quantum``
    the stairs' height per entry, ``steps`` the step per column and ``y0`` f's value
    per row. Unless the analytic derivative claims a slope that would cross that many
    stairs within the step: f would then have moved by as many quanta, and the samples
    show it did not (a wrong rule on a row of rounding stairs, ``sum(t) - sum(t[::-1])``,
    is judged; a straight-through rule on coarse stairs, ``round``, still is not).
    Nor where the stairs are the output's rounding to a narrow format
    (:func:`format_rounding`) and the analytic derivative is not 0: its slope across
    stairs is then f's derivative. A 0 there stays unjudged: a quantizer's (``round(x
    * 256) / 256`` is x rounded to float16 for 4 <= x < 8) or a detached one's.

    >>> coarse_stairs(onp.array([[1.0]]), onp.array([[0.0]]), onp.array([[0.01]]),
    ...               onp.array([0.02]), onp.array([0.5]))
    array([[ True]])
    """
    if quantum is None:
        return onp.zeros(onp.shape(N), bool)
    with onp.errstate(all="ignore"):
        spanned = onp.abs(N) * steps[None, :] / quantum
        claimed = onp.abs(A) * steps[None, :] / quantum
    coarse = (quantum > 0) & ~(spanned >= STAIRS_SPANNED) & ~(claimed >= STAIRS_SPANNED)
    return coarse & ~(format_rounding(y0, quantum)[:, None] & (A != 0))


def format_rounding(y0: onp.ndarray, quantum: onp.ndarray) -> onp.ndarray:
    """Per output (``quantum``: per output, or per entry), whether its stairs are its
    rounding to a narrow format: the values of the outputs on stairs are that format's
    numbers, filling its last bits (:func:`~gradexplorer.fd.formats.values_format`:
    multiples of 1/256 are float16 numbers too, but simpler ones), and each output's
    stairs are no wider than its ulp there. Such an f is a smooth function rounded (a
    half-precision model's output), whose slope across stairs is its derivative, up to
    the quanta the FD error counts; ``floor``'s or ``round(x, 3)``'s stairs are wider
    than any ulp of their values.

    >>> format_rounding(onp.array([0.7509765625, 3.0]), onp.array([2.0**-11, 1.0]))
    array([ True, False])
    >>> format_rounding(onp.array([0.75, 0.123]), onp.array([2.0**-11, 1e-3]))
    array([False, False])
    """
    q = onp.nan_to_num(onp.asarray(quantum, dtype=float), nan=0.0)
    q = q.max(axis=1, initial=0.0) if q.ndim == 2 else q  # per entry: its row's widest
    fmt = values_format(y0[(q > 0) & onp.isfinite(y0)])
    if fmt is None:
        return onp.zeros(y0.shape, bool)
    with onp.errstate(all="ignore"):
        ulp = fmt.quantum(onp.abs(y0))
        return onp.isfinite(y0) & (y0 != 0) & fmt.holds(y0) & (q > 0) & (q <= ulp)


def judge_stage(p, rev, est, opts) -> Judgement:
    """Judge every entry of the reverse-mode Jacobian against its FD estimate.

    Entries where f is uneven and the FD error is as large as the entry itself
    are unresolvable (known only to within their own size). A rule shown
    inexact (adaptive) or non-deterministic gets those allowances. Rows that
    fail are given the analytic side's own round-off, measured at nearby
    points (:func:`~gradexplorer.check.determinism.rounding_spread`), and
    judged again: a small difference of large terms is round-off, not a bug,
    yet a wrong small entry beside a huge one is not excused (the round-off is
    what the rule itself shows there).
    """
    from .determinism import ROUNDING_SAMPLES, rounding_spread
    from .rules import scale_allowance, solver_slack

    A, N, noise = rev.A, est.N, est.noise
    eps = p.eps_matrix()
    # a stair of a staircase where the analytic derivative is 0 too: f is flat and
    # AD says so, whatever the slope over many stairs (floor, round)
    flat_zero = (est.R == Unresolvable.STAIRCASE) & (A == 0) & (N == 0)
    est.E = onp.where(flat_zero, 0.0, est.E)
    est.R = onp.where(flat_zero, Unresolvable.RESOLVED, est.R).astype(onp.int8)
    atol, rtol = tolerances(eps, opts.atol, opts.rtol)
    rtol = onp.maximum(rtol, rev.column_precision)
    with onp.errstate(invalid="ignore"):
        vague = (noise.rel[:, None] > 0) & (est.E > 0.5 * onp.maximum(onp.abs(N), onp.abs(A)))
        vague &= ((N != 0) | (A != 0)) & (est.R != Unresolvable.KINK)
    E = onp.where(vague, onp.inf, est.E)
    reasons = onp.where(vague & (est.R == 0), Unresolvable.TOO_UNEVEN, est.R).astype(onp.int8)
    allowance = atol + scale_allowance(rev.column_precision, A, N)
    if rev.jitter is not None:
        allowance = allowance + 2.0 * rev.jitter[None, :]
    if rev.adaptive:
        # an inexact rule over an f that is itself inexact (a solver at its tolerance):
        # the computed f's derivative is only defined to ~sqrt of f's relative accuracy
        slack = solver_slack(noise)[:, None]
        allowance = allowance + scale_allowance(rev.adaptive_columns, A, N) * slack
    V = judge(A, N, E, rtol, allowance)
    wobble_rows = onp.flatnonzero(onp.any(V > 1, axis=1))
    wobble = rounding_spread(p, A, opts.gen, wobble_rows)
    # a derivative that jumps when x moves by a few ulps is at a tie (the backward
    # follows another branch), not round-off: that is settled at the kink, not excused
    # (large for its row, and beyond round-off of the Jacobian's own scale: a row of
    # round-off dust, an imaginary part that is 0, wobbles as much as it is large)
    with onp.errstate(invalid="ignore"):
        size = onp.fmax(onp.nanmax(onp.abs(A), axis=1), onp.nanmax(onp.abs(N), axis=1))
        whole = float(onp.nanmax(onp.abs(onp.where(onp.isfinite(A), A, 0.0)), initial=0.0))
    jump = (wobble > ROUNDING_AT_MOST * size[:, None]) & (wobble > RTOL_ULPS * eps * whole)
    wobble = onp.where(jump, 0.0, wobble)
    # a row that is round-off through and through (analytic and numeric within 256 ulps
    # of the Jacobian's scale: an imaginary part that is 0) is judged at that scale; a
    # row with one large entry is not, so a wrong small entry beside it stays wrong; nor
    # is a row the differences resolve (1e-12·sin x: small, yet no round-off)
    with onp.errstate(invalid="ignore"):
        dust_level = RTOL_ULPS * eps * whole
        dust = onp.all(onp.abs(A) <= dust_level, axis=1) & onp.all(onp.abs(N) <= dust_level, axis=1)
        dust &= ~onp.any((onp.abs(N) > FD_SAFETY * E) & (N != 0), axis=1)
    wobble = onp.where(dust[:, None], onp.fmax(wobble, dust_level), wobble)
    ngrad = ROUNDING_SAMPLES * (1 + len(wobble_rows)) if len(wobble_rows) else 0
    allowance = allowance + wobble
    V = judge(A, N, E, rtol, allowance)
    # on a staircase whose stairs are wide against the step (floor, round: f itself is
    # the staircase) the differences measure the slope over stairs, not the local
    # derivative AD gives: disagreeing there is no bug, but nothing to judge either
    quantum = getattr(est, "entry_quantum", None)
    coarse = coarse_stairs(N, A, quantum, p.steps(opts.method), est.y0) & (V > 1)
    V = onp.where(coarse, onp.nan, V)
    E = onp.where(coarse, onp.inf, E)  # for forward mode too
    reasons = onp.where(coarse, Unresolvable.STAIRCASE, reasons).astype(onp.int8)
    verdicts = onp.full(V.shape, Verdict.RIGHT.code, onp.int8)
    unresolved = onp.isnan(V)
    verdicts[unresolved] = Verdict.UNRESOLVABLE.code
    reasons = onp.where(unresolved & (reasons == 0), Unresolvable.NEVER_SETTLED, reasons)
    reasons = onp.where(unresolved, reasons, onp.where(est.kink, reasons, 0)).astype(onp.int8)
    for i, j in onp.argwhere(V > 1):
        verdicts[i, j] = failing_verdict(A[i, j], N[i, j]).code
    return Judgement(V, rtol, atol, allowance, wobble, wobble_rows, verdicts, reasons, E, ngrad)
