"""Reverse and forward mode through torch's autograd, for the checkers.

A :class:`VJPTrace` runs f once and answers any number of cotangents from
the same graph. Forward mode uses ``torch.autograd.forward_ad``; where an
operation has no forward rule (a custom ``Function`` without ``jvp``, an op
torch has no forward formula for), the tangent comes from differentiating
the backward pass instead (the VJP is linear in its cotangent, so J·t is the
gradient of ``u -> <VJP(u), t>``), and the operation is named.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.autograd.forward_ad as fwad
from torch.overrides import TorchFunctionMode

__all__ = ["VJPTrace", "trace_vjp", "trace_jvp", "underivable", "not_differentiable"]


def _has_tangent(x: torch.Tensor) -> bool:
    return fwad.unpack_dual(x).tangent is not None


def _leaf_for(x: torch.Tensor) -> torch.Tensor:
    """x itself when an outer trace already follows it (second derivatives),
    a copy keeping its forward-mode tangent (forward over reverse), else a
    fresh leaf that requires grad."""
    if x.requires_grad:
        return x
    if _has_tangent(x):
        return x.clone().requires_grad_(True)
    return x.detach().requires_grad_(True)


class VJPTrace:
    """A recorded forward pass: its value and a reusable backward pass."""

    def __init__(self, F: Callable, leaves: Sequence):
        given = [torch.as_tensor(x) for x in leaves]
        self.leaves = [_leaf_for(x) for x in given]
        # differentiate the backward pass itself when an outer trace (reverse or
        # forward mode) follows the leaves
        self.nested = any(x is y or _has_tangent(y) for x, y in zip(self.leaves, given))
        with torch.enable_grad():
            self.value = F(*self.leaves)

    def backward(self, g: Any) -> list:
        """Input cotangents (one per leaf) for output cotangent g; zeros where
        the output does not depend on a leaf."""
        zeros = [torch.zeros_like(x) for x in self.leaves]
        if not isinstance(self.value, torch.Tensor) or not self.value.requires_grad:
            return zeros
        g = torch.as_tensor(g).to(device=self.value.device, dtype=self.value.dtype)
        create = self.nested or g.requires_grad
        grads = torch.autograd.grad(
            self.value,
            self.leaves,
            grad_outputs=g,
            retain_graph=True,
            create_graph=create,
            allow_unused=True,
        )
        if create and g.requires_grad and any(underivable(d) for d in grads):
            raise not_differentiable(self.value)
        return [z if d is None else d for z, d in zip(zeros, grads)]

    @property
    def connected(self) -> tuple[bool, ...]:
        """Whether the output depends on each leaf (a walk of the graph)."""
        if not isinstance(self.value, torch.Tensor) or self.value.grad_fn is None:
            return tuple(False for _ in self.leaves)
        seen, stack = set(), [self.value.grad_fn]
        variables = set()
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            var = getattr(node, "variable", None)
            if var is not None:
                variables.add(id(var))
            stack.extend(n for n, _ in node.next_functions)
        return tuple(
            (x.grad_fn in seen) if x.grad_fn is not None else id(x) in variables
            for x in self.leaves
        )


def underivable(d: torch.Tensor | None) -> bool:
    """A cotangent whose own derivative torch cannot give: computed without a
    graph, or behind a ``once_differentiable`` backward (torch's Error node,
    which ``allow_unused`` would otherwise read as a silent zero)."""
    if d is None:
        return False
    if not d.requires_grad:
        return True
    seen, stack = set(), [d.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if node.name() == "torch::autograd::Error":
            return True
        stack.extend(n for n, _ in node.next_functions)
    return False


def not_differentiable(value: torch.Tensor) -> NotImplementedError:
    """A backward pass that cannot be differentiated (``once_differentiable``, or
    one computed under ``no_grad``): name the custom Functions in the graph."""
    names, seen, stack = [], set(), [value.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "_forward_cls"):
            names.append(node._forward_cls.__name__)
        stack.extend(n for n, _ in node.next_functions)
    who = ", ".join(dict.fromkeys(names)) or "an operation"
    exc = NotImplementedError(
        f"the backward pass of {who} cannot be differentiated (it is once_differentiable "
        "or runs without building a graph), so its second derivatives are unknown"
    )
    exc.add_note(f"(raised by the VJP of {who})")
    return exc


def trace_vjp(F: Callable, leaves: Sequence) -> VJPTrace:
    return VJPTrace(F, leaves)


_NO_FORWARD = re.compile(r"(?:forward AD|forward mode AD|jvp function)", re.IGNORECASE)
_OP_NAME = re.compile(r"forward AD with (\S+) that does not support it")


def _missing_forward_rule(exc: BaseException) -> bool:
    if isinstance(exc, MissingForwardRule):
        return True
    return isinstance(exc, (RuntimeError, NotImplementedError)) and bool(
        _NO_FORWARD.search(str(exc))
    )


def _ops_without_forward(exc: BaseException) -> list[str]:
    from .recording import functions_without_jvp

    if isinstance(exc, MissingForwardRule):
        return [str(exc).split(": no forward-mode rule")[0]]
    found = _OP_NAME.search(str(exc))
    if found:
        return [found.group(1).rstrip(".")]
    return functions_without_jvp() or ["an operation"]


def _function_applied(F: Callable) -> list[str]:
    """The Function whose ``apply`` f is (``check_grads(MyFunction.apply, x)``, as
    torch's docs call gradcheck): bound before any watch began, it is not seen
    applying, but it is the operation."""
    f = getattr(getattr(F, "call", None), "f", None)
    owner = getattr(f, "__self__", None)
    if isinstance(owner, type) and issubclass(owner, torch.autograd.Function):
        return [owner.__name__]
    return []


class MissingForwardRule(RuntimeError):
    """A custom op gave no tangent where its input had one (torch says nothing)."""


class _TangentWatch(TorchFunctionMode):
    """Notes the custom ops (``torch.library``) whose floating outputs come back
    without a tangent although an input has one: torch silently drops the
    tangent of an op that has no forward-mode rule."""

    def __init__(self):
        super().__init__()
        self.missing: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if isinstance(func, torch._ops.OpOverload) and func.namespace != "aten":
            ins = [a for a in args if isinstance(a, torch.Tensor)]
            outs = out if isinstance(out, (tuple, list)) else (out,)
            if any(_has_tangent(a) for a in ins) and any(
                isinstance(o, torch.Tensor) and o.is_floating_point() and not _has_tangent(o)
                for o in outs
            ):
                name = f"{func.namespace}::{func._opname}"
                if name not in self.missing:
                    self.missing.append(name)
        return out


def _forward(F, leaves, tangents):
    with fwad.dual_level():
        duals = [
            fwad.make_dual(
                torch.as_tensor(x).detach(), torch.as_tensor(t).to(device=x.device, dtype=x.dtype)
            )
            for x, t in zip(leaves, tangents)
        ]
        with _TangentWatch() as watch:
            out = F(*duals)
        primal, tangent = fwad.unpack_dual(out)
        value = primal.detach().clone()
        tangent = torch.zeros_like(value) if tangent is None else tangent.detach().clone()
    if watch.missing:
        raise MissingForwardRule(
            f"{', '.join(watch.missing)}: no forward-mode rule (torch returned no tangent)"
        )
    return value, tangent


def _via_backward(F, leaves, tangents):
    """J·t as the derivative of <VJP(u), t> with respect to u."""
    xs = [torch.as_tensor(x).detach().requires_grad_(True) for x in leaves]
    with torch.enable_grad():
        y = F(*xs)
        if not y.requires_grad:
            return y.detach(), torch.zeros_like(y)
        u = torch.zeros_like(y, requires_grad=True)
        grads = torch.autograd.grad(y, xs, u, create_graph=True, allow_unused=True)
        _check_followed(y, xs, grads)
        pairing = sum(
            (g * torch.as_tensor(t).to(device=g.device, dtype=g.dtype)).sum()
            for g, t in zip(grads, tangents)
            if g is not None
        )
        if not isinstance(pairing, torch.Tensor) or not pairing.requires_grad:
            return y.detach(), torch.zeros_like(y)
        probe, back = _probe_backward(y, xs)
        (jv,) = torch.autograd.grad(pairing, u)
    _check_pairs(probe, jv, back, tangents)
    return y.detach(), jv.detach()


def _probe_backward(y: torch.Tensor, xs: list) -> tuple[torch.Tensor, tuple]:
    """A fixed random cotangent and the backward pass's answer to it."""
    gen = torch.Generator(device=y.device).manual_seed(1)
    probe = torch.randn(y.shape, generator=gen, device=y.device, dtype=y.dtype)
    back = torch.autograd.grad(y, xs, probe, retain_graph=True, allow_unused=True)
    return probe, back


def _check_pairs(probe: torch.Tensor, jv: torch.Tensor, back: Sequence, tangents) -> None:
    """Raise unless the derived tangent pairs with the backward pass itself,
    <u, J t> = <VJP(u), t> at a random u. Where part of the backward runs
    outside autograd (a kernel's gradient added to an ordinary one), that part
    is missing from J t, and the pairing shows it."""
    lhs = (probe * jv).sum()
    terms = [
        (g.detach(), torch.as_tensor(t).to(device=g.device, dtype=g.dtype))
        for g, t in zip(back, tangents)
        if g is not None
    ]
    rhs = sum((g * t).sum() for g, t in terms)
    scale = (probe.abs() * jv.abs()).sum() + sum((g.abs() * t.abs()).sum() for g, t in terms)
    eps = torch.finfo(jv.dtype).eps
    if not bool(torch.abs(lhs - rhs) <= 1024 * eps * scale + torch.finfo(jv.dtype).tiny):
        # said in the first 120 characters: the note quotes no more
        raise RuntimeError(
            "part of the backward runs outside torch's autograd (a kernel, numpy), or is not "
            "linear in g: <u, Jt> != <VJP(u), t>"
        )


def _check_followed(y: torch.Tensor, xs: list, grads: Sequence) -> None:
    """Raise where autograd could not follow the backward pass (a Triton or CUDA
    kernel writing its gradient into a fresh tensor): such a gradient does not
    depend on the cotangent as far as autograd knows, and differentiating it
    would give a tangent of zero. A gradient that is zero for any cotangent
    (``round``, ``sign``) is one autograd rightly cannot follow."""
    opaque = [k for k, g in enumerate(grads) if g is not None and not g.requires_grad]
    if not opaque:
        return
    gen = torch.Generator(device=y.device).manual_seed(0)
    probe = torch.randn(y.shape, generator=gen, device=y.device, dtype=y.dtype)
    found = torch.autograd.grad(y, xs, probe, retain_graph=True, allow_unused=True)
    if any(found[k] is not None and bool(torch.any(found[k] != 0)) for k in opaque):
        raise RuntimeError(
            "its backward pass runs outside torch's autograd (a Triton or CUDA kernel, "
            "numpy), so it cannot be differentiated"
        )


def trace_jvp(
    F: Callable, leaves: Sequence, tangents: Sequence, *, fallback: bool = False
) -> tuple[Any, Any, list[str]]:
    """``(F(*leaves), J @ tangents, ops_without_forward_rule)``."""
    from .recording import watching_functions

    try:
        with watching_functions():
            value, tangent = _forward(F, leaves, tangents)
        return value, tangent, []
    except Exception as exc:
        if not _missing_forward_rule(exc):
            raise
        names = _ops_without_forward(exc)
        if names == ["an operation"]:
            names = _function_applied(F) or names
        if not fallback:
            raise NotImplementedError(
                f"forward mode cannot run: {', '.join(names)} has no forward-mode (jvp) rule"
            ) from None
    try:
        value, tangent = _via_backward(F, leaves, tangents)
    except RuntimeError as exc:
        raise NotImplementedError(
            f"{', '.join(names)} has no forward-mode (jvp) rule and its backward pass cannot "
            f"be differentiated to derive one ({str(exc).splitlines()[0][:120]})"
        ) from None
    return value, tangent, names
