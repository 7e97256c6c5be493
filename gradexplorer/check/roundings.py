"""Rules that round: a cast's backward rounds its argument (the cotangent) to a
narrow format, or an intermediate on the way; told from rules that are nonlinear
(``abs(g)``, ``g·(1 + c·max|g|/|g|)``) or adaptive (a solver), which disagree with
themselves at random seeds too."""

from __future__ import annotations

import numpy as onp

from ..fd.formats import FORMATS, Format
from .rules import LINEARITY_ULPS, NARROW_SCATTER_ULPS

__all__ = ["argument_rounding", "intermediate_rounding", "ROUNDED_SHARE"]


def argument_rounding(rule, probes: tuple, ratio, rel, eps) -> Format | None:
    """The narrow format a rule rounds its argument to, where that is all that makes it
    nonlinear: the backward of a cast (``h(x).half()``) rounds the cotangent to
    float16 and goes on in float64, so ``rule(a·u + b·v)`` differs from ``a·rule(u) +
    b·rule(v)`` by float16's rounding of u, v and their sum. Such a rule gives the
    same value, bit for bit, at u and at u rounded to the format (the coarsest format
    that does is the one), and is linear at arguments every narrow format holds
    exactly (small integers, and their sum with weights 3/4 and -5/4: quarters below
    16), which a rule that misuses its argument (``abs(g)``, ``sign(g)``) is not. None
    where either fails, or the gap is an offset (``rule(0) != 0``).

    >>> rule = lambda g: 1e-9 * onp.asarray(g, onp.float16).astype(float)
    >>> from gradexplorer.check.rules import linearity_gap
    >>> ratio, rel, probes = linearity_gap(rule, 3, 3, onp.random.default_rng(0), float, 2.0**-52)
    >>> argument_rounding(rule, probes, ratio, rel, 2.0**-52).name
    'float16'
    >>> argument_rounding(onp.sign, probes, ratio, rel, 2.0**-52) is None
    True
    """
    shown = (ratio > 1) & onp.isfinite(rel)
    if not shown.any() or not onp.all(onp.isfinite(ratio)):
        return None
    u0, r0 = (onp.asarray(a) for a in probes[0])
    fmt = next(
        (
            f
            for f in sorted(FORMATS, key=lambda f: -f.eps)
            if f.eps > float(onp.max(eps)) and _same(rule(f.round(u0).astype(u0.dtype)), r0)
        ),
        None,
    )
    if fmt is None:
        return None
    gen = onp.random.default_rng(u0.size)
    u = (gen.integers(1, 9, u0.size) * gen.choice([-1.0, 1.0], u0.size)).astype(u0.dtype)
    v = (-onp.sign(u) * gen.integers(1, 9, u0.size)).astype(u0.dtype)
    a, b = 0.75, -1.25
    ru, rv, ruv = rule(u), rule(v), rule(a * u + b * v)
    gap = onp.abs(ruv - (a * ru + b * rv))
    size = onp.abs(a * ru) + onp.abs(b * rv) + onp.abs(ruv)
    return fmt if onp.all(gap <= LINEARITY_ULPS * eps * size) else None


def intermediate_rounding(
    rule, probes: tuple, scatter: float, eps, shown: onp.ndarray | None = None
) -> Format | None:
    """The narrow format whose rounding a rule's self-disagreement ``scatter``
    (relative) is: a float64 rule that rounds an intermediate to float32 on the way
    (the backward of ``h(x).float().double()`` rounds the cotangent it passes on). Such
    a rule

    - scales exactly with its argument, ``rule(2·u) == 2·rule(u)`` bit for bit, as
      every rounding to a binary format commutes with doubling (a solver with an
      absolute tolerance does not);
    - is piecewise constant along its rounded paths at scales far below the format's
      ulp: moved by ``δ`` ~ eps/4096 of u, it changes by ``rule(δ)`` less what those
      paths carry, where a smooth rule (a nonlinear one that also scales exactly,
      ``g·(1 + c·max|g|/|g|)``, or a solver with a relative tolerance) changes by
      ``rule(δ)`` up to its small nonlinearity. Where the coordinates that show the
      gap (``shown``; default all) miss ``rule(δ)`` by :data:`ROUNDED_SHARE` of it
      (median), they pass through a rounding.

    The format: the finest whose eps is within 1/64 to :data:`NARROW_SCATTER_ULPS`
    times the scatter; None where none is, or the rule is not such.

    >>> rule = lambda g: 3.0 * onp.asarray(0.1 * g, onp.float32).astype(float)
    >>> u = onp.array([0.3, -1.7, 0.9])
    >>> intermediate_rounding(rule, ((u, rule(u)),), 1e-7, 2.0**-52).name
    'float32'
    >>> smooth = lambda g: g * (1 + 1e-7 * onp.abs(g).max() / onp.linalg.norm(g))
    >>> intermediate_rounding(smooth, ((u, smooth(u)),), 1e-7, 2.0**-52) is None
    True
    """
    fmt = next(
        (
            f
            for f in sorted(FORMATS, key=lambda f: f.eps)
            if f.eps > float(onp.max(eps)) and f.eps / 64 <= scatter <= NARROW_SCATTER_ULPS * f.eps
        ),
        None,
    )
    if fmt is None:
        return None
    u0, r0 = (onp.asarray(a) for a in probes[0])
    if not _same(rule(2.0 * u0), 2.0 * r0):
        return None
    gen = onp.random.default_rng(u0.size + 2)
    delta = (gen.standard_normal(u0.shape) * onp.abs(u0) * fmt.eps / 4096).astype(u0.dtype)
    moved = onp.asarray(rule(u0 + delta)) - r0
    # rule(δ) itself, at a δ scaled up to u's size and back (exact, as the rule scales
    # exactly): δ's own paths would round to the format's subnormals, or to 0, and match
    # what u + δ carries along the rounded paths (nothing)
    up = 2.0 ** onp.ceil(onp.log2(4096 / fmt.eps))
    along = onp.asarray(rule(delta * up)) / up
    mask = onp.ones(moved.shape, bool) if shown is None else onp.asarray(shown, bool)
    with onp.errstate(all="ignore"):
        floor = 1e-3 * float(onp.max(onp.abs(along), initial=0.0))
        missed = onp.abs(moved - along) / (onp.abs(along) + floor)
    missed = missed[mask & onp.isfinite(missed)]
    return fmt if missed.size and float(onp.median(missed)) >= ROUNDED_SHARE else None


#: The share of ``rule(δ)`` the coordinates that show a rule's gap must miss, moved by
#: a δ far below the format's ulp, for the gap to be a rounding along their paths.
ROUNDED_SHARE = 0.25


def _same(a, b) -> bool:
    """Equal bit for bit where finite, NaN where NaN."""
    a, b = onp.asarray(a), onp.asarray(b)
    return a.shape == b.shape and bool(onp.all((a == b) | (onp.isnan(a) & onp.isnan(b))))
