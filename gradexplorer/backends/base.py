"""The seam between gradexplorer and an AD system.

check/, fd/, locate/ and explorer/ never import an AD library: they ask a
backend (:func:`gradexplorer.backends.get_backend`) for what they need. A
backend is a module (or any object) with these members:

``name``
    ``"autograd"``, ``"torch"``, ``"jax"``.
``np``
    The array namespace used *inside* a traced function: ``reshape``,
    ``ravel``, ``concatenate``, ``real``, ``imag`` on the system's arrays.
``owns(x) -> bool``
    Whether x is one of this system's arrays (to recognise it from arguments).
``to_array(a) / to_numpy(x)``
    Plain numpy to the system's array type (to evaluate f) and back.
``vjp(F, leaves) -> trace``
    Run ``F(*leaves)`` once, recording it; ``trace.value``, ``trace.backward(g)``
    (one cotangent per leaf, zeros where disconnected), ``trace.connected``.
    The backward pass must itself be traceable (second derivatives).
``jvp(F, leaves, tangents, fallback=False) -> (value, tangent, ops_without_jvp)``
    Forward mode; with ``fallback`` an operation without a JVP rule takes its
    tangent from its VJP and is named in the third result.
``value(x) / is_traced(x)``
    The plain value under a traced one; whether x is traced.
``container(kind, children, keys, cls)``
    The system's own container holding traced children, or None for Python's.
``record(F, leaves) -> list[OpRecord]``
    The primitives F applies to the leaves, in evaluation order.
``op_vjp(rec, u) / op_jvp(rec, tangents) / op_eval(rec, args)``
    One recorded operation's own VJP, JVP, and evaluation on new arguments.
``definition_site(rec) -> (path, line) | None``
    Where the operation's own code is defined.
``op_function(rec, slot) -> g``
    The operation as a function of its argument ``slot`` alone, on the
    system's own arrays (to check the culprit's Jacobian entry by entry).
``float_kind(x)``
    ``"real"``/``"complex"`` for a leaf this system differentiates, else why not.
``prepare(f, args, kwargs, wrt, precision) -> Prepared``
    The call as it is checked: in float64 unless ``precision="native"``
    (torch and jax promote lower precisions; numpy keeps its own unless
    ``precision="float64"``), a torch ``nn.Module`` as a function of its
    named parameters.
``cast(x, dtype_name)``
    x as the system's array of that dtype (``"bfloat16"`` where it has one).
``session(precision)``
    A context manager around a whole check (jax's 64-bit mode; torch's
    default dtype while f runs).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "Backend", "OpRecord", "Prepared", "user_frames", "promote_arguments", "promotion_note",
    "PACKAGE_DIR",
]  # fmt: skip

#: The precisions a check may run in: None is each system's default.
PRECISIONS = (None, "float64", "native")

#: gradexplorer's own folder: its frames are not the user's code (the gallery's are).
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_GALLERY_DIR = os.path.join(PACKAGE_DIR, "gallery")


@dataclass
class OpRecord:
    """One traced operation: what ran, on what, called from where."""

    index: int
    fun: Any
    args: tuple
    kwargs: dict
    argnums: tuple  # positions of the traced (differentiated) arguments
    parents: tuple  # indices of the records those arguments came from
    value: Any
    frames: tuple  # (path, line) of the user's stack, innermost first
    name: str = ""


@dataclass(frozen=True)
class Prepared:
    """A call ready to bind: f, its arguments and ``wrt`` after promotion."""

    f: Any
    args: tuple
    kwargs: dict
    wrt: Any
    notes: tuple = ()


def promote_arguments(f: Any, args: tuple, kwargs: dict, widen: Any) -> tuple[tuple, dict, list]:
    """Every leaf of f's arguments through ``widen(x) -> (new, old_dtype | None)``;
    returns the new arguments and ``(label, old_dtype)`` of each leaf widened,
    labelled by path (``params['W']``)."""
    from ..core.calls import param_label
    from ..core.tree import flatten, path_str, unflatten

    seen: list = []

    def walk(value: Any, name: str) -> Any:
        leaves, tree = flatten(value)
        out = []
        for leaf, path in zip(leaves, tree.paths()):
            new, old = widen(leaf)
            if old is not None:
                seen.append((name + path_str(path), old))
            out.append(new)
        return unflatten(tree, out)

    named = getattr(f, "forward", f)  # a torch module: its forward's parameter names
    args = tuple(walk(a, param_label(named, i)) for i, a in enumerate(args))
    kwargs = {k: walk(v, k) for k, v in kwargs.items()}
    return args, kwargs, seen


def promotion_note(seen: list) -> str:
    """Say which inputs were promoted to float64, and how to check them as they are."""
    named = ", ".join(f"{label} ({dtype})" for label, dtype in seen[:6])
    more = f" and {len(seen) - 6} more" if len(seen) > 6 else ""
    low = sorted({d for _, d in seen})
    return (
        f"checked in float64: {named}{more} promoted on copies. gx.check_precision judges "
        f"the {'/'.join(low)} gradient itself against float64; precision='native' checks "
        "it with finite differences in its own precision."
    )


@runtime_checkable
class Backend(Protocol):
    name: str
    np: Any

    def owns(self, x: Any) -> bool: ...
    def to_array(self, a: Any) -> Any: ...
    def to_numpy(self, x: Any) -> Any: ...
    def vjp(self, F: Any, leaves: Any) -> Any: ...
    def jvp(self, F: Any, leaves: Any, tangents: Any, fallback: bool = False) -> Any: ...
    def value(self, x: Any) -> Any: ...
    def is_traced(self, x: Any) -> bool: ...
    def container(self, kind: str, children: list, keys: tuple, cls: Any) -> Any: ...
    def record(self, F: Any, leaves: Any) -> list[OpRecord]: ...
    def op_vjp(self, rec: OpRecord, u: Any) -> list: ...
    def op_jvp(self, rec: OpRecord, tangents: Any) -> Any: ...
    def op_eval(self, rec: OpRecord, args: Any) -> Any: ...
    def definition_site(self, rec: OpRecord) -> tuple[str, int] | None: ...
    def op_function(self, rec: OpRecord, slot: int) -> Any: ...
    def float_kind(self, x: Any) -> str: ...
    def prepare(self, f: Any, args: tuple, kwargs: dict, wrt: Any, precision: Any) -> Prepared: ...
    def session(self, precision: Any = None) -> Any: ...
    def cast(self, x: Any, dtype: str) -> Any: ...


def user_frames(library_dirs: tuple[str, ...], stop: Any, skip: int = 2) -> tuple:
    """(path, line) of the frames between an operation's call and the tracer
    (``stop``), innermost first, leaving out the libraries' and our own."""
    out = []
    frame = sys._getframe(skip)
    while frame is not None and frame is not stop:
        path = frame.f_code.co_filename
        internal = (
            path.startswith(library_dirs)
            or (path.startswith(PACKAGE_DIR) and not path.startswith(_GALLERY_DIR))
            or "contextlib" in path
            or path.startswith("<frozen")
        )
        if not internal:
            out.append((path, frame.f_lineno))
        frame = frame.f_back
    return tuple(out)
