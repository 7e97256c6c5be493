"""Error of one Jacobian entry's finite-difference estimate across step sizes.

Too large a step and truncation error dominates; too small and round-off
does: on log–log axes the error traces a "V" whose bottom is the best step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as onp

from ._args import param_label, side_of, to_real_vector
from .ad import prepare_call
from .fd import RealMap, default_step, directional_derivatives
from .jacobians import real_jacobian

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
    f: Callable, *args: Any, entry: tuple = (0, 0), wrt: Any = 0, steps: Any = None
) -> StepSweep:
    """Sweep the step for one entry ``(row, col)`` of the 2-D real Jacobian.

    >>> import numpy as np
    >>> s = step_sweep(np.sin, np.array([1.0]), entry=(0, 0))
    >>> 1e-7 < s.best_step("forward") < 1e-6 or 1e-9 < s.best_step("forward") < 1e-7
    True
    """
    args_l, kwargs, argnums, single = prepare_call(f, wrt, args, {})
    if not single:
        raise ValueError("step_sweep takes one input; pass a single int or name as wrt.")
    i = argnums[0]
    J = real_jacobian(f, i)(*args_l, **kwargs)
    row, col = (int(entry[0]), int(entry[1]))
    if not (0 <= row < J.shape[0] and 0 <= col < J.shape[1]):
        raise ValueError(
            f"entry={entry} is outside the {J.shape[0]} x {J.shape[1]} Jacobian; pass "
            "(row, col) with row < outputs and col < inputs (real coordinates)."
        )
    analytic = float(J[row, col])
    side = side_of(args_l[i], param_label(f, i))
    gmap = RealMap(f, args_l, kwargs, (i,), [side])
    x0 = to_real_vector(args_l[i]).astype(float)
    y0 = gmap(x0)
    steps = onp.logspace(-16, -1, 46) if steps is None else onp.asarray(steps, dtype=float)
    e = onp.zeros(x0.size)
    e[col] = 1.0
    errors, chosen = {}, {}
    for method in ("forward", "central", "richardson"):
        est = []
        for h in steps:
            d, _, _ = directional_derivatives(
                gmap.batch, x0, lambda _: e, 1, onp.array([h]), method, y0, x0.dtype, retries=0
            )
            est.append(d[0, row])
        errors[method] = onp.abs(onp.array(est) - analytic)
        chosen[method] = float(_default(args_l[i], method, col, side))
    if not side.complex:
        cs = _complex_step_errors(f, args_l, kwargs, i, side, steps, row, col, analytic, y0)
        if cs is not None:
            errors["complex_step"] = cs
    from .report import Blocks

    label = f"y[{row}] / {Blocks((side,)).label(col)}"
    return StepSweep(steps, errors, chosen, analytic, label)


def _default(x: Any, method: str, col: int, side) -> float:
    s = onp.ravel(default_step(onp.asarray(x), method))
    return s[col % s.size]


def _complex_step_errors(f, args, kwargs, i, side, steps, row, col, analytic, y0):
    def perturbed(h):
        a = list(args)
        v = onp.asarray(args[i], dtype=complex).copy()
        flat = v.reshape(-1)
        flat[col] += 1j * h
        a[i] = v if side.shape else complex(flat[0])
        with onp.errstate(all="ignore"):
            return onp.asarray(f(*a, **kwargs))

    try:
        probe = perturbed(1e-20)
    except Exception:
        return None
    if not onp.iscomplexobj(probe) or not onp.allclose(probe.real.ravel(), y0, rtol=1e-12):
        return None  # not complex-safe: the complex step does not apply
    return onp.array([abs(perturbed(h).imag.ravel()[row] / h - analytic) for h in steps])
