"""Rules that round: a cast's backward rounds its argument (the cotangent) to a
narrow format, or an intermediate on the way; told from rules that are nonlinear
(``abs(g)``, ``g·(1 + c·max|g|/|g|)``) or adaptive (a solver), which disagree with
themselves at random seeds too."""

from __future__ import annotations

import numpy as onp

from ..fd.formats import FORMATS, Format
from .rules import LINEARITY_ULPS, NARROW_SCATTER_ULPS

__all__ = ["argument_rounding", "intermediate_rounding", "same_bits"]


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
            if f.eps > float(onp.max(eps)) and same_bits(rule(f.round(u0).astype(u0.dtype)), r0)
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
    rule, probes: tuple, eps, shown: onp.ndarray | None = None
) -> Format | None:
    """The narrow format a float64 rule rounds an intermediate to on the way (the
    backward of ``h(x).float().double()`` rounds the cotangent it passes on), told by
    where it disagrees with itself. Such a rule

    - scales exactly with its argument, ``rule(2·u) == 2·rule(u)`` bit for bit, as
      every rounding to a binary format commutes with doubling (a solver with an
      absolute tolerance does not);
    - is piecewise constant along its rounded paths: scaled by ``1 + s``, s ~ eps/4096
      of the format, it moves by s times its exact paths alone, so ``R = rule(u) -
      (rule((1 + s)·u) - rule(u)) / s`` is what its rounded paths carry at u. A rule
      that is smooth and scales exactly (a nonlinear one, ``g·(1 + c·max|g|/|g|)``)
      moves by s times all of itself (Euler's theorem), and leaves R at 0.

    Its disagreement with itself (``|rule(a·u + b·v) - a·rule(u) - b·rule(v)|``) is
    then the format's rounding of R, not of the whole rule, whose float64 paths (a
    residual beside the cast: ``x + exp(f16(tanh(x @ W)))``) can dilute it a
    thousandfold. The format: the finest whose eps is within 1/64 to
    :data:`NARROW_SCATTER_ULPS` times that gap over |R| (median over the coordinates
    that show the gap, ``shown``; default all); None where none is, or the rule does
    not scale exactly.

    >>> rule = lambda g: g + 3.0 * onp.asarray(0.001 * g, onp.float32).astype(float)
    >>> u = onp.array([0.3, -1.7, 0.9])
    >>> intermediate_rounding(rule, ((u, rule(u)),), 2.0**-52).name
    'float32'
    >>> smooth = lambda g: g * (1 + 1e-7 * onp.abs(g).max() / onp.linalg.norm(g))
    >>> intermediate_rounding(smooth, ((u, smooth(u)),), 2.0**-52) is None
    True
    """
    u0, r0 = (onp.asarray(a) for a in probes[0])
    if not same_bits(rule(2.0 * u0), 2.0 * r0):
        return None
    gen = onp.random.default_rng(u0.size + 2)
    v0 = (-onp.sign(u0) * onp.abs(gen.standard_normal(u0.shape))).astype(u0.dtype)
    a, b = 0.75, -1.25  # exact in binary: the combination adds no rounding of its own
    gap = onp.abs(onp.asarray(rule(a * u0 + b * v0)) - (a * r0 + b * onp.asarray(rule(v0))))
    mask = (gap > 0) if shown is None else (onp.asarray(shown, bool) & (gap > 0))
    for fmt in sorted(FORMATS, key=lambda f: f.eps):
        if not fmt.eps > float(onp.max(eps)):
            continue
        # (well above u's own rounding, for a float32 u: the factor it takes is s then)
        s = max(fmt.eps / 4096, float(onp.sqrt(onp.finfo(u0.dtype).eps * fmt.eps)))
        with onp.errstate(all="ignore"):
            rounded = r0 - (onp.asarray(rule((1 + s) * u0)) - r0) / s
            share = gap / onp.abs(rounded)
        share = share[mask & onp.isfinite(share)]
        if share.size and fmt.eps / 64 <= float(onp.median(share)) <= NARROW_SCATTER_ULPS * fmt.eps:
            return fmt
    return None


def same_bits(a, b) -> bool:
    """Equal bit for bit where finite, NaN where NaN, and of one shape.

    >>> same_bits([1.0, onp.nan], [1.0, onp.nan]), same_bits([1.0], [1.0 + 2**-52])
    (True, False)
    """
    a, b = onp.asarray(a), onp.asarray(b)
    return a.shape == b.shape and bool(onp.all((a == b) | (onp.isnan(a) & onp.isnan(b))))
