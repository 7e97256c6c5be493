"""Where is the bug? Trace f, check every operation's own derivative, name the first wrong one.

A Jacobian heatmap says *which entries* are wrong; ``locate`` says *which
operation*, and on which line of the user's code it was called. f is traced
once; each recorded operation is then checked on its own, at the inputs it
saw, along the directions its inputs actually move in f: f is re-traced at a
few nearby points, and the differences of each operation's inputs between
those traces are the tangents the operation really receives. A rule that is
right only for inputs of the structure f gives it (a symmetrised gradient for
a covariance built symmetric) is then right, as it is in context.

The first operation, in evaluation order, whose VJP (or JVP) disagrees with
finite differences of the operation itself is the culprit.
"""

from __future__ import annotations

import html
import linecache
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as onp

from ._args import bind_call
from ._trace import OpRecord, definition_site, op_eval, op_jvp, op_vjp, record_ops
from .fd import default_step, fd_columns
from .judging import FD_SAFETY, RTOL_ULPS
from .problem import as_rng
from .report import CheckReport
from .tree import flatten, float_kind, unflatten

__all__ = ["locate", "Localization", "OpNode"]

#: Nearby points re-traced to find the directions each operation's inputs move in.
DIRECTIONS = 3


@dataclass(frozen=True)
class OpNode:
    """One traced operation.

    ``name`` is the primitive's own name (``softplus``, ``dot``); ``source``
    where the user's code called it (``path/file.py:LINE``, or in a notebook
    ``cell [N], line L``) and ``code`` that line's text; ``verdict`` is
    ``ok``, ``wrong VJP``, ``wrong JVP`` or ``not checked: <reason>``;
    ``local_error`` the largest violation of its local check (> 1 fails).
    """

    index: int
    name: str
    source: str
    verdict: str
    local_error: float
    parents: tuple[int, ...]
    in_shapes: tuple
    out_shape: tuple
    report: CheckReport | None = field(default=None, repr=False, compare=False)
    code: str = ""

    @property
    def wrong(self) -> bool:
        return self.verdict.startswith("wrong")

    @property
    def checked(self) -> bool:
        return not self.verdict.startswith("not checked")

    def __str__(self) -> str:
        err = f"{self.local_error:.3g}" if onp.isfinite(self.local_error) else "-"
        return f"#{self.index:<3} {self.name:<16} {self.source:<36} {self.verdict:<12} {err}"


@dataclass(frozen=True, repr=False)
class Localization:
    """The traced operations of f and the first one with a wrong derivative."""

    nodes: tuple[OpNode, ...]
    culprit: OpNode | None
    function: str = "f"

    @property
    def unchecked(self) -> tuple[OpNode, ...]:
        return tuple(n for n in self.nodes if not n.checked)

    def __repr__(self) -> str:
        return f"<Localization of {self.function}: {self._headline()}>"

    def _headline(self) -> str:
        n, skipped = len(self.nodes), len(self.unchecked)
        if self.culprit is not None:
            c = self.culprit
            return f"culprit: {c.name} at {c.source} ({c.verdict}), operation {c.index + 1} of {n}"
        if not n:
            return "no operation depends on the input"
        if skipped:
            return (
                f"{n - skipped} of {n} operations checked, all with right derivatives; "
                f"{skipped} not checked (see below)"
            )
        return f"all {n} operations have right derivatives"

    def __str__(self) -> str:
        lines = [
            f"locate({self.function}): {self._headline()}",
            f"  {'#':<4} {'operation':<16} {'called at':<36} {'verdict':<12} violation",
        ]
        for n in self.nodes:
            mark = ">" if n is self.culprit else " "
            lines.append(f"{mark} {n}")
        c = self.culprit
        if c is not None and c.code:
            lines.append(f"  {c.source}: {c.code}")
        if c is not None and c.report is not None:
            lines.append("  the culprit's own derivative:")
            lines.extend("    " + ln for ln in str(c.report).splitlines()[:8])
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = []
        for n in self.nodes:
            style = ' style="background:#fde2d0;font-weight:bold"' if n is self.culprit else ""
            err = f"{n.local_error:.3g}" if onp.isfinite(n.local_error) else "–"
            code = f"<br><code>{html.escape(n.code)}</code>" if n.code and n is self.culprit else ""
            rows.append(
                f"<tr{style}><td>{n.index}</td><td>{html.escape(n.name)}</td>"
                f"<td><code>{html.escape(n.source)}</code>{code}</td>"
                f"<td>{html.escape(n.verdict)}</td><td>{err}</td></tr>"
            )
        return (
            f"<div><b>{html.escape(self._headline())}</b><table><tr><th>#</th>"
            "<th>operation</th><th>called at</th><th>verdict</th><th>violation</th></tr>"
            f"{''.join(rows)}</table></div>"
        )

    def _repr_png_(self) -> bytes:
        from .plot import figure_png

        return figure_png(self.plot())

    def plot(self, fig: Any = None):
        """The traced graph coloured by verdict, and the culprit's local check."""
        from .plot_graph import plot_localization

        return plot_localization(self, fig)


# ---------------------------------------------------------------- where in the code


def _notebook_cell(path: str) -> int | None:
    """The execution count of a notebook cell's code file (IPython names them)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    ip = get_ipython()
    mapping = getattr(getattr(ip, "compile", None), "_filename_map", None)
    if mapping and path in mapping:
        return int(mapping[path])
    return None


def describe_site(path: str, line: int) -> tuple[str, str]:
    """``(where, code)``: ``path:line`` (relative when shorter) or ``cell [N], line L``."""
    code = linecache.getline(path, line).strip()
    cell = _notebook_cell(path)
    if cell is not None:
        return f"cell [{cell}], line {line}", code
    try:
        shown = os.path.relpath(path)
    except ValueError:
        shown = path
    if shown.startswith(".."):
        shown = path
    return f"{shown}:{line}", code


def _source(rec: OpRecord) -> tuple[str, str]:
    if rec.frames:
        return describe_site(*rec.frames[0])
    site = definition_site(rec)  # f itself is the primitive: point at its definition
    if site is None:
        return "<unknown>", ""
    where, code = describe_site(*site)
    return f"{where} (definition)", code


# ---------------------------------------------------------------- tangents in context


def _real(leaf: Any) -> onp.ndarray:
    a = onp.asarray(leaf)
    if a.dtype.kind == "c":
        return onp.concatenate([a.real.ravel(), a.imag.ravel()])
    return a.ravel().astype(float)


def _float_leaves(x: Any) -> list:
    leaves, _ = flatten(x)
    return [leaf for leaf in leaves if float_kind(leaf) in ("real", "complex")]


def _shapes(value: Any) -> tuple:
    """The shapes of a value's leaves (containers included)."""
    leaves, tree = flatten(value)
    return (tree, tuple(onp.shape(leaf) for leaf in leaves))


def _aligned(a: list[OpRecord], b: list[OpRecord]) -> int:
    """How many leading records two traces share (same operations, same shapes)."""
    k = 0
    for r, s in zip(a, b):
        if r.fun is not s.fun or _shapes(r.value) != _shapes(s.value):
            break
        k += 1
    return k


def _tangents(call, values, specs, records, gen, directions):
    """For each record and each direction: the tangent of each traced argument
    (a structure like the argument), from re-traces at x ± ε·v."""
    out = [[] for _ in records]
    aligned_all = len(records)
    for _ in range(directions):
        plus, minus = [], []
        eps_scale = []
        for s, v in zip(specs, values):
            r = s.to_real(v).astype(float)
            step = default_step(r) * 2.0**-12
            dv = gen.standard_normal(r.size) * step
            plus.append(s.from_real(r + dv) if s.shape else s.from_real(r + dv))
            minus.append(s.from_real(r - dv))
            eps_scale.append(1.0)
        plus = [_cast(p, v, s) for p, v, s in zip(plus, values, specs)]
        minus = [_cast(m, v, s) for m, v, s in zip(minus, values, specs)]
        try:
            rp = record_ops(call, plus)
            rm = record_ops(call, minus)
        except Exception:
            aligned_all = 0
            break
        k = min(_aligned(records, rp), _aligned(records, rm))
        aligned_all = min(aligned_all, k)
        for i in range(min(k, len(records))):
            rec = records[i]
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
    return out, aligned_all


def _cast(new, old, spec):
    if spec.pytype is not None:
        return spec.pytype(new)
    return onp.asarray(new, dtype=spec.dtype) if spec.shape else onp.asarray(new, spec.dtype)[()]


def _random_tangents(rec: OpRecord, gen) -> list:
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


# ---------------------------------------------------------------- checking one operation


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
    rdt = [onp.asarray(leaf).real.dtype for leaf in _float_leaves(x)]
    return max((float(onp.finfo(d).eps) for d in rdt if d.kind == "f"), default=2.0**-52)


def _is_plumbing(rec: OpRecord) -> bool:
    """autograd's own gradient bookkeeping (sparse cotangents, container untakes)."""
    values = [rec.value] + [rec.args[a] for a in rec.argnums]
    return any(type(leaf).__name__ == "SparseObject" for v in values for leaf in flatten(v)[0])


def _check_op(rec: OpRecord, tangent_sets, gen) -> tuple[str, float]:
    """``(verdict, violation)`` of one operation along the given tangents."""
    if _is_plumbing(rec) or rec.name in ("container_untake", "sparse_add"):
        return "not checked: autograd's internal gradient bookkeeping", onp.nan
    out_leaves = _float_leaves(rec.value)
    if not out_leaves:
        return "not checked: its output is not a float array", onp.nan
    if not any(t is not None for tans in tangent_sets for _, tl in tans for t in tl):
        return "not checked: its inputs do not move with f's input", onp.nan
    # scale the tangents to a step of ~2^-8 of the arguments' size
    K = len(tangent_sets)
    arg_scale = (
        max(
            (
                float(onp.max(onp.abs(leaf), initial=0.0))
                for a in rec.argnums
                for leaf in _float_leaves(rec.args[a])
            ),
            default=1.0,
        )
        or 1.0
    )
    scaled = []
    for tans in tangent_sets:
        tmax = max(
            (
                float(onp.max(onp.abs(t), initial=0.0))
                for _, tl in tans
                for t in tl
                if t is not None
            ),
            default=0.0,
        )
        c = arg_scale / tmax if tmax > 0 else 0.0
        scaled.append([(tree, [None if t is None else t * c for t in tl]) for tree, tl in tans])
    y0 = onp.concatenate([_real(v) for v in out_leaves])

    def evaluate(E: onp.ndarray) -> onp.ndarray:
        rows = []
        for w in E:
            y = op_eval(rec, _perturbed_args(rec, scaled, w))
            leaves = _float_leaves(y)
            rows.append(
                onp.concatenate([_real(v) for v in leaves])
                if leaves
                else onp.full(y0.size, onp.nan)
            )
        return onp.asarray(rows, dtype=float)

    x0 = onp.zeros(K)
    steps = onp.full(K, 2.0**-8)
    spacing = onp.full(K, onp.finfo(float).smallest_subnormal)
    eps = _eps_of(rec.value)
    try:
        with onp.errstate(all="ignore"):
            N, E, R, _, _ = fd_columns(
                evaluate, x0, y0, steps, spacing, "richardson", out_eps=eps, rng=gen
            )
    except Exception as exc:
        return f"not checked: it fails on nearby inputs ({type(exc).__name__})", onp.nan
    rt = RTOL_ULPS * max(eps, max(_eps_of(rec.args[a]) for a in rec.argnums))
    worst, verdict = 0.0, "ok"
    # reverse mode, along each tangent
    try:
        u = _random_cotangent(rec.value, gen)
        cots = op_vjp(rec, u)
    except NotImplementedError as exc:
        return f"not checked: {exc}", onp.nan
    except Exception as exc:
        return f"not checked: its VJP raised {type(exc).__name__}", onp.nan
    ur = _u_real(u, rec.value)
    judged = False
    for k, tans in enumerate(scaled):
        a = sum(_pair(c, t) for c, t in zip(cots, tans))
        ok = onp.isfinite(E[:, k])
        if not ok.any():
            continue
        n = float(ur[ok] @ N[ok, k])
        e = float(onp.abs(ur[ok]) @ E[ok, k])
        mag = max(abs(a), abs(n))
        v = abs(a - n) / (FD_SAFETY * e + rt * mag + onp.finfo(float).tiny)
        judged = True
        worst = max(worst, v)
    if not judged:
        return (
            "not checked: finite differences cannot resolve it here (kink, jump or noise)",
            onp.nan,
        )
    if worst > 1:
        return "wrong VJP", worst
    # forward mode, where a rule exists
    for k, tans in enumerate(scaled):
        try:
            jv = op_jvp(
                rec,
                [
                    unflatten(
                        tree,
                        [
                            onp.zeros_like(x) if t is None else t
                            for x, t in zip(flatten(rec.args[a])[0], tl)
                        ],
                    )
                    for a, (tree, tl) in zip(rec.argnums, tans)
                ],
            )
        except NotImplementedError:
            break
        except Exception:
            break
        jl = _float_leaves(jv)
        if not jl:
            continue
        jr = onp.concatenate([_real(v) for v in jl])
        ok = onp.isfinite(E[:, k])
        if jr.size != ok.size:
            break
        with onp.errstate(all="ignore"):
            v = onp.abs(jr - N[:, k]) / (
                FD_SAFETY * E[:, k] + rt * onp.abs(jr) + onp.finfo(float).tiny
            )
        vmax = float(onp.max(v[ok], initial=0.0))
        if vmax > 1:
            verdict = "wrong JVP"
            worst = max(worst, vmax)
    return verdict, worst


def _culprit_report(rec: OpRecord, rng) -> CheckReport | None:
    """The culprit's own Jacobian, checked entry by entry (for the picture)."""
    from .check import check_grads

    for a in rec.argnums:
        if not _float_leaves(rec.args[a]):
            continue

        def local(x, a=a):
            args = list(rec.args)
            args[a] = x
            return op_eval(rec, args)

        local.__name__ = rec.name
        try:
            r = check_grads(local, rec.args[a], rng=rng, mode="full")
        except Exception:
            continue
        if not r.passed:
            return r
    return None


def locate(
    f: Callable, *args: Any, wrt: Any = 0, rng: Any = 0, directions: int = DIRECTIONS, **kwargs: Any
) -> Localization:
    """Trace f at ``args`` and check every operation's own derivative.

    Parameters
    ----------
    f : callable
        Written with ``autograd.numpy`` and custom primitives; arguments may
        be nested lists / tuples / dicts of arrays.
    *args
        The point; keyword arguments go to f.
    wrt : int, str or sequence of them
        The input(s) to trace from.
    rng : Generator, RandomState or int
        For the directions and cotangents of the local checks.
    directions : int
        Nearby points re-traced to learn the directions in which each
        operation's inputs move.

    Returns
    -------
    Localization
        ``nodes`` in evaluation order; ``culprit`` the first with a wrong
        derivative, or None; operations that could not be checked say why.

    Examples
    --------
    >>> import autograd.numpy as anp, numpy as np
    >>> loc = locate(lambda x: anp.sum(anp.sin(x) * x), np.array([0.3, 0.7]))
    >>> [n.name for n in loc.nodes], loc.culprit
    (['sin', 'multiply', 'sum'], None)
    """
    gen = as_rng(rng)
    call = bind_call(f, args, kwargs, wrt, constants_ok=False)
    values, specs = call.values, call.specs
    records = record_ops(call, values)
    tangents, aligned = _tangents(call, values, specs, records, gen, max(1, int(directions)))
    nodes, culprit = [], None
    for i, rec in enumerate(records):
        tangent_sets = tangents[i] if i < aligned and tangents[i] else [_random_tangents(rec, gen)]
        try:
            verdict, err = _check_op(rec, tangent_sets, gen)
        except Exception as exc:  # an operation the checker cannot evaluate on its own
            verdict, err = f"not checked: {type(exc).__name__}: {exc}"[:120], onp.nan
        source, code = _source(rec)
        report = (
            _culprit_report(rec, gen) if verdict.startswith("wrong") and culprit is None else None
        )
        node = OpNode(
            rec.index,
            rec.name,
            source,
            verdict,
            err,
            rec.parents,
            tuple(_shapes(rec.args[a])[1] for a in rec.argnums),
            _shapes(rec.value)[1],
            report,
            code,
        )
        nodes.append(node)
        if culprit is None and node.wrong:
            culprit = node
    return Localization(tuple(nodes), culprit, getattr(f, "__name__", "f"))
