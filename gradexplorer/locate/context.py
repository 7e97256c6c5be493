"""The directions each operation's inputs actually move in, inside f.

f is re-traced at a few nearby points ``x ± ε·v``; for every recorded
operation, the difference of its inputs between the two traces is a tangent
it really receives. A rule that is right only for inputs of the structure f
gives them (a symmetrised gradient for a covariance built symmetric) is then
checked in that structure, as it is used.
"""

from __future__ import annotations

from typing import Any

import numpy as onp

from ..backends.base import OpRecord
from ..core.tree import flatten, float_kind
from ..fd.steps import default_step
from .result import CutInput

__all__ = [
    "tangents_in_context", "random_tangents", "float_leaves", "real_vector", "shapes", "cut_inputs",
]  # fmt: skip


def real_vector(leaf: Any) -> onp.ndarray:
    a = onp.asarray(leaf)
    if a.dtype.kind == "c":
        return onp.concatenate([a.real.ravel(), a.imag.ravel()])
    return a.ravel().astype(float)


def float_leaves(x: Any) -> list:
    leaves, _ = flatten(x)
    return [leaf for leaf in leaves if float_kind(leaf) in ("real", "complex")]


def shapes(value: Any) -> tuple:
    """The shapes of a value's leaves (containers included)."""
    leaves, tree = flatten(value)
    return (tree, tuple(onp.shape(leaf) for leaf in leaves))


def _aligned(a: list[OpRecord], b: list[OpRecord]) -> int:
    """How many leading records two traces share (same operations, same shapes)."""
    k = 0
    for r, s in zip(a, b):
        if not (r.fun is s.fun or r.fun == s.fun) or shapes(r.value) != shapes(s.value):
            break
        k += 1
    return k


def tangents_in_context(call, values, specs, records, gen, directions, backend):
    """For each record and each direction: the tangent of each traced argument
    (a structure like the argument), from re-traces at x ± ε·v; how many leading
    records every re-trace aligned with; and per record, the positions of the
    arguments outside the AD graph whose values move with x (:func:`cut_inputs`)."""
    out = [[] for _ in records]
    cut: list[set] = [set() for _ in records]
    aligned_all = len(records)
    for _ in range(directions):
        plus, minus = [], []
        eps_scale = []
        for s, v in zip(specs, values):
            r = s.to_real(backend.to_numpy(v)).astype(float)
            step = default_step(r) * 2.0**-12
            dv = gen.standard_normal(r.size) * step
            plus.append(s.from_real(r + dv) if s.shape else s.from_real(r + dv))
            minus.append(s.from_real(r - dv))
            eps_scale.append(1.0)
        # the nearby points on the device the leaves live on
        plus = [backend.to_array(_cast(p, v, s), like=v) for p, v, s in zip(plus, values, specs)]
        minus = [backend.to_array(_cast(m, v, s), like=v) for m, v, s in zip(minus, values, specs)]
        try:
            rp = backend.record(call, plus)
            rm = backend.record(call, minus)
        except Exception:
            aligned_all = 0
            break
        k = min(_aligned(records, rp), _aligned(records, rm))
        aligned_all = min(aligned_all, k)
        for i in range(min(k, len(records))):
            rec = records[i]
            cut[i] |= cut_inputs(rec, rp[i], rm[i])
            tans = []
            for a in rec.argnums:
                ap, am = rp[i].args[a], rm[i].args[a]
                lp, tree = flatten(ap)
                lm, _ = flatten(am)
                tl = []
                for x1, x2 in zip(lp, lm):
                    if float_kind(x1) in ("real", "complex"):
                        tl.append((onp.asarray(x1) - onp.asarray(x2)) / 2.0)
                    else:
                        tl.append(None)
                tans.append((tree, tl))
            out[i].append(tans)
    return out, aligned_all, [tuple(sorted(c, key=lambda a: a.order)) for c in cut]


def cut_inputs(rec: OpRecord, plus: OpRecord, minus: OpRecord) -> set:
    """``rec``'s float inputs outside the AD graph (:class:`~.result.CutInput`: an
    argument not in ``argnums``, an untraced leaf of one that is, a keyword argument
    or an untraced leaf of it) that move with x between the re-traces at x ± ε·v: by
    more than their rounding, and to first order in ε (the two moves from x opposite
    and alike). Values that depend on x but reach the operation as constants
    (``detach()``, ``.data``, ``.item()``, ``stop_gradient``, a trip through numpy);
    not values that change from call to call (unseeded random numbers, a batch norm's
    running statistics), whose moves have no such symmetry.

    >>> import numpy as np
    >>> from gradexplorer.backends.base import OpRecord
    >>> rec = lambda a: OpRecord(0, np.multiply, (a, np.ones(2)), {}, (1,), (), None, ())
    >>> base = rec(np.zeros(2))
    >>> cut_inputs(base, rec(np.array([1e-9, 0])), rec(np.array([-1e-9, 0])))
    {CutInput(position=0, leaf=None)}
    >>> cut_inputs(base, rec(np.array([1e-9, 0])), rec(np.array([3e-9, 0])))  # drifting
    set()
    >>> cut_inputs(base, base, base)
    set()
    """
    moved = set()
    for cut in _untraced(rec):
        try:
            values = [cut.value_in(r.args, r.kwargs) for r in (rec, plus, minus)]
        except (IndexError, KeyError):
            continue
        if _moves_with_x(*values):
            moved.add(cut)
    return moved


def _untraced(rec: OpRecord) -> list[CutInput]:
    """The inputs of ``rec`` outside its AD graph: whole arguments, or leaves."""
    out = []
    for key in [*range(len(rec.args)), *rec.kwargs]:
        flags = rec.leaves_traced.get(key)
        if flags is not None and len(flags) == 1:
            out += [] if flags[0] else [CutInput(key)]
        elif flags is not None:
            out += [CutInput(key, k) for k, traced in enumerate(flags) if not traced]
        elif isinstance(key, str) or key not in rec.argnums:
            out.append(CutInput(key))
    return out


def _moves_with_x(at: Any, p: Any, m: Any) -> bool:
    leaves = [flatten(v) for v in (at, p, m)]
    if not leaves[0][1] == leaves[1][1] == leaves[2][1]:
        return False
    for x0, x1, x2 in zip(leaves[0][0], leaves[1][0], leaves[2][0]):
        if float_kind(x1) not in ("real", "complex") or not onp.shape(x0) == onp.shape(
            x1
        ) == onp.shape(x2):
            continue
        a0, a1, a2 = (onp.asarray(v) for v in (x0, x1, x2))
        with onp.errstate(all="ignore"):
            up, down = a1 - a0, a2 - a0
            size = onp.fmax(onp.fmax(onp.abs(a1), onp.abs(a2)), onp.abs(a0))
            eps = onp.finfo(onp.result_type(a0.dtype, onp.float32)).eps
            moved = float(onp.max(onp.abs(a1 - a2), initial=0.0))
            rounding = 64 * eps * float(onp.max(size, initial=0.0))
            # first order in ε: x + εv and x - εv move it by opposite amounts
            odd = onp.linalg.norm(up + down) <= 0.25 * onp.linalg.norm(up - down)
            if onp.isfinite(moved) and moved > rounding and odd:
                return True
    return False


def _cast(new, old, spec):
    if spec.pytype is not None:
        return spec.pytype(new)
    return onp.asarray(new, dtype=spec.dtype) if spec.shape else onp.asarray(new, spec.dtype)[()]


def random_tangents(rec: OpRecord, gen) -> list:
    """Directions for an operation the re-traces could not align: random ones."""
    tans = []
    for a in rec.argnums:
        leaves, tree = flatten(rec.args[a])
        tl = []
        for x in leaves:
            kind = float_kind(x)
            if kind == "real":
                tl.append(
                    gen.standard_normal(onp.shape(x))
                    * max(float(onp.max(onp.abs(x), initial=0)), 1.0)
                )
            elif kind == "complex":
                z = gen.standard_normal(onp.shape(x)) + 1j * gen.standard_normal(onp.shape(x))
                tl.append(z * max(float(onp.max(onp.abs(x), initial=0)), 1.0))
            else:
                tl.append(None)
        tans.append((tree, tl))
    return tans
