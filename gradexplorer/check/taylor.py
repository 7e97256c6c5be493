"""A tolerance-free second opinion: the Taylor-remainder test.

Along a direction v, ``r(h) = f(x + h·v) - f(x) - h·J v`` shrinks like h² when
J is f's derivative and like h when it is not (the missing ``h·(J_true - J)v``
dominates as h falls). Halving h and watching the ratio of successive
remainders (the observed order ``log2(r(h) / r(h/2))``) needs no tolerance
and no estimate of a derivative: where finite differences cannot pin single
entries down (f noisy, a staircase, an oscillation), the order of a whole
input block still shows whether its derivative is right (as pyadjoint's
``taylor_test`` does for adjoints).

Orders are read at the smallest steps whose remainder stands clear above f's
rounding (the asymptotic range); a remainder that never does is unresolved.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as onp

from ..fd.quantum import output_quantum

__all__ = ["Convergence", "TaylorBlock", "TaylorResult", "taylor_blocks", "taylor_test"]

#: Steps relative to the FD base step: 8x it, halved this many times.
HALVINGS = 12
#: A remainder counts only this far above f's rounding floor.
CLEAR = 100.0
#: Observed orders below this mean the derivative is wrong.
FIRST_ORDER_BELOW = 1.5
#: A step where f's change and its derivative's prediction differ by more than this
#: factor is outside the range where a Taylor expansion describes f.
SCALE_APART = 10.0


class Convergence(str, enum.Enum):
    """How the Taylor remainder of a block shrinks."""

    SECOND = "second order"
    FIRST = "first order"
    UNRESOLVED = "unresolved"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class TaylorBlock:
    """One output-by-input block: the observed order and the remainders it came from."""

    output: str
    input: str
    order: float
    steps: tuple[float, ...]
    remainders: tuple[float, ...]  # the slowest-converging output's, per step
    #: per output coordinate of the block, its slowest order (NaN: unresolved)
    orders: tuple[float, ...] = ()

    def settles(self, rows) -> bool:
        """Whether the block's output coordinates ``rows`` (offsets within the
        block) all converge at second order."""
        got = onp.asarray(self.orders, dtype=float)[list(rows)]
        return bool(got.size) and bool(onp.all(got >= FIRST_ORDER_BELOW))

    @property
    def convergence(self) -> Convergence:
        if not onp.isfinite(self.order):
            return Convergence.UNRESOLVED
        return Convergence.FIRST if self.order < FIRST_ORDER_BELOW else Convergence.SECOND

    def __str__(self) -> str:
        order = "unresolved" if not onp.isfinite(self.order) else f"order {self.order:.2f}"
        return f"{self.output} / {self.input}: {self.convergence} ({order})"


@dataclass(frozen=True)
class TaylorResult:
    """The Taylor test of every output-by-input block.

    ``failed`` lists the blocks whose remainder shrinks only like h (their
    derivative is wrong); ``passed`` holds when every block converges at
    second order (none unresolved).
    """

    blocks: tuple[TaylorBlock, ...]
    function: str = "f"
    nfev: int = 0

    @property
    def failed(self) -> tuple[TaylorBlock, ...]:
        return tuple(b for b in self.blocks if b.convergence is Convergence.FIRST)

    @property
    def passed(self) -> bool:
        return all(b.convergence is Convergence.SECOND for b in self.blocks)

    def block(self, output: str, input: str) -> TaylorBlock:
        for b in self.blocks:
            if (b.output, b.input) == (output, input):
                return b
        raise KeyError((output, input))

    def summary(self) -> str:
        counts = {c: sum(b.convergence is c for b in self.blocks) for c in Convergence}
        parts = [f"{n} {c}" for c, n in counts.items() if n]
        text = ", ".join(parts) + f" of {len(self.blocks)} block(s)"
        if self.failed:
            text += "; first order (wrong): " + ", ".join(
                f"{b.output} / {b.input}" for b in self.failed[:4]
            )
        return text

    def __str__(self) -> str:
        lines = [f"taylor_test({self.function}): {self.summary()}; {self.nfev} f evaluations"]
        lines.extend(f"  {b}" for b in self.blocks)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(str(self))}</pre>"


def taylor_blocks(
    evaluate: Callable[[onp.ndarray], onp.ndarray],
    x0: onp.ndarray,
    y0: onp.ndarray,
    jvp: Callable[[onp.ndarray], onp.ndarray],
    rows: Any,
    cols: Any,
    steps: onp.ndarray,
    floor: onp.ndarray,
    gen: onp.random.Generator,
    *,
    directions: int = 2,
    which: set | None = None,
    support: onp.ndarray | None = None,
    out_eps: onp.ndarray | float = 2.0**-52,
) -> tuple[list[TaylorBlock], int]:
    """The Taylor test of each block (or of ``which``: ``{(output, input)}``).

    ``evaluate(X)`` is f at each row of X (a row of NaN where f raises: a step
    across its domain's edge); ``jvp(v)`` is the analytic J v; ``steps`` the FD
    base steps per input coordinate (v is scaled like them); ``floor`` f's
    rounding per output;
    ``support`` (a mask over the input coordinates) where v may move: f must
    be differentiable along it (a kink makes any remainder first order).
    """
    out, nfev = [], 0
    base = float(onp.max(steps, initial=0.0)) or 1.0
    hs = 8.0 * base * 2.0 ** -onp.arange(HALVINGS + 1)
    for cname, cs in cols.slices.items():
        wanted = [r for r in rows.slices if which is None or (r, cname) in which]
        if not wanted:
            continue
        per_dir, samples = [], []
        moves = onp.zeros(x0.size, bool)
        moves[cs] = True if support is None else support[cs]
        if not moves.any():
            continue
        for _ in range(directions):
            v = onp.zeros(x0.size)
            v[moves] = gen.standard_normal(int(moves.sum())) * steps[moves] / base
            jv = onp.asarray(jvp(v), dtype=float)
            ys = onp.asarray(evaluate(x0[None, :] + hs[:, None] * v[None, :]), dtype=float)
            nfev += hs.size
            samples.append(ys)
            with onp.errstate(all="ignore"):
                moved, predicted = ys - y0[None, :], hs[:, None] * jv[None, :]
                rem = onp.abs(moved - predicted)
                # a remainder means something only where f moves about as much as its
                # derivative says: far apart at a step, f's own scale (an erratic f, a
                # singularity nearby) is below that step, and no order can be read there
                apart = onp.abs(predicted) > SCALE_APART * onp.abs(moved)
                apart |= onp.abs(moved) > SCALE_APART * onp.abs(predicted)
                # nor where f does not move in proportion to the step into the next one:
                # beyond f's own structure (sin x over steps of 60, across ten periods) f
                # stays bounded while h·Jv grows, and their gap falls like h, a false first
                # order
                shrinks = onp.abs(moved[:-1]) >= FALLING * onp.abs(moved[1:])
                apart[:-1] |= ~shrinks
                per_dir.append(onp.where(apart, onp.nan, rem))
        # an output on a rounding staircase cannot show a remainder below its quantum
        # (on a flat stair the remainder is h·Jv exactly: a false first order)
        quantum = output_quantum(onp.concatenate(samples), y0, out_eps)
        level = onp.fmax(floor, quantum)
        for rname in wanted:
            rs = rows.slices[rname]
            order, rem, orders = _block_order([r[:, rs] for r in per_dir], level[rs])
            out.append(TaylorBlock(rname, cname, order, tuple(hs), tuple(rem), tuple(orders)))
    return out, nfev


def _block_order(remainders: list[onp.ndarray], floor: onp.ndarray):
    """The slowest order over the block's outputs and directions (NaN: none
    resolved), its remainders, and each output's slowest order."""
    worst, worst_rem = onp.inf, remainders[0][:, 0]
    orders = onp.full(remainders[0].shape[1], onp.nan)
    for R in remainders:
        for i in range(R.shape[1]):
            order = _order(R[:, i], floor[i])
            if onp.isfinite(order):
                orders[i] = onp.fmin(orders[i], order)
                if order < worst:
                    worst, worst_rem = order, R[:, i]
    return (float(worst) if onp.isfinite(worst) else float("nan")), worst_rem, orders


def _order(r: onp.ndarray, floor: float) -> float:
    """The median order of the last three step pairs of the *asymptotic run*:
    from the largest step down, the pairs over which the remainder keeps
    falling (by 1.6x or more a halving) while clear above the floor. Where
    rounding or noise takes over, the remainder stops falling and the run
    ends, so noise (whatever the floor estimate says) never reads as an
    order; a run shorter than three pairs is unresolved."""
    clear = onp.isfinite(r) & (r > CLEAR * max(floor, onp.finfo(float).tiny))
    with onp.errstate(all="ignore"):
        ratio = r[:-1] / r[1:]
    falling = clear[:-1] & clear[1:] & (ratio >= FALLING)
    run = 0
    while run < falling.size and falling[run]:
        run += 1
    if run < 3:
        return float("nan")
    return float(onp.median(onp.log2(ratio[run - 3 : run])))


#: A remainder that falls by less than this a halving has reached f's rounding.
FALLING = 1.6


def taylor_test(
    f: Callable,
    *args: Any,
    wrt: Any = None,
    directions: int = 2,
    rng: Any = None,
    reseed: int | None = None,
    backend: str | None = None,
    precision: str | None = None,
    **kwargs: Any,
) -> TaylorResult:
    """The Taylor-remainder test of f's derivative, block by block.

    Along random directions v in each input (one block per output and input
    leaf), the remainder ``|f(x + h·v) - f(x) - h·J v|`` is computed over a
    halving sequence of h; its observed order is 2 where J is right and 1
    where it is wrong. No tolerance is involved: it settles what finite
    differences cannot resolve entry by entry (noise, staircases).

    Parameters
    ----------
    f, *args, wrt, rng, reseed, backend, precision, **kwargs
        As for :func:`~gradexplorer.check_grads`.
    directions : int
        Random directions per input block (the slowest order counts).

    Returns
    -------
    TaylorResult

    Examples
    --------
    >>> import autograd.numpy as anp
    >>> import gradexplorer as gx
    >>> x = anp.linspace(0.2, 1.0, 4)
    >>> taylor_test(lambda x: anp.sin(x) * x, x).passed
    True
    >>> bad = gx.primitive(lambda x: anp.sin(x))
    >>> gx.defvjp(bad, lambda ans, x: lambda g: g * anp.sin(x))   # should be cos
    >>> taylor_test(bad, x).failed[0].convergence
    <Convergence.FIRST: 'first order'>
    """
    from ..backends import opened
    from ..core.guards import keeping_random_state
    from ..fd.noise import probe_noise
    from ..fd.schemes import NOISE_SIGMAS
    from .problem import as_rng, build_problem
    from .rules import flat

    gen = as_rng(rng)
    with (
        keeping_random_state(reseed is not None),
        opened(f, args, kwargs, wrt, backend=backend, precision=precision) as (system, prep),
    ):
        p = build_problem(prep.f, prep.args, prep.kwargs, prep.wrt, reseed=reseed, backend=system)
        x0 = p.x0
        y0 = p.evaluate_one(x0)
        tr = system.vjp(p.F, p.vs)
        dtype = onp.asarray(system.to_numpy(tr.value)).dtype

        def jvp(v):
            try:
                _, jv, _ = system.jvp(p.F, p.vs, p.split(v), fallback=True)
                return onp.real(onp.ravel(onp.asarray(system.to_numpy(jv), dtype=complex)))
            except NotImplementedError:  # no forward mode: rows by reverse mode
                rows = [
                    flat(tr.backward(system.to_array(onp.eye(1, p.m, i, dtype=dtype)[0])), system)
                    for i in range(p.m)
                ]
                return onp.array(rows) @ v

        out_eps = onp.concatenate([onp.full(s.real_size, s.eps) for s in p.rows.sides])
        steps = p.steps("richardson")
        noise, n_probe = probe_noise(p.evaluator, x0, y0, steps, p.spacing(), out_eps, rng=gen)
        floor = NOISE_SIGMAS * noise.level0
        blocks, nfev = taylor_blocks(
            p.evaluator, x0, y0, jvp, p.rows, p.cols, steps, floor, gen,
            directions=directions, out_eps=out_eps,
        )  # fmt: skip
    return TaylorResult(tuple(blocks), p.name, nfev + n_probe + 1)
