"""Guards run before any derivative is checked: f must not change its
arguments, must give the same answer twice, and must return float values.

f is always called on private copies, so the caller's arrays stay untouched
even when f writes into its input.
"""

from __future__ import annotations

import copy
import random
import warnings
from typing import Any

import numpy as onp

from ..errors import InputMutationError, NonFiniteWarning, NotDeterministicError
from .calls import Call
from .outputs import OutputLayout, nonfinite_summary, output_layout
from .tree import flatten

__all__ = ["guarded_call", "reseeded", "keeping_random_state", "register_random_source"]

#: Other global generators ``reseed`` covers: name -> (get_state, set_state, seed),
#: registered by the backends (torch's) when they are loaded.
_RANDOM_SOURCES: dict[str, tuple] = {}


def register_random_source(name: str, get_state, set_state, seed) -> None:
    """Have ``reseed`` re-seed (and restore) another library's global generator."""
    _RANDOM_SOURCES[name] = (get_state, set_state, seed)


def reseeded(seed: int | None) -> None:
    """Re-seed numpy's, Python's (and registered) global random generators (no-op for None)."""
    if seed is not None:
        onp.random.seed(seed)  # noqa: NPY002 - the global generator is the point
        random.seed(seed)
        for _, _, seed_fn in _RANDOM_SOURCES.values():
            seed_fn(seed)


class keeping_random_state:
    """Restore numpy's and Python's global random states on exit (used when
    ``reseed`` re-seeds them for every call of f)."""

    def __init__(self, active: bool = True):
        self.active = active

    def __enter__(self):
        if self.active:
            self._np, self._py = onp.random.get_state(), random.getstate()  # noqa: NPY002 - the global generator is the point
            self._others = {k: get() for k, (get, _, _) in _RANDOM_SOURCES.items()}
        return self

    def __exit__(self, *exc):
        if self.active:
            onp.random.set_state(self._np)  # noqa: NPY002 - the global generator is the point
            random.setstate(self._py)
            for k, state in self._others.items():
                _RANDOM_SOURCES[k][1](state)
        return False


def _copy_call(call: Call) -> tuple[list, dict]:
    """Private copies of f's arguments (arrays copied even where deepcopy fails)."""
    try:
        return copy.deepcopy(list(call.args)), copy.deepcopy(dict(call.kwargs))
    except Exception:  # objects that refuse deepcopy (locks, generators, modules)
        from .tree import map_leaves

        fresh = lambda v: v.copy() if isinstance(v, onp.ndarray) else v  # noqa: E731
        return [map_leaves(fresh, a) for a in call.args], {
            k: map_leaves(fresh, v) for k, v in call.kwargs.items()
        }


def _first_difference(a: Any, b: Any) -> str | None:
    """Where two structures of arrays differ (None when they are equal)."""
    la, ta = flatten(a)
    lb, tb = flatten(b)
    if ta != tb:
        return "its structure changed"
    for k, (x, y) in enumerate(zip(la, lb)):
        if isinstance(x, onp.ndarray) or isinstance(y, onp.ndarray):
            x, y = onp.asarray(x), onp.asarray(y)
            if x.shape != y.shape:
                return f"leaf {k} changed shape from {x.shape} to {y.shape}"
            same = _same(x, y)
            if not same.all():
                i = int(onp.flatnonzero(~same)[0])
                before, after = x.ravel()[i].item(), y.ravel()[i].item()  # numbers, not np reprs
                return f"flat index {i} of leaf {k}: {before!r} then {after!r}"
        elif isinstance(x, (float, complex, int, onp.generic)):
            if not (x == y or (x != x and y != y)):
                return f"leaf {k}: {x!r} then {y!r}"
    return None


def _same(a: onp.ndarray, b: onp.ndarray) -> onp.ndarray:
    a, b = a.ravel(), b.ravel()
    if a.dtype.kind in "fc" and b.dtype.kind in "fc":
        return (a == b) | (onp.isnan(a) & onp.isnan(b))
    return a == b


def guarded_call(
    call: Call, *, reseed: int | None = None, convert: Any = None
) -> tuple[Any, OutputLayout]:
    """Call f twice on private copies; refuse mutation and non-determinism.

    Returns f's output (as numpy: ``convert`` turns an AD system's arrays into
    numpy) and its layout (which refuses outputs with no float value). Warns,
    naming the entries, when the output holds NaN or Inf.
    """
    from .tree import map_leaves

    to_np = (lambda t: map_leaves(convert, t)) if convert is not None else (lambda t: t)
    name = getattr(call.f, "__name__", "f")
    args, kwargs = _copy_call(call)
    before = _copy_call(Call(call.f, args, kwargs, [], False))
    reseeded(reseed)
    y1 = to_np(call.f(*args, **kwargs))
    for k, (a, b) in enumerate(
        zip(args + list(kwargs.values()), before[0] + list(before[1].values()))
    ):
        where = _first_difference(to_np(b), to_np(a))
        if where is not None:
            label = _argument_label(call, k, list(kwargs))
            raise InputMutationError(
                f"{name} changed its argument {label!r} in place ({where}); derivatives of a "
                "function that mutates its input cannot be checked, and your arrays would be "
                "overwritten. Copy inside f (x = x.copy() in numpy, x = x.clone() in torch) "
                "or write it without in-place updates (x[0] = ... becomes np.where / "
                "np.concatenate, torch.where / torch.cat)."
            )
    layout = output_layout(y1, name)
    ys, _ = flatten(y1)
    summary = nonfinite_summary(ys, layout.specs)
    if summary:
        warnings.warn(NonFiniteWarning(f"{name}'s output has {summary}"), stacklevel=3)
    args2, kwargs2 = _copy_call(call)
    reseeded(reseed)
    y2 = to_np(call.f(*args2, **kwargs2))
    where = _first_difference(y1, y2)
    if where is not None:
        raise NotDeterministicError(
            f"{name} is not deterministic: two calls at the same point gave different "
            f"outputs ({where}). Finite differences need the same answer every time. If f "
            "draws random numbers (dropout, a sampled variational objective), pass reseed=0 "
            "to re-seed numpy's global generator before every call, or make the generator "
            "inside f from a fixed seed (np.random.default_rng(0)); a generator created "
            "outside f keeps advancing between calls. (A torch model: model.eval() turns "
            "dropout off; reseed re-seeds torch's generator too.)"
        )
    return y1, layout


def _argument_label(call: Call, k: int, kw_names: list) -> str:
    from .calls import param_label

    if k < len(call.args):
        return param_label(call.f, k)
    return kw_names[k - len(call.args)]
