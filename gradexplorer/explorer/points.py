"""The explorer's point: a slider per real coordinate, the point they describe, and f
along its one explored input."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as W
import numpy as onp

__all__ = ["point_sliders", "point_from", "precision_for", "along"]


def point_sliders(call, to_numpy: Callable = onp.asarray) -> list:
    """One slider per real coordinate of the selected inputs' leaves (Re and Im
    for complex), labelled by path: ``params[0][1][2]``, ``Re z[0]`` (``to_numpy``
    copies a leaf to the host: a GPU tensor never converts implicitly)."""
    sliders = []
    for spec, value in zip(call.specs, call.values):
        real = spec.to_real(to_numpy(value))
        for k, val in enumerate(real):
            span = 3 * max(abs(float(val)), 1.0)
            sliders.append(
                W.FloatSlider(
                    value=float(val),
                    min=-span,
                    max=span,
                    step=span / 200,
                    description=spec.label(k),
                    continuous_update=False,
                    readout_format=".3g",
                    style={"description_width": "initial"},
                )
            )
    return sliders


def point_from(
    call,
    slider_values: list,
    seed: int,
    scale: float,
    dtype_name: str,
    to_array=None,
    to_numpy: Callable = onp.asarray,
) -> tuple:
    """The point the controls describe: slider values, else a seeded normal draw times
    ``scale`` (seed 0 keeps the starting point, scaled), cast to the chosen dtype.
    ``to_array(a, like=)`` makes the AD system's arrays (torch tensors, jax arrays)
    on the device of the leaf they replace; ``to_numpy`` copies a leaf to the host.

    Returns ``(args, kwargs)`` with the selected leaves replaced, the structure kept.
    """
    real = onp.float32 if dtype_name == "float32" else onp.float64
    values = iter(slider_values)
    rng = onp.random.default_rng(seed)
    leaves = []
    for spec, value in zip(call.specs, call.values):
        r = spec.to_real(to_numpy(value)).astype(float)
        if slider_values:
            r = onp.array([next(values) for _ in range(r.size)])
        elif seed != 0:
            r = scale * rng.standard_normal(r.size)
        else:
            r = scale * r
        dtype = onp.result_type(real, onp.complex64) if spec.complex else real
        new = onp.asarray(spec.from_real(r)).astype(dtype)
        if spec.pytype is not None:
            new = spec.pytype(new)
        elif to_array is not None:
            new = to_array(new, like=value)
        leaves.append(new)
    return call.rebuild_plain(leaves)


def precision_for(dtype_name: str) -> str | None:
    """check_grads' ``precision`` for the explorer's dtype control: float64 is
    check_grads' own default (every float input promoted, those not explored and a
    module's parameters too, and jax in 64-bit mode: one verdict with check_grads);
    float32 is the point as the explorer cast it, checked in its own precision.

    >>> precision_for("float64") is None, precision_for("float32")
    (True, 'native')
    """
    return "native" if dtype_name == "float32" else None


def along(explorer: Any, slot: int) -> Callable:
    """f as a function of its one explored input, the others held at the current point
    (one object per loaded f: the teaching views redraw in place while it is the same)."""
    f = explorer.f

    def along(x):
        args = list(getattr(explorer, "args", explorer.base_args))
        args[slot] = x
        return f(*args)

    along.__name__ = getattr(f, "__name__", "f")
    return along
