"""Nested structures as flat lists of leaves, with the path to each leaf.

Real model code passes parameters as nested lists, tuples and dicts of
arrays (``params = [(W1, b1), (W2, b2)]``) and returns tuples. Every operator
goes through this one module: :func:`flatten` turns a structure into its
leaves and a :class:`TreeDef`; :func:`unflatten` rebuilds it; :class:`Leaf`
describes one array leaf (its path, shape, dtype and whether it is complex),
labels its entries (``params[1][0][2, 3]``) and maps it to a real vector and
back. It plays the part of autograd's ``vspace`` and jax's ``tree_util``.

>>> import numpy as np
>>> leaves, tree = flatten({"W": np.ones((2, 2)), "b": [np.zeros(2), 3.0]})
>>> [path_str(p) for p in tree.paths()]
["['W']", "['b'][0]", "['b'][1]"]
>>> unflatten(tree, [1, 2, 3])
{'W': 1, 'b': [2, 3]}
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as onp

__all__ = [
    "TreeDef",
    "Leaf",
    "flatten",
    "unflatten",
    "path_str",
    "is_container",
    "leaf_of",
    "float_kind",
    "unbox",
    "dtype_name",
]

Path = tuple


@dataclass(frozen=True)
class TreeDef:
    """The shape of a nested structure without its leaves.

    ``kind`` is ``"leaf"``, ``"list"``, ``"tuple"``, ``"dict"`` or ``"none"``;
    ``keys`` are a dict's keys in order; ``cls`` rebuilds a namedtuple or a
    dict subclass.
    """

    kind: str
    children: tuple[TreeDef, ...] = ()
    keys: tuple = ()
    cls: Any = None

    def __hash__(self) -> int:
        # taken once: trees key the operators' caches, hashed on every call
        try:
            return self.__dict__["_hash"]
        except KeyError:
            h = hash((self.kind, self.children, self.keys, self.cls))
            object.__setattr__(self, "_hash", h)
            return h

    def __getstate__(self) -> dict:
        # a string's hash differs between processes: never sent with the tree
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    @property
    def is_leaf(self) -> bool:
        return self.kind == "leaf"

    def paths(self) -> list[Path]:
        """The path (tuple of keys) of every leaf, in leaf order."""
        if self.kind == "leaf":
            return [()]
        out = []
        keys = self.keys if self.kind == "dict" else range(len(self.children))
        for key, child in zip(keys, self.children):
            out.extend((key,) + p for p in child.paths())
        return out

    def describe(self) -> str:
        """A short structural description (``[(array, array), {'W': array}]``)."""
        if self.kind == "leaf":
            return "array"
        if self.kind == "none":
            return "None"
        inner = ", ".join(c.describe() for c in self.children)
        if self.kind == "dict":
            inner = ", ".join(f"{k!r}: {c.describe()}" for k, c in zip(self.keys, self.children))
            return "{" + inner + "}"
        return f"[{inner}]" if self.kind == "list" else f"({inner})"


_LEAF = TreeDef("leaf")


def unbox(x: Any) -> Any:
    """The plain value under tracer boxes (autograd's ``_value``), else x itself."""
    while type(x).__name__.endswith("Box") and hasattr(x, "_value"):
        x = x._value
    return x


def is_container(x: Any) -> bool:
    return isinstance(unbox(x), (list, tuple, dict)) or unbox(x) is None


def flatten(x: Any) -> tuple[list, TreeDef]:
    """The leaves of x (depth first, dict keys in insertion order) and its TreeDef.

    Lists, tuples (namedtuples included) and dicts are containers; ``None`` is
    an empty container; everything else (arrays, scalars, strings, objects) is
    a leaf. A tracer box holding a container (autograd's ``SequenceBox``) is
    opened by indexing, so its leaves stay traced.
    """
    leaves: list = []
    tree = _flatten(x, leaves)
    return leaves, tree


#: types whose values are leaves (no container, no tracer box): found once per type
_LEAF_TYPES: set = set()


def _flatten(x: Any, leaves: list) -> TreeDef:
    kind = type(x)  # the common types first: the operators flatten on every call
    if kind in _LEAF_TYPES:
        leaves.append(x)
        return _LEAF
    if kind is dict:
        keys = tuple(x)
        return TreeDef("dict", tuple(_flatten(x[k], leaves) for k in keys), keys)
    if kind is list or kind is tuple:
        children = tuple(_flatten(c, leaves) for c in x)
        return TreeDef("list" if kind is list else "tuple", children)
    if not (kind.__name__.endswith("Box") or issubclass(kind, (dict, list, tuple)) or x is None):
        _LEAF_TYPES.add(kind)
    v = unbox(x)
    if v is None:
        return TreeDef("none")
    if isinstance(v, dict):
        keys = tuple(v.keys())
        children = tuple(_flatten(x[k], leaves) for k in keys)
        cls = type(v) if type(v) is not dict else None
        return TreeDef("dict", children, keys, cls)
    if isinstance(v, (list, tuple)):
        children = tuple(_flatten(x[i], leaves) for i in range(len(v)))
        if isinstance(v, list):
            return TreeDef("list", children)
        cls = type(v) if hasattr(v, "_fields") else None
        return TreeDef("tuple", children, (), cls)
    leaves.append(x)
    return _LEAF


def unflatten(tree: TreeDef, leaves: Sequence, build: Callable | None = None) -> Any:
    """Rebuild the structure described by ``tree`` from ``leaves``.

    ``build(kind, children, keys, cls)`` may make the containers (an AD
    system's own container types); it returns None to fall back to Python's.
    """
    it = iter(leaves)
    out = _unflatten(tree, it, build)
    rest = list(it)
    if rest:
        raise ValueError(f"unflatten got {len(rest)} more leaves than the structure holds.")
    return out


def _unflatten(tree: TreeDef, it, build=None) -> Any:
    if tree.kind == "leaf":
        try:
            return next(it)
        except StopIteration:
            raise ValueError("unflatten got fewer leaves than the structure holds.") from None
    if tree.kind == "none":
        return None
    children = [_unflatten(c, it, build) for c in tree.children]
    if build is not None:
        made = build(tree.kind, children, tree.keys, tree.cls)
        if made is not None:
            return made
    if tree.kind == "dict":
        d = dict(zip(tree.keys, children))
        return tree.cls(d) if tree.cls is not None else d
    if tree.kind == "list":
        return children
    if tree.cls is not None:
        return tree.cls(*children)
    return tuple(children)


def map_leaves(fn: Callable, x: Any) -> Any:
    leaves, tree = flatten(x)
    return unflatten(tree, [fn(leaf) for leaf in leaves])


def path_str(path: Path) -> str:
    """``(1, 0)`` -> ``[1][0]``; ``("W",)`` -> ``['W']``."""
    return "".join(f"[{k!r}]" if isinstance(k, str) else f"[{k}]" for k in path)


def float_kind(x: Any) -> str | None:
    """``"real"``/``"complex"`` for a differentiable leaf, else a reason it is not.

    The reason reads as a phrase: ``"an integer"``, ``"a string"``, ...
    """
    v = unbox(x)
    if isinstance(v, (bool, onp.bool_)):
        return "a bool"
    if isinstance(v, (int, onp.integer)):
        return "an integer"
    if isinstance(v, float):
        return "real"
    if isinstance(v, complex):
        return "complex"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, onp.ma.MaskedArray):
        return "a masked array"
    dtype = getattr(v, "dtype", None)
    if not isinstance(v, (onp.ndarray, onp.generic)):
        foreign = _foreign_kind(v)
        return foreign if foreign is not None else f"a {type(v).__name__} object"
    kind = onp.dtype(dtype).kind
    if kind == "f":
        return "real"
    if kind == "c":
        return "complex"
    if kind in "iu":
        return f"an integer array ({dtype})"
    if kind == "b":
        return "a bool array"
    return f"an array of dtype {dtype}"


def dtype_name(x: Any) -> str:
    """The dtype's name without its library's prefix: ``float32``, ``bfloat16``."""
    v = unbox(x)
    dtype = v.dtype if hasattr(v, "dtype") else onp.asarray(v).dtype
    try:
        return _DTYPE_NAMES[dtype]
    except (KeyError, TypeError):  # (str(dtype) costs ~3 us: asked per leaf per call)
        name = str(dtype).removeprefix("torch.")
        with contextlib.suppress(TypeError):
            _DTYPE_NAMES[dtype] = name
        return name


_DTYPE_NAMES: dict = {}


_FOREIGN_KINDS = {
    "float16": "real", "bfloat16": "real", "float32": "real", "float64": "real",
    "complex32": "complex", "complex64": "complex", "complex128": "complex",
    "bool": "a bool array",
}  # fmt: skip


def _foreign_kind(v: Any) -> str | None:
    """The kind of another array library's array (a torch tensor, a jax array),
    read from its dtype's name, or None for an object that is no array."""
    if not (hasattr(v, "dtype") and hasattr(v, "shape")):
        return None
    name = dtype_name(v)
    if name in _FOREIGN_KINDS:
        return _FOREIGN_KINDS[name]
    if name.startswith(("int", "uint")):
        return f"an integer array ({name})"
    return f"an array of dtype {name}"


#: Machine epsilon of precisions numpy itself does not know.
_NO_NUMPY_EPS = {"bfloat16": 2.0**-7, "complex32": 2.0**-10}

# Precisions a leaf may have: longdouble would be silently rounded to float64.
SUPPORTED_REAL = ("float16", "float32", "float64")


@dataclass(frozen=True)
class Leaf:
    """One differentiable array leaf, as a block of a real vector.

    ``name`` is its label stem (``x``, ``params[1][0]``, ``y0``); ``path`` the
    keys from its argument; ``wrt`` the argument it belongs to (position, or
    name for a keyword argument). A complex leaf occupies ``2·size`` real
    coordinates: ``[Re x.ravel(); Im x.ravel()]``.
    """

    name: str
    shape: tuple[int, ...]
    complex: bool
    dtype: str = "float64"
    wrt: Any = 0
    path: Path = ()
    pytype: Any = None  # float / complex when the leaf was a Python scalar

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # (onp.prod costs ~10 µs: per call, in every operator)

    @property
    def real_size(self) -> int:
        return self.size * (2 if self.complex else 1)

    @property
    def real_dtype(self) -> onp.dtype:
        return onp.empty(0, self.dtype).real.dtype

    @property
    def eps(self) -> float:
        if self.dtype in _NO_NUMPY_EPS:
            return _NO_NUMPY_EPS[self.dtype]
        return float(onp.finfo(self.real_dtype).eps)

    def label(self, k: int) -> str:
        """Label of real coordinate ``k`` (``x[2, 1]``, ``Re z[0]``, ``params['b'][3]``)."""
        part = ""
        if self.complex:
            part = "Re " if k < self.size else "Im "
            k = k % self.size
        if self.shape == ():
            return f"{part}{self.name}"
        idx = onp.unravel_index(k, self.shape)
        return f"{part}{self.name}[{', '.join(str(int(i)) for i in idx)}]"

    def index(self, k: int) -> tuple:
        """Path keys then the multi-index of real coordinate ``k`` (a 1-tuple
        into the realified vector for a complex leaf)."""
        if self.complex:
            return tuple(self.path) + (int(k),)
        return tuple(self.path) + tuple(int(i) for i in onp.unravel_index(k, self.shape))

    # ------------------------------------------------------------ real vectors

    def to_real(self, x: Any) -> onp.ndarray:
        """This leaf's value as a real vector (Re then Im for a complex leaf)."""
        a = onp.asarray(unbox(x))
        if a.dtype.kind == "c":
            return onp.concatenate([a.real.ravel(), a.imag.ravel()])
        return a.ravel()

    def from_real(self, v: Any, np: Any = onp) -> Any:
        """Inverse of :meth:`to_real`; pass ``np=autograd.numpy`` while tracing.

        A Python-scalar leaf comes back as a 0-d value, a numpy scalar as a
        0-d array (both behave like numbers in user code).
        """
        if self.complex:
            n = self.size
            z = v[:n] + 1j * v[n:]
            return np.reshape(z, self.shape) if self.shape else z[0]
        return np.reshape(v, self.shape) if self.shape else v[0]

    def from_real_batch(self, V: onp.ndarray) -> onp.ndarray:
        """Rows of V (each this leaf's real vector) as a batch ``(k,) + shape``."""
        k = V.shape[0]
        if self.complex:
            n = self.size
            Z = (V[:, :n] + 1j * V[:, n:]).astype(self.dtype, copy=False)
            return Z.reshape((k,) + self.shape)
        return V.astype(self.dtype, copy=False).reshape((k,) + self.shape)


def leaf_of(x: Any, name: str, wrt: Any = 0, path: Path = ()) -> Leaf:
    """The :class:`Leaf` describing value x (which must be float or complex)."""
    v = unbox(x)
    pytype = type(v) if isinstance(v, (float, complex)) else None
    if pytype is None and not isinstance(v, (onp.ndarray, onp.generic)) and hasattr(v, "dtype"):
        dtype = dtype_name(v)  # a torch tensor or jax array: read, never converted
        is_complex = dtype.startswith("complex")
        return Leaf(name, tuple(v.shape), is_complex, dtype, wrt, tuple(path))
    dtype = onp.asarray(v).dtype if pytype is None else onp.dtype(pytype)
    return Leaf(name, tuple(onp.shape(v)), dtype.kind == "c", str(dtype), wrt, tuple(path), pytype)
