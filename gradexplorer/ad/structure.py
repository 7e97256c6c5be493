"""Dense derivative blocks arranged in gradexplorer's structures (any AD system).

The Jacobian operators compute one 2-D real matrix per differentiated leaf
(rows: the realified output, ``[Re y; Im y]`` leaf after leaf); these helpers
cut it into blocks shaped ``out.shape + in.shape`` and nest them as jax does:
the output's structure, each output leaf holding the argument's structure.
They use only slicing, ``reshape`` and ``+``, so the blocks stay the AD
system's own arrays (numpy, torch tensors, jax arrays).

>>> import numpy as np
>>> from gradexplorer.core.tree import leaf_of
>>> holomorphic_block(leaf_of(np.zeros(1), "y"), leaf_of(np.zeros(2), "x"), np.ones((1, 2)))
array([[1., 1.]])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.calls import Call
from ..core.outputs import OutputLayout
from ..core.tree import Leaf, unflatten

__all__ = ["blocks_by_argument", "structure", "holomorphic_block", "unrealify"]


def blocks_by_argument(call: Call, mats: list) -> list[list]:
    """Group per-leaf matrices into one list per selected argument."""
    it = iter(mats)
    return [[next(it) for s in sel.specs if s is not None] for sel in call.selected]


def structure(call: Call, layout: OutputLayout, blocks: list, make: Callable) -> list:
    """Per selected argument: the output's structure, each output leaf holding
    the argument's structure of ``make(out_spec, in_spec, rows_of_block)``."""
    if layout.tree.is_leaf and len(call.selected) == 1 and call.selected[0].tree.is_leaf:
        (ospec,), (ispec,) = layout.specs, call.specs  # one array in, one out: no structure
        return [make(ospec, ispec, blocks[0])]
    out = []
    row_starts = [0]
    for s in layout.leaves:
        row_starts.append(row_starts[-1] + s.real_size)
    for sel, mats in zip(call.selected, blocks_by_argument(call, blocks)):
        in_specs = [s for s in sel.specs if s is not None]
        per_output = []
        k_out = 0
        for ospec in layout.specs:
            if ospec is None:
                per_output.append(None)
                continue
            r0, r1 = row_starts[k_out], row_starts[k_out + 1]
            k_out += 1
            inner = iter([make(ospec, ispec, _rows(J, r0, r1)) for ispec, J in zip(in_specs, mats)])
            leaves = [next(inner) if s is not None else None for s in sel.specs]
            per_output.append(unflatten(sel.tree, leaves))
        out.append(unflatten(layout.tree, per_output))
    return out


def _rows(J: Any, r0: int, r1: int) -> Any:
    """``J[r0:r1]``, J itself when that is all of it (no copy, no dispatch)."""
    return J if r0 == 0 and r1 == J.shape[0] else J[r0:r1]


def _shaped(a: Any, shape: tuple) -> Any:
    return a if tuple(a.shape) == shape else a.reshape(shape)


def holomorphic_block(ospec: Leaf, ispec: Leaf, J: Any) -> Any:
    """One block ``out.shape + in.shape`` of the Jacobian from its real rows: the
    real block itself, or for a complex side the derivative along the real axis
    of the input, ``d Re y/d Re x + i d Im y/d Re x`` (dy/dz for holomorphic f)."""
    if not (ospec.complex or ispec.complex):
        return _shaped(J, ospec.shape + ispec.shape)
    d_re_x = J[:, : ispec.size]
    n = ospec.size
    dz = d_re_x[:n] + (1j * d_re_x[n:] if ospec.complex else 0)
    return dz.reshape(ospec.shape + ispec.shape)


def unrealify(layout: OutputLayout, t: Any) -> Any:
    """A real vector laid out as the realified output, back in the output's
    structure (complex leaves from their Re and Im halves); constant leaves None."""
    out, start = [], 0
    for spec in layout.specs:
        if spec is None:
            out.append(None)
            continue
        n = spec.size
        part = t[start : start + n]
        start += n
        if spec.complex:
            part = part + 1j * t[start : start + n]
            start += n
        out.append(part.reshape(spec.shape))
    return unflatten(layout.tree, out)
