"""Stage one of the full check: the analytic Jacobian by reverse mode, and how
well that rule is known (linear in its cotangent? repeatable?).

Reverse mode builds the Jacobian row by row from unit cotangents. A VJP that
is not linear in its cotangent still builds a right matrix that way, so a
random cotangent is compared with the rows it should combine; an adaptive
rule (an ODE adjoint, a solver) shows a small inexactness everywhere and is
judged to that precision; a backward pass that differs run to run (atomics)
is measured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as onp

from ..fd.formats import Format
from .determinism import RUNS, backward_spread
from .exactness import Cause, precision_note, rule_exactness
from .options import Options
from .problem import Problem
from .progress import analytic_ready
from .rules import (
    NARROW_SCATTER_ULPS,
    linearity_gap,
    reverse_rows,
    rows_rule,
    vjp_rule,
)

__all__ = ["Reverse", "reverse_stage"]


@dataclass
class Reverse:
    """The reverse-mode Jacobian and what is known of the rule that made it."""

    A: onp.ndarray  # (m, n)
    y: onp.ndarray  # f's value as the AD system computed it
    vjp: Callable[[onp.ndarray], onp.ndarray]
    trace: object
    #: relative precision the rule earns by disagreeing with itself (0: exact)
    precision: float
    #: random cotangents as ``(u, vjp(u), u·A)`` (signs opposite coordinate by
    #: coordinate) and the columns where the rule disagrees with itself beyond round-off
    probes: tuple
    suspect: onp.ndarray  # (n,) bool
    #: per column, the spread of repeated backward passes (None: deterministic)
    jitter: onp.ndarray | None
    jitter_rel: float | None
    ngrad: int
    notes: list[str] = field(default_factory=list)
    #: the narrow format the rule computes in (its precision is that rounding), or None
    narrow: Format | None = None
    #: ``precision`` per column where only some columns show it (x read in float16
    #: beside a float64 w: w's columns keep float64's), else the one precision
    column_precision: float | onp.ndarray = 0.0

    @property
    def adaptive(self) -> bool:
        """Inexact as a solver is (not by a narrow format's rounding): then its
        error grows with f's own unevenness (:func:`~gradexplorer.check.rules.solver_slack`)."""
        return bool(self.precision) and self.narrow is None

    @property
    def adaptive_columns(self) -> float | onp.ndarray:
        """1 for each column an adaptive rule's inexactness reaches (all, or those that
        show it), else 0."""
        if not self.adaptive:
            return 0.0
        return (onp.asarray(self.column_precision) > 0).astype(float)

    @property
    def exact(self) -> bool:
        """Exact and repeatable: then it may stand for forward mode where the two agree."""
        return self.jitter is None and not self.precision


def reverse_stage(p: Problem, opts: Options, eps: onp.ndarray) -> Reverse:
    """Build A from unit cotangents, then test the rule's linearity and repeatability.

    ``eps`` is the per-entry machine epsilon (the lower of row and column precision).
    """
    m, n = p.m, p.n
    tr = p.backend.vjp(p.F, p.vs)
    y = onp.asarray(p.backend.to_numpy(tr.value))
    vjp = vjp_rule(tr, p.backend, y.dtype)
    A = reverse_rows(vjp, m, rows_rule(tr, p.backend, y.dtype))
    if opts.order == 1:
        analytic_ready(A)
    notes: list[str] = []
    col_eps = eps.max(axis=0)
    lin_ratio, lin_rel, pairs = linearity_gap(vjp, m, n, opts.gen, y.dtype, col_eps)
    exact = rule_exactness(lin_ratio, lin_rel, pairs, col_eps, p.narrow_format, p.cols, rule=vjp)
    fmt, precision = exact.fmt, exact.entry_precision
    # a rule computing in a narrow format disagrees with itself by its rounding
    rounding = 256 * col_eps if fmt is None else NARROW_SCATTER_ULPS * fmt.eps
    suspect = lin_ratio > 1 if fmt is None else lin_rel > rounding
    probes = []
    for u, ru in pairs:
        with onp.errstate(all="ignore"):
            uA = u @ A
            unit_gap = onp.abs(ru - uA) / (
                rounding * (onp.abs(u) @ onp.abs(A) + onp.abs(ru)) + onp.finfo(float).tiny
            )
        suspect |= unit_gap > 1
        probes.append((u, ru, uA))
    if exact.precision or exact.cause is Cause.ROUNDING:
        notes.append(precision_note(opts.rule_name, "cotangent", exact))
    jitter, jitter_rel, jitter_note = backward_spread(p, tr, vjp, opts.gen)
    if jitter_note:
        notes.append(jitter_note)
    return Reverse(
        A,
        y,
        vjp,
        tr,
        precision,
        tuple(probes),
        suspect,
        jitter,
        jitter_rel,
        m + 3 + RUNS + 1,
        notes,
        fmt,
        exact.per_coordinate(),
    )
