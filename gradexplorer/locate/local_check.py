"""One operation's own derivative, checked alone at the inputs it saw.

Along each tangent the operation receives in f: its VJP (for a random
cotangent) and its JVP, where a rule exists, against finite differences of the
operation itself, with the same error estimates and rule as the full check.
"""

from __future__ import annotations

from typing import Any

import numpy as onp

from ..backends.base import OpRecord
from ..check.judging import FD_SAFETY, RTOL_ULPS
from ..check.report import CheckReport
from ..core.tree import flatten, float_kind, map_leaves, unflatten
from ..fd.jacobian import fd_columns
from .context import float_leaves, real_vector
from .result import OpVerdict

__all__ = ["check_operation", "culprit_report", "BOOKKEEPING"]

_NOT = OpVerdict.NOT_CHECKED

#: The verdict of autograd's own gradient bookkeeping (not an operation of f's).
BOOKKEEPING = OpVerdict.BOOKKEEPING


def _perturbed_args(rec: OpRecord, tangent_sets, weights):
    """The record's arguments moved by Σ_k weights[k]·tangent_k."""
    args = list(rec.args)
    for slot, a in enumerate(rec.argnums):
        leaves, tree = flatten(rec.args[a])
        new = []
        for q, x in enumerate(leaves):
            delta = None
            for w, tans in zip(weights, tangent_sets):
                t = tans[slot][1][q]
                if t is not None and w != 0:
                    delta = w * t if delta is None else delta + w * t
            if delta is None:
                new.append(x)
            else:
                v = onp.asarray(x) + delta
                new.append(
                    v.astype(onp.asarray(x).dtype)
                    if onp.ndim(x)
                    else type(x)(v)
                    if isinstance(x, (float, complex))
                    else v.astype(onp.asarray(x).dtype)[()]
                )
        args[a] = unflatten(tree, new)
    return args


def _pair(cot: Any, tangent) -> float:
    """Re Σ cot·t over the leaves of one argument (autograd's pairing)."""
    tree, tl = tangent
    leaves, _ = flatten(cot)
    total = 0.0
    for c, t in zip(leaves, tl):
        if t is None or c is None:
            continue
        total += float(onp.real(onp.sum(onp.asarray(c) * t)))
    return total


def _random_cotangent(value: Any, gen):
    leaves, tree = flatten(value)
    out = []
    for x in leaves:
        kind = float_kind(x)
        if kind == "real":
            u = gen.standard_normal(onp.shape(x))
            out.append(u.astype(onp.asarray(x).dtype) if onp.ndim(x) else float(u))
        elif kind == "complex":
            u = gen.standard_normal(onp.shape(x)) + 1j * gen.standard_normal(onp.shape(x))
            out.append(u.astype(onp.asarray(x).dtype) if onp.ndim(x) else complex(u))
        else:
            out.append(onp.zeros_like(x) if onp.ndim(x) else 0)
    return unflatten(tree, out)


def _u_real(u: Any, value: Any) -> onp.ndarray:
    """u as a real vector against the realified output: Re(ū·dy) = [Re ū, -Im ū]·[Re dy, Im dy]."""
    parts = []
    for uu, x in zip(flatten(u)[0], flatten(value)[0]):
        kind = float_kind(x)
        if kind == "real":
            parts.append(onp.ravel(onp.asarray(uu, dtype=float)))
        elif kind == "complex":
            a = onp.asarray(uu)
            parts.extend([a.real.ravel(), -a.imag.ravel()])
    return onp.concatenate(parts) if parts else onp.zeros(0)


def _eps_of(x: Any) -> float:
    rdt = [onp.asarray(leaf).real.dtype for leaf in float_leaves(x)]
    return max((float(onp.finfo(d).eps) for d in rdt if d.kind == "f"), default=2.0**-52)


def _is_plumbing(rec: OpRecord) -> bool:
    """autograd's own gradient bookkeeping (sparse cotangents, container untakes)."""
    values = [rec.value] + [rec.args[a] for a in rec.argnums]
    return any(type(leaf).__name__ == "SparseObject" for v in values for leaf in flatten(v)[0])


def check_operation(rec: OpRecord, tangent_sets, gen, backend) -> tuple[OpVerdict, float, str]:
    """``(verdict, violation, reason)`` of one operation along the given tangents
    (``reason`` says why an operation was not checked): its finite differences along
    each tangent, then its VJP, then its JVP where it has one."""
    if _is_plumbing(rec) or rec.name in ("container_untake", "sparse_add"):
        return BOOKKEEPING, onp.nan, "autograd's internal gradient bookkeeping"
    if not float_leaves(rec.value):
        return _NOT, onp.nan, "its output is not a float array"
    if not any(t is not None for tans in tangent_sets for _, tl in tans for t in tl):
        return _NOT, onp.nan, "its inputs do not move with f's input"
    scaled = _scaled_tangents(rec, tangent_sets)
    eps = _eps_of(rec.value)
    try:
        N, E = _op_differences(rec, scaled, backend, eps, gen)
    except Exception as exc:
        return _NOT, onp.nan, f"it fails on nearby inputs ({type(exc).__name__})"
    rt = RTOL_ULPS * max(eps, max(_eps_of(rec.args[a]) for a in rec.argnums))
    try:
        u = _random_cotangent(rec.value, gen)
        cots = backend.op_vjp(rec, u)
    except NotImplementedError as exc:
        return _NOT, onp.nan, str(exc)
    except Exception as exc:
        return _NOT, onp.nan, f"its VJP raised {type(exc).__name__}"
    worst = _reverse_violation(rec, u, cots, scaled, N, E, rt)
    if worst is None:
        return _NOT, onp.nan, "finite differences cannot resolve it here (kink, jump or noise)"
    if worst > 1:
        return OpVerdict.WRONG_VJP, worst, ""
    forward = _forward_violation(rec, scaled, N, E, rt, backend)
    if forward > 1:
        return OpVerdict.WRONG_JVP, max(worst, forward), ""
    return OpVerdict.OK, worst, ""


def _largest(arrays) -> float:
    return max((float(onp.max(onp.abs(a), initial=0.0)) for a in arrays), default=0.0)


def _scaled_tangents(rec: OpRecord, tangent_sets) -> list:
    """Each set of tangents scaled to the size of the operation's arguments (the
    finite differences' base step, 2^-8, is then relative to them)."""
    arg_scale = _largest(leaf for a in rec.argnums for leaf in float_leaves(rec.args[a])) or 1.0
    scaled = []
    for tans in tangent_sets:
        tmax = _largest(t for _, tl in tans for t in tl if t is not None)
        c = arg_scale / tmax if tmax > 0 else 0.0
        scaled.append([(tree, [None if t is None else t * c for t in tl]) for tree, tl in tans])
    return scaled


def _op_differences(rec: OpRecord, scaled, backend, eps, gen):
    """The operation's directional derivatives along each scaled tangent, and their
    error bounds: ``(N, E)``, one column per tangent, one row per real output entry."""
    y0 = onp.concatenate([real_vector(v) for v in float_leaves(rec.value)])

    def evaluate(E: onp.ndarray) -> onp.ndarray:
        rows = []
        for w in E:
            leaves = float_leaves(backend.op_eval(rec, _perturbed_args(rec, scaled, w)))
            rows.append(
                onp.concatenate([real_vector(v) for v in leaves])
                if leaves
                else onp.full(y0.size, onp.nan)
            )
        return onp.asarray(rows, dtype=float)

    K = len(scaled)
    spacing = onp.full(K, onp.finfo(float).smallest_subnormal)
    with onp.errstate(all="ignore"):
        N, E, _, _, _ = fd_columns(
            evaluate, onp.zeros(K), y0, onp.full(K, 2.0**-8), spacing, "richardson",
            out_eps=eps, rng=gen,
        )  # fmt: skip
    return N, E


def _reverse_violation(rec, u, cots, scaled, N, E, rt) -> float | None:
    """The worst violation of uᵀ(J t) by the VJP's cotangents, over the tangents the
    finite differences resolved (None: none)."""
    ur = _u_real(u, rec.value)
    worst = None
    for k, tans in enumerate(scaled):
        ok = onp.isfinite(E[:, k])
        if not ok.any():
            continue
        a = sum(_pair(c, t) for c, t in zip(cots, tans))
        n = float(ur[ok] @ N[ok, k])
        e = float(onp.abs(ur[ok]) @ E[ok, k])
        v = abs(a - n) / (FD_SAFETY * e + rt * max(abs(a), abs(n)) + onp.finfo(float).tiny)
        worst = v if worst is None else max(worst, v)
    return worst


def _forward_violation(rec, scaled, N, E, rt, backend) -> float:
    """The worst violation of J t by the operation's JVP, entry by entry (0 where it
    has no forward rule)."""
    worst = 0.0
    for k, tans in enumerate(scaled):
        try:
            jv = backend.op_jvp(
                rec, [_tangent_tree(rec, a, tree, tl) for a, (tree, tl) in zip(rec.argnums, tans)]
            )
        except Exception:  # NotImplementedError included: no forward rule to judge
            break
        jl = float_leaves(jv)
        if not jl:
            continue
        jr = onp.concatenate([real_vector(v) for v in jl])
        ok = onp.isfinite(E[:, k])
        if jr.size != ok.size:
            break
        with onp.errstate(all="ignore"):
            v = onp.abs(jr - N[:, k]) / (
                FD_SAFETY * E[:, k] + rt * onp.abs(jr) + onp.finfo(float).tiny
            )
        worst = max(worst, float(onp.max(v[ok], initial=0.0)))
    return worst


def _tangent_tree(rec: OpRecord, argnum: int, tree, tangents):
    """One argument's tangent in the argument's own structure (zeros where it does
    not move)."""
    leaves = flatten(rec.args[argnum])[0]
    return unflatten(
        tree, [onp.zeros_like(x) if t is None else t for x, t in zip(leaves, tangents)]
    )


def culprit_report(rec: OpRecord, rng, backend) -> CheckReport | None:
    """The culprit's own Jacobian, checked entry by entry (for the picture)."""
    from ..check.api import check_grads

    for a in rec.argnums:
        if not float_leaves(rec.args[a]):
            continue
        local = backend.op_function(rec, a)
        try:
            x = map_leaves(backend.to_array, rec.args[a])
            r = check_grads(local, x, rng=rng, mode="full", backend=backend.name)
        except Exception:
            continue
        if not r.passed:
            return r
    return None
