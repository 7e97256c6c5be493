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

from collections.abc import Callable
from typing import Any

import numpy as onp

from ..backends import bind_prepared, opened
from ..check.problem import as_rng
from .context import random_tangents, shapes, tangents_in_context
from .local_check import check_operation, culprit_report
from .result import CutInput, Localization, OpNode, OpVerdict
from .sites import rule_site_of, site_of

__all__ = ["locate", "Localization", "OpNode", "DIRECTIONS"]

#: Nearby points re-traced to find the directions each operation's inputs move in.
DIRECTIONS = 3


def locate(
    f: Callable,
    *args: Any,
    wrt: Any = None,
    rng: Any = 0,
    directions: int = DIRECTIONS,
    backend: str | None = None,
    precision: str | None = None,
    **kwargs: Any,
) -> Localization:
    """Trace f at ``args`` and check every operation's own derivative.

    Parameters
    ----------
    f : callable
        Written with ``autograd.numpy`` and custom primitives; arguments may
        be nested lists / tuples / dicts of arrays.
    *args
        The point; keyword arguments go to f.
    wrt : int, str, sequence of them, or None
        The input(s) to trace from. None, as in :func:`check_grads`: every
        argument that holds a float or complex value (and a torch module's
        parameters), so that a rule wrong only for a weight is found too.
    rng : Generator, RandomState or int
        For the directions and cotangents of the local checks.
    directions : int
        Nearby points re-traced to learn the directions in which each
        operation's inputs move.
    backend : {"autograd", "torch", "jax"}, optional
        The AD system f is written for (default: from the arguments).
    precision : {None, "float64", "native"}
        As in :func:`check_grads`: torch and jax run in float64 by default.

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
    with opened(f, args, kwargs, wrt, backend=backend, precision=precision) as (system, prep):
        return _locate(prep, gen, directions, system)


def _locate(prep, gen, directions: int, system) -> Localization:
    f = prep.f
    call = bind_prepared(prep, system, constants_ok=False)
    values, specs = call.values, call.specs
    records = system.record(call, values)
    tangents, aligned, cut = tangents_in_context(
        call, values, specs, records, gen, max(1, int(directions)), system
    )
    nodes, culprit = [], None
    first_of_call: dict = {}  # (name, serial) of a library call -> its first operation
    for i, rec in enumerate(records):
        tangent_sets = tangents[i] if i < aligned and tangents[i] else [random_tangents(rec, gen)]
        try:
            verdict, err, reason = check_operation(rec, tangent_sets, gen, system)
        except Exception as exc:  # an operation the checker cannot evaluate on its own
            verdict, err = OpVerdict.NOT_CHECKED, onp.nan
            reason = f"{type(exc).__name__}: {exc}"[:110]
        site = site_of(rec, system)
        call = tuple(getattr(rec, "call", ()) or ())
        group = first_of_call.setdefault(call, rec.index) if call else rec.index
        wrong_first = verdict.wrong and culprit is None
        report = culprit_report(rec, gen, system) if wrong_first else None
        rule = rule_site_of(rec, system, verdict) if wrong_first else None
        node = OpNode(
            rec.index,
            rec.name,
            site.where if site is not None else "<unknown>",
            verdict,
            err,
            rec.parents,
            tuple(shapes(rec.args[a])[1] for a in rec.argnums),
            shapes(rec.value)[1],
            report,
            site.code if site is not None else "",
            site,
            call[0] if call and call[0] != rec.name else "",
            group,
            rule,
            reason,
            cut[i] if i < aligned else (),
            tuple(_made_by(records, i, a, site_of, system) for a in cut[i]) if i < aligned else (),
        )
        nodes.append(node)
        if culprit is None and node.wrong:
            culprit = node
    return Localization(tuple(nodes), culprit, getattr(f, "__name__", "f"))


def _made_by(records: list, i: int, a: CutInput, site_of: Callable, system: Any) -> str:
    """Where the value of record i's input a was made, as ``name at file:line``: the
    latest earlier operation whose output it equals ("" where none does)."""
    value = onp.asarray(a.value_in(records[i].args, records[i].kwargs))
    for rec in reversed(records[:i]):
        out = rec.value
        if onp.shape(out) == value.shape and onp.array_equal(onp.asarray(out), value):
            site = site_of(rec, system)
            return f"{rec.name} at {site.where}" if site is not None else rec.name
    return ""
