"""Stage two of the full check: every Jacobian column by finite differences,
each entry with its error, the reason where it has none, and the one-sided
derivatives where f is not differentiable at the point."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as onp

from ..errors import ComplexStepError
from ..fd.applicability import named_culprit
from ..fd.complexstep import complex_step_jacobian
from ..fd.jacobian import fd_columns
from ..fd.noise import NoiseModel
from ..fd.reasons import Unresolvable
from ..fd.steps import steps_for
from .options import Options
from .problem import Problem

__all__ = ["Estimates", "fd_stage"]


@dataclass
class Estimates:
    """The finite-difference Jacobian of f at the point, entry by entry."""

    y0: onp.ndarray  # (m,)
    N: onp.ndarray  # (m, n) estimates
    E: onp.ndarray  # (m, n) their errors (inf: unresolvable)
    R: onp.ndarray  # (m, n) int8 codes of :class:`Unresolvable` (0: resolved)
    noise: NoiseModel
    nfev: int
    #: where R is KINK: the right / left derivatives and their error (else NaN)
    right: onp.ndarray | None = None
    left: onp.ndarray | None = None
    side_err: onp.ndarray | None = None
    #: per entry: the quantum of the staircase f's output moves on along its column
    entry_quantum: onp.ndarray | None = None

    @property
    def kink(self) -> onp.ndarray:
        return self.R == Unresolvable.KINK


def fd_stage(p: Problem, opts: Options) -> Estimates:
    """Finite differences of every column (Richardson by default, per-column steps)."""
    x0 = p.x0
    y0 = p.evaluate_one(x0)
    out_eps = onp.concatenate([onp.full(s.real_size, s.eps) for s in p.rows.sides])
    if opts.method == "complex_step":
        return _complex_step(p, opts, x0, y0, out_eps)
    N, E, R, nfev, noise, sides = fd_columns(
        p.evaluator,
        x0,
        y0,
        p.steps(opts.method),
        p.spacing(),
        opts.method,
        rng=opts.gen,
        out_eps=out_eps,
        coord_eps=p.coord_eps(),
        grow_to=p.grow_to(opts.method),
        one_sided=True,
    )
    right, left, side_err, quantum = sides
    return Estimates(y0, N, E, R, noise, nfev + 1, right, left, side_err, quantum)


def _complex_step(p: Problem, opts: Options, x0, y0, out_eps) -> Estimates:
    if p.rmap is None:
        raise ValueError(
            "method='complex_step' applies to f itself, not to its derivatives (order=2); "
            "use method='richardson' for second derivatives."
        )
    fd_steps = (
        steps_for(p.call, None, "richardson", p.backend.to_numpy)
        if p.call
        else p.steps("richardson")
    )
    try:
        N, E, nfev = complex_step_jacobian(
            p.rmap,
            p.batch,
            x0,
            y0,
            p.steps("complex_step"),
            fd_steps,
            p.spacing(),
            out_eps=out_eps,
            coord_eps=p.coord_eps(),
            rng=opts.gen,
        )
    except ComplexStepError as exc:
        named = named_culprit(exc, p.call, p.backend)
        if named is exc:
            raise
        raise named from exc
    R = onp.zeros(N.shape, onp.int8)
    return Estimates(y0, N, E, R, NoiseModel.quiet(y0.size), nfev + 1)
