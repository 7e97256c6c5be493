"""Recording what f does to tensors (for locate), one operation at a time.

A ``TorchFunctionMode`` sees every torch function f calls, from the line that
calls it; a custom ``torch.autograd.Function`` is recorded as one operation
(its forward's own torch calls are not), so a wrong ``backward`` or ``jvp``
is named by its class. Records hold numpy copies of the arguments; each
operation is re-run on new arguments, differentiated alone, through torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as onp
import torch
import torch.autograd.forward_ad as fwad
from torch.autograd.function import Function
from torch.overrides import TorchFunctionMode

from ...core.tree import flatten, map_leaves, unflatten
from ..base import OpRecord, source_site, user_stack
from .arrays import to_numpy

__all__ = [
    "record", "op_vjp", "op_jvp", "op_eval", "op_function", "definition_site", "rule_site",
    "watching_functions", "functions_without_jvp",
]  # fmt: skip

_LIBRARIES = (os.path.dirname(torch.__file__), os.path.dirname(onp.__file__))
_REFLECTED = {"radd": "add", "rsub": "sub", "rmul": "mul", "rtruediv": "div", "rmatmul": "matmul"}
_RENAMED = {"truediv": "div", "getitem": "getitem", "pow": "pow", "neg": "neg"}


def _friendly(func: Any) -> str:
    if isinstance(func, type) and issubclass(func, Function):
        return func.__name__
    if isinstance(func, torch._ops.OpOverload):
        return func.name()
    raw = getattr(func, "__name__", None) or type(func).__name__
    core = raw.strip("_")
    return _REFLECTED.get(core, _RENAMED.get(core, core))


@dataclass(frozen=True)
class TorchOp:
    """A torch function (or custom Function class) as a re-runnable operation:
    numpy arguments become tensors, the output stays torch."""

    func: Any
    #: where the operation ran: numpy arguments become tensors there
    device: str = "cpu"

    @property
    def is_function_class(self) -> bool:
        return isinstance(self.func, type) and issubclass(self.func, Function)

    def tensor(self, x: Any) -> Any:
        """A numpy leaf as a tensor on the operation's device; others as they are."""
        return _tensor(x, self.device)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args = [map_leaves(self.tensor, a) for a in args]
        kwargs = {k: map_leaves(self.tensor, v) for k, v in kwargs.items()}
        if self.is_function_class:
            return self.func.apply(*args, **kwargs)
        return self.func(*args, **kwargs)


def _tensor(x: Any, device: Any = None) -> Any:
    if isinstance(x, (onp.ndarray, onp.generic)) and not isinstance(x, (onp.str_, onp.bytes_)):
        t = torch.from_numpy(onp.array(x, copy=True))
        return t if device is None else t.to(device)
    return x


def _device_of(rec: OpRecord) -> Any:
    return rec.fun.device if isinstance(rec.fun, TorchOp) else None


def _is_float_tensor(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex())


# ---------------------------------------------------------------- custom Functions


class _State:
    recorder: Any = None  # the active _Recorder
    depth = 0  # > 0 inside a recorded custom Function (its forward is one operation)
    watched: list | None = None  # Function classes applied while watching


_ORIGINAL_APPLY = Function.__dict__["apply"]


def _apply(cls, *args, **kwargs):
    if _State.watched is not None:
        _State.watched.append(cls)
    recorder = _State.recorder
    if recorder is None or _State.depth:
        return _ORIGINAL_APPLY.__func__(cls, *args, **kwargs)
    _State.depth += 1
    try:
        out = _ORIGINAL_APPLY.__func__(cls, *args, **kwargs)
    finally:
        _State.depth -= 1
    recorder.note(cls, args, kwargs, out)
    return out


@contextlib.contextmanager
def _patched_apply():
    """Function.apply routed through :func:`_apply` (restored on exit)."""
    if Function.__dict__["apply"] is not _ORIGINAL_APPLY:
        yield  # already patched by an enclosing context
        return
    Function.apply = classmethod(_apply)
    try:
        yield
    finally:
        Function.apply = _ORIGINAL_APPLY


@contextlib.contextmanager
def watching_functions():
    """Remember the custom Function classes applied inside (to name one that
    has no forward-mode rule)."""
    previous = _State.watched
    _State.watched = []
    try:
        with _patched_apply():
            yield
    finally:
        _State.last_watched = list(_State.watched)
        _State.watched = previous


def functions_without_jvp() -> list[str]:
    """Names of the last watched Function classes that do not define ``jvp``."""
    out = []
    for cls in getattr(_State, "last_watched", []):
        if getattr(cls, "jvp", None) is getattr(Function, "jvp", None) and cls.__name__ not in out:
            out.append(cls.__name__)
    return out


# ---------------------------------------------------------------- recording


class _Recorder(TorchFunctionMode):
    def __init__(self, stop):
        super().__init__()
        self.records: list[OpRecord] = []
        self.producers: dict[int, tuple[int, torch.Tensor]] = {}
        self.stop = stop
        self.calls: dict = {}  # the library calls seen (see base.user_stack)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _State.depth:
            return func(*args, **kwargs)
        # what runs inside a torch function (a custom op's own autograd.Function) is its
        # implementation, not one of f's operations
        _State.depth += 1
        try:
            out = func(*args, **kwargs)
        finally:
            _State.depth -= 1
        self.note(func, args, kwargs, out)
        return out

    def note(self, func, args, kwargs, out) -> None:
        _State.depth += 1  # the copies made here are not f's operations
        try:
            self._note(func, args, kwargs, out)
        finally:
            _State.depth -= 1

    def _note(self, func, args, kwargs, out) -> None:
        traced = tuple(
            i
            for i, a in enumerate(args)
            if any(_is_float_tensor(x) and x.requires_grad for x in flatten(a)[0])
        )
        out_leaves = [x for x in flatten(out)[0] if _is_float_tensor(x)]
        # no traced input, or no output gradients flow back through (detach, no_grad)
        if not traced or not any(x.requires_grad for x in out_leaves):
            return
        parents = []
        for i in traced:
            for x in flatten(args[i])[0]:
                if isinstance(x, torch.Tensor) and id(x) in self.producers:
                    k = self.producers[id(x)][0]
                    if k not in parents:
                        parents.append(k)
        index = len(self.records)
        frames, call = user_stack(_LIBRARIES, self.stop, 4, self.calls)
        rec = OpRecord(
            index,
            TorchOp(func, str(out_leaves[0].device)),
            tuple(map_leaves(to_numpy, a) for a in args),
            {k: map_leaves(to_numpy, v) for k, v in kwargs.items()},
            traced,
            tuple(parents),
            map_leaves(to_numpy, out),
            frames,
            _friendly(func),
            call,
            _leaves_traced(args, kwargs, traced),
        )
        self.records.append(rec)
        for x in out_leaves:
            self.producers[id(x)] = (index, x)  # the tensor is kept alive: ids stay unique


def _leaves_traced(args, kwargs, traced) -> dict:
    """Per traced argument whose float tensors are not all traced, and per keyword
    argument holding float tensors: whether each leaf is (``torch.cat([a,
    b.detach()])``, ``linear(x, w, bias=b.detach())``)."""
    out = {}
    named = [(i, args[i]) for i in traced] + list(kwargs.items())
    for key, value in named:
        leaves = flatten(value)[0]
        if not any(_is_float_tensor(x) for x in leaves):
            continue
        flags = tuple(_is_float_tensor(x) and x.requires_grad for x in leaves)
        if isinstance(key, str) or not all(f for f, x in zip(flags, leaves) if _is_float_tensor(x)):
            out[key] = flags
    return out


def record(fun: Callable, leaves: Sequence) -> list[OpRecord]:
    """Run ``fun(*leaves)`` once, recording every torch operation applied to them."""
    xs = [_tensor(x) if not isinstance(x, torch.Tensor) else x for x in leaves]
    xs = [x.detach().clone().requires_grad_(True) if _is_float_tensor(x) else x for x in xs]
    fun = _applied_through_patch(fun)
    recorder = _Recorder(sys._getframe(0))
    previous = _State.recorder
    _State.recorder = recorder
    try:
        with _patched_apply(), torch.enable_grad(), recorder:
            fun(*xs)
    finally:
        _State.recorder = previous
        recorder.calls.clear()  # they hold the library calls' frames: let them go
    return recorder.records


def _applied_through_patch(fun: Callable) -> Callable:
    """fun with ``MyFunction.apply`` as f (a method bound before the recording
    patched ``Function.apply``, as gradcheck's docs call it) applied through
    the patch, so the Function is recorded as f's one operation."""
    f = getattr(fun, "f", fun)
    bound_apply = (
        inspect.ismethod(f)
        and getattr(f, "__func__", None) is _ORIGINAL_APPLY.__func__
        and isinstance(f.__self__, type)
    )
    if not bound_apply:
        return fun
    cls = f.__self__

    def apply(*args, **kwargs):
        return _apply(cls, *args, **kwargs)

    if fun is f:
        return apply
    return dataclasses.replace(fun, f=apply) if dataclasses.is_dataclass(fun) else fun


# ---------------------------------------------------------------- one operation


def _inputs(rec: OpRecord, args: Sequence) -> tuple[list, list]:
    """The operation's arguments as tensors, its traced float leaves fresh leaves."""
    device = _device_of(rec)
    targs = [map_leaves(lambda x: _tensor(x, device), a) for a in args]
    inputs = []
    for a in rec.argnums:
        leaves, tree = flatten(targs[a])
        new = []
        for x in leaves:
            if _is_float_tensor(x):
                x = x.detach().requires_grad_(True)
                inputs.append(x)
            new.append(x)
        targs[a] = unflatten(tree, new)
    return targs, inputs


def op_vjp(rec: OpRecord, u: Any) -> list:
    """Cotangents of the traced arguments for output cotangent u, in autograd's
    convention (the conjugate of torch's for complex values), as numpy."""
    targs, inputs = _inputs(rec, rec.args)
    kwargs = {k: map_leaves(rec.fun.tensor, v) for k, v in rec.kwargs.items()}
    with torch.enable_grad():
        out = rec.fun(*targs, **kwargs)
    outs, grads_out = [], []
    for y, g in zip(flatten(out)[0], flatten(u)[0]):
        if _is_float_tensor(y) and y.requires_grad:
            outs.append(y)
            grads_out.append(torch.as_tensor(onp.conj(onp.asarray(g)), device=y.device).to(y.dtype))
    if not outs:
        grads = [None] * len(inputs)
    else:
        grads = torch.autograd.grad(outs, inputs, grads_out, allow_unused=True)
    it = iter(grads)
    result = []
    for a in rec.argnums:
        leaves, tree = flatten(targs[a])
        cot = []
        for x in leaves:
            if _is_float_tensor(x):
                g = next(it)
                cot.append(
                    onp.zeros(tuple(x.shape), to_numpy(x).dtype)
                    if g is None
                    else onp.conj(to_numpy(g))
                )
            else:
                cot.append(None)
        result.append(unflatten(tree, cot))
    return result


def op_jvp(rec: OpRecord, tangents: Sequence) -> Any:
    """The output tangent for tangents of the traced arguments (forward AD), as numpy."""
    targs = [map_leaves(rec.fun.tensor, a) for a in rec.args]
    kwargs = {k: map_leaves(rec.fun.tensor, v) for k, v in rec.kwargs.items()}
    try:
        with fwad.dual_level():
            for a, t in zip(rec.argnums, tangents):
                leaves, tree = flatten(targs[a])
                tl = flatten(t)[0]
                new = [
                    fwad.make_dual(x, torch.as_tensor(onp.asarray(d), device=x.device).to(x.dtype))
                    if _is_float_tensor(x) and d is not None
                    else x
                    for x, d in zip(leaves, tl)
                ]
                targs[a] = unflatten(tree, new)
            out = rec.fun(*targs, **kwargs)
            tangent_out = map_leaves(lambda y: _tangent_of(y) if _is_float_tensor(y) else y, out)
    except (RuntimeError, NotImplementedError) as exc:
        from .tracing import _missing_forward_rule

        if _missing_forward_rule(exc):
            raise NotImplementedError(f"{rec.name} has no forward-mode (jvp) rule") from None
        raise
    return tangent_out


def _tangent_of(y: torch.Tensor) -> onp.ndarray:
    t = fwad.unpack_dual(y).tangent
    return onp.zeros(tuple(y.shape), to_numpy(y).dtype) if t is None else to_numpy(t)


def op_eval(rec: OpRecord, args: Sequence) -> Any:
    """The operation on new (numpy) arguments, as numpy."""
    with torch.no_grad():
        return map_leaves(to_numpy, rec.fun(*args, **rec.kwargs))


def op_function(rec: OpRecord, slot: int) -> Callable:
    """The operation as a function of its argument ``slot`` alone, on tensors."""

    def local(x):
        args = list(rec.args)
        args[slot] = x
        return rec.fun(*args, **rec.kwargs)

    local.__name__ = rec.name
    return local


def definition_site(rec: OpRecord) -> tuple[str, int] | None:
    """Where a custom Function's ``backward`` is defined (a torch builtin: None)."""
    func = rec.fun.func if isinstance(rec.fun, TorchOp) else rec.fun
    target = getattr(func, "backward", None) if isinstance(func, type) else func
    return source_site(target, _LIBRARIES)


def rule_site(rec: OpRecord, kind: str = "VJP") -> tuple[str, int] | None:
    """Where a custom Function's ``backward`` (VJP) or ``jvp`` (JVP) is defined."""
    func = rec.fun.func if isinstance(rec.fun, TorchOp) else rec.fun
    if not (isinstance(func, type) and issubclass(func, Function)):
        return None
    return source_site(getattr(func, "backward" if kind == "VJP" else "jvp", None), _LIBRARIES)
