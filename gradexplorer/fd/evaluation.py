"""Where f is evaluated: on the host (numpy), or on the inputs' own device.

Finite differences evaluate f at points ``x0 + δ·d`` and reduce the samples to
an estimate and an error per entry. A :class:`HostEvaluator` does both in
numpy, for code written for numpy (autograd, hand-written rules). A
:class:`DeviceEvaluator` keeps everything on the device the inputs live on (a
CUDA tensor, a jax array on a GPU, or the CPU for torch and jax too): the
points are built there from x0 (which never leaves the device) and a step, f
runs there with the device's kernels (many points in one call where the
framework can map f over a batch), and the stencil's samples are reduced
there with the framework's own array functions; only per-entry results (an
estimate, an error, a flag) cross to the host. Every crossing is counted.

The framework-specific pieces (its array functions, copies, ``vmap``) come
from a *kit* that its backend provides (``backend.device_kit(x0)``), so no
framework is imported here.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable
from typing import Any

import numpy as onp

from .fusing import fusable

__all__ = ["HostEvaluator", "DeviceEvaluator", "Crossing", "as_evaluator", "FEW_OUTPUTS"]

#: an evaluator of at most this many outputs reduces its samples on the host
FEW_OUTPUTS = 4096


class HostEvaluator:
    """f on numpy points: the evaluator of code written for numpy.

    >>> ev = HostEvaluator(lambda X: X**2)
    >>> x0, h, offsets = onp.array([1.0, 2.0]), onp.array([0.5]), onp.array([1.0, -1.0])
    >>> ev.points(x0, onp.array([0]), None, h, offsets)
    array([[[2.25, 4.  ],
            [0.25, 4.  ]]])
    """

    xp = onp
    device = "cpu"
    batch_spread = None  # f runs point by point: no batch to round rows by position

    def __init__(self, evaluate: Callable[[onp.ndarray], onp.ndarray], owner: Any = None):
        self.evaluate = evaluate
        self.owner = owner  # what evaluates (a RealMap keeps the errors f raised)
        self.copies = 0  # host <-> device crossings (none on the host)

    @property
    def domain_errors(self) -> list:
        return getattr(self.owner, "domain_errors", [])

    def to_host(self, a: Any) -> onp.ndarray:
        return onp.asarray(a)

    def to_device(self, a: Any) -> Any:
        return onp.asarray(a, dtype=float)

    def errstate(self):
        return onp.errstate(all="ignore")

    def __call__(self, X: onp.ndarray) -> onp.ndarray:
        """f at each row of host points X (for callers that build their own)."""
        return onp.asarray(self.evaluate(X), dtype=float)

    def points(self, x0, columns, vectors, h, offsets) -> Any:
        """Samples ``(k, len(offsets), m)`` at ``x0 + h_k·c·d_k`` for the k directions
        (coordinate ``columns``, or rows of ``vectors``) and offsets c."""
        n_off = offsets.size
        k = h.size
        delta = onp.outer(h, offsets).ravel()
        pts = onp.repeat(x0[None], k * n_off, axis=0)
        if columns is not None:
            cols = onp.repeat(columns, n_off)
            pts[onp.arange(pts.shape[0]), cols] += delta
        else:
            pts += delta[:, None] * onp.repeat(vectors, n_off, axis=0)
        return self(pts).reshape(k, n_off, -1)

    def line(self, x0, p, t) -> Any:
        """Samples ``(len(t), m)`` at ``x0 + t·p`` (the noise probes)."""
        return self(x0[None, :] + t[:, None] * p[None, :])

    def projected(self, U: onp.ndarray, keep: bool = True) -> HostEvaluator:
        """An evaluator of f's outputs followed by (or, without ``keep``, only)
        their projections ``U @ f`` (rows of U: cotangents)."""
        base = self.evaluate

        def run(X):
            Y = onp.asarray(base(X), dtype=float)
            with onp.errstate(all="ignore"):
                P = Y @ U.T
            return onp.hstack([Y, P]) if keep else P

        return HostEvaluator(run, self.owner)

    def rows(self, idx: onp.ndarray) -> HostEvaluator:
        """An evaluator of f's outputs ``idx`` only."""
        base = self.evaluate
        return HostEvaluator(lambda X: onp.asarray(base(X), dtype=float)[:, idx], self.owner)


# The evaluator's small steps on device arrays, one program each where the namespace
# fuses them (jax on an accelerator compiles each eager operation per shape).


@fusable("n")
def _relative(Y, y0, n, xp=onp):
    """Rows 1..n of a batch relative to its row 0 (x0 in the same call), plus f(x0)."""
    return Y[1 : 1 + n] - Y[:1] + y0[None]


@fusable()
def _spread(Y, xp=onp):
    """Per output, how far the rows of a batch spread from its row 0."""
    return xp.max(xp.abs(Y - Y[:1]), axis=0)


@fusable()
def _around(fill, part, xp=onp):
    """fill's first row, then part, then the rest of fill."""
    return xp.concatenate([fill[:1], part, fill[1:]])


class DeviceEvaluator:
    """f on the device its inputs live on, the samples reduced there.

    ``F`` maps one real vector (the inputs realified and concatenated, on the
    device) to the real vector of f's outputs; ``kit`` is the framework's
    (see :mod:`gradexplorer.backends.base`): ``xp`` (numpy-like array
    functions), ``to_host``, ``to_device``, ``repeat``, ``add_at``,
    ``batched(F)`` (F mapped over a leading axis, or None where the framework
    cannot map f), ``device`` (its name).
    Each batch of points is evaluated together with x0 itself, and the
    samples are taken relative to it: a batched call rounds like no other
    call, but like itself. Where a batch rounds its rows by their place in
    it, that spread is measured and reported (:attr:`batch_spread`) as noise
    of the samples.
    """

    def __init__(
        self, F: Callable, kit: Any, x0: onp.ndarray, chunk: int = 256, x0_device: Any = None
    ):
        adapt = getattr(kit, "adapt", None)
        self.F, self.kit = (F if adapt is None else adapt(F)), kit
        #: array functions for the device's arrays (points, f's values)
        self.dxp = kit.xp
        #: where the samples come back and are reduced: the device, or the host for
        #: an evaluator of a few outputs (see :meth:`_few_outputs`)
        self.xp = kit.xp
        self.device = kit.device
        self._crossings = [0]  # shared with the projected evaluators made from this one
        self.chunk = chunk
        self.domain_errors: list = []  # the first error f raised near x (its domain's edge)
        # x0 as the inputs' own leaves on the device, else copied there
        self.x0 = self.to_device(x0) if x0_device is None else x0_device
        self._batched = kit.batched(F)
        # a batched call that compiles f first (jax) is worth it only for batches that
        # would take longer point by point than the compilation (what f costs is timed)
        self._batch_overhead = getattr(kit, "batch_overhead", 0.0)
        started = time.perf_counter()
        self.y0 = self.F(self.x0)
        self._point_cost = time.perf_counter() - started
        #: each eager operation compiles once per shape (jax on an accelerator): sizes
        #: come in a few buckets, and a few outputs' samples are reduced on the host
        self._compiles = bool(getattr(kit, "compiles_per_shape", False))
        if self._compiles:
            self._few_outputs(int(self.y0.shape[0]))
        self.vectorized = self._batched is not None
        self._post = None  # a map of the samples (projections), on the device
        self._measured: set[int] = set()  # batch sizes whose spread is known
        #: per output (host), the most that identical points differ by their place in a
        #: batch (a batched matrix product's edge tiles); None while every batch has
        #: rounded its rows alike
        self.batch_spread: onp.ndarray | None = None

    @property
    def copies(self) -> int:
        """Host <-> device copies so far (this evaluator and those made from it)."""
        return self._crossings[0]

    def to_host(self, a: Any) -> onp.ndarray:
        self._crossings[0] += 1
        return self.kit.to_host(a)

    def to_device(self, a: Any) -> Any:
        self._crossings[0] += 1
        return self.kit.to_device(onp.asarray(a, dtype=float))

    def errstate(self):
        return contextlib.nullcontext()

    def __call__(self, X: onp.ndarray) -> onp.ndarray:
        """f at host points (a few: a Taylor step, a check of one point)."""
        Y = self._run(self.to_device(X))
        return Y if isinstance(Y, onp.ndarray) else self.to_host(Y)

    def _run(self, X: Any) -> Any:
        """f at each row of device points X, relative to f(x0) in the same call."""
        xp = self.dxp
        outs = []
        # a batch is x0 and up to chunk - 1 points: chunk rows, a power of two
        per_batch = max(1, self.chunk - 1)
        for start in range(0, X.shape[0], per_batch):
            part = X if X.shape[0] <= per_batch else X[start : start + per_batch]
            if self._batched is not None and self._worth_batching(part.shape[0]):
                try:
                    padded = self._padded(part)
                    self._measure_spread(padded.shape[0])
                    Y = self._batched(padded)
                    outs.append(_relative(Y, self.y0, part.shape[0], xp=self.dxp))
                    continue
                except Exception:  # f cannot be mapped over a batch: one point at a time
                    pass
                self._batched, self.vectorized = None, False
            started = time.perf_counter()
            outs.append(xp.stack([self._one(row) for row in part]))
            spent = (time.perf_counter() - started) / max(1, part.shape[0])
            self._point_cost = min(self._point_cost, spent)
        Y = xp.concatenate(outs) if outs else xp.zeros((0, self.y0.shape[0]))
        Y = Y if self._post is None else self._post(Y)
        return self.to_host(Y) if self._host_samples else Y

    @property
    def _host_samples(self) -> bool:
        return self.xp is onp and self.dxp is not onp

    def _few_outputs(self, width: int) -> None:
        """Samples of a few outputs (projections, chosen rows) come back to the host
        and are reduced there: one small copy per batch, where reducing them on the
        device costs a kernel launch per operation, and on jax a compilation per
        operation and shape (hundreds in a search over 10^6 inputs)."""
        if width <= FEW_OUTPUTS:
            self.xp = onp

    def _measure_spread(self, size: int) -> None:
        """How far f over a batch of ``size`` copies of x0 (then the projections, if
        any) spreads its rows. A batched matrix product can round each row by its
        position in the batch (a BLAS kernel's edge tiles: ~1e-13 for tanh(W @ v) at
        n = 2000): samples from such a batch carry that rounding as noise, which the
        stencil must be told of (unseen, it made false alarms at 1.01-1.12x there).
        Asked once per size."""
        if size in self._measured:
            return
        self._measured.add(size)
        Y = self._batched(self.kit.repeat(self.x0[None], size))
        if self._post is not None:
            Y = self._post(Y)
        spread = self.to_host(_spread(Y, xp=self.dxp))
        if onp.any(spread > 0):
            old = self.batch_spread
            self.batch_spread = spread if old is None else onp.fmax(old, spread)

    def _worth_batching(self, rows: int) -> bool:
        return rows * self._point_cost >= self._batch_overhead

    def _padded(self, part: Any) -> Any:
        """x0, then the points, then copies of x0 up to a power of two: a framework
        that compiles f per batch shape (jax) compiles a handful of shapes, not one
        per stencil."""
        rows = 1 + part.shape[0]
        size = 1 << (rows - 1).bit_length()
        fill = self.kit.repeat(self.x0[None], size - rows + 1)
        return _around(fill, part, xp=self.dxp)

    def _one(self, row: Any) -> Any:
        """f at one point; where f raises (outside its domain), NaN, the error kept."""
        try:
            return self.F(row)
        except Exception as exc:
            if not self.domain_errors:
                self.domain_errors.append(exc)
            return self.y0 * onp.nan

    def points(self, x0, columns, vectors, h, offsets) -> Any:
        k = h.size
        if self._compiles and columns is not None and k & (k - 1):
            # coordinate columns padded to a power of two (steps of 0: copies of x0), so
            # that the points, the batches and their reductions take a few shapes, not
            # one per count of columns still unsettled at each step level
            pad = (1 << k.bit_length()) - k
            columns = onp.concatenate([columns, onp.zeros(pad, columns.dtype)])
            h = onp.concatenate([h, onp.zeros(pad)])
            return self._points(columns, None, h, offsets)[:k]
        return self._points(columns, vectors, h, offsets)

    def _points(self, columns, vectors, h, offsets) -> Any:
        xp = self.dxp
        n_off, k = offsets.size, h.size
        delta = self.to_device(onp.outer(h, offsets).ravel())
        if columns is not None:
            pts = self.kit.repeat(self.x0[None], k * n_off)
            rows = onp.arange(k * n_off)
            pts = self.kit.add_at(pts, rows, onp.repeat(columns, n_off), delta)
        else:
            # each direction crosses once (not once per offset), the points are made here
            dirs = self.to_device(vectors)
            steps = xp.reshape(delta, (k, n_off, 1)) * dirs[:, None, :]
            pts = xp.reshape(self.x0[None, None, :] + steps, (k * n_off, -1))
        return self.xp.reshape(self._run(pts), (k, n_off, -1))

    def line(self, x0, p, t) -> Any:
        pd, td = self.to_device(p), self.to_device(t)
        return self._run(self.x0[None, :] + td[:, None] * pd[None, :])

    def projected(self, U: onp.ndarray, keep: bool = True) -> DeviceEvaluator:
        """An evaluator of f's outputs followed by (or, without ``keep``, only)
        their projections ``U @ f``, computed on the device after f (so f
        itself is mapped over batches as before)."""
        Ut, xp = self.to_device(U).T, self.dxp

        def project(Y):
            P = Y @ Ut
            return xp.concatenate([Y, P], axis=1) if keep else P

        out = copy.copy(self)
        # the projections round in batches of their own: measured anew
        out._measured, out.batch_spread = set(), None
        out._post = project if self._post is None else (lambda Y: project(self._post(Y)))
        out._few_outputs(U.shape[0] + (self.y0.shape[0] if keep else 0))
        return out

    def rows(self, idx: onp.ndarray) -> DeviceEvaluator:
        """An evaluator of f's outputs ``idx`` only, chosen on the device: the
        points are built there and only those rows of the samples are reduced
        (a search that follows a few outputs of 10^6 moves no 10^6-wide arrays
        between host and device)."""
        idx = onp.asarray(idx, dtype=onp.int64)
        post = self._post
        out = copy.copy(self)
        out._measured = set(self._measured)
        out.batch_spread = None if self.batch_spread is None else self.batch_spread[idx]
        if post is None:
            out._post = lambda Y: Y[:, idx]
        else:
            out._post = lambda Y: post(Y)[:, idx]
        out._few_outputs(idx.size)
        return out


class Crossing:
    """Moves per-entry arrays between the host and the evaluator's device (no-ops
    on the host)."""

    def __init__(self, ev):
        self.ev = ev
        self.host = ev.xp is onp

    def put(self, a):
        return a if self.host else self.ev.to_device(a)

    def get(self, a):
        return a if self.host else self.ev.to_host(a)

    def fields(self, obj):
        """A result dataclass (Combined, OneSided) with every array on the host."""
        if self.host:
            return obj
        for name, value in vars(obj).items():
            if value is not None and not isinstance(value, (int, float)):
                setattr(obj, name, self.ev.to_host(value))
        return obj


def as_evaluator(evaluate: Any) -> Any:
    """An evaluator as it is, or a host callable wrapped in one."""
    if isinstance(evaluate, (HostEvaluator, DeviceEvaluator)):
        return evaluate
    return HostEvaluator(evaluate)
