"""Why the fast check hands an f to the full check (where that is affordable): what
random projections cannot judge. Each function gives the reason in words, empty where
projections can."""

from __future__ import annotations

from ..fd.formats import FLOAT32
from .exactness import Cause, Exactness
from .problem import Problem

__all__ = ["mixed_precision", "narrow_reading"]


def mixed_precision(exact: Exactness) -> str:
    """Why a rule's precision cannot be judged through projections (empty: it can)."""
    if exact.cause is Cause.ARGUMENT:
        return (
            "the VJP rounds its cotangent, so a projection's random cotangent carries a "
            "rounding the Jacobian's entries (unit cotangents) do not"
        )
    if exact.where is not None:
        return (
            "the VJP computes in a narrow format in some input coordinates and not in "
            "others, which every projection mixes"
        )
    return ""


def narrow_reading(p: Problem) -> str:
    """Why projections cannot judge an f that reads x through float16 or bfloat16
    (empty: they can): one step along a random direction, on that format's grid in
    every coordinate, resolves a projection only to the format's rounding of f (a
    gelu layer's gradient off by 1 at one entry of 640 passed), where the full check's
    columns grow their steps until each entry settles. float32's rounding leaves
    projections sharp enough (a rule off by 1e-3 is found in 55 of 60 checks)."""
    fmt = p.narrow_format
    if fmt is None or fmt.eps <= FLOAT32.eps:
        return ""
    return (
        f"f reads x through {fmt.name}: a projection's one step along a random direction "
        "resolves it only to that format's rounding"
    )
