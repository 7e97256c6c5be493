"""f's output: its structure, which leaves are differentiable rows, and size guards."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as onp

from .tree import Leaf, TreeDef, flatten, float_kind, leaf_of, path_str, unbox

#: Largest dense Jacobian (in bytes) an operator builds before refusing.
MEMORY_CAP_BYTES = 2 * 1024**3


@dataclass(frozen=True)
class OutputLayout:
    """The structure of f's output: its differentiable leaves become the rows."""

    tree: TreeDef
    specs: tuple  # a Leaf per differentiable output leaf, None for a constant leaf
    constants: tuple = ()  # (label, reason)

    def without(self, marked: Sequence[tuple[int, str]]) -> OutputLayout:
        """This layout with the leaves at the ``(position, reason)`` pairs made
        constants (not differentiated, listed with the reason)."""
        if not marked:
            return self
        specs, constants = list(self.specs), list(self.constants)
        for k, reason in marked:
            if specs[k] is not None:
                constants.append((specs[k].name, reason))
                specs[k] = None
        if not any(s is not None for s in specs):
            return self  # nothing would be left to check: judge them all after all
        return OutputLayout(self.tree, tuple(specs), tuple(constants))

    @property
    def leaves(self) -> list[Leaf]:
        return [s for s in self.specs if s is not None]

    @property
    def real_size(self) -> int:
        return sum(s.real_size for s in self.leaves)

    def realify(self, y: Any, np: Any = onp) -> Any:
        """The differentiable output leaves as one real vector (traceable with ``np``)."""
        leaves, _ = flatten(y)
        parts = []
        for leaf, spec in zip(leaves, self.specs):
            if spec is None:
                continue
            if spec.complex:
                parts.extend([np.ravel(np.real(leaf)), np.ravel(np.imag(leaf))])
            else:
                parts.append(np.ravel(leaf))
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts)

    def check(self, y: Any, where: str = "") -> None:
        """Raise when y's structure or shapes differ from this layout."""
        leaves, tree = flatten(y)
        if tree != self.tree:
            raise ValueError(
                f"f's output changed structure{where}: first {self.tree.describe()}, then "
                f"{tree.describe()}. Derivatives need an output of fixed structure."
            )
        for leaf, spec in zip(leaves, self.specs):
            if spec is not None and tuple(onp.shape(unbox(leaf))) != spec.shape:
                raise ValueError(
                    f"f's output {spec.name} changed shape{where}: {spec.shape} at the point, "
                    f"{tuple(onp.shape(unbox(leaf)))} nearby. Its shape depends on "
                    "the input values (boolean masks, np.unique, nonzero, data-dependent "
                    "slicing), so it has no Jacobian; make the output's shape fixed."
                )


def output_name(path: tuple, top_kind: str) -> str:
    """``y`` for one array, ``y0, y1, ...`` for a top-level list/tuple, ``y['k']`` ..."""
    if not path:
        return "y"
    if top_kind in ("list", "tuple"):
        return f"y{path[0]}" + path_str(path[1:])
    return "y" + path_str(path)


def output_layout(y: Any, what: str = "f") -> OutputLayout:
    """The layout of an output value; a clear TypeError for outputs with no derivative."""
    v = unbox(y)
    if v is None:
        raise TypeError(
            f"{what} returned None; it must return a float array (or a list / tuple / dict "
            "of them). Did the function forget its return statement?"
        )
    if isinstance(v, (str, bytes)):
        raise TypeError(
            f"{what} returned a {type(v).__name__} ({v!r:.40}); it must return a float "
            "array (or a list / tuple / dict of them)."
        )
    leaves, tree = flatten(y)
    specs, constants = [], []
    for leaf, path in zip(leaves, tree.paths()):
        label = output_name(path, tree.kind)
        kind = float_kind(leaf)
        if kind in ("real", "complex"):
            specs.append(leaf_of(leaf, label, None, path))
            continue
        if isinstance(unbox(leaf), (str, bytes)) or kind.endswith("object"):
            raise TypeError(
                f"{what}'s output {label} is {kind}; outputs must be float or complex arrays "
                "(or structures of them). Return the numbers only."
            )
        specs.append(None)
        constants.append((label, kind))
    if not any(s is not None for s in specs):
        got = constants[0][1] if constants else f"an empty {tree.describe()}"
        raise TypeError(
            f"{what}'s output holds no float or complex value (it is {got}); derivatives "
            "need float outputs. Return floats from f (e.g. y.astype(float))."
        )
    return OutputLayout(tree, tuple(specs), tuple(constants))


def check_jacobian_size(n_out: int, n_in: int, itemsize: int = 8, what: str = "Jacobian") -> None:
    """Refuse to build a dense matrix larger than :data:`MEMORY_CAP_BYTES`."""
    nbytes = int(n_out) * int(n_in) * itemsize
    if nbytes > MEMORY_CAP_BYTES:
        from ..errors import JacobianTooLargeError

        raise JacobianTooLargeError(
            f"a dense {what} of {n_out} outputs x {n_in} inputs needs {nbytes / 1e9:.1f} GB, "
            f"over the cap of {MEMORY_CAP_BYTES / 1e9:.1f} GB "
            "(gradexplorer._args.MEMORY_CAP_BYTES). Use gx.Lop / gx.Rop for products with "
            "it, or gx.check_grads(..., mode='fast'), which never builds it."
        )


def nonfinite_summary(values: Sequence, specs: Sequence[Leaf], limit: int = 5) -> str | None:
    """Name the NaN/Inf entries of leaves (None when all are finite)."""
    bad_labels, count = [], 0
    for v, spec in zip(values, specs):
        if spec is None:
            continue
        r = spec.to_real(v)
        bad = onp.flatnonzero(~onp.isfinite(r))
        count += bad.size
        bad_labels.extend(f"{spec.label(k)}={r[k]}" for k in bad[: limit - len(bad_labels)])
    if not count:
        return None
    more = f" and {count - len(bad_labels)} more" if count > len(bad_labels) else ""
    return f"{count} non-finite entr{'y' if count == 1 else 'ies'}: {', '.join(bad_labels)}{more}"
