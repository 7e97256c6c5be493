"""torch.library custom operators: the ones f calls, and ``torch.library.opcheck`` on each.

A gradient check compares an operator's registered backward with finite
differences; ``opcheck`` checks what a gradient check cannot see: that the
schema tells the truth about mutation and aliasing, that the backward is
registered where autograd looks for it (a kernel registered to the CPU key
runs with autograd recording its insides, right today and silently wrong
under other dispatch), that the fake (meta) kernel gives the real output's
shapes and dtypes, and that the op survives AOTAutograd as torch.compile
uses it. Each op is checked once, on the arguments of its first call in f.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from ...core.tree import map_leaves

__all__ = ["OpCall", "custom_op_calls", "opcheck", "TORCH_NAMESPACES", "OPCHECK_TESTS"]

#: Operator namespaces of torch itself: an op outside them is someone's custom op.
TORCH_NAMESPACES = frozenset(
    "aten prim prims _prims quantized _quantized quantized_decomposed rngprims higher_order "
    "inductor debugprims debug_mode_ops profiler mkl mkldnn onednn _c10d_functional "
    "_c10d_functional_autograd c10d c10d_functional _dtensor _inductor_test _native export "
    "flex_lib fsdp onnx onnx_symbolic streams symm_mem _test".split()
)
#: opcheck's tests, in the order it runs them.
OPCHECK_TESTS = (
    "test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic",
)  # fmt: skip


@dataclass(frozen=True)
class OpCall:
    """A custom operator and the arguments of its first call (private copies)."""

    name: str  # "mylib::op"
    op: Any  # the OpOverload
    args: tuple
    kwargs: dict


def _is_custom(func: Any) -> bool:
    return isinstance(func, torch._ops.OpOverload) and func.namespace not in TORCH_NAMESPACES


def _copy(x: Any) -> Any:
    """A private copy: a tensor detached, cloned, requiring grad as it did."""
    if not isinstance(x, torch.Tensor):
        return x
    y = x.detach().clone()
    return (
        y.requires_grad_(True)
        if x.requires_grad and (y.is_floating_point() or y.is_complex())
        else y
    )


class _Seen(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls: dict[str, OpCall] = {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _is_custom(func) and func.name() not in self.calls:
            copied = OpCall(
                func.name(),
                func,
                tuple(map_leaves(_copy, a) for a in args),
                {k: map_leaves(_copy, v) for k, v in kwargs.items()},
            )
            self.calls[func.name()] = copied
        return func(*args, **kwargs)


def custom_op_calls(call: Any) -> list[OpCall]:
    """The custom operators f calls (f itself, when it is one) at a bound call's
    point (a :class:`~gradexplorer.core.calls.Call`), in the order first called,
    each with private copies of its arguments; the differentiated leaves require
    grad, so the arguments that depend on them do too (opcheck tests autograd
    only on those).

    >>> from gradexplorer.core.calls import bind_call
    >>> from gradexplorer.backends.torch.arrays import float_kind
    >>> custom_op_calls(bind_call(torch.sin, (torch.ones(2),), {}, 0, kind_of=float_kind))
    []
    """
    leaves = [
        v.detach().clone().requires_grad_(v.is_floating_point() or v.is_complex())
        if isinstance(v, torch.Tensor)
        else v
        for v in call.values
    ]
    args, kwargs = call.rebuild(leaves)
    seen = _Seen()
    with torch.enable_grad(), seen:
        call.f(*args, **kwargs)
    return list(seen.calls.values())


def _status(value: Any) -> tuple[str, str]:
    """opcheck's answer for one test as (status, message): SUCCESS, SKIP, or the error."""
    if isinstance(value, str):
        return value, ""
    text = str(value).strip().split("\n\n")[0].strip()
    return "FAILURE", f"{type(value).__name__}: {text[:600]}"


def opcheck(call: OpCall) -> tuple[tuple[str, str, str], ...]:
    """``torch.library.opcheck`` on one call, every test run (none raises):
    ``(test, status, message)`` with status SUCCESS, SKIP or FAILURE."""
    import warnings

    with warnings.catch_warnings():
        # opcheck backpropagates through an op with no autograd kernel on purpose
        warnings.simplefilter("ignore", UserWarning)
        try:
            answers = torch.library.opcheck(call.op, call.args, call.kwargs, raise_exception=False)
        except Exception as exc:  # opcheck itself could not run the op
            return (("opcheck", *_status(exc)),)
    return tuple((test, *_status(answers[test])) for test in OPCHECK_TESTS if test in answers)
