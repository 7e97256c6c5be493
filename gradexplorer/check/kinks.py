"""Where f is not differentiable: jumps, kinks and ties, and whether the
analytic derivative is a right one there.

At a kink or a tie (relu at 0, a max or a sort with equal entries, a clip at
its bound) f has no derivative, but it has one-sided derivatives, and a
backward pass follows the branch its forward pass took. The analytic row is
*right at a kink* when it is the derivative of a branch of f, or between
branches (a subgradient); else it is wrong. Finite differences tell which:

- along each coordinate the stencil already gave the right and left
  derivatives (:func:`~gradexplorer.fd.schemes.one_sided`);
- along random directions v (over the columns in question), the one-sided
  derivatives ``D+ = f'(x; v)`` and ``D- = -f'(x; -v)``. For f made of two
  smooth pieces meeting at x (one kink surface: relu, abs, clip, a tie of
  two), every branch gradient and every mix of them puts ``Jv`` between D-
  and D+ *for every v*: that is the hull test. Where more pieces meet (the
  middle of three tied values), a branch gradient g still gives ``gv = D+``
  for the directions that enter its branch: that is the branch test, met by
  some of a few random directions with probability near one.

A row where f proves differentiable along every direction keeps its smooth
verdict. A jump (f not continuous: one-sided difference quotients that grow
like 1/h) has no derivative at all: neither right nor wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as onp

from ..fd.directional import directional_derivatives, exact_steps
from ..fd.noise import QUANTUM_STD, NoiseModel
from ..fd.reasons import Unresolvable
from .judging import FD_SAFETY
from .problem import Problem
from .verdicts import Verdict, failing_codes

__all__ = [
    "find_jumps", "least_change", "KinkProbe", "settle_kinks", "DIRECTIONS", "MORE_DIRECTIONS",
]  # fmt: skip

#: Random directions tried first, and in all when a row is still undecided.
DIRECTIONS, MORE_DIRECTIONS = 4, 16
#: How much smaller the step of a direction measured again is.
REFINE = 512.0


def find_jumps(p: Problem, cells, est, limit: int = 200) -> tuple[dict, dict, int]:
    """``{(i, j): size}`` of the cells where f jumps (a one-sided difference
    quotient that scales like 1/h between two steps 64x apart); ``{(i, j): step}``
    of those where f is exactly flat on both sides at both steps (a staircase
    whose stairs are narrower than the finite differences' step: f is constant at
    x, its derivative 0 there), with the widest step f stays flat over; and the
    evaluations it took."""
    if not len(cells):
        return {}, {}, 0
    columns = onp.array(sorted({int(j) for _, j in cells})[:limit])
    x0, spacing = p.x0, p.spacing()
    noise = est.noise
    quiet = NoiseModel(noise.resolved, noise.resolved, noise.floor, noise.scale)
    pos = {int(j): t for t, j in enumerate(columns)}
    jumps, nfev = {}, 0
    flat = onp.ones((columns.size, est.y0.size), bool)
    for method, sign in (("forward", 1.0), ("backward", -1.0)):
        base = p.steps(method)[columns]
        quotients = []
        for factor in (2.0**6, 2.0**12):
            steps = exact_steps(x0[columns], base * factor, spacing[columns])
            d = directional_derivatives(
                p.evaluator,
                x0,
                est.y0,
                quiet,
                steps,
                columns=columns,
                method=method,
                adapt=False,
                coord_eps=p.coord_eps(),
            )
            nfev += d.nfev
            quotients.append(d.est)
        q1, q2 = quotients
        flat &= (q1 == 0) & (q2 == 0)
        with onp.errstate(all="ignore"):
            jump = (onp.abs(q1 / q2 - 64.0) < 0.064) & (onp.abs(q1) > 0)
        for i, j in cells:
            t = pos.get(int(j))
            if t is not None and jump[t, i] and (int(i), int(j)) not in jumps:
                jumps[(int(i), int(j))] = float(q1[t, i] * base[t] * 2.0**6 * sign)
    reach, more = _flat_reach(p, columns, flat, est.y0)
    flats = {
        (int(i), int(j)): float(reach[pos[int(j)], int(i)])
        for i, j in cells
        if int(j) in pos and flat[pos[int(j)], int(i)]
    }
    return jumps, flats, nfev + more


def _flat_reach(p: Problem, columns, flat, y0) -> tuple[onp.ndarray, int]:
    """Per flat cell, the widest step h with f(x ± h) = f(x), growing 64x from the
    4096 forward steps where flatness was seen, while f stays flat, up to half x's size
    (or 1): a clip's saturated entry is flat to its bound (0.77 from x = 1.77), which
    bounds its slope by f's least change over that, not over 1e-4."""
    base = p.steps("forward")[columns]
    x0, spacing = p.x0, p.spacing()
    seen = exact_steps(x0[columns], base * 2.0**12, spacing[columns])  # flat out to here
    reach = onp.where(flat, seen[:, None], 0.0)
    limit = reach_limit(x0[columns])
    nfev, factor = 0, 2.0**18
    still = flat.copy()
    while True:
        steps = exact_steps(x0[columns], base * factor, spacing[columns])
        live = onp.flatnonzero(still.any(axis=1) & (steps <= limit))
        if not live.size:
            return reach, nfev
        for sign in (1.0, -1.0):
            X = onp.repeat(x0[None], live.size, axis=0)
            X[onp.arange(live.size), columns[live]] += sign * steps[live]
            Y = onp.asarray(p.batch(X), dtype=float)
            nfev += live.size
            still[live] &= Y == y0[None, :]
        reach[live] = onp.where(still[live], steps[live][:, None], reach[live])
        factor *= REACH_GROWTH


#: The flat reach grows by this factor a try.
REACH_GROWTH = 64.0


def reach_limit(x: onp.ndarray) -> onp.ndarray:
    """How far from x the flat reach is followed: half x's size, or 1."""
    return 0.5 * onp.maximum(onp.abs(x), 1.0)


def flat_to_the_limit(reach: float, x: float) -> bool:
    """f was flat as far as it was followed (:func:`_flat_reach`): it does not depend
    on that input near x, where a stair (``round``'s) ends within it."""
    return reach * REACH_GROWTH > float(reach_limit(onp.asarray(x)))


def least_change(p: Problem, est) -> onp.ndarray:
    """Per entry, the least change f's output can make: the quantum of the
    staircase it moves on along the column (a rounding staircase: a small
    difference of large terms), else an ulp of its value. f unchanged over a
    step h bounds its slope there by this over h, no better."""
    ulp = p.eps_matrix() * onp.abs(est.y0)[:, None]
    # the rounding floor is a fraction of the least step f's output can take (an output
    # on float32's grid, returned as float64, steps by float32's ulps)
    ulp = onp.fmax(ulp, est.noise.floor[:, None] / QUANTUM_STD)
    q = getattr(est, "entry_quantum", None)
    return ulp if q is None else onp.fmax(ulp, onp.nan_to_num(q, nan=0.0))


@dataclass
class _Along:
    """One-sided derivatives of every output along each probe direction."""

    vectors: onp.ndarray  # (k, n)
    plus: onp.ndarray  # (k, m) f'(x; v)
    minus: onp.ndarray  # (k, m) -f'(x; -v)
    err: onp.ndarray  # (k, m) inf where unknown


class KinkProbe:
    """Random directions over a set of columns and f's one-sided derivatives
    along them, drawn as needed and shared by reverse and forward mode."""

    def __init__(self, p: Problem, est, columns: onp.ndarray, gen):
        self.p, self.est, self.columns, self.gen = p, est, columns, gen
        self.along: _Along | None = None
        self.nfev = 0

    def directions(self, count: int) -> _Along:
        have = 0 if self.along is None else self.along.vectors.shape[0]
        if count > have:
            self._draw(count - have)
        return self.along

    def _base(self) -> float:
        steps = self.p.steps("richardson")
        return float(onp.max(steps[self.columns], initial=0.0)) or 1.0

    def _draw(self, k: int) -> None:
        steps, base = self.p.steps("richardson"), self._base()
        V = onp.zeros((k, self.p.n))
        V[:, self.columns] = self.gen.standard_normal((k, self.columns.size)) * (
            steps[self.columns] / base
        )
        new = self._measure(V, base)
        if self.along is not None:
            old = self.along
            new = _Along(
                *(onp.concatenate([a, b]) for a, b in zip(vars(old).values(), vars(new).values()))
            )
        self.along = new

    def refined(self, k: onp.ndarray) -> _Along:
        """Directions k measured again from a step 512x smaller: a directional
        difference that averaged over an oscillation finer than its step (and so
        looked like a derivative f does not have) resolves it there; a true
        non-differentiability (piecewise linear) reads the same at any step."""
        return self._measure(self.along.vectors[k], self._base() / REFINE)

    def _measure(self, V: onp.ndarray, base: float) -> _Along:
        p = self.p
        d = directional_derivatives(
            p.evaluator,
            p.x0,
            self.est.y0,
            self.est.noise,
            onp.full(V.shape[0], base),
            vectors=V,
            method="richardson",
            spacing=p.spacing(),
            coord_eps=p.coord_eps(),
        )
        self.nfev += d.nfev
        kink = d.reason == Unresolvable.KINK
        known = (d.reason == 0) | kink
        plus = onp.where(kink, d.right, d.est) if d.right is not None else d.est
        minus = onp.where(kink, d.left, d.est) if d.left is not None else d.est
        err = onp.where(kink, d.side_err, d.err) if d.side_err is not None else d.err
        return _Along(d.vectors, plus, minus, onp.where(known, err, onp.inf))


def settle_kinks(
    J: onp.ndarray,
    verdicts: onp.ndarray,
    violation: onp.ndarray,
    est,
    rtol: onp.ndarray,
    allowance: onp.ndarray,
    probe: KinkProbe,
    settled: onp.ndarray | None = None,
) -> onp.ndarray:
    """Give the rows of ``J`` (reverse or forward mode) where f may not be
    differentiable their verdicts at the kink, in place; returns the mask of
    entries now RIGHT_AT_KINK or WRONG because of a kink.

    A row is looked at when an entry of it is at a coordinate kink (the FD
    reason KINK) or fails. It is right at a kink when f is not
    differentiable there (a coordinate kink, or a direction along which f's
    derivative is not J_fd·v) and it passes the hull test or the branch test
    (see the module's text); its failing and kink entries then become
    RIGHT_AT_KINK. A non-differentiable row that passes neither is wrong at
    its kink entries too. Entries ``settled`` otherwise (judged across a staircase's
    stairs, whose slope is no one-sided derivative) are not looked at again.
    """
    kink = est.kink
    failing = failing_codes(verdicts)
    if settled is not None:
        failing &= ~settled
    rows = onp.flatnonzero(onp.any(kink | failing, axis=1))
    changed = onp.zeros(J.shape, bool)
    if not rows.size:
        return changed
    undecided = []
    for count in (DIRECTIONS, MORE_DIRECTIONS):
        along = probe.directions(count)
        undecided = []
        for i in rows:
            outcome = _row_outcome(i, J, est, kink, failing, rtol, allowance, along, probe)
            if outcome is None:
                undecided.append(i)
                continue
            _apply(i, outcome, J, verdicts, violation, kink, failing, est, changed)
        rows = onp.array(undecided, dtype=int)
        if not rows.size:
            break
    for i in rows:  # non-differentiable, and no branch found: wrong at its kinks
        _apply(i, False, J, verdicts, violation, kink, failing, est, changed)
    return changed


def _row_outcome(i, J, est, kink, failing, rtol, allowance, along: _Along, probe: KinkProbe):
    """True: right at a kink; False: wrong at a kink; "smooth": f is
    differentiable here (the smooth verdicts stand); None: undecided yet."""
    a_row = J[i]
    if not onp.all(onp.isfinite(a_row)):
        return "smooth"
    V = along.vectors
    av = V @ a_row
    plus, minus, err = (a[:, i].copy() for a in (along.plus, along.minus, along.err))
    known = onp.isfinite(err)
    if not known.any():
        return _coordinate_outcome(i, J, est, kink)
    N_row = onp.where(onp.isfinite(est.N[i]), est.N[i], 0.0)
    E_row = onp.where(onp.isfinite(est.E[i]), est.E[i], 0.0)
    rt = float(onp.max(rtol[i]))
    slack = onp.abs(V) @ onp.abs(allowance[i])
    with onp.errstate(all="ignore"):
        tol = FD_SAFETY * err + rt * onp.maximum(onp.abs(av), onp.abs(plus)) + slack
        lo, hi = onp.minimum(plus, minus) - tol, onp.maximum(plus, minus) + tol
        in_hull = (av >= lo) & (av <= hi)
        match = (onp.abs(av - plus) <= tol) | (onp.abs(av - minus) <= tol)
        linear = V @ N_row
        lin_tol = tol + FD_SAFETY * (onp.abs(V) @ E_row)
        nondiff = (onp.abs(plus - minus) > 2 * tol) | (onp.abs(plus - linear) > lin_tol)
    kinked = bool(onp.any(kink[i])) or bool(onp.any((onp.abs(plus - minus) > 2 * tol) & known))
    if not kinked and onp.any(nondiff & known):
        # not linear in v, yet no kink along any line: three or more pieces meet at x
        # (the middle of three ties), or a difference fooled by an oscillation finer
        # than its step: measured again from a far smaller step, only the first stays
        k = onp.flatnonzero(nondiff & known)
        again = probe.refined(k)  # its directions snapped to the finer step's grid
        V2 = again.vectors
        av2, lin2 = V2 @ a_row, V2 @ N_row
        p2, e2 = again.plus[:, i], again.err[:, i]
        with onp.errstate(all="ignore"):
            slack2 = onp.abs(V2) @ onp.abs(allowance[i])
            tol2 = FD_SAFETY * e2 + rt * onp.maximum(onp.abs(av2), onp.abs(p2)) + slack2
            still = onp.abs(p2 - lin2) > tol2 + FD_SAFETY * (onp.abs(V2) @ E_row)
        if not onp.any(still & onp.isfinite(e2)):
            return "smooth"
        return True if onp.any((onp.abs(av2 - p2) <= tol2) & onp.isfinite(e2)) else None
    elif not kinked:
        return "smooth"
    # a failing entry along which f has equal one-sided derivatives is no mix of the
    # two sides there: only a branch met exactly (the middle of three ties) rescues it
    smooth_failing = bool(onp.any(failing[i] & ~kink[i]))
    hull = onp.all(in_hull[known]) and _coordinate_outcome(i, J, est, kink) is not False
    if hull and not smooth_failing:
        return True
    if onp.any(match[known]):
        return True
    return None


def _coordinate_outcome(i, J, est, kink) -> bool | str:
    """Along the coordinates alone: every kink entry between its one-sided derivatives."""
    cols = onp.flatnonzero(kink[i])
    if not cols.size:
        return "smooth"
    r, l, e = est.right[i, cols], est.left[i, cols], est.side_err[i, cols]
    a = J[i, cols]
    tol = FD_SAFETY * e + 1e-12 * onp.maximum(onp.abs(r), onp.abs(l))
    inside = (a >= onp.minimum(r, l) - tol) & (a <= onp.maximum(r, l) + tol)
    return bool(onp.all(inside))


def _apply(i, outcome, J, verdicts, violation, kink, failing, est, changed) -> None:
    if outcome == "smooth":
        return
    cells = kink[i] | failing[i]
    changed[i, cells] = True
    if outcome:
        verdicts[i, cells] = Verdict.RIGHT_AT_KINK.code
        violation[i, cells] = onp.where(kink[i, cells], 0.0, violation[i, cells])
        return
    # wrong at its kink: the entries outside their own one-sided derivatives (and
    # the failing ones) are named; when every entry alone is between them, the
    # row as a whole is no branch and no mix of branches: all its kink entries
    cols = onp.flatnonzero(kink[i])
    if not cols.size:  # no kink along any coordinate: the failing entries stay so
        return
    r, l, e = est.right[i, cols], est.left[i, cols], est.side_err[i, cols]
    outside = onp.maximum(
        onp.maximum(onp.minimum(r, l) - J[i, cols], J[i, cols] - onp.maximum(r, l)), 0
    )
    with onp.errstate(all="ignore"):
        excess = outside / onp.maximum(FD_SAFETY * e, onp.finfo(float).tiny)
    wrong = excess > 1
    if not wrong.any() and not failing[i].any():
        wrong[:] = True
        excess = onp.full(cols.size, onp.nextafter(1.0, 2.0))
    verdicts[i, cols] = onp.where(wrong, Verdict.WRONG.code, Verdict.RIGHT_AT_KINK.code)
    violation[i, cols] = onp.where(wrong, excess, 0.0)
