"""Cotangents for an output: checked against its structure and shapes (any AD system).

>>> import numpy as np
>>> check_dy([np.zeros(2), np.zeros(3)], None)
[None, None]
"""

from __future__ import annotations

from typing import Any

import numpy as onp
from autograd.tracer import getval

from ..core.tree import flatten

__all__ = ["check_dy"]


def check_dy(y_value: Any, dy: Any) -> list:
    """Validate cotangent(s) against f's output structure; returns one array
    (or None = ones) per output leaf."""
    ys, tree = flatten(y_value)
    if dy is None:
        return [None] * len(ys)
    dys, dtree = flatten(dy)
    if dtree != tree and not (tree.is_leaf and dtree.is_leaf):
        raise ValueError(
            f"dy must be shaped like f's output: f returned {tree.describe()} "
            f"({len(ys)} array(s)), dy is {dtree.describe()} ({len(dys)} array(s)). Pass "
            "one cotangent per output, in the same structure."
        )
    for k, (yk, dk) in enumerate(zip(ys, dys)):
        if onp.shape(dk) != onp.shape(getval(yk)):
            where = "" if tree.is_leaf else f"[{k}]"
            raise ValueError(
                f"dy{where} has shape {onp.shape(dk)}, but f's output{where} has shape "
                f"{onp.shape(getval(yk))}; pass a cotangent shaped exactly like the output."
            )
    return dys
