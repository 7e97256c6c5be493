"""gradexplorer's operators on torch functions, through torch's own AD.

``gx.grad``, ``gx.jacobian``, ``gx.hessian``, ``gx.hvp``, ``gx.Lop``, ``gx.Rop``
... on a function of tensors (or an ``nn.Module``) come here;
``gradexplorer.ad`` keeps the conventions (``wrt``, structures, layout,
complex blocks, disconnected inputs). Jacobians, Hessians, HVPs and JVPs are
``torch.func`` (``jacrev`` / ``jacfwd`` / ``hessian`` / ``jvp`` of ``grad``);
where torch.func refuses f (an old-style ``autograd.Function``, no vmap rule)
the same derivatives come from eager ``torch.autograd`` (:mod:`.eager`).
Gradients are ``torch.autograd.grad`` on the graph of one forward pass (the
engine under ``torch.func.vjp``, which also says which inputs the output
never reached). Every result is a tensor on the inputs' device, in their dtype.

Complex inputs: torch's gradient of a real ``L(z)`` is ``dL/dRe z + i dL/dIm z``;
gradexplorer returns its conjugate, ``dL/dRe z - i dL/dIm z``, the convention
of autograd and jax, so that the three agree.

>>> import torch
>>> from gradexplorer.core.calls import bind_call
>>> call = bind_call(lambda z: (z.abs() ** 2).sum(), (torch.tensor([1 + 2j]),), {}, 0)
>>> value, grads, connected, finite = value_and_grad(call, lambda y, s, e: y, (), None)
>>> grads[0]                       # torch.autograd.grad gives tensor([2.+4.j])
tensor([2.-4.j])
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as onp
import torch

from ...core.outputs import check_jacobian_size, output_layout
from ...core.tree import flatten, unflatten
from .arrays import np as torch_np
from .eager import (
    attempt,
    explained,
    forward_columns,
    hessian_blocks,
    hvp_products,
    reverse_rows,
    unchanged,
    versions_of,
)
from .tracing import VJPTrace, trace_jvp

__all__ = [
    "value_and_grad", "jacobian", "hessian", "hvp", "jvp", "hstack", "to_numpy_host", "all_finite",
]  # fmt: skip


# ---------------------------------------------------------------- helpers


def _device(call: Any) -> torch.device:
    for v in call.values:
        if isinstance(v, torch.Tensor):
            return v.device
    return torch.device("cpu")


def _outputs(y: Any, device: torch.device) -> tuple[Any, list, Any]:
    """``(layout, leaves, tree)`` of f's output; Python numbers become tensors on
    the inputs' device (constants), numpy arrays are refused."""
    layout = output_layout(y)
    leaves, tree = flatten(y)
    out = []
    for leaf, spec, path in zip(leaves, layout.specs, tree.paths()):
        if isinstance(leaf, (onp.ndarray, onp.generic)):
            name = spec.name if spec is not None else f"y{path}"
            raise TypeError(
                f"f returned a numpy array as {name}; torch differentiates tensors only. "
                "Return torch tensors (compute with torch operations throughout)."
            )
        if isinstance(leaf, (bool, int, float, complex)):
            leaf = torch.as_tensor(leaf, device=device)
        out.append(leaf)
    return layout, out, tree


def _to_real(spec, x: torch.Tensor) -> torch.Tensor:
    if spec.complex:
        return torch.cat([x.real.reshape(-1), x.imag.reshape(-1)])
    return x.reshape(-1)


def _from_real(spec, v: torch.Tensor) -> torch.Tensor:
    """A leaf from its real vector; no operation where there is nothing to do (each
    costs ~10 us under torch.func's transforms)."""
    if spec.complex:
        return spec.from_real(v, np=torch_np)
    return v if tuple(v.shape) == spec.shape else v.reshape(spec.shape)


def _realify(layout, ys: Sequence) -> torch.Tensor:
    parts = []
    for y, spec in zip(ys, layout.specs):
        if spec is None:
            continue
        if spec.complex:
            parts.extend([y.real.reshape(-1), y.imag.reshape(-1)])
        else:
            parts.append(y if y.dim() == 1 else y.reshape(-1))
    return parts[0] if len(parts) == 1 else torch.cat(parts)


def _realified(call: Any, specs: Sequence, device: torch.device, box: dict) -> Callable:
    """f of one real vector per leaf, returning one real vector; the output's
    layout, structure and leaves go to ``box``."""

    def Freal(*vs):
        layout, ys, tree = _outputs(call(*[_from_real(s, v) for s, v in zip(specs, vs)]), device)
        box["layout"], box["tree"], box["ys"] = layout, tree, ys
        return _realify(layout, ys)

    return Freal


def _private(call: Any) -> tuple[list, list]:
    """The differentiated leaves as real vectors on private copies (f cannot
    write through them to the user's tensors) and their version counters."""
    vs = [_to_real(s, x).clone() for s, x in zip(call.specs, call.values)]
    return vs, versions_of(vs)


# ---------------------------------------------------------------- reverse mode


def value_and_grad(
    call: Any, scalarize: Callable, static: Any, extra: Any
) -> tuple[Any, list, tuple[bool, ...], None]:
    """f's value, the gradient of ``scalarize(y, static, extra)`` per
    differentiated leaf (gradexplorer's complex convention), whether that
    scalar depends on each leaf (read from the recorded graph), and None (the
    value's finiteness is asked of :func:`all_finite`)."""
    device = _device(call)
    leaves, tree = flatten(extra)
    extra = unflatten(tree, [torch.as_tensor(v, device=device) for v in leaves])
    box: dict = {}

    def L(*leaves):
        _, ys, tree = _outputs(call(*leaves), device)
        box["ys"], box["tree"] = ys, tree
        return scalarize(unflatten(tree, ys), static, extra)

    with explained(f"gx.{static[0]}" if static else "gx.grad"):
        tr = VJPTrace(L, call.values)
        s = tr.value
        if isinstance(s, torch.Tensor):
            grads = tr.backward(torch.ones_like(s))
        else:
            grads = [torch.zeros_like(x) for x in tr.leaves]
    grads = [g.conj().resolve_conj() if spec.complex else g for g, spec in zip(grads, call.specs)]
    keep = tr.nested
    ys = [y if keep or not isinstance(y, torch.Tensor) else y.detach() for y in box["ys"]]
    return unflatten(box["tree"], ys), grads, tr.connected, None


# ---------------------------------------------------------------- Jacobians


def jacobian(call: Any, mode: str) -> tuple[Any, Any, list, bool]:
    """``(layout, value, mats, finite)``: the real Jacobian of the realified f, one
    2-D ``(layout.real_size, spec.real_size)`` tensor per differentiated leaf, and
    whether f's value is finite (the value itself only when it is not).

    "rev" is ``torch.func.jacrev``, "fwd" ``torch.func.jacfwd``, "auto" picks
    forward mode when the inputs are fewer than the outputs. Without torch.func:
    eager backward passes per row, or forward-mode passes per column ("auto"
    then falls back to rows for an operation with no forward rule).
    """
    specs = call.specs
    vs, versions = _private(call)
    device = vs[0].device
    box: dict = {}
    Freal = _realified(call, specs, device, box)
    n = sum(v.numel() for v in vs)
    known = _OUTPUT_SIZES.get(call)
    if known is None:  # one plain forward pass: the output's size (mode, memory cap)
        with torch.no_grad(), explained("gx.jacobian"):
            r0 = Freal(*vs)
        unchanged(vs, versions, specs, "gx.jacobian")
        known = (r0.numel(), r0.element_size())
        _OUTPUT_SIZES.put(call, known)
    m, itemsize = known
    check_jacobian_size(m, n, itemsize)
    fwd = mode == "fwd" or (mode == "auto" and n < m)
    argnums = tuple(range(len(vs)))

    def with_func():
        make = torch.func.jacfwd if fwd else torch.func.jacrev
        single = len(vs) == 1  # an int argnums: torch.func's own fastest path
        Faux = lambda *a: (lambda r: (r, r))(Freal(*a))  # noqa: E731 - the value as aux
        mats, r = make(Faux, 0 if single else argnums, has_aux=True)(*vs)
        return ([mats] if single else list(mats)), r

    def eager():
        if fwd:
            try:
                mats = forward_columns(Freal, vs, m, fallback=False)
                return mats, _realify(box["layout"], [_plain(y) for y in box["ys"]])
            except NotImplementedError as exc:
                if mode == "fwd":
                    why = str(exc).removeprefix("forward mode cannot run: ")
                    raise NotImplementedError(
                        f"forward mode cannot run: {why} (a custom autograd.Function needs "
                        "a jvp staticmethod). Use mode='rev', or mode='auto', which falls "
                        "back to reverse mode."
                    ) from None
        mats = reverse_rows(Freal, vs)
        return mats, _realify(box["layout"], [_plain(y) for y in box["ys"]])

    with explained("gx.jacobian"):
        mats, r = attempt(call.f, with_func, eager)
    unchanged(vs, versions, specs, "gx.jacobian")
    layout, tree = box["layout"], box["tree"]
    finite = all_finite(r)
    value = None
    if not finite:  # the value, to name its entries
        with torch.no_grad():
            value = unflatten(tree, _outputs(call(*call.values), device)[1])
    return layout, value, [J if J.dim() == 2 else J.reshape(m, -1) for J in mats], finite


def _plain(y: Any) -> Any:
    return y.detach() if isinstance(y, torch.Tensor) else y


class _Sizes:
    """f's output size (and itemsize) per input signature, kept weakly per f: after
    the first call, the memory cap and "auto"'s choice need no forward pass of their own."""

    def __init__(self) -> None:
        self._by_f: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    @staticmethod
    def _key(call: Any) -> Any:
        leaves, _ = flatten((call.args, call.kwargs))
        key = []
        for leaf in leaves:
            if isinstance(leaf, torch.Tensor):
                key.append((tuple(leaf.shape), leaf.dtype, leaf.device))
            else:
                key.append(leaf)
        try:
            hash(tuple(key))
        except TypeError:
            return None
        return tuple(key)

    def get(self, call: Any) -> tuple | None:
        key = self._key(call)
        try:
            return None if key is None else self._by_f.get(call.f, {}).get(key)
        except TypeError:
            return None

    def put(self, call: Any, size: tuple) -> None:
        key = self._key(call)
        if key is None:
            return
        with contextlib.suppress(TypeError):
            self._by_f.setdefault(call.f, {})[key] = size


_OUTPUT_SIZES = _Sizes()


def _scalar_fn(call, scalarize, static, device, slots, base):
    def L(*xs):
        leaves = list(base)
        for i, x in zip(slots, xs):
            leaves[i] = x
        _, ys, tree = _outputs(call(*leaves), device)
        s = scalarize(unflatten(tree, ys), static, None)
        return s if isinstance(s, torch.Tensor) else torch.as_tensor(s, device=device)

    return L


def hessian(call: Any, groups: Sequence, scalarize: Callable, static: Any) -> list:
    """Per group of leaf indices (one selected argument), the blocks ``H[i][j]``
    shaped ``leaf_i.shape + leaf_j.shape`` of the Hessian of the real scalar
    ``scalarize`` makes of f (``torch.func.hessian``: forward over reverse)."""
    device = _device(call)
    out = []
    for group in groups:
        xs = [call.values[i].clone() for i in group]
        versions = versions_of(xs)
        L = _scalar_fn(call, scalarize, static, device, group, call.values)
        argnums = tuple(range(len(xs)))

        def with_func(L=L, xs=xs, argnums=argnums):
            return [list(row) for row in torch.func.hessian(L, argnums=argnums)(*xs)]

        with explained("gx.hessian"):
            blocks = attempt(call.f, with_func, lambda L=L, xs=xs: hessian_blocks(L, xs))
        unchanged(xs, versions, [call.specs[i] for i in group], "gx.hessian")
        out.append(blocks)
    return out


def hvp(call: Any, scalarize: Callable, static: Any, tangents: Sequence) -> list:
    """``H v`` per differentiated leaf, forward over reverse (``torch.func.jvp``
    of ``torch.func.grad``), without forming H; reverse over reverse without
    torch.func."""
    device = _device(call)
    xs = [x.clone() for x in call.values]
    versions = versions_of(xs)
    # private copies of the tangents too: an in-place op on a dual tensor writes both
    ts = [torch.as_tensor(t, device=device).to(x.dtype).clone() for t, x in zip(tangents, xs)]
    slots = tuple(range(len(xs)))
    L = _scalar_fn(call, scalarize, static, device, slots, call.values)

    def with_func():
        def g(*a):
            return torch.func.grad(L, argnums=slots)(*a)

        return list(torch.func.jvp(g, tuple(xs), tuple(ts))[1])

    with explained("gx.hvp"):
        out = attempt(call.f, with_func, lambda: hvp_products(L, xs, ts))
    unchanged(xs, versions, call.specs, "gx.hvp")
    return out


def jvp(call: Any, tangents: Sequence) -> tuple[Any, Any, Any]:
    """``(layout, None, t)``: ``J v`` of the realified f as one real vector
    (``torch.func.jvp``; else ``torch.autograd.forward_ad``, an operation
    without a forward rule taking its tangent from its backward pass)."""
    specs = call.specs
    vs, versions = _private(call)
    device = vs[0].device
    ts = [
        _to_real(s, torch.as_tensor(t, device=device)).to(v.dtype).clone()
        for s, t, v in zip(specs, tangents, vs)
    ]  # copies, as in hvp
    box: dict = {}
    Freal = _realified(call, specs, device, box)

    def with_func():
        return torch.func.jvp(Freal, tuple(vs), tuple(ts))[1]

    with explained("gx.Rop"):
        t = attempt(call.f, with_func, lambda: trace_jvp(Freal, vs, ts, fallback=True)[1])
    unchanged(vs, versions, specs, "gx.Rop")
    return box["layout"], None, t


# ---------------------------------------------------------------- arrays


def hstack(mats: Sequence[torch.Tensor]) -> torch.Tensor:
    """2-D matrices side by side (a real Jacobian's column blocks)."""
    return torch.cat(list(mats), dim=1)


def to_numpy_host(x: torch.Tensor) -> onp.ndarray:
    """A tensor as numpy on the host (for result objects and messages)."""
    from .arrays import to_numpy

    return to_numpy(x)


def all_finite(x: Any) -> bool:
    """Whether a tensor holds no NaN or Inf (True when it cannot be read here,
    inside another transform)."""
    try:
        return bool(torch.isfinite(x).all())
    except RuntimeError:
        return True
