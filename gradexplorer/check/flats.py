"""Entries where f is flat at x, or jumps: the full check's stage after judging.

Where the analytic side and the finite differences disagree on whether f moves at
all (one says 0), f is looked at closely (:func:`~.kinks.find_jumps`): a jump has no
derivative; f exactly flat at x as far as it was followed has derivative 0 there; and
f flat at x on a stair that ends within reach (f rounds something to a narrow format
on the way) is judged against the slope across many stairs (:mod:`.stairs`).
"""

from __future__ import annotations

import numpy as onp

from ..fd.formats import BFLOAT16
from ..fd.reasons import Unresolvable
from .estimates import Estimates
from .judging import FD_SAFETY, Judgement
from .kinks import find_jumps, flat_to_the_limit, least_change, reach_limit
from .loose import VAGUE_SHARE, loose_notes, unknown_across
from .problem import Problem
from .stairs import across_stairs
from .verdicts import Verdict, failing_codes, failing_verdict

__all__ = ["mark_flats", "stair_heights", "flat_notes"]


def mark_flats(
    p: Problem, est: Estimates, jd: Judgement, A: onp.ndarray, rounded: onp.ndarray | None = None
) -> int:
    """Entries at a jump of f get the verdict JUMP (no derivative to compare). Where
    the analytic side and the finite differences disagree on whether f moves at all
    (one says 0), f is looked at closely: exactly flat at x as far as it was
    followed, its derivative there is 0, to within the last bit of f over the
    closest step, and the entry is judged so; flat on a stair that ends within reach,
    or read 0 near a stair's edge, the entry is judged against the slope across many
    stairs (:func:`_judge_across`). ``rounded``: the columns whose rule disagrees
    with itself (its paths pass through a rounding; default: none known). Returns
    the evaluations it took."""
    failing = failing_codes(jd.verdicts)
    unresolved = jd.verdicts == Verdict.UNRESOLVABLE.code
    never = unresolved & (jd.reasons == Unresolvable.NEVER_SETTLED)
    # passed only within a wide FD error, though the samples did not move and the rule
    # says f does, by more than its round-off (a flat stair seen coarsely)
    with onp.errstate(invalid="ignore"):
        moves = onp.abs(onp.real(A)) > jd.allowance
        vague = (jd.verdicts == Verdict.RIGHT.code) & (est.N == 0) & moves & (jd.E > 0)
    # on a staircase too coarse for the step, an entry whose samples never moved where
    # the rule says f does: f may be exactly constant along that input (a rule ignoring
    # its cotangent fills entries f does not depend on), which the quanta do not excuse
    still = unresolved & (jd.reasons == Unresolvable.STAIRCASE) & (est.N == 0) & moves
    jumps, flats, nfev = find_jumps(p, onp.argwhere(failing | never | vague | still), est)
    magnitude = onp.fmax(onp.abs(est.y0), est.noise.scale)
    for i, j in jumps:
        jd.verdicts[i, j] = Verdict.JUMP.code
        jd.reasons[i, j] = Unresolvable.JUMP
        jd.V[i, j] = 0.0
    jd.jumps.update(jumps)
    least = least_change(p, est)
    narrow: dict = {}  # flat cells whose stairs end within reach: judged across them
    for (i, j), step in flats.items():
        if (i, j) in jumps:
            continue
        # unchanged over x ± step (the widest seen): |f'| <= its least change / step: an
        # ulp of f, or the quantum of the staircase f moves on (cancellation: (1e12 x +
        # sin x) - 1e12 x moves in quanta of 0.25, flat over a step where cos x is not 0)
        change = float(least[i, j])
        within = not flat_to_the_limit(step, p.x0[j])
        if still[i, j]:
            # a stair's height need not be the quantum the samples show (float16's
            # ulp of h in h·w, a float64 w); where f stays flat as far as it was
            # followed, it ignores x there, up to the coarsest format's rounding
            if within:
                narrow[(i, j)] = step
                continue
            change = max(change, BFLOAT16.eps * float(magnitude[i]))
        local = max(change, onp.finfo(float).tiny) / step
        a = float(onp.real(A[i, j]))
        sharper = est.N[i, j] == 0 and jd.E[i, j] <= local  # the differences' 0 stands
        V = jd.V[i, j] if sharper else abs(a) / (FD_SAFETY * local + float(jd.allowance[i, j]))
        if V > 1 and within:
            # nonzero against a stair's flat, though f moves soon after: an ulp of f
            # is no stair's height (f rounds an intermediate, then goes on in float64)
            narrow[(i, j)] = step
        if not sharper:
            _judge_flat(jd, est, (i, j), a, 0.0, local, V)
    # the differences read 0 where the rule says f moves, and f is not flat either side
    # of x: x is near a stair's edge (the differences shrank onto the stair; where they
    # never settled, the stairs' edges read as unevenness)
    base = p.steps("forward")
    uneven = unresolved & onp.isin(
        jd.reasons, (Unresolvable.NEVER_SETTLED, Unresolvable.TOO_UNEVEN)
    )
    for i, j in onp.argwhere((failing | (uneven & moves)) & (est.N == 0)):
        if (i, j) not in jumps and (i, j) not in flats:
            narrow[(int(i), int(j))] = 32.0 * float(base[j])  # changes by 64 steps
    nfev += _judge_across(p, est, jd, A, narrow)
    # an output seen on stairs is on them along its other inputs too, where f moves in
    # stairs along them: the differences of its other failing or unsettled entries knew
    # no stair height (the values lie on no grid), so they are judged across the stairs
    # too (a float64 input of the same output, along which f moves smoothly, is not);
    # failing entries that read a slope are left to the pass that reads one beside
    # stairs, whose verdict stands where they are too wide (a rule 1% off beside a
    # saturated tanh's float16 stairs was called a staircase, unresolvable)
    stairs_rows = {i for i, _ in jd.across}
    leaning = _leaning(est, jd, A)
    flat_or_unsettled = (failing & (est.N == 0)) | (uneven & moves) | (leaning & (est.N == 0))
    others = {
        (int(i), int(j)): 32.0 * float(base[j])
        for i, j in onp.argwhere(flat_or_unsettled)
        if int(i) in stairs_rows and (int(i), int(j)) not in narrow and (i, j) not in jumps
    }
    nfev += _judge_across(p, est, jd, A, others)
    nfev += _slopes_beside_stairs(p, est, jd, A, set(narrow) | set(others) | set(jumps))
    _flat_on_stairs(p, est, jd, A, flats)
    unknown_across(jd, A)
    if rounded is not None:
        _beside_unseen_stairs(p, est, jd, A, set(jumps), onp.asarray(rounded, bool))
    return nfev


def _slopes_beside_stairs(p: Problem, est: Estimates, jd: Judgement, A, judged: set) -> int:
    """Failing entries whose differences read a slope, where f goes on in stairs along
    their input (stairs beside a smooth float64 term, x + exp(h(x).float()): the steps
    shrank onto a stair and read the smooth term's alone): of outputs uneven at the
    scale of the step, then of any output once f was seen on stairs; and where it was
    not, in a few columns (a bfloat16 term's stairs beside float32 ones, 10·f32(sin x)
    + 0.3·bf16(cos x), are wider than the steps saw). Then entries passed within a vague
    error bar (:func:`_vague`). Cells in ``judged`` are left. Returns the evaluations."""
    base = p.steps("forward")
    nfev = 0
    for everywhere in (False, True):
        rows = onp.full(p.m, True) if everywhere else est.noise.structured
        judged |= set(jd.across)
        rough = {
            (int(i), int(j)): 32.0 * float(base[j])
            for i, j in onp.argwhere(failing_codes(jd.verdicts) & (est.N != 0) & rows[:, None])
            if (int(i), int(j)) not in judged
        }
        if everywhere and not jd.across:
            rough = _worst_columns(rough, jd.V, LOOKED_WIDER)
        judged |= set(rough)
        nfev += _judge_across(p, est, jd, A, rough, read_a_slope=True)
    return nfev + _judge_across(p, est, jd, A, _vague(p, est, jd, A, judged), sharpen=True)


def _leaning(est: Estimates, jd: Judgement, A) -> onp.ndarray:
    """Entries right only within an inexact rule's allowance (a cast's backward that
    rounds its cotangent is judged as a solver's), which forward mode's tangents need
    not share: where the differences read a stair's 0, the JVP then fails a right rule.
    (Where they read a slope, it passed: measured across stairs with an error bar
    known less surely than the differences', it failed a right rule, exp(f16(x @ W))
    at x ~ 1e-3, whose float16 grid coarsens across the span.)"""
    with onp.errstate(invalid="ignore"):
        a, n = onp.real(A), est.N
        strict = FD_SAFETY * jd.E + jd.rtol * onp.maximum(onp.abs(a), onp.abs(n))
        return (jd.verdicts == Verdict.RIGHT.code) & (onp.abs(a - n) > strict)


def _flat_on_stairs(p: Problem, est: Estimates, jd: Judgement, A, flats: dict) -> None:
    """Cells where f stays flat as far as it was followed, on an output seen on stairs
    along other inputs: that output moves in stairs of that height, so its slope along
    this input is known to their height over the step, not to an ulp of f (``exp(tanh(x
    @ W).half())`` along an input it reads weakly: stairs ~0.3 wide, wider than the
    reach); judged so (and forward mode's tangents after them)."""
    heights = stair_heights(p, jd)
    for (i, j), step in flats.items():
        local = float(heights[i]) / step
        if heights[i] == 0 or (i, j) in jd.across or not jd.E[i, j] < local:
            continue
        a = float(onp.real(A[i, j]))
        V = abs(a) / (FD_SAFETY * local + float(jd.allowance[i, j]))
        _judge_flat(jd, est, (i, j), a, 0.0, local, V)


def _beside_unseen_stairs(
    p: Problem, est: Estimates, jd: Judgement, A, jumps: set, rounded: onp.ndarray
) -> None:
    """Failing entries that read a slope on an output seen on stairs along other
    inputs, where none were seen along theirs within reach L (``x + exp(f16(tanh(x @
    W)))`` with tanh saturated: float16's stairs near 1 are wider than the reach, and
    the differences read x's slope, 1, where the rule adds the rounded term's 1e-4): a
    term that rounds to stairs of height H and crosses none within L moves f by less
    than H/L per unit, which the slope read carries as its error: along the inputs
    whose rule passes through a rounding (``rounded``; a float64 input beside the
    cast, whose paths do not, keeps its sharp verdict). (Not H over the distance to
    the nearest point f leaves its tangent by half a stair: a float64 input's
    curvature beside the cast, ``sin(3·x₂)``, leaves it within 0.01.)"""
    heights = stair_heights(p, jd)
    least = least_change(p, est)
    limit = reach_limit(p.x0)
    cells = onp.argwhere(failing_codes(jd.verdicts) & (est.N != 0) & (heights[:, None] > 0))
    for i, j in cells:
        ij = (int(i), int(j))
        if ij in jd.across or ij in jumps or not rounded[j]:
            continue
        if not heights[i] > KNOWN_STAIRS * least[ij]:
            continue
        a, n = float(onp.real(A[ij])), float(est.N[ij])
        err = max(float(jd.E[ij]), float(heights[i]) / float(limit[j]))
        V = abs(a - n) / (FD_SAFETY * err + float(jd.allowance[ij]))
        if V <= 1:
            jd.E[ij], jd.V[ij] = err, V
            jd.verdicts[ij] = Verdict.RIGHT.code
            jd.unseen.add(ij)


#: Columns whose failing entries are looked at across stairs where f was seen on none.
LOOKED_WIDER = 16


def _worst_columns(cells: dict, V, most: int) -> dict:
    """The cells in the ``most`` columns whose worst violation ``V`` is largest."""
    worst: dict = {}
    for i, j in cells:
        worst[j] = max(worst.get(j, 0.0), float(onp.nan_to_num(V[i, j], nan=onp.inf)))
    keep = set(sorted(worst, key=worst.get, reverse=True)[:most])
    return {ij: reach for ij, reach in cells.items() if ij[1] in keep}


def _vague(p: Problem, est: Estimates, jd: Judgement, A, judged: set) -> dict:
    """Entries that passed on outputs uneven at the scale of the step, within an FD
    error too wide to see a rule off by :data:`VAGUE_SHARE` (a float64 loss of many
    float16 intermediates: no two of f's values equal, so no stair was seen, and the
    steps shrank until f looked smooth): measured across the stairs where f goes on in
    stairs along their input, as cells ``{(i, j): reach}``."""
    base = p.steps("forward")
    with onp.errstate(invalid="ignore"):
        wide = FD_SAFETY * jd.E > VAGUE_SHARE * onp.abs(onp.real(A))
    right = jd.verdicts == Verdict.RIGHT.code
    rows = est.noise.structured[:, None]
    return {
        (int(i), int(j)): 32.0 * float(base[j])
        for i, j in onp.argwhere(right & wide & rows & (est.N != 0) & onp.isfinite(jd.E))
        if (int(i), int(j)) not in judged
    }


def _judge_flat(jd: Judgement, est: Estimates, ij, a: float, n: float, err: float, V: float):
    """Entry ij judged against ``n ± err`` (f's slope where it is flat, or across
    its stairs), with violation V."""
    est.N[ij], jd.E[ij], jd.V[ij] = n, err, V
    jd.verdicts[ij] = (Verdict.RIGHT if V <= 1 else failing_verdict(a, n)).code
    jd.reasons[ij] = 0
    jd.flat.add(ij)


#: Stairs up to this many times the least change the differences counted were known.
KNOWN_STAIRS = 4.0


def _judge_across(
    p: Problem,
    est: Estimates,
    jd: Judgement,
    A,
    narrow: dict,
    *,
    read_a_slope: bool = False,
    sharpen: bool = False,
) -> int:
    """Flat cells whose stairs end within reach, judged against the slope across
    many stairs (:func:`~.stairs.across_stairs`); those whose stairs are too wide
    are unresolved (a staircase), and where f does not move within reach, the
    verdict stands. ``read_a_slope``: cells whose differences read a slope keep their
    verdict where the stairs are too wide to measure across (``x² + floor(10·x)``: a
    smooth term beside stairs a tenth wide, whose slope is the derivative at x);
    ``sharpen``: only where the slope across the stairs is known more closely than the
    differences knew theirs. Returns the evaluations it took."""
    if not narrow:
        return 0
    measured, nfev = across_stairs(p, narrow, est.y0, coarse=read_a_slope)
    # stairs no taller than the least change f's differences already counted (a
    # float32 output's visible grid) were judged rightly as they were
    least = least_change(p, est)
    if read_a_slope:
        nfev += _taller_beyond(p, est, measured, least)
    measured = {ij: a for ij, a in measured.items() if a.height > KNOWN_STAIRS * least[ij]}
    jd.stairs_seen.update(measured)
    if read_a_slope:
        _unresolved_beside_wide_stairs(jd, est, A, measured)
    if read_a_slope or sharpen:
        measured = {ij: a for ij, a in measured.items() if a.measured}
    if sharpen:
        measured = {ij: a for ij, a in measured.items() if a.err < jd.E[ij]}
    jd.across.update(measured)
    for ij in (ij for ij, across in measured.items() if not across.measured):
        # f moves within reach, in stairs too wide to measure the slope across: its
        # flat at x says nothing of the derivative the rule gives
        est.N[ij], jd.E[ij], jd.V[ij] = 0.0, onp.inf, onp.nan
        jd.verdicts[ij] = Verdict.UNRESOLVABLE.code
        jd.reasons[ij] = Unresolvable.STAIRCASE
        jd.flat.discard(ij)
    for ij, across in measured.items():
        if not across.measured:
            continue
        a = float(onp.real(A[ij]))
        V = abs(a - across.est) / (FD_SAFETY * across.err + float(jd.allowance[ij]))
        _judge_flat(jd, est, ij, a, across.est, across.err, V)
        jd.flat.discard(ij)
    return nfev


#: Taller stairs are looked for beyond this many widths of the known ones.
BEYOND_KNOWN = 64.0


def _taller_beyond(p: Problem, est: Estimates, measured: dict, least) -> int:
    """Where the stairs found are no taller than f's known quantum (a float32 output's
    grid), taller ones beyond them, in ``measured``'s place (float16's within a float32
    model: ``(x.float()**2 + 2·f16(100 + 0.6·x.float())).double()``, whose differences
    read x²'s slope on a float16 stair). Returns the evaluations it took."""
    known = {
        ij: BEYOND_KNOWN * a.width
        for ij, a in measured.items()
        if not a.height > KNOWN_STAIRS * least[ij] and onp.isfinite(a.width)
    }
    if not known:
        return 0
    taller, nfev = across_stairs(p, known, est.y0, coarse=True)
    measured.update(taller)
    return nfev


def _unresolved_beside_wide_stairs(jd: Judgement, est: Estimates, A, measured: dict) -> None:
    """Failing entries read beside stairs too wide to measure across, where a fit
    across the few stairs within reach agrees with the rule: the rule may well give
    the slope across them (attention scores cast to float16 that an input moves
    weakly: one stair in 0.04), and the slope beside them says nothing against it.
    Where the fit disagrees (``x**2 + floor(10·x)``: the slope across is 10 more),
    the verdict stands."""
    for ij, across in measured.items():
        if across.allows(float(onp.real(A[ij])), float(est.N[ij]), float(jd.allowance[ij])):
            jd.E[ij], jd.V[ij] = onp.inf, onp.nan  # (N: the slope read beside them)
            jd.verdicts[ij] = Verdict.UNRESOLVABLE.code
            jd.reasons[ij] = Unresolvable.STAIRCASE


def stair_heights(p: Problem, jd: Judgement) -> onp.ndarray:
    """Per output, the height of the stairs it was seen on (0 where none)."""
    heights = onp.zeros(p.m)
    for (i, _), across in jd.across.items():
        heights[i] = max(heights[i], across.height)
    return heights


def flat_notes(p: Problem, jd: Judgement, A: onp.ndarray) -> list[str]:
    notes = _across_notes(p, jd) + _unseen_notes(p, jd) + loose_notes(p, jd, A)
    flat = sorted(jd.flat)
    if not flat:
        return notes
    i, j = flat[0]
    return notes + [
        f"{len(flat)} entr{'y is' if len(flat) == 1 else 'ies are'} where f is exactly flat at "
        f"x ({p.rows.label(i)} / {p.cols.label(j)}, ...): f does not change at all over "
        "steps far wider than the finite differences' (it does not depend on that input "
        "there, or sits on a stair of a staircase whose slope across stairs the finite "
        "differences saw). There the derivative is 0 (to within f's least change over the "
        "widest such step), and the analytic value was judged against that."
    ]


def _unseen_notes(p: Problem, jd: Judgement) -> list[str]:
    if not jd.unseen:
        return []
    (i, j), count = min(jd.unseen), len(jd.unseen)
    return [
        f"{count} entr{'y' if count == 1 else 'ies'} ({p.rows.label(i)} / "
        f"{p.cols.label(j)}, ...) read a slope on an output that moves in stairs along "
        "other inputs, and showed none along theirs within reach: a rounded term whose "
        "stairs are wider than that (float16's near a saturated tanh) may carry a slope "
        "up to their height over the reach, which the differences cannot see; each was "
        "judged to within that."
    ]


def _across_notes(p: Problem, jd: Judgement) -> list[str]:
    measured = {ij: a for ij, a in jd.across.items() if a.measured}
    if not measured:
        return []
    (i, j), first = min(measured.items())
    count = len(measured)
    return [
        f"{count} entr{'y' if count == 1 else 'ies'} whose finite differences shrank onto "
        "a stair of f (reading 0, or a smooth term's slope beside the stairs, where the rule "
        f"does not) ({p.rows.label(i)} / {p.cols.label(j)}, ...) were measured "
        f"again over a wider step (~{first.step:.1g} there): f that rounds something to a "
        "narrow format on the way (a cast to float16, a float32 accumulator) is a staircase, "
        "flat at x, and the slope across many of its stairs is the derivative the rule "
        "computes. Each is judged against a slope fitted through many points across them, to "
        "within what their scatter about it allows."
    ]
