"""Binding a call of f: which arguments are differentiated, their leaves and labels.

Every operator starts here. :func:`bind_call` resolves ``wrt`` (an int, a
parameter name, or a sequence of them; ``None`` for every float argument; see
:mod:`.signature`), opens nested arguments into leaves (:mod:`.tree`),
validates them and names them. :class:`Call` can then rebuild f's arguments
from new leaf values, so every operator works on flat lists of leaves and
never special-cases containers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as onp

from .signature import (  # noqa: F401 - re-exported: callers bind and resolve from here
    _is_index,
    check_callable,
    has_var_positional,
    keyword_only_names,
    param_label,
    parameter_names,
    resolve_wrt,
)
from .tree import Leaf, TreeDef, flatten, float_kind, leaf_of, path_str, unbox, unflatten


@dataclass
class Selected:
    """One selected argument: its slot in the call, name, structure and leaves."""

    slot: int | str
    name: str
    position: int | str
    tree: TreeDef
    values: list  # every leaf of the argument
    specs: list  # a Leaf per differentiable leaf, None for a constant leaf
    constants: list = field(default_factory=list)  # (label, reason) of constant leaves


@dataclass
class Call:
    """f, its arguments and the differentiated leaves, ready to be rebuilt."""

    f: Callable
    args: list
    kwargs: dict
    selected: list
    single: bool
    skipped: list = field(default_factory=list)  # (label, reason) of unselected args
    #: builds the AD system's own containers around traced leaves (its backend's
    #: ``container``); None keeps Python's
    container: Callable | None = None
    #: scratch space shared by every call rebound from one kept binding (one f,
    #: ``wrt`` and arguments' signature: see ``ad/binding.py``), where a backend
    #: keeps what it derives from the call's structure alone; None: not kept
    memo: dict | None = None

    @property
    def specs(self) -> list[Leaf]:
        """The differentiable leaves, in order (argument by argument)."""
        return [s for sel in self.selected for s in sel.specs if s is not None]

    @property
    def values(self) -> list:
        """The current values of the differentiable leaves."""
        return [v for sel in self.selected for v, s in zip(sel.values, sel.specs) if s is not None]

    @property
    def constants(self) -> list:
        return [c for sel in self.selected for c in sel.constants] + list(self.skipped)

    def rebuild(self, leaves: Sequence) -> tuple[list, dict]:
        """f's arguments with the differentiable leaves replaced by ``leaves``.

        Containers holding traced leaves are the AD system's own (autograd's
        SequenceBox / DictBox), as f would see them under that system itself.
        """
        args, kwargs = list(self.args), dict(self.kwargs)
        it = iter(leaves)
        for sel in self.selected:
            new = [next(it) if s is not None else v for v, s in zip(sel.values, sel.specs)]
            value = unflatten(sel.tree, new, self.container)
            if isinstance(sel.slot, str):
                kwargs[sel.slot] = value
            else:
                args[sel.slot] = value
        return args, kwargs

    def rebuild_plain(self, leaves: Sequence) -> tuple[list, dict]:
        """Like :meth:`rebuild`, with Python's own containers (for plain evaluation)."""
        args, kwargs = list(self.args), dict(self.kwargs)
        it = iter(leaves)
        for sel in self.selected:
            new = [next(it) if s is not None else v for v, s in zip(sel.values, sel.specs)]
            value = unflatten(sel.tree, new)
            if isinstance(sel.slot, str):
                kwargs[sel.slot] = value
            else:
                args[sel.slot] = value
        return args, kwargs

    def __call__(self, *leaves: Any) -> Any:
        """f evaluated with the differentiable leaves replaced."""
        args, kwargs = self.rebuild(leaves)
        return self.f(*args, **kwargs)

    def per_argument(self, per_leaf: Sequence, fill: Callable[[Any], Any] | None = None) -> list:
        """Group results made per differentiable leaf back into each argument's
        structure (constant leaves become ``fill(value)``, default None)."""
        it = iter(per_leaf)
        out = []
        for sel in self.selected:
            leaves = [
                next(it) if s is not None else (fill(v) if fill else None)
                for v, s in zip(sel.values, sel.specs)
            ]
            out.append(unflatten(sel.tree, leaves))
        return out

    def finish(self, per_argument: list) -> Any:
        """One result for a single selector, else a tuple."""
        return per_argument[0] if self.single else tuple(per_argument)


def _positional_of(f: Callable, slot: int | str) -> int | str:
    if isinstance(slot, int):
        return slot
    names = parameter_names(f)
    return names.index(slot) if slot in names else slot


def _leaf_error(label: str, reason: str, value: Any) -> TypeError:
    v = unbox(value)
    if reason.startswith("an integer") or reason == "a bool" or reason == "a bool array":
        fix = (
            f"pass floats instead: {label}.astype(float)"
            if hasattr(v, "astype") and onp.ndim(v)
            else f"pass floats instead: {label}.double()"
            if hasattr(v, "double")
            else f"pass the float {float(v)!r} instead"
            if isinstance(v, (int, bool, onp.integer, onp.bool_))
            else "pass floats instead"
        )
        return TypeError(
            f"input {label} is {reason} ({v!r:.40}); integers and bools have no derivative: {fix}."
        )
    if reason == "a masked array":
        return TypeError(
            f"input {label} is a numpy masked array; derivatives ignore masks silently, so "
            f"they are refused. Pass {label}.filled(value) or {label}.data, and apply the "
            "mask inside f (e.g. with np.where)."
        )
    return TypeError(
        f"input {label} is {reason}; differentiation needs float or complex arrays (or "
        "lists / tuples / dicts of them). Pass it as a keyword argument to hold it constant, "
        "or leave it out of wrt."
    )


_CHECKABLE = ("float16", "float32", "float64", "complex64", "complex128")


def _check_precision(label: str, spec: Leaf) -> None:
    if spec.dtype in ("bfloat16", "complex32"):
        raise TypeError(
            f"input {label} is {spec.dtype}, which finite differences cannot resolve in its "
            "own precision. Leave precision at its default (the check then runs in float64) "
            f"and use gx.check_precision to judge the {spec.dtype} gradient against float64."
        )
    if spec.dtype not in _CHECKABLE:
        raise TypeError(
            f"input {label} has dtype {spec.dtype}; gradexplorer works in float16, float32 "
            "and float64 (and their complex types): its finite differences would silently "
            f"round {spec.dtype} to float64. Pass {label}.astype(np.float64)."
        )


def select_argument(
    f: Callable,
    value: Any,
    slot: int | str,
    *,
    constants_ok: bool,
    name: str | None = None,
    kind_of: Callable[[Any], str] = float_kind,
    any_precision: bool = False,
) -> Selected:
    """Open one argument into leaves, validate and name them."""
    name = name or param_label(f, slot)
    leaves, tree = flatten(value)
    specs, constants = [], []
    for leaf, path in zip(leaves, tree.paths()):
        label = name + path_str(path)
        kind = kind_of(leaf)
        if kind in ("real", "complex"):
            spec = leaf_of(leaf, label, _positional_of(f, slot), path)
            if not any_precision:
                _check_precision(label, spec)
            specs.append(spec)
            continue
        if not constants_ok or not path:
            raise _leaf_error(label, kind, leaf)
        specs.append(None)
        constants.append((label, kind))
    if tree.num_leaves == 0:  # an empty structure: nothing to differentiate, but valid
        constants.append((name, f"an empty structure ({tree.describe()})"))
    elif not any(s is not None for s in specs):
        raise TypeError(
            f"input {name} holds no float or complex leaf ({constants[0][1]} at "
            f"{constants[0][0]}); pass float arrays or leave it out of wrt."
        )
    return Selected(slot, name, _positional_of(f, slot), tree, leaves, specs, constants)


def bind_call(
    f: Callable,
    args: Sequence,
    kwargs: dict,
    wrt: Any,
    *,
    constants_ok: bool = False,
    container: Callable | None = None,
    kind_of: Callable[[Any], str] = float_kind,
    any_precision: bool = False,
) -> Call:
    """Resolve ``wrt``, open the selected arguments into leaves and validate them.

    With ``constants_ok`` (the checkers), a non-float leaf inside a selected
    structure is held constant and listed; ``wrt=None`` then selects every
    positional argument that holds a float leaf and lists the others with the
    reason. Without it (the AD operators) such leaves raise a TypeError that
    says how to fix the call. Keyword arguments are constants unless ``wrt``
    names them. ``kind_of`` classifies a leaf (the AD system's ``float_kind``:
    torch differentiates tensors, not Python numbers). ``any_precision``
    admits bfloat16 leaves (only the low-precision check evaluates them; finite
    differences never do).
    """
    check_callable(f)
    args, kwargs = list(args), dict(kwargs)
    if wrt is None and constants_ok:
        selected, skipped = [], []
        for i, a in enumerate(args):
            try:
                selected.append(
                    select_argument(
                        f, a, i, constants_ok=True, kind_of=kind_of, any_precision=any_precision
                    )
                )
            except TypeError:
                reason = _skip_reason(a, kind_of)
                if reason is None:  # it holds floats but cannot be used as given: say why
                    raise
                skipped.append((param_label(f, i), reason))
        for k in kwargs:
            skipped.append((k, "a keyword argument (held constant unless wrt names it)"))
        if not selected:
            raise TypeError(
                "found no float or complex argument to differentiate among f's positional "
                f"arguments ({', '.join(f'{n}: {r}' for n, r in skipped) or 'none given'}). "
                "Pass float arrays (x.astype(float)), or name the input with wrt=."
            )
        return Call(f, args, kwargs, selected, False, skipped, container)
    slots, single = resolve_wrt(f, wrt, len(args), kwargs)
    selected = []
    for slot in slots:
        value = kwargs[slot] if isinstance(slot, str) else args[slot]
        selected.append(
            select_argument(
                f,
                value,
                slot,
                constants_ok=constants_ok,
                kind_of=kind_of,
                any_precision=any_precision,
            )
        )
    call = Call(f, args, kwargs, selected, single, container=container)
    if not call.specs:
        raise TypeError(
            f"wrt={wrt!r} selects nothing to differentiate: "
            + ", ".join(f"{label} is {reason}" for label, reason in call.constants)
            + ". Select an argument that holds float or complex arrays."
        )
    return call


def _skip_reason(a: Any, kind_of: Callable[[Any], str] = float_kind) -> str | None:
    """Why an argument holds nothing differentiable (None if it does hold floats)."""
    leaves, tree = flatten(a)
    if not leaves:
        return f"an empty structure ({tree.describe()})" if tree.kind != "none" else "None"
    kinds = sorted({kind_of(v) for v in leaves})
    if "real" in kinds or "complex" in kinds:
        return None
    if len(leaves) == 1 and tree.is_leaf:
        return kinds[0]
    return f"a structure of {', '.join(kinds)}"
