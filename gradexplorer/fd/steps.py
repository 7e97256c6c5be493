"""Finite-difference steps: per dtype, per element magnitude, exact in each precision."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as onp

from ..core.calls import Call
from ..core.tree import Leaf, flatten

METHODS = ("richardson", "central", "forward", "backward", "complex_step")


# Base steps as powers of two (exact in binary), per method and precision.
_BASE_STEP = {
    "forward": {8: 2.0**-26, 4: 2.0**-12, 2: 2.0**-6},
    "backward": {8: 2.0**-26, 4: 2.0**-12, 2: 2.0**-6},
    "central": {8: 2.0**-17, 4: 2.0**-8, 2: 2.0**-4},
    "richardson": {8: 2.0**-8, 4: 2.0**-3, 2: 2.0**-2},
    "complex_step": {8: 1e-20, 4: 1e-20, 2: 1e-20},
}


def default_step(x: Any, method: str = "richardson") -> onp.ndarray:
    """Default step for each element of x: a per-dtype base times its magnitude.

    Zeros (and non-finite elements) take the array's typical magnitude (its
    root mean square, or 1 for an all-zero array); no step underflows.

    >>> default_step(onp.array([0.0, 1e-8, 4.0]), "central")
    array([2.15791864e-05, 7.62939453e-14, 3.05175781e-05])
    """
    _check_method(method)
    x = onp.asarray(x)
    rdt = x.real.dtype if x.dtype.kind in "fc" else onp.dtype(float)
    with onp.errstate(all="ignore"):
        mag = onp.abs(x).astype(float)
        good = onp.isfinite(mag) & (mag > 0)
        typical = root_mean_square(mag[good]) if good.any() else 1.0
    if not onp.isfinite(typical) or typical == 0:
        typical = 1.0
    floor = float(onp.finfo(rdt).tiny / onp.finfo(rdt).eps)
    scale = onp.where(good, mag, typical)
    return _BASE_STEP[method][rdt.itemsize] * onp.maximum(scale, floor)


def root_mean_square(mag: onp.ndarray) -> float:
    """The root mean square of positive magnitudes, scaled by their largest first, so
    that neither squares of 1e-200 underflow to 0 nor squares of 1e200 overflow.

    >>> [f"{root_mean_square(onp.array(m)):.4g}" for m in ([5.4e-265, 0.0], [3e200, 3e200])]
    ['3.818e-265', '3e+200']
    """
    top = float(onp.max(mag))
    if top == 0 or not onp.isfinite(top):
        return top
    return top * float(onp.sqrt(onp.mean((mag / top) ** 2)))


def step_ratio(method: str, eps: float, to: str = "richardson") -> float:
    """The default step of ``method`` over that of ``to``, at the precision whose
    epsilon is ``eps``.

    >>> step_ratio("central", float(onp.finfo(float).eps)) == 2.0**-9
    True
    """
    size = {onp.finfo(t).eps: onp.dtype(t).itemsize for t in (onp.float16, onp.float32, float)}
    nbytes = size.get(eps, 8)
    return _BASE_STEP[method][nbytes] / _BASE_STEP[to][nbytes]


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}; got {method!r}.")


def coordinate_spacing(x0: onp.ndarray, specs: Sequence[Leaf]) -> onp.ndarray:
    """The ulp of each real coordinate in its own leaf's precision."""
    out = []
    start = 0
    for s in specs:
        seg = onp.abs(x0[start : start + s.real_size]).astype(s.real_dtype)
        with onp.errstate(all="ignore"):
            sp = onp.spacing(onp.where(onp.isfinite(seg), seg, 1)).astype(float)
        out.append(sp)
        start += s.real_size
    return onp.concatenate(out) if out else onp.zeros(0)


def coordinate_eps(specs: Sequence[Leaf]) -> onp.ndarray:
    """The eps of each real coordinate's own precision."""
    parts = [onp.full(s.real_size, s.eps) for s in specs]
    return onp.concatenate(parts) if parts else onp.zeros(0)


def leaf_steps(step: Any, value: Any, spec: Leaf, method: str, name: str = "input") -> onp.ndarray:
    """Steps per real coordinate of one leaf (Re and Im halves share a step)."""
    if step is None:
        s = default_step(
            spec.to_real(value)[: spec.size].reshape(spec.shape)
            if not spec.complex
            else onp.abs(onp.asarray(value)),
            method,
        )
    else:
        try:
            s = onp.asarray(step, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(
                f"step must be a positive float or an array shaped like {name} "
                f"{spec.shape}; got {step!r:.40}."
            ) from None
        if s.ndim and s.shape != spec.shape:
            raise ValueError(
                f"step must be a scalar or an array shaped like the input {name} "
                f"{spec.shape}; got shape {s.shape}."
            )
        s = onp.broadcast_to(s, spec.shape)
        if not onp.all(onp.isfinite(s)) or onp.any(s <= 0):
            raise ValueError(f"step must be positive and finite; got {step!r}.")
    flat = onp.ravel(s).astype(float)
    return onp.concatenate([flat, flat]) if spec.complex else flat


def typical_steps(call: Call, method: str, to_host: Callable = onp.asarray) -> onp.ndarray:
    """Per coordinate, the default step of a typical element of its array: how
    far a step made small by a small element may grow back (``to_host`` copies
    a leaf to numpy: a device array never converts implicitly)."""
    out = []
    for s, value in zip(call.specs, call.values):
        mag = onp.abs(onp.asarray(to_host(value))).astype(float).ravel()
        good = mag[onp.isfinite(mag) & (mag > 0)]
        typical = root_mean_square(good) if good.size else 1.0
        out.append(onp.full(s.real_size, _BASE_STEP[method][s.real_dtype.itemsize] * typical))
    return onp.concatenate(out) if out else onp.zeros(0)


def steps_for(call: Call, step: Any, method: str, to_host: Callable = onp.asarray) -> onp.ndarray:
    """Steps for every differentiated coordinate: ``step`` is None, a scalar,
    an array like a single-array input, or a structure like the input
    (``to_host`` copies a leaf to numpy, as in :func:`typical_steps`)."""
    out = []
    per_leaf = _step_per_leaf(call, step)
    for s, value, st in zip(call.specs, call.values, per_leaf):
        out.append(leaf_steps(st, to_host(value), s, method, s.name))
    return onp.concatenate(out) if out else onp.zeros(0)


def _step_per_leaf(call: Call, step: Any) -> list:
    specs = call.specs
    if step is None or onp.ndim(step) == 0 and not isinstance(step, (list, tuple, dict)):
        return [step] * len(specs)
    if len(specs) == 1:
        return [step]
    leaves, tree = flatten(step)
    if len(call.selected) == 1 and tree == call.selected[0].tree:
        sel = call.selected[0]
        return [st for st, s in zip(leaves, sel.specs) if s is not None]
    raise ValueError(
        f"step must be a positive float, or shaped like the input: the input has "
        f"{len(specs)} arrays ({', '.join(s.name for s in specs)}), step is "
        f"{tree.describe()}. Pass one float, or a structure of steps like the input."
    )
