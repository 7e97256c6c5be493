"""The computation graph of a small f, swept by forward and reverse mode, step by step.

For teaching: f is traced once (the backend's ``record``, as for
:func:`gradexplorer.locate`); its inputs, operations and output become the
nodes of a graph holding their primal values. Each operation's local
Jacobian is read from the AD system's own rule (one VJP per entry of its
output), and the chain rule is then applied by hand, one node per step:

* forward mode pushes a tangent from the inputs (``ẋ``, the seed) to the
  output: ``v̇2 = ∂v2/∂v1·v̇1``, summing over the node's arguments;
* reverse mode pulls an adjoint from the output (``ȳ``, the seed) back to the
  inputs: ``v̄1 = ∂v2/∂v1·v̄2 + ∂y/∂v1·ȳ``, summing over the node's consumers.

The final tangent is ``J·ẋ`` (a column of J for ``ẋ = e_j``), the inputs'
final adjoint ``ȳᵀ·J`` (a row for ``ȳ = e_i``); both are checked against the
AD system's own derivative of f before the sweeps are returned.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as onp

from ..backends import bind_prepared, opened
from ..check.rules import flat
from ..core.tree import flatten
from ..errors import GradExplorerError
from .sweepgraph import MAX_ENTRIES, MAX_NODES, ADNode, build_graph, local_jacobians
from .sweeptext import arr, barred, dotted, matrix, symbolic

__all__ = ["ad_sweeps", "ADSweeps", "ADNode", "ADStep", "ADTerm", "MAX_NODES", "MAX_ENTRIES"]

MODES = ("forward", "reverse")


@dataclass(frozen=True, eq=False)
class ADTerm:
    """One product of the chain rule: along the edge ``parent -> consumer``,
    the local derivative ``local`` (``consumer.size × parent.size``) applied to
    the tangent of the parent (forward) or to the adjoint of the consumer
    (reverse). ``symbol`` and ``written`` are the product in symbols and in
    numbers; ``product`` its value."""

    edge: tuple[int, int]
    local: onp.ndarray
    symbol: str
    written: str
    product: onp.ndarray


@dataclass(frozen=True, eq=False)
class ADStep:
    """One step of a sweep: ``node`` gets its tangent (forward) or adjoint
    (reverse), ``derivative``, as the sum of ``terms`` (none for the seed);
    ``text`` writes it out with numbers."""

    index: int
    mode: str
    node: int
    derivative: onp.ndarray
    terms: tuple[ADTerm, ...]
    text: str

    @property
    def edges(self) -> tuple[tuple[int, int], ...]:
        """The edges of the graph this step's chain rule runs along."""
        return tuple(dict.fromkeys(t.edge for t in self.terms))


@dataclass(frozen=True, eq=False)
class ADSweeps:
    """The traced graph of f and its forward and reverse sweeps, step by step.

    A full Jacobian takes ``n_inputs`` forward sweeps (one per input entry,
    each giving a column) or ``n_outputs`` reverse sweeps (one per output
    entry, each giving a row). ``tangent`` is the final ``J·seed``,
    ``adjoint`` the final ``cotangentᵀ·J`` (the inputs' adjoints, flattened).
    """

    function: str
    nodes: tuple[ADNode, ...]
    forward: tuple[ADStep, ...]
    reverse: tuple[ADStep, ...]
    seed: onp.ndarray
    cotangent: onp.ndarray
    backend: str = "autograd"

    @property
    def n_inputs(self) -> int:
        return int(self.seed.size)

    @property
    def n_outputs(self) -> int:
        return int(self.cotangent.size)

    @property
    def inputs(self) -> tuple[int, ...]:
        return tuple(n.index for n in self.nodes if n.kind == "input")

    @property
    def edges(self) -> tuple[tuple[int, int], ...]:
        """Each ``(parent, consumer)`` once, in evaluation order."""
        return tuple(dict.fromkeys((p, n.index) for n in self.nodes for p in n.parents))

    @property
    def tangent(self) -> onp.ndarray:
        """The output's tangent at the end of the forward sweep: ``J·seed``."""
        return onp.ravel(self.forward[-1].derivative)

    @property
    def adjoint(self) -> onp.ndarray:
        """The inputs' adjoints at the end of the reverse sweep: ``cotangentᵀ·J``."""
        last = {s.node: s.derivative for s in self.reverse}
        return onp.concatenate([onp.ravel(last[i]) for i in self.inputs])

    def steps(self, mode: str) -> tuple[ADStep, ...]:
        if mode not in MODES:
            raise ValueError(f"mode must be 'forward' or 'reverse'; got {mode!r}.")
        return self.forward if mode == "forward" else self.reverse

    def step(self, mode: str, k: int) -> ADStep:
        """Step ``k`` of a sweep (negative counts from the end, as for a list)."""
        steps = self.steps(mode)
        if not isinstance(k, (int, onp.integer)) or isinstance(k, bool):
            raise TypeError(f"step must be an int; got {type(k).__name__}.")
        if not -len(steps) <= k < len(steps):
            raise IndexError(
                f"step {k} is out of range: the {mode} sweep of {self.function} has "
                f"{len(steps)} steps, 0 to {len(steps) - 1} (or -1 for the last)."
            )
        return steps[k % len(steps)]

    def visited(self, mode: str, k: int) -> tuple[int, ...]:
        """The nodes whose tangent (adjoint) is known after step ``k``, in order."""
        steps = self.steps(mode)
        last = self.step(mode, k).index
        return tuple(s.node for s in steps[: last + 1])

    def __repr__(self) -> str:
        return (
            f"<ADSweeps of {self.function}: {len(self.nodes)} nodes, "
            f"n = {self.n_inputs} inputs, m = {self.n_outputs} outputs>"
        )

    def __str__(self) -> str:
        lines = [repr(self)]
        for n in self.nodes:
            lines.append(f"  {n.name:>4} = {n.expr:<18} {arr(n.value)}")
        for mode in MODES:
            lines.append(f"{mode} mode:")
            lines.extend(f"  {s.index:>2}. {s.text}" for s in self.steps(mode))
        return "\n".join(lines)


def ad_sweeps(
    f: Callable,
    *args: Any,
    wrt: Any = 0,
    seed: Any = None,
    cotangent: Any = None,
    backend: str | None = None,
    **kwargs: Any,
) -> ADSweeps:
    """Trace a small f and write out its forward and reverse sweeps, step by step.

    Parameters
    ----------
    f : callable
        A function of a few small real arrays (scalars, short vectors) that
        returns one array; autograd.numpy, torch or jax code.
    *args
        The point; keyword arguments go to f.
    wrt : int, str or sequence of them
        The input(s) the sweeps start from (the others are constants).
    seed : int or array_like, optional
        The forward sweep's tangent ``ẋ`` of the inputs (flattened, length
        ``n_inputs``), or ``j`` for the unit vector ``e_j``; default ``e_0``.
    cotangent : int or array_like, optional
        The reverse sweep's adjoint ``ȳ`` of the output (flattened, length
        ``n_outputs``), or ``i`` for ``e_i``; default ``e_0``.
    backend : {"autograd", "torch", "jax"}, optional
        Default: from the arguments.

    Returns
    -------
    ADSweeps

    Raises
    ------
    GradExplorerError
        For a graph of more than :data:`MAX_NODES` nodes, or a value of more
        than :data:`MAX_ENTRIES` entries (everything is written out), or an
        output that does not depend on the inputs.

    Examples
    --------
    >>> import autograd.numpy as anp, numpy as np
    >>> s = ad_sweeps(lambda x: anp.sin(x[0]) * x[1], np.array([0.5, 2.0]))
    >>> [n.expr for n in s.nodes]
    ['x', 'x[0]', 'sin(v1)', 'x[1]', 'v2 * v3']
    >>> s.forward[2].text
    'v̇2 = ∂v2/∂v1·v̇1 = cos(0.5)·1.0 = 0.878'
    >>> s.n_inputs, s.n_outputs, s.adjoint.round(3)
    (2, 1, array([1.755, 0.479]))
    """
    with opened(f, args, kwargs, wrt, backend=backend) as (system, prep):
        call = bind_prepared(prep, system, constants_ok=False)
        if any(s.complex for s in call.specs):
            raise TypeError("ad_sweeps draws real derivatives: pass real inputs.")
        name = getattr(prep.f, "__name__", "f")
        name = "f" if name == "<lambda>" else name
        nodes, edges, records = build_graph(call, system, name)
        n = sum(nodes[i].value.size for i in range(len(call.specs)))
        m = nodes[-1].value.size
        x_dot, y_bar = _seed(seed, n, "seed", "input"), _seed(cotangent, m, "cotangent", "output")
        locals_ = local_jacobians(records, edges, nodes, system)
        forward = _forward(nodes, edges, locals_, records, x_dot)
        reverse = _reverse(nodes, edges, locals_, records, y_bar)
        sweeps = ADSweeps(
            name, tuple(nodes), forward, reverse, x_dot, y_bar,
            system.name,
        )  # fmt: skip
        _verify(sweeps, call, system)
    return sweeps


def _seed(given: Any, size: int, what: str, side: str) -> onp.ndarray:
    """The seed as a flat vector: ``e_j`` for an int ``j``, else the array given."""
    if given is None:
        given = 0
    if isinstance(given, (int, onp.integer)) and not isinstance(given, bool):
        if not 0 <= given < size:
            raise IndexError(f"{what}={given}: the {side} has {size} entries, 0 to {size - 1}.")
        return onp.eye(1, size, int(given))[0]
    v = onp.ravel(onp.asarray(given, dtype=float))
    if v.size != size:
        raise ValueError(f"{what} must have {size} entries (the {side}'s size); got {v.size}.")
    return v


def _written(rec, slot: int, J: onp.ndarray, single: bool) -> str:
    """The local derivative as written: its formula with numbers for a scalar
    operation (``cos(0.5)``), else the numbers."""
    if J.size == 1 and single:
        scalars = [float(a) if onp.ndim(a) == 0 and _is_number(a) else None for a in rec.args]
        text = symbolic(rec, slot, scalars, float(J[0, 0]))
        # a formula with operators in parentheses: (2·0.5)·1.0, not 2·0.5·1.0
        return text if re.fullmatch(r"-?[\w.+]+(\(.*\))?", text) else f"({text})"
    return matrix(J)


def _is_number(a: Any) -> bool:
    try:
        float(a)
    except (TypeError, ValueError):
        return False
    return True


def _factor(value: Any) -> str:
    """A value as the right factor of a product: ``(-1.0)`` in parentheses."""
    text = arr(value)
    return f"({text})" if text.startswith("-") else text


def _sum_text(name: str, terms: list[ADTerm], value: onp.ndarray) -> str:
    symbols = " + ".join(t.symbol for t in terms)
    # a + (-b)·c is written a - b·c
    written = " + ".join(t.written for t in terms).replace(" + -", " - ")
    return f"{name} = {symbols} = {written} = {arr(value)}"


def _forward(nodes, edges, locals_, records, x_dot) -> tuple[ADStep, ...]:
    tangent, steps, at = {}, [], 0
    for node in nodes:
        if node.kind == "input":
            size = node.value.size
            t = x_dot[at : at + size].reshape(node.value.shape)
            at += size
            text = f"{dotted(node.name)} = {arr(t)}   (the seed)"
            terms: list[ADTerm] = []
        else:
            rec, terms = records[node.index], []
            for e, (a, _, p) in enumerate(edges[node.index]):
                J = locals_[node.index, e]
                single = len(flatten(rec.args[a])[0]) == 1
                prod = J @ onp.ravel(tangent[p])
                par = nodes[p].name
                terms.append(
                    ADTerm(
                        (p, node.index),
                        J,
                        f"∂{node.name}/∂{par}·{dotted(par)}",
                        f"{_written(rec, a, J, single)}·{_factor(tangent[p])}",
                        prod.reshape(node.value.shape),
                    )
                )
            t = sum((t_.product for t_ in terms), onp.zeros(node.value.shape))
            text = _sum_text(dotted(node.name), terms, t)
        tangent[node.index] = t
        steps.append(ADStep(len(steps), "forward", node.index, t, tuple(terms), text))
    return tuple(steps)


def _reverse(nodes, edges, locals_, records, y_bar) -> tuple[ADStep, ...]:
    adjoint, steps = {}, []
    consumers: dict[int, list] = {n.index: [] for n in nodes}
    for i in sorted(edges):
        for e, (a, _, p) in enumerate(edges[i]):
            consumers[p].append((i, e, a))
    for node in reversed(nodes):
        if node.kind == "output":
            a_ = y_bar.reshape(node.value.shape)
            text, terms = f"{barred(node.name)} = {arr(a_)}   (the seed)", []
        else:
            terms = []
            for c, e, a in consumers[node.index]:
                J, rec, cn = locals_[c, e], records[c], nodes[c].name
                single = len(flatten(rec.args[a])[0]) == 1
                scalar = J.size == 1
                symbol = f"∂{cn}/∂{node.name}" if scalar else f"(∂{cn}/∂{node.name})ᵀ"
                written = _written(rec, a, J, single) if scalar else matrix(J.T)
                terms.append(
                    ADTerm(
                        (node.index, c),
                        J,
                        f"{symbol}·{barred(cn)}",
                        f"{written}·{_factor(adjoint[c])}",
                        (J.T @ onp.ravel(adjoint[c])).reshape(node.value.shape),
                    )
                )
            a_ = sum((t.product for t in terms), onp.zeros(node.value.shape))
            text = (
                _sum_text(barred(node.name), terms, a_)
                if terms
                else f"{barred(node.name)} = {arr(a_)}   (no operation uses {node.name})"
            )
        adjoint[node.index] = a_
        steps.append(ADStep(len(steps), "reverse", node.index, a_, tuple(terms), text))
    return tuple(steps)


def _verify(sweeps: ADSweeps, call, system) -> None:
    """The sweeps against the AD system's own derivative of f: ``J·ẋ`` and ``ȳᵀJ``."""
    trace = system.vjp(call, call.values)
    y = sweeps.nodes[-1].value
    rows = [
        flat(trace.backward(system.to_array(onp.eye(1, y.size, i)[0].reshape(y.shape))), system)
        for i in range(y.size)
    ]
    J = onp.array(rows).reshape(y.size, sweeps.n_inputs)
    want_t, want_a = J @ sweeps.seed, sweeps.cotangent @ J
    scale = max(float(onp.max(onp.abs(J), initial=0.0)), 1.0)
    for got, want, what in ((sweeps.tangent, want_t, "J·ẋ"), (sweeps.adjoint, want_a, "ȳᵀJ")):
        if not onp.allclose(got, want, rtol=1e-9, atol=1e-12 * scale):
            raise GradExplorerError(
                f"the sweep written out step by step gives {what} = {arr(got)}, but "
                f"{system.name}'s own derivative of {sweeps.function} gives {arr(want)}: "
                "ad_sweeps could not follow how values flow between the recorded operations "
                "(torch and jax records hold copies, told apart by value)."
            )
