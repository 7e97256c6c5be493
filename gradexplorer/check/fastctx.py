"""What the fast check carries while it looks: the problem, its noise, the cost so far."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as onp

from ..fd.directional import directional_derivatives
from ..fd.noise import NoiseModel
from .judging import FD_SAFETY, RTOL_ULPS
from .problem import Problem
from .rules import flat

#: Stop localizing after this many wrong rows / columns (a systematic bug hits them all).
MAX_LOCATED = 32


@dataclass
class _Cost:
    nfev: int = 0
    ngrad: int = 0


@dataclass
class _Dir:
    """``J d`` by finite differences for one direction, rows with errors."""

    d: onp.ndarray
    est: onp.ndarray
    err: onp.ndarray


@dataclass
class _Ctx:
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
    cost: _Cost = field(default_factory=_Cost)
    notes: list = field(default_factory=list)
    linear: bool = True

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

    def fd(self, d: onp.ndarray, evaluate=None, noise=None, y0=None) -> _Dir:
        """J d by differences, settled as soon as it is consistent: these
        tests only steer the search, every reported entry is judged alone."""
        evaluate = evaluate or self.p.batch
        res = directional_derivatives(
            evaluate,
            self.x0,
            self.y0 if y0 is None else y0,
            self.row_noise if noise is None else noise,
            onp.array([self.base]),
            vectors=d[None, :],
            method=self.method,
            balance=onp.inf,
            spacing=self.spacing,
            coord_eps=self.col_eps,
        )
        self.cost.nfev += res.nfev
        return _Dir(res.vectors[0], res.est[0], res.err[0])

    def rtol_rows(self) -> onp.ndarray:
        return RTOL_ULPS * self.row_eps if self.rtol is None else onp.full(self.y0.size, self.rtol)


def _allowed(fd_err, rt, magnitude, atol):
    return FD_SAFETY * fd_err + rt * magnitude + atol
