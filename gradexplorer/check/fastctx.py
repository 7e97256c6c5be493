"""What the fast check carries while it looks: the problem, its noise, the cost
so far, and how many wrong entries it may still name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as onp

from ..fd.directional import directional_derivatives
from ..fd.noise import NoiseModel
from ..fd.steps import step_ratio
from .judging import FD_SAFETY, RTOL_ULPS
from .problem import Problem
from .rules import flat

__all__ = ["Cost", "Along", "FastContext", "allowed"]


@dataclass
class Cost:
    nfev: int = 0
    ngrad: int = 0


@dataclass
class Along:
    """``J d`` by finite differences for one direction, rows with errors."""

    d: onp.ndarray
    est: onp.ndarray
    err: onp.ndarray


@dataclass
class FastContext:
    p: Problem
    tr: object
    x0: onp.ndarray
    y0: onp.ndarray
    noise: NoiseModel
    base: float
    scale: onp.ndarray
    row_eps: onp.ndarray
    col_eps: onp.ndarray
    atol: float
    rtol: float | None
    method: str
    spacing: onp.ndarray
    #: the search stops after locating this many rows / columns (and says so)
    budget: int = 32
    cost: Cost = field(default_factory=Cost)
    notes: list = field(default_factory=list)
    linear: bool = True
    #: the rule disagrees with itself (rounds, or is a solver): a failing entry's
    #: rounded part may be all it differs by (:func:`~.rounded.rounded_parts`)
    rounds: bool = False
    #: the widest bar a passing projection was judged within, over its value
    loose: float = 0.0
    #: per row, the ways its rule splits into rounded and exact parts, where asked
    #: (:func:`~.rounded.rounded_splits`)
    splits: dict = field(default_factory=dict)
    #: the search found more than its budget: more wrong entries may remain
    capped: bool = False
    #: why projections cannot be judged entry by entry here (the full check then is,
    #: where affordable): a precision that differs by coordinate, or by seed
    mixed_precision: str = ""
    #: f's rows followed by its projections (the projections measured as outputs)
    ext: Callable | None = None
    #: the full check the search fell back on, if it did (its unresolved entries and
    #: an inconclusive verdict are the fast check's too)
    fallback: Any = None

    def vjp(self, u: onp.ndarray) -> onp.ndarray:
        self.cost.ngrad += 1
        backend = self.p.backend
        g = self.tr.backward(backend.to_array(onp.asarray(u, self.y_dtype)))
        return flat(g, backend)

    @property
    def y_dtype(self):
        return onp.asarray(self.p.backend.to_numpy(self.tr.value)).dtype

    def jvp(self, d: onp.ndarray) -> onp.ndarray:
        self.cost.ngrad += 1
        _, jv, _ = self.p.backend.jvp(self.p.F, self.p.vs, self.p.split(d), fallback=True)
        return onp.ravel(onp.asarray(self.p.backend.to_numpy(jv), dtype=float))

    @property
    def row_noise(self) -> NoiseModel:
        return self.noise.take(slice(0, self.y0.size))

    def fd(
        self, d: onp.ndarray, evaluate=None, noise=None, y0=None, outputs=None, method=None
    ) -> Along:
        """J d by differences, settled as soon as it is consistent: these
        tests only steer the search, every reported entry is judged alone.
        ``outputs`` (row indices) keeps only those rows, and spends no time on
        the others (f still computes them)."""
        evaluate = evaluate or self.p.evaluator
        y0 = self.y0 if y0 is None else y0
        noise = self.row_noise if noise is None else noise
        if outputs is not None:
            full = evaluate
            if hasattr(full, "rows"):  # an evaluator: the rows are chosen where f runs
                evaluate = full.rows(outputs)
            else:
                evaluate = lambda X: full(X)[:, outputs]  # noqa: E731
            y0, noise = y0[outputs], noise.take(outputs)
        method = method or self.method
        base = self.base * step_ratio(method, float(self.col_eps.max()), self.method)
        res = directional_derivatives(
            evaluate,
            self.x0,
            y0,
            noise,
            onp.array([base]),
            vectors=d[None, :],
            method=method,
            balance=onp.inf,
            spacing=self.spacing,
            coord_eps=self.col_eps,
        )
        self.cost.nfev += res.nfev
        return Along(res.vectors[0], res.est[0], res.err[0])

    def rtol_rows(self) -> onp.ndarray:
        return RTOL_ULPS * self.row_eps if self.rtol is None else onp.full(self.y0.size, self.rtol)


def allowed(fd_err, rt, magnitude, atol):
    """What a projection or an entry may differ by: as :func:`~.judging.judge`."""
    return FD_SAFETY * fd_err + rt * magnitude + atol
