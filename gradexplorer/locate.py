"""Where is the bug? Trace f, check every operation's own derivative, name the first wrong one.

A Jacobian heatmap says *which entries* are wrong; ``locate`` says *which
operation*, and on which line of the user's code it was called. f is traced
with autograd's tracer; each recorded primitive is then checked on its own,
at the inputs it saw, with :func:`gradexplorer.check_grads` (its VJP, and its
JVP where one is defined). The first operation in evaluation order whose
local derivative is wrong is the culprit.
"""

from __future__ import annotations

import html
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import autograd
import numpy as onp
from autograd.tracer import Node, new_box, trace_stack

from .ad import prepare_call
from .report import CheckReport

__all__ = ["locate", "Localization", "OpNode"]

_AUTOGRAD_DIR = os.path.dirname(autograd.__file__)
_NUMPY_DIR = os.path.dirname(onp.__file__)
_OWN_DIR = os.path.dirname(__file__)
_USER_FILES_IN_PACKAGE = {os.path.join(_OWN_DIR, "gallery.py")}
_LIBRARY_CACHE: dict = {}


@dataclass(frozen=True)
class OpNode:
    """One traced operation.

    ``name`` is the primitive's own name (``softplus``, ``dot``); ``source``
    the ``file:line`` of the call in the user's code; ``verdict`` is ``ok``,
    ``wrong VJP``, ``wrong JVP``, ``kink`` or ``not checked: ...``;
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

    @property
    def wrong(self) -> bool:
        return self.verdict.startswith("wrong")

    def __str__(self) -> str:
        err = f"{self.local_error:.3g}" if onp.isfinite(self.local_error) else "-"
        return f"#{self.index:<3} {self.name:<16} {self.source:<36} {self.verdict:<12} {err}"


@dataclass(frozen=True, repr=False)
class Localization:
    """The traced operations of f and the first one with a wrong derivative."""

    nodes: tuple[OpNode, ...]
    culprit: OpNode | None
    function: str = "f"

    def __repr__(self) -> str:
        return f"<Localization of {self.function}: {self._headline()}>"

    def _headline(self) -> str:
        if self.culprit is None:
            return f"all {len(self.nodes)} operations have right derivatives"
        c = self.culprit
        return (
            f"culprit: {c.name} at {c.source} ({c.verdict}), operation {c.index + 1} of "
            f"{len(self.nodes)}"
        )

    def __str__(self) -> str:
        lines = [
            f"locate({self.function}): {self._headline()}",
            f"  {'#':<4} {'operation':<16} {'called at':<36} {'verdict':<12} violation",
        ]
        for n in self.nodes:
            mark = ">" if n is self.culprit else " "
            lines.append(f"{mark} {n}")
        if self.culprit is not None and self.culprit.report is not None:
            lines.append("  the culprit's own derivative:")
            lines.extend("    " + ln for ln in str(self.culprit.report).splitlines()[:8])
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = []
        for n in self.nodes:
            style = ' style="background:#fde2d0;font-weight:bold"' if n is self.culprit else ""
            err = f"{n.local_error:.3g}" if onp.isfinite(n.local_error) else "–"
            rows.append(
                f"<tr{style}><td>{n.index}</td><td>{html.escape(n.name)}</td>"
                f"<td><code>{html.escape(n.source)}</code></td>"
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


# ---------------------------------------------------------------- tracing


@dataclass
class _Record:
    index: int
    fun: Any
    args: tuple
    kwargs: dict
    argnums: tuple
    parents: tuple
    value: Any
    source: str


class _Recorder:
    records: list | None = None


class _RecordingNode(Node):
    __slots__ = ["record"]

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        recs = _Recorder.records
        parent_ids = tuple(p.record.index for p in parents if p.record is not None)
        self.record = _Record(
            len(recs),
            fun,
            tuple(args),
            dict(kwargs),
            tuple(parent_argnums),
            parent_ids,
            value,
            _user_source(),
        )
        recs.append(self.record)

    def initialize_root(self):
        self.record = None


def _user_source() -> str:
    frame = sys._getframe(2)
    while frame is not None:
        path = frame.f_code.co_filename
        internal = (
            path.startswith((_AUTOGRAD_DIR, _NUMPY_DIR))
            or (path.startswith(_OWN_DIR) and path not in _USER_FILES_IN_PACKAGE)
            or "contextlib" in path
            or path.startswith("<frozen")
        )
        if not internal:
            try:
                shown = os.path.relpath(path)
            except ValueError:
                shown = path
            if shown.startswith(".."):
                shown = path
            return f"{shown}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>:0"


def _trace(f: Callable, args: list, kwargs: dict, argnums) -> list[_Record]:
    _Recorder.records = []
    try:
        with trace_stack.new_trace() as t:
            boxed = list(args)
            for i in argnums:
                boxed[i] = new_box(args[i], t, _RecordingNode.new_root())
            f(*boxed, **kwargs)
        return _Recorder.records
    finally:
        _Recorder.records = None


# ---------------------------------------------------------------- checking


def _name(fun: Any) -> str:
    raw = getattr(fun, "fun", fun)
    return getattr(raw, "__name__", None) or type(raw).__name__


def _is_library(fun: Any) -> bool:
    module = getattr(getattr(fun, "fun", fun), "__module__", "") or ""
    return module.startswith(("autograd", "numpy", "scipy")) or module == ""


def _check_node(rec: _Record, rng) -> tuple[str, float, CheckReport | None]:
    from .check import check_grads

    worst, verdict, report = 0.0, "ok", None
    for argnum in rec.argnums:
        key = None
        if _is_library(rec.fun):
            key = (
                rec.fun,
                argnum,
                tuple(
                    (onp.shape(a), str(onp.asarray(a).dtype))
                    if isinstance(a, (onp.ndarray, float, complex))
                    else repr(a)
                    for a in rec.args
                ),
                repr(sorted(rec.kwargs.items())),
            )
            if key in _LIBRARY_CACHE:
                v, e, r = _LIBRARY_CACHE[key]
                worst, verdict, report = max(worst, e), v if v != "ok" else verdict, r or report
                continue
        local = _local_function(rec, argnum)
        try:
            r = check_grads(
                local,
                onp.asarray(rec.args[argnum]) if onp.ndim(rec.args[argnum]) else rec.args[argnum],
                rng=rng,
            )
        except Exception as exc:  # an op the checker cannot evaluate on its own
            v, e, r = f"not checked: {type(exc).__name__}", onp.nan, None
        else:
            e = float(max((m.violation for m in r.mismatches), default=0.0))
            if r.passed:
                v = "kink" if r.kinks else "ok"
            else:
                fwd_only = all(m.label.endswith("[fwd]") for m in r.mismatches)
                v = "wrong JVP" if fwd_only else "wrong VJP"
        if key is not None:
            _LIBRARY_CACHE[key] = (v, e, r)
        if v.startswith("wrong") and not verdict.startswith("wrong"):
            verdict, report = v, r
        elif verdict == "ok" and v != "ok":
            verdict = v
        if onp.isfinite(e):
            worst = max(worst, e)
    return verdict, worst, report


def _local_function(rec: _Record, argnum: int) -> Callable:
    fun, args, kwargs = rec.fun, rec.args, rec.kwargs

    def local(x):
        a = list(args)
        a[argnum] = x
        return fun(*a, **kwargs)

    local.__name__ = _name(fun)
    return local


def locate(f: Callable, *args: Any, wrt: Any = 0, rng: Any = 0, **kwargs: Any) -> Localization:
    """Trace f at ``args`` and check every operation's own derivative.

    Parameters
    ----------
    f : callable
        Written with ``autograd.numpy`` and custom primitives.
    *args
        The point; keyword arguments go to f.
    wrt : int, str or sequence of them
        The input(s) to trace from.
    rng : Generator, RandomState or int
        For the checker's random projections.

    Returns
    -------
    Localization
        ``nodes`` in evaluation order; ``culprit`` the first with a wrong
        derivative, or None.

    Examples
    --------
    >>> import autograd.numpy as anp, numpy as np
    >>> loc = locate(lambda x: anp.sum(anp.sin(x) * x), np.array([0.3, 0.7]))
    >>> [n.name for n in loc.nodes], loc.culprit
    (['sin', 'multiply', 'sum'], None)
    """
    args_l, kwargs, argnums, _ = prepare_call(f, wrt, args, kwargs)
    records = _trace(f, args_l, kwargs, argnums)
    nodes = []
    culprit = None
    for rec in records:
        verdict, err, report = _check_node(rec, rng)
        node = OpNode(
            rec.index,
            _name(rec.fun),
            rec.source,
            verdict,
            err,
            rec.parents,
            tuple(onp.shape(rec.args[i]) for i in rec.argnums),
            onp.shape(rec.value),
            report,
        )
        nodes.append(node)
        if culprit is None and node.wrong:
            culprit = node
    return Localization(tuple(nodes), culprit, getattr(f, "__name__", "f"))
