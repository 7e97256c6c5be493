"""Error of one Jacobian entry's finite-difference estimate across step sizes.

Too large a step and truncation error dominates; too small and round-off
does: on log–log axes the error traces a "V" whose bottom is the best step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as onp

from ..backends import opened
from ..fd.directional import directional_derivatives
from ..fd.steps import default_step
from .problem import build_problem
from .report import Blocks
from .rules import flat

__all__ = ["StepSweep", "step_sweep"]


@dataclass(frozen=True)
class StepSweep:
    """``errors[method][k]`` is |estimate - analytic| at ``steps[k]``."""

    steps: onp.ndarray
    errors: dict
    chosen: dict
    analytic: float
    label: str

    def best_step(self, method: str) -> float:
        errs = onp.where(onp.isfinite(self.errors[method]), self.errors[method], onp.inf)
        return float(self.steps[int(onp.argmin(errs))])


def step_sweep(
    f: Callable,
    *args: Any,
    entry: tuple = (0, 0),
    wrt: Any = 0,
    steps: Any = None,
    backend: str | None = None,
    precision: str | None = None,
) -> StepSweep:
    """Sweep the step for one entry ``(row, col)`` of the 2-D real Jacobian.

    The analytic value comes from one backward pass of f's own AD system
    (autograd, torch or jax; see :func:`check_grads` for ``precision``).

    >>> import numpy as np
    >>> s = step_sweep(np.sin, np.array([1.0]), entry=(0, 0))
    >>> 1e-7 < s.best_step("forward") < 1e-6 or 1e-9 < s.best_step("forward") < 1e-7
    True
    """
    with opened(f, args, {}, wrt, backend=backend, precision=precision) as (system, prep):
        return _sweep(prep, system, entry, steps)


def _sweep(prep, system, entry, steps) -> StepSweep:
    p = build_problem(prep.f, prep.args, prep.kwargs, prep.wrt, backend=system)
    call = p.call
    if not call.single:
        raise ValueError("step_sweep takes one input; pass a single int or name as wrt.")
    row, col = (int(entry[0]), int(entry[1]))
    if not (0 <= row < p.m and 0 <= col < p.n):
        raise ValueError(
            f"entry={entry} is outside the {p.m} x {p.n} Jacobian; pass "
            "(row, col) with row < outputs and col < inputs (real coordinates)."
        )
    tr = system.vjp(p.F, p.vs)
    dtype = onp.asarray(system.to_numpy(tr.value)).dtype
    basis = onp.zeros(p.m, dtype)
    basis[row] = 1
    analytic = float(flat(tr.backward(system.to_array(basis)), system)[col])
    gmap = p.rmap
    layout = p.F.layout
    specs = call.specs
    x0 = p.x0
    y0 = gmap(x0)
    steps = onp.logspace(-16, -1, 46) if steps is None else onp.asarray(steps, dtype=float)
    errors, chosen = {}, {}
    zero_noise = onp.zeros(y0.size)
    for method in ("forward", "central", "richardson"):
        d = directional_derivatives(
            gmap.batch,
            x0,
            y0,
            zero_noise,
            steps,
            columns=onp.full(steps.size, col),
            method=method,
            adapt=False,
        )
        errors[method] = onp.abs(d.est[:, row] - analytic)
        chosen[method] = float(_default(x0, method, col))
    if not any(s.complex for s in specs):
        cs = _complex_step_errors(p, gmap, x0, y0, steps, row, col, analytic)
        if cs is not None:
            errors["complex_step"] = cs
    label = f"{Blocks(tuple(layout.leaves)).label(row)} / {Blocks(tuple(specs)).label(col)}"
    return StepSweep(steps, errors, chosen, analytic, label)


def _default(x0: onp.ndarray, method: str, col: int) -> float:
    return float(default_step(x0, method)[col])


def _complex_step_errors(p, gmap, x0, y0, steps, row, col, analytic):
    from ..errors import ComplexStepError
    from ..fd.complexstep import complex_step_derivatives, verify_complex_step

    # where f refuses complex input, or drops or bends the perturbation (checked
    # against finite differences along this column), the complex step does not apply
    try:
        J, E, _ = complex_step_derivatives(gmap, x0, y0, p.steps("complex_step"), columns=[col])
        out_eps = onp.concatenate([onp.full(s.real_size, s.eps) for s in p.rows.sides])
        verify_complex_step(
            gmap,
            gmap.batch,
            x0,
            y0,
            J,
            E,
            p.steps("richardson"),
            p.spacing(),
            out_eps=out_eps,
            coord_eps=p.coord_eps(),
            columns=[col],
        )
    except ComplexStepError:
        return None
    out = []
    for h in steps:
        # the raw estimate at this step (no refinement): the sweep shows its error
        J, _, _ = complex_step_derivatives(
            gmap, x0, y0, onp.full(x0.size, h), columns=[col], refine=False
        )
        out.append(abs(J[row, 0] - analytic))
    return onp.array(out)
