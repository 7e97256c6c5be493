"""A function to check, as a map between real vectors, validated and guarded.

``build_problem`` binds the call, refuses functions that mutate their input or
are not deterministic, and realifies complex sides and several inputs into one
real-vector map that the checkers work on.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import autograd.numpy as anp
import numpy as onp

from ._args import (
    Side,
    as_differentiable,
    bind_positional,
    check_callable,
    from_real_vector,
    nonfinite_summary,
    output_sides,
    param_label,
    realify_output,
    resolve_wrt,
    side_of,
    to_real_vector,
)
from .errors import InputMutationError, NonFiniteWarning, NotDeterministicError
from .fd import RealMap, eps_of, input_steps

__all__ = ["Problem", "build_problem", "as_rng"]


def as_rng(rng: Any) -> onp.random.Generator:
    """A numpy Generator from a Generator, a RandomState, an int seed or None."""
    if rng is None or isinstance(rng, (int, onp.integer)):
        return onp.random.default_rng(rng)
    if isinstance(rng, onp.random.Generator):
        return rng
    if isinstance(rng, onp.random.RandomState):
        return onp.random.default_rng(rng.randint(0, 2**31 - 1))
    if rng is onp.random:  # the module itself, as Theano-era code passes it
        return onp.random.default_rng(onp.random.mtrand._rand.randint(0, 2**31 - 1))
    raise TypeError(
        f"rng must be a numpy Generator, a RandomState or an int seed; got {type(rng).__name__}."
    )


@dataclass
class Problem:
    """f as a real-vector map ``F(*vs)`` plus what is needed to label and judge it."""

    F: Callable  # autograd-traceable, real vectors in, real vector out
    vs: list  # the realified point, one vector per selected input
    argnums: tuple
    in_sides: list
    out_sides: list
    eps: float
    name: str
    step: float | None = None  # a fixed FD step for every input (None: per dtype and scale)

    @property
    def x0(self) -> onp.ndarray:
        return onp.concatenate([onp.asarray(v, dtype=self.vs[0].dtype) for v in self.vs])

    def split(self, x: onp.ndarray) -> list:
        out, start = [], 0
        for v in self.vs:
            out.append(x[start : start + v.size])
            start += v.size
        return out

    def realmap(self) -> RealMap:
        sides = [
            Side(s.name, (v.size,), False, str(v.dtype)) for s, v in zip(self.in_sides, self.vs)
        ]
        return RealMap(self.F, self.vs, {}, tuple(range(len(self.vs))), sides)

    @property
    def dtype(self) -> str:
        """The common dtype of the checked inputs (as reports name it)."""
        return str(onp.result_type(*[s.dtype for s in self.in_sides]))

    def steps(self, method: str) -> onp.ndarray:
        """Step per realified coordinate: the fixed ``step``, else the per-dtype default."""
        return onp.concatenate(
            [
                input_steps(self.step, from_real_vector(v, s), s, method)
                for v, s in zip(self.vs, self.in_sides)
            ]
        )


def build_problem(f: Callable, args: tuple, kwargs: dict, wrt: Any) -> Problem:
    """Validate the call, guard against mutation and non-determinism, realify."""
    check_callable(f)
    args, kwargs = bind_positional(f, args, kwargs)
    if wrt is None:
        argnums = tuple(i for i, a in enumerate(args) if _differentiable(a))
        if not argnums:
            raise TypeError(
                "check_grads found no float or complex argument to differentiate; pass "
                "float arrays (x.astype(float)) or select inputs with wrt=."
            )
    else:
        argnums, _ = resolve_wrt(f, wrt, len(args))
    for i in argnums:
        args[i] = as_differentiable(args[i], param_label(f, i))
    y = _guarded_call(f, args, kwargs, argnums)
    in_sides = [side_of(args[i], param_label(f, i)) for i in argnums]
    out_sides = output_sides(y)
    dtypes = [s.dtype for s in in_sides] + [str(onp.asarray(yk).dtype) for yk in _outs(y)]
    eps = max(eps_of(onp.empty(0, d).real.dtype) for d in dtypes)
    vs = [to_real_vector(args[i]) for i in argnums]

    def F(*ws):
        a = list(args)
        for i, w, s in zip(argnums, ws, in_sides):
            a[i] = _unrealify(w, s)
        return realify_output(f(*a, **kwargs), np=anp)

    return Problem(F, vs, argnums, in_sides, out_sides, eps, getattr(f, "__name__", "f"))


def _unrealify(w, s: Side):
    if s.complex:
        n = s.size
        z = w[:n] + 1j * w[n:]
        return anp.reshape(z, s.shape) if s.shape else z[0]
    return anp.reshape(w, s.shape) if s.shape else w[0]


def _differentiable(a: Any) -> bool:
    if isinstance(a, (bool, int, onp.integer, onp.bool_)):
        return False
    try:
        return onp.asarray(a).dtype.kind in "fc"
    except Exception:
        return False


def _outs(y: Any) -> list:
    return list(y) if isinstance(y, (list, tuple)) else [y]


def _guarded_call(f: Callable, args: list, kwargs: dict, argnums) -> Any:
    before = [copy.deepcopy(a) for a in args]
    y1 = f(*args, **kwargs)
    for i, (a, b) in enumerate(zip(args, before)):
        if isinstance(b, onp.ndarray) and not onp.array_equal(a, b, equal_nan=True):
            raise InputMutationError(
                f"f changed its argument {param_label(f, i)!r} in place (first change at "
                f"flat index {int(onp.flatnonzero(~_same(a, b))[0])}); derivatives of a "
                "function that mutates its input cannot be checked. Copy the array inside "
                "f (x = x.copy()) or write it without in-place updates."
            )
    for k, yk in enumerate(_outs(y1)):
        arr = onp.asarray(yk)
        if arr.dtype.kind not in "fc":
            raise TypeError(
                f"f's output{'' if len(_outs(y1)) == 1 else f' {k}'} has dtype {arr.dtype}; "
                "derivatives need float or complex outputs. Return floats from f."
            )
        side = side_of(arr, "y" if len(_outs(y1)) == 1 else f"y{k}")
        summary = nonfinite_summary(arr, side)
        if summary:
            warnings.warn(NonFiniteWarning(f"f's output has {summary}"), stacklevel=4)
    y2 = f(*args, **kwargs)
    for k, (a, b) in enumerate(zip(_outs(y1), _outs(y2))):
        a, b = onp.asarray(a), onp.asarray(b)
        if a.shape != b.shape or not onp.array_equal(a, b, equal_nan=True):
            where = (
                ""
                if a.shape != b.shape
                else (
                    f" (first at flat index {int(onp.flatnonzero(~_same(a, b))[0])}: "
                    f"{a.ravel()[onp.flatnonzero(~_same(a, b))[0]]!r} then "
                    f"{b.ravel()[onp.flatnonzero(~_same(a, b))[0]]!r})"
                )
            )
            raise NotDeterministicError(
                f"f is not deterministic: two calls at the same point gave different "
                f"output{'' if len(_outs(y1)) == 1 else f' {k}'}{where}. Finite differences "
                "need a deterministic f: fix the random seed inside f or pass the noise in."
            )
    return y1


def _same(a, b) -> onp.ndarray:
    a, b = onp.asarray(a).ravel(), onp.asarray(b).ravel()
    return (a == b) | (onp.isnan(a) & onp.isnan(b)) if a.dtype.kind in "fc" else a == b
