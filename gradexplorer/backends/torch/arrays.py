"""torch tensors as the checkers see them: conversions, kinds, float64 promotion.

The checkers work on numpy vectors; f works on tensors. Every crossing goes
through :func:`to_array` and :func:`to_numpy`. By default the check runs in
float64 (as ``torch.autograd.gradcheck`` asks for double): float tensors of
lower precision, and an ``nn.Module``'s parameters, are promoted on private
copies, and tensors f creates itself default to float64 while it runs.
"""

from __future__ import annotations

import contextlib
import copy
from types import SimpleNamespace
from typing import Any

import numpy as onp
import torch

from ...core.tree import float_kind as core_float_kind
from ..base import Prepared, promote_arguments, promotion_note

__all__ = [
    "np", "owns", "to_array", "to_numpy", "cast", "float_kind", "prepare", "session", "dense",
    "nondifferentiable_outputs",
]  # fmt: skip


def _as_tensor(x: Any) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        # a sparse output is checked as its dense values (to_dense keeps the graph)
        return x.to_dense() if x.layout != torch.strided else x
    return torch.as_tensor(onp.asarray(x))


def _cat(parts) -> torch.Tensor:
    return torch.cat([_as_tensor(p).reshape(-1) for p in parts])


#: The array functions the realified map uses while it is traced (and zero
#: tangents, made on their leaf's device).
np = SimpleNamespace(
    reshape=lambda a, shape: torch.reshape(_as_tensor(a), tuple(shape)),
    ravel=lambda a: torch.ravel(_as_tensor(a)),
    concatenate=_cat,
    real=lambda a: torch.real(_as_tensor(a)),
    imag=lambda a: torch.imag(_as_tensor(a)),
    zeros_like=torch.zeros_like,
)


def owns(x: Any) -> bool:
    return isinstance(x, torch.Tensor)


def to_array(a: Any, like: Any = None) -> Any:
    """numpy (arrays and scalars) to a fresh tensor on ``like``'s device (the
    CPU without one); tensors pass through."""
    if isinstance(a, torch.Tensor):
        return a
    if isinstance(a, (onp.ndarray, onp.generic, float, complex)):
        t = torch.from_numpy(onp.array(a, copy=True))
        return t.to(like.device) if isinstance(like, torch.Tensor) else t
    return a


def to_numpy(x: Any) -> Any:
    """A tensor as a fresh numpy array (bfloat16 via float32); others pass through.

    Sparse tensors are densified and a ZeroTensor (torch's lazily-zero gradient)
    materialized: their values are what the checker compares."""
    if not isinstance(x, torch.Tensor):
        return x
    if x.device.type == "meta":
        raise ValueError(
            f"a tensor on the 'meta' device (shape {tuple(x.shape)}, {x.dtype}) holds no "
            "values, and checking derivatives needs them (f is evaluated at nearby points). "
            "Pass tensors with values (on the CPU or a GPU); gx.jacobian, gx.grad and the "
            "other operators run on meta tensors for shapes alone."
        )
    x = dense(x)
    t = x.detach().cpu().resolve_conj().resolve_neg()
    if t.dtype == torch.bfloat16 or (t.dtype == torch.complex32):
        t = t.to(torch.complex64 if t.is_complex() else torch.float32)
    return t.numpy().copy()


def dense(x: torch.Tensor) -> torch.Tensor:
    """x as an ordinary strided tensor (sparse densified, a ZeroTensor materialized)."""
    if x.layout != torch.strided:
        x = x.to_dense()
    if x._is_zerotensor():
        x = torch.zeros(x.shape, dtype=x.dtype, device=x.device)
    return x


def cast(x: Any, dtype: str) -> torch.Tensor:
    """x (a tensor or numpy) as a tensor of the named dtype (``"bfloat16"`` too)."""
    return to_array(x).to(getattr(torch, dtype))


def float_kind(x: Any) -> str:
    """As :func:`gradexplorer.core.tree.float_kind`, for torch: tensors are
    differentiable; Python numbers and numpy arrays are constants to torch."""
    if isinstance(x, torch.Tensor):
        if x.layout != torch.strided:
            raise TypeError(
                f"gradexplorer checks dense tensors; this input is sparse ({x.layout}). Pass "
                "x.to_dense() (if f needs a sparse input, check lambda d: f(d.to_sparse()) at "
                "x.to_dense(): the derivative with respect to every stored and unstored entry)."
            )
        return core_float_kind(x)
    if isinstance(x, (float, complex)) or (isinstance(x, onp.ndarray) and x.dtype.kind in "fc"):
        what = "a Python number" if isinstance(x, (float, complex)) else "a numpy array"
        return f"{what} (torch differentiates tensors: pass torch.tensor(...) to check it)"
    return core_float_kind(x)


_PROMOTE = {
    torch.float16: torch.float64,
    torch.bfloat16: torch.float64,
    torch.float32: torch.float64,
    torch.complex32: torch.complex128,
    torch.complex64: torch.complex128,
}


#: device types whose kernels have no float64 (Apple's Metal)
NO_FLOAT64 = frozenset({"mps"})


def has_float64(device: torch.device) -> bool:
    """Whether tensors on ``device`` can be float64 (CUDA, CPU: yes; mps: no)."""
    return torch.device(device).type not in NO_FLOAT64


def widest(device: torch.device, complex_: bool = False) -> torch.dtype:
    """The most precise float dtype a check can use on ``device``."""
    if has_float64(device):
        return torch.complex128 if complex_ else torch.float64
    return torch.complex64 if complex_ else torch.float32


def _widen(x: Any) -> tuple[Any, str | None]:
    if isinstance(x, torch.Tensor) and x.dtype in _PROMOTE:
        target = widest(x.device, x.is_complex())
        if x.dtype == target:
            return x, None
        new = x.detach().to(target).requires_grad_(x.requires_grad)
        return new, str(x.dtype).removeprefix("torch.")
    return x, None


def _without_float64(args: tuple, kwargs: dict) -> list[str]:
    """The devices among the arguments that have no float64."""
    from ...core.tree import flatten

    leaves = flatten(list(args) + list(kwargs.values()))[0]
    return sorted(
        {str(x.device) for x in leaves if isinstance(x, torch.Tensor) and not has_float64(x.device)}
    )


def prepare(f: Any, args: tuple, kwargs: dict, wrt: Any, precision: str | None) -> Prepared:
    """The call to check: float tensors in float64 unless ``precision="native"``;
    an ``nn.Module`` as a function of its named parameters."""
    from .modules import module_call

    promote = precision in (None, "float64")
    seen: list = []
    if promote:
        args, kwargs, seen = promote_arguments(f, args, kwargs, _widen)
    notes: list[str] = []
    if isinstance(f, torch.nn.Module):
        f, kwargs, wrt, module_notes = module_call(f, args, kwargs, wrt, promote, seen)
        notes.extend(module_notes)
    if seen:
        notes.append(promotion_note(seen))
    low = _without_float64(args, kwargs) if promote else []
    if low:
        notes.append(
            f"checked in float32: {', '.join(low)} has no float64, so finite differences "
            "resolve about half the digits they would in float64; entries float32 cannot "
            "resolve are listed as unresolvable, not wrong. Check on the CPU (x.cpu()) for a "
            "float64 verdict."
        )
    return Prepared(f, args, kwargs, wrt, tuple(notes))


@contextlib.contextmanager
def session(precision: str | None = None):
    """While a check runs: tensors f creates default to float64 when promoting."""
    if precision not in (None, "float64"):
        yield
        return
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def copy_module(module: torch.nn.Module, promote: bool) -> torch.nn.Module:
    """A private copy (in float64 when promoting): the user's module is never touched."""
    twin = copy.deepcopy(module)
    return twin.double() if promote else twin


def nondifferentiable_outputs(call: Any) -> list[tuple[int, str]]:
    """Output leaves torch gives no gradient (by position in the flattened
    output): float tensors that come back with ``requires_grad=False`` while
    the inputs require it — an op's outputs its autograd formula marks
    non-differentiable (``native_layer_norm``'s mean and rstd), or outputs
    that do not depend on the inputs at all. They are not judged."""
    from ...core.tree import flatten

    leaves = [
        v.detach().requires_grad_(True)
        if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex())
        else v
        for v in call.values
    ]
    if not any(isinstance(v, torch.Tensor) and v.requires_grad for v in leaves):
        return []
    with torch.enable_grad():
        y = call(*leaves)
    out, _ = flatten(y)
    return [
        (k, "torch returns it without a gradient (requires_grad=False): marked "
         "non-differentiable by its op, or independent of the inputs")
        for k, leaf in enumerate(out)
        if isinstance(leaf, torch.Tensor)
        and (leaf.is_floating_point() or leaf.is_complex())
        and not leaf.requires_grad
    ]  # fmt: skip
