"""torch's eager autograd for gradexplorer's operators, where ``torch.func`` cannot go.

``torch.func`` refuses an ``autograd.Function`` written the old way (``forward(ctx,
...)`` with no ``setup_context``), one without a ``vmap`` rule under
``jacfwd``, value-dependent shapes under ``vmap``, and more. The same
derivatives then come from ``torch.autograd`` itself: one backward pass per
Jacobian row (the graph recorded once), one ``forward_ad`` pass per column,
double backward for second derivatives. Here too are the words for torch's
errors that a user can fix (:func:`explained`).

>>> import torch
>>> mats = reverse_rows(lambda v: torch.sin(v) * v.sum(), [torch.tensor([0.0, 1.0])])
>>> mats[0].shape
torch.Size([2, 2])
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from ...errors import GradExplorerError, InputMutationError
from .tracing import VJPTrace, not_differentiable, trace_jvp, underivable

__all__ = [
    "reverse_rows", "forward_columns", "hessian_blocks", "hvp_products", "explained",
    "attempt", "unchanged",
]  # fmt: skip

#: functions torch.func could not run: later calls go straight to eager autograd
_EAGER_ONLY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def attempt(f: Callable, with_func: Callable[[], Any], eager: Callable[[], Any]) -> Any:
    """``with_func()`` (torch.func), else ``eager()`` (torch.autograd).

    When torch.func fails and eager autograd succeeds, f is remembered and
    its later calls skip torch.func. When both fail, eager's error is raised
    (it is the one about f itself).
    """
    try:
        known = _EAGER_ONLY.get(f, False)
    except TypeError:
        known = False
    if not known:
        try:
            return with_func()
        except GradExplorerError:
            raise
        except Exception:  # noqa: BLE001 - any refusal of torch.func: eager decides
            pass
    out = eager()
    with contextlib.suppress(TypeError):
        _EAGER_ONLY[f] = True
    return out


def reverse_rows(F: Callable, vs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Jacobians ``(m, n_k)`` of ``F(*vs)`` (a 1-D tensor): one backward pass per row."""
    tr = VJPTrace(F, vs)
    r = tr.value
    m = r.numel()
    rows: list[list[torch.Tensor]] = [[] for _ in vs]
    basis = torch.zeros(m, dtype=r.dtype, device=r.device)
    for i in range(m):
        basis[i] = 1
        for k, g in enumerate(tr.backward(basis.clone())):
            rows[k].append(g.reshape(-1))
        basis[i] = 0
    return [torch.stack(rk) if rk else torch.zeros(0, v.numel(), dtype=r.dtype, device=r.device)
            for rk, v in zip(rows, vs)]  # fmt: skip


def forward_columns(
    F: Callable, vs: Sequence[torch.Tensor], m: int, fallback: bool
) -> list[torch.Tensor]:
    """Jacobians ``(m, n_k)`` of ``F(*vs)``: one forward-mode pass per column
    (``torch.autograd.forward_ad``; with ``fallback`` an operation without a
    forward rule takes its tangent from its backward pass)."""
    mats = []
    zeros = [torch.zeros_like(v) for v in vs]
    for k, v in enumerate(vs):
        cols = []
        basis = torch.zeros(v.numel(), dtype=v.dtype, device=v.device)
        for j in range(v.numel()):
            basis[j] = 1
            tangents = list(zeros)
            tangents[k] = basis.clone()
            _, t, _ = trace_jvp(F, vs, tangents, fallback=fallback)
            cols.append(t.reshape(-1))
            basis[j] = 0
        mats.append(
            torch.stack(cols, dim=1) if cols else torch.zeros(m, 0, dtype=v.dtype, device=v.device)
        )
    return mats


def _grads(out, xs, **kw) -> list[torch.Tensor]:
    got = torch.autograd.grad(out, xs, allow_unused=True, **kw)
    return [torch.zeros_like(x) if g is None else g for g, x in zip(got, xs)]


def _fresh(xs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    return [x.detach().requires_grad_(True) for x in xs]


def hessian_blocks(L: Callable, xs: Sequence[torch.Tensor]) -> list[list[torch.Tensor]]:
    """Blocks ``H[i][j]`` (shaped ``x_i.shape + x_j.shape``) of the Hessian of
    the scalar ``L(*xs)``, by double backward."""
    xs = _fresh(xs)
    with torch.enable_grad():
        s = L(*xs)
        if not s.requires_grad:
            return [[torch.zeros(a.shape + b.shape, dtype=a.dtype, device=a.device) for b in xs]
                    for a in xs]  # fmt: skip
        grads = _gradient_with_graph(s, xs)
        out = []
        for gi, xi in zip(grads, xs):
            flat = torch.zeros(xi.numel(), dtype=xi.dtype, device=xi.device) if gi is None else (
                gi.reshape(-1))  # fmt: skip
            rows: list[list[torch.Tensor]] = [[] for _ in xs]
            for k in range(flat.numel()):
                if flat.requires_grad:
                    second = _grads(flat[k], xs, retain_graph=True)
                else:
                    second = [torch.zeros_like(x) for x in xs]
                for j, g in enumerate(second):
                    rows[j].append(g.detach())
            out.append([
                torch.stack(r).reshape(xi.shape + xj.shape) if r else
                torch.zeros(xi.shape + xj.shape, dtype=xi.dtype, device=xi.device)
                for r, xj in zip(rows, xs)
            ])  # fmt: skip
    return out


def _gradient_with_graph(s: torch.Tensor, xs: Sequence[torch.Tensor]) -> tuple:
    """The gradient of the scalar ``s`` with its own graph. The cotangent requires
    grad, so every gradient a backward pass built with a graph requires grad too; one
    that does not came from a pass run without one (``once_differentiable``,
    ``no_grad``): its second derivatives are unknown, never a silent zero."""
    one = torch.ones_like(s).requires_grad_()
    grads = torch.autograd.grad(s, xs, grad_outputs=one, create_graph=True, allow_unused=True)
    if any(underivable(g) for g in grads):
        raise not_differentiable(s)
    return grads


def hvp_products(L: Callable, xs: Sequence[torch.Tensor], ts: Sequence) -> list[torch.Tensor]:
    """``H v`` by reverse over reverse: the gradient of ``<grad L, v>``."""
    xs = _fresh(xs)
    with torch.enable_grad():
        s = L(*xs)
        if not s.requires_grad:
            return [torch.zeros_like(x).detach() for x in xs]
        grads = _gradient_with_graph(s, xs)
        pairing = sum((g * t).sum() for g, t in zip(grads, ts) if g is not None)
        if not isinstance(pairing, torch.Tensor) or not pairing.requires_grad:
            return [torch.zeros_like(x).detach() for x in xs]
        return [g.detach() for g in _grads(pairing, xs)]


def unchanged(vs: Sequence, versions: Sequence[int], specs: Sequence, what: str) -> None:
    """Raise when f changed one of its inputs in place (its version counter moved)."""
    for v, before, spec in zip(vs, versions, specs):
        try:
            now = v._version
        except (AttributeError, RuntimeError):
            continue
        if now != before:
            raise InputMutationError(_mutation(what, spec.name))


def versions_of(vs: Sequence) -> list[int]:
    out = []
    for v in vs:
        try:
            out.append(v._version)
        except (AttributeError, RuntimeError):
            out.append(-1)
    return out


def _mutation(what: str, name: str = "") -> str:
    who = f"its input {name}" if name else "an input"
    return (
        f"{what}: f changes {who} in place (x.mul_(2), x[0] = ..., x += ...); derivatives "
        "at your point cannot follow it, and your tensors would be overwritten. Write it "
        "out of place (x = x * 2, torch.where), or copy first inside f (x = x.clone())."
    )


@contextlib.contextmanager
def explained(what: str) -> Iterator[None]:
    """torch's errors for things a user can change, said in words."""
    try:
        yield
    except RuntimeError as exc:
        msg = str(exc)
        if "is being used in an in-place operation" in msg:
            raise InputMutationError(_mutation(what)) from None
        if "modified by an inplace operation" in msg:
            raise ValueError(
                f"{what}: f changes a tensor in place after an operation saved it for the "
                f"backward pass ({msg.splitlines()[0][:160]}). Write that step out of place "
                "(y = y * 2 instead of y *= 2; torch.relu instead of relu_)."
            ) from None
        if "numpy() on Tensor that requires grad" in msg:
            raise TypeError(
                f"{what}: f converts a tensor to numpy (.numpy(), np.asarray) while torch "
                "differentiates it; torch can only follow torch code. Write f with torch "
                "operations throughout."
            ) from None
        raise
