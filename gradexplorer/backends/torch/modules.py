"""An ``nn.Module`` checked as a function of its named parameters.

``gx.check_grads(model, x)`` checks every parameter; ``wrt="fc1.weight"``
one, ``wrt="fc1"`` those under a submodule, ``wrt="x"`` (or 0) an input.
The module runs through ``torch.func.functional_call`` on a private copy,
so the user's model is never modified.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from .arrays import copy_module

__all__ = ["module_call"]


def _input_names(module: torch.nn.Module) -> list[inspect.Parameter]:
    try:
        sig = inspect.signature(module.forward)
    except (TypeError, ValueError):
        return []
    return [
        p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD)
        for p in sig.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]


def _select(wrt: Any, names: list[str], inputs: list[str], model: str) -> Any:
    """``wrt`` with submodule prefixes expanded to their parameters."""
    if wrt is None:
        return tuple(names)
    single = isinstance(wrt, str)
    selectors = [wrt] if single else list(wrt) if isinstance(wrt, (list, tuple)) else [wrt]
    if not all(isinstance(s, str) for s in selectors):
        return wrt  # input positions: core.calls resolves (and validates) them
    out: list[str] = []
    for s in selectors:
        if s in names or s in inputs:
            out.append(s)
            continue
        under = [n for n in names if n.startswith(s + ".")]
        if not under:
            raise ValueError(
                f"wrt={s!r} names no parameter or input of {model}: its parameters are "
                f"{names[:12]}{' ...' if len(names) > 12 else ''} and its inputs {inputs}. "
                "Name a parameter (as in model.named_parameters()), a submodule, or an input."
            )
        out.extend(under)
        single = False
    return out[0] if single and len(out) == 1 else tuple(out)


def module_call(module, args, kwargs, wrt, promote: bool, seen: list):
    """``(f, kwargs, wrt, notes)``: the module as ``f(*inputs, **parameters)``."""
    model = type(module).__name__
    twin = copy_module(module, promote)
    params = {n: p.detach() for n, p in twin.named_parameters()}
    if promote and any(p.dtype != q.dtype for p, q in zip(module.parameters(), params.values())):
        dtypes = sorted({str(p.dtype).removeprefix("torch.") for p in module.parameters()})
        seen.append((f"{model}'s parameters", "/".join(dtypes)))
    clash = sorted(set(params) & set(kwargs))
    if clash:
        raise ValueError(
            f"keyword argument(s) {clash} of {model} have the names of its parameters; "
            "rename them or pass them positionally."
        )
    inputs = _input_names(module)
    input_names = [p.name for p in inputs]

    def f(*xs, **kw):
        given = {k: v for k, v in kw.items() if k in params}
        rest = {k: v for k, v in kw.items() if k not in params}
        return torch.func.functional_call(twin, {**params, **given}, xs, rest)

    f.__name__ = model
    f.__qualname__ = model
    f.__signature__ = inspect.Signature(inputs[: len(args)] or None)
    chosen = _select(wrt, list(params), input_names, model)
    notes = []
    if wrt is None:
        notes.append(
            f"{model}: all {len(params)} parameter tensors checked, on a copy; its inputs "
            "are held constant (name one in wrt, e.g. wrt=0, to check it too)."
        )
    return f, {**kwargs, **params}, chosen, notes
