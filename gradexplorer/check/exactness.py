"""How exact a rule is: the precision it is judged to, from how it disagrees with
itself (:func:`~.rules.linearity_gap`), and the note that says so.

A rule computing in a narrow format, or partly so where f reads x through one, is
as exact as that format; an adaptive one (an ODE adjoint, a solver) as its scatter
shows; any other, exactly.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as onp

from ..fd.formats import Format
from .report import Blocks
from .roundings import argument_rounding, intermediate_rounding
from .rules import (
    NARROW_SCATTER_ULPS,
    RULE_NOISE_MAX,
    linearity_gap,
    rule_format,
    rule_precision,
)  # fmt: skip

__all__ = ["Cause", "Exactness", "rule_exactness", "precision_note"]


class Cause(enum.Enum):
    """Why a rule is inexact: its values are a narrow format's numbers, f reads x
    through one, the rule rounds its argument to one (a cast's backward), it rounds
    an intermediate to one (a cast on the way) or is a solver with a relative
    tolerance, which look alike, or it is an adaptive computation (a solver); EXACT
    where it is not."""

    EXACT = "exact"
    VALUES = "values"
    READING = "reading"
    ARGUMENT = "argument"
    ROUNDING = "rounding"
    SOLVER = "solver"


@dataclass(frozen=True)
class Exactness:
    """How exact a rule is: its relative ``precision`` (0: exact), the narrow
    format it computes in (None: float64's, or a solver's inexactness), and the
    ``cause`` that says so; ``where``: the coordinates of the rule's value that
    precision is for (None: all of them); ``rounded_in``: for :attr:`Cause.ROUNDING`,
    the format whose rounding the rule's scatter is (the rule is judged as a solver:
    the two look alike)."""

    precision: float = 0.0
    fmt: Format | None = None
    cause: Cause = Cause.EXACT
    where: onp.ndarray | None = field(default=None, repr=False, compare=False)
    rounded_in: Format | None = field(default=None, repr=False)

    @property
    def entry_precision(self) -> float:
        """The precision of the Jacobian's entries, which come from unit seeds: a rule
        that rounds its argument to a format (:attr:`Cause.ARGUMENT`) is exact at
        them (every format holds 1), and only its value at other seeds is not."""
        return 0.0 if self.cause is Cause.ARGUMENT else self.precision

    def per_coordinate(self) -> float | onp.ndarray:
        """The precision of each coordinate of the entries (one float: all alike).

        >>> Exactness(1e-3, where=onp.array([True, False])).per_coordinate().tolist()
        [0.001, 0.0]
        """
        p = self.entry_precision
        return p if self.where is None else p * self.where


def rule_exactness(
    ratio: onp.ndarray,
    rel: onp.ndarray,
    probes: tuple,
    eps: onp.ndarray | float,
    reading: Format | None = None,
    blocks: Blocks | None = None,
    rule=None,
) -> Exactness:
    """A rule's :class:`Exactness` from its linearity gap (``ratio``, ``rel``,
    ``probes``: :func:`linearity_gap`): the format its values are numbers of
    (:func:`rule_format`), else a solver's precision (:func:`rule_precision`), else,
    where f reads x through a narrow format (``reading``), that format's rounding:
    f's AD then computes partly in it (``model(x.half()) + 1e-3·|x|²``: the rule's
    values mix float16 and float64), and the scatter it shows, if that is a rounding
    of its size in the format, makes it as exact as a rule in that format
    (:func:`rule_precision`: the scatter at random cotangents can fall short of the
    rounding of a given entry), in the leaves of ``blocks`` (the
    rule's coordinates by argument) any coordinate of which shows it (``where``): a
    float64 input beside one read in float16 keeps float64's. A whole leaf, as a
    coordinate of a float16-read input can show no gap by chance although its
    gradient, rounded by the cast's backward, is as inexact as the others.

    >>> u = onp.ones(3)
    >>> rule_exactness(onp.zeros(3), onp.zeros(3), ((u, u * 3.1),), 2.0**-52)
    Exactness(precision=0.0, fmt=None, cause=<Cause.EXACT: 'exact'>)
    """
    fmt = rule_format(probes, eps)
    if fmt is not None:
        return Exactness(rule_precision(ratio, rel, fmt), fmt, Cause.VALUES)
    rounds = None if rule is None else argument_rounding(rule, probes, ratio, rel, eps)
    if rounds is not None:
        shown = _whole_leaves(onp.asarray(ratio > 1), blocks)
        precision = rule_precision(ratio, rel, rounds)
        return Exactness(precision, rounds, Cause.ARGUMENT, None if shown.all() else shown)
    precision = rule_precision(ratio, rel)
    scatter = float(onp.max(rel[(ratio > 1) & onp.isfinite(rel)], initial=0.0))
    rounded_in = None
    if rule is not None and scatter > 0:
        rounded_in = intermediate_rounding(rule, probes, eps, ratio > 1)
    if precision and rounded_in is None:
        return Exactness(precision, cause=Cause.SOLVER)
    if precision:
        # an intermediate's rounding reaches the coordinates whose paths pass through
        # it: a float64 input beside a cast keeps float64's precision
        shown = _rounded_coordinates(rule, probes, ratio, eps)
        where = None if shown.all() else shown
        return Exactness(precision, cause=Cause.ROUNDING, where=where, rounded_in=rounded_in)
    reads = reading is not None and reading.eps > float(onp.max(eps))
    if reads and RULE_NOISE_MAX < scatter <= NARROW_SCATTER_ULPS * reading.eps:
        shown = _whole_leaves(onp.asarray(ratio > 1), blocks)
        precision = rule_precision(ratio, rel, reading)  # as a narrow rule's
        return Exactness(precision, reading, Cause.READING, None if shown.all() else shown)
    # a float16 intermediate's rounding, too large for a solver's: judged exactly, and
    # no nonlinear rule (the linearity checks allow it)
    return (
        Exactness()
        if rounded_in is None
        else Exactness(cause=Cause.ROUNDING, rounded_in=rounded_in)
    )


#: Further pairs of random seeds a rounding intermediate's reach is looked for with.
REACH_PAIRS = 2


def _rounded_coordinates(rule, probes: tuple, ratio, eps) -> onp.ndarray:
    """The coordinates a rule's rounding shows at, over :data:`REACH_PAIRS` more pairs
    of seeds than the first (whose gap at a coordinate the rounding reaches can be 0
    by chance: ``x.half().double() * x`` at one of 8)."""
    shown = onp.asarray(ratio > 1)
    u0, r0 = (onp.asarray(a) for a in probes[0])
    gen = onp.random.default_rng(u0.size + 1)
    for _ in range(REACH_PAIRS):
        if shown.all():
            break
        more, _, _ = linearity_gap(rule, u0.size, r0.size, gen, u0.dtype, eps)
        shown = shown | (more > 1)
    return shown


def _whole_leaves(shown: onp.ndarray, blocks: Blocks | None) -> onp.ndarray:
    """``shown`` spread over each leaf of ``blocks`` where any of its coordinates is
    True (without blocks, over all coordinates)."""
    if blocks is None or blocks.size != shown.size:
        return onp.full(shown.shape, bool(shown.any()))
    out = shown.copy()
    for part in blocks.slices.values():
        out[part] = shown[part].any()
    return out


def precision_note(rule: str, what: str, exact: Exactness) -> str:
    precision, fmt = exact.precision, exact.fmt
    if exact.cause is Cause.ARGUMENT:
        return (
            f"the {rule} rounds its {what} to {fmt.name}, as a cast's does (its value is "
            f"the same at a {what} and at that {what} rounded to {fmt.name}): off by "
            f"~{precision:.0e} (relative) at random {what}s, which is no nonlinear rule, "
            f"and exact at the unit {what}s the Jacobian's entries come from, which are "
            "judged to float64's precision."
        )
    if fmt is not None and exact.cause is Cause.VALUES:
        return (
            f"the {rule}'s values at random {what}s are all {fmt.name} numbers: it computes "
            f"in {fmt.name}, so it is judged to ~{precision:.0e} relative to the size of the "
            "Jacobian around each entry (gx.check_precision judges a low-precision gradient "
            "against float64's, in ulps)."
        )
    if fmt is not None:
        return (
            f"the {rule} disagrees with itself by ~{precision:.0e} (relative), {fmt.name}'s "
            f"rounding: f reads x through {fmt.name}, so its derivatives compute partly in "
            f"{fmt.name} too, and it is judged to that relative to the size of the Jacobian "
            f"around{_which(exact, what)}."
        )
    if exact.cause is Cause.ROUNDING and not precision:
        name = exact.rounded_in.name
        return (
            f"the {rule} disagrees with itself by {name}'s rounding and scales exactly with "
            f"its {what}, as a rule that rounds an intermediate to {name} does (a cast to "
            f"{name} on the way: its backward rounds the {what} it passes on), which is no "
            "nonlinear rule."
        )
    if exact.cause is Cause.ROUNDING:
        name = exact.rounded_in.name
        return (
            f"the {rule} is not exactly linear in its {what}: it disagrees with itself by "
            f"{name}'s rounding, and scales exactly with its {what}, as a rule that rounds "
            f"an intermediate to {name} does (a cast to {name} on the way: its backward "
            f"rounds the {what} it passes on); a solver with a relative tolerance looks "
            f"the same, so it is judged as one, to ~{precision:.0e} relative to the size "
            "of the Jacobian around each entry."
        )
    return (
        f"the {rule} is not exactly linear in its {what} (as an adaptive or iterative "
        "backward pass makes it: an ODE adjoint, a solver with a tolerance), so it is "
        f"judged to ~{precision:.0e} relative to the size of the Jacobian around each "
        "entry; tighten the solver's tolerance to judge it more sharply."
    )


def _which(exact: Exactness, what: str) -> str:
    """The entries a narrow precision is for: all, or those of some coordinates."""
    where = exact.where
    if where is None:
        return " each entry"
    side = "input" if what == "cotangent" else "output"
    return (
        f" each entry of the {int(where.sum())} of {where.size} {side} coordinates that "
        "show it (the others keep float64's precision)"
    )
