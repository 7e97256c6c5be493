"""Finite-difference Jacobians with per-entry error estimates.

The checker judges each entry against the estimated error instead of a fixed
tolerance, so the estimate must be honest: f's own noise is measured
(:mod:`gradexplorer.noise`), steps adapt per column
(:mod:`gradexplorer.directional`), and entries the differences cannot
resolve are reported as such.

Steps default to a per-dtype base times each element's own magnitude (the
array's typical magnitude for zeros), so inputs of any scale (1e-8 or 1e8,
or both in one array) are perturbed in proportion.
"""

from __future__ import annotations

import html
import random
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import numpy as onp

from ._args import Call, OutputLayout, bind_call, check_callable, output_layout
from .directional import REASONS, directional_derivatives, exact_steps
from .guards import guarded_call, keeping_random_state
from .noise import NoiseModel, probe_noise
from .tree import Leaf, flatten

__all__ = [
    "FDResult",
    "numeric_jacobian",
    "default_step",
    "METHODS",
    "RealMap",
    "fd_columns",
    "coordinate_spacing",
]

METHODS = ("richardson", "central", "forward", "backward", "complex_step")

# Base steps as powers of two (exact in binary), per method and precision.
_BASE_STEP = {
    "forward": {8: 2.0**-26, 4: 2.0**-12, 2: 2.0**-6},
    "backward": {8: 2.0**-26, 4: 2.0**-12, 2: 2.0**-6},
    "central": {8: 2.0**-17, 4: 2.0**-8, 2: 2.0**-4},
    "richardson": {8: 2.0**-8, 4: 2.0**-3, 2: 2.0**-2},
    "complex_step": {8: 1e-20, 4: 1e-20, 2: 1e-20},
}


@dataclass(frozen=True)
class FDResult:
    """A finite-difference Jacobian with its estimated error.

    Attributes
    ----------
    jacobian : ndarray
        ``out.shape + in.shape`` for a real function of one array; the 2-D
        ``real_jacobian`` layout when a side is complex or structured.
    error : ndarray
        Estimated absolute error of each entry (truncation + f's measured
        noise); ``inf`` where finite differences cannot resolve the entry.
    step : ndarray
        The base step of each input element (shaped like the input; for a
        structured input, of its leaves concatenated).
    nfev : int
        Number of evaluations of f.
    method : str
    noise : ndarray
        f's measured noise level per output (standard deviation).
    unresolved : tuple of (label, reason)
        Entries whose error is infinite, and why.
    """

    jacobian: onp.ndarray
    error: onp.ndarray
    step: onp.ndarray
    nfev: int
    method: str
    noise: onp.ndarray = field(default_factory=lambda: onp.zeros(0))
    unresolved: tuple = ()

    def __str__(self) -> str:
        finite = onp.isfinite(self.error)
        scale = float(onp.nanmax(onp.abs(self.jacobian), initial=0.0))
        text = (
            f"FDResult({self.method}, jacobian {self.jacobian.shape}, {self.nfev} evaluations, "
            f"median error {float(onp.median(self.error[finite])) if finite.any() else 0:.2e}, "
            f"max error {float(onp.max(self.error[finite], initial=0.0)):.2e} "
            f"(|J| max {scale:.3g})"
        )
        if self.unresolved:
            text += f"; {len(self.unresolved)} unresolvable, e.g. {self.unresolved[0][0]}: "
            text += self.unresolved[0][1]
        return text + ")"

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"

    def _repr_png_(self) -> bytes:
        from .plot import png_of

        return png_of("jacobian", self)


class RealMap:
    """f as a map from one real vector (the differentiated leaves, realified
    and concatenated) to one real vector (the float outputs, realified).

    Every evaluation gets fresh arrays in each leaf's own dtype, so a function
    that mutates its input cannot corrupt the points. Picklable when f is, so
    it runs in process pools and dask workers. ``reseed`` re-seeds numpy's and
    Python's global random generators before every call (for objectives that
    draw noise inside).
    """

    def __init__(self, call: Call, layout: OutputLayout, reseed: int | None = None):
        self.call, self.layout, self.reseed = call, layout, reseed
        self.specs: list[Leaf] = call.specs
        self.bounds = onp.cumsum([0] + [s.real_size for s in self.specs])
        # the common case (one real array in, one real array out) skips the general
        # unpacking: per-call overhead matters when f is cheap and called 10^4 times
        sel = call.selected
        out = layout.leaves
        self._simple = (
            len(sel) == 1
            and sel[0].tree.is_leaf
            and len(self.specs) == 1
            and not self.specs[0].complex
            and self.specs[0].shape != ()
            and layout.tree.is_leaf
            and len(out) == 1
            and not out[0].complex
        )

    @property
    def size(self) -> int:
        return int(self.bounds[-1])

    def leaves(self, v: onp.ndarray) -> list:
        out = []
        for s, a, b in zip(self.specs, self.bounds[:-1], self.bounds[1:]):
            seg = onp.array(v[a:b], dtype=s.real_dtype)  # a fresh copy
            value = s.from_real(seg)
            if s.pytype is not None:
                value = s.pytype(value)
            elif s.shape == ():
                value = onp.asarray(value, dtype=s.dtype)[()]
            out.append(value)
        return out

    def _seed(self) -> None:
        if self.reseed is not None:
            onp.random.seed(self.reseed)  # noqa: NPY002 - the global generator is the point
            random.seed(self.reseed)

    def __call__(self, v: onp.ndarray) -> onp.ndarray:
        self._seed()
        if self._simple:
            spec, call = self.specs[0], self.call
            x = onp.array(v, dtype=spec.dtype).reshape(spec.shape)  # a fresh copy
            slot = call.selected[0].slot
            if isinstance(slot, str):
                y = call.f(*call.args, **{**call.kwargs, slot: x})
            else:
                args = list(call.args)
                args[slot] = x
                y = call.f(*args, **call.kwargs)
            if (
                type(y) is onp.ndarray
                and y.dtype.kind == "f"
                and y.shape == self.layout.leaves[0].shape
            ):
                return y.astype(float, copy=False).ravel()
        else:
            y = self.call(*self.leaves(v))
        self.layout.check(y, " between evaluations")
        with onp.errstate(all="ignore"):
            return onp.asarray(self.layout.realify(y), dtype=float)

    def batch(self, X: onp.ndarray) -> onp.ndarray:
        return onp.stack([self(x) for x in X]) if len(X) else onp.zeros((0, self.layout.real_size))

    def vectorized(self, X: onp.ndarray) -> onp.ndarray:
        leaves = []
        for s, a, b in zip(self.specs, self.bounds[:-1], self.bounds[1:]):
            leaves.append(s.from_real_batch(onp.array(X[:, a:b])))
        self._seed()
        y = self.call(*leaves)
        ys, _ = flatten(y)
        parts = []
        for yk, spec in zip(ys, self.layout.specs):
            if spec is None:
                continue
            arr = onp.asarray(yk)
            if arr.ndim == 0 or arr.shape[0] != X.shape[0] or arr.shape[1:] != spec.shape:
                raise ValueError(
                    f"vectorized=True means f maps a leading batch axis: given a batch of "
                    f"{X.shape[0]} points, output {spec.name} has shape {arr.shape}, not "
                    f"{(X.shape[0],) + spec.shape}. Make f accept inputs of shape "
                    "(batch, ...) or pass vectorized=False."
                )
            p = arr.reshape(X.shape[0], -1)
            parts.append(onp.hstack([p.real, p.imag]) if onp.iscomplexobj(p) else p)
        return onp.hstack(parts).astype(float)


def default_step(x: Any, method: str = "richardson") -> onp.ndarray:
    """Default step for each element of x: a per-dtype base times its magnitude.

    Zeros (and non-finite elements) take the array's typical magnitude (its
    root mean square, or 1 for an all-zero array); no step underflows.

    >>> default_step(onp.array([0.0, 1e-8, 4.0]), "central")
    array([2.15791864e-05, 7.62939453e-14, 3.05175781e-05])
    """
    _check_method(method)
    x = onp.asarray(x)
    rdt = x.real.dtype if x.dtype.kind in "fc" else onp.dtype(float)
    with onp.errstate(all="ignore"):
        mag = onp.abs(x).astype(float)
        good = onp.isfinite(mag) & (mag > 0)
        typical = float(onp.sqrt(onp.mean(mag[good] ** 2))) if good.any() else 1.0
    if not onp.isfinite(typical) or typical == 0:
        typical = 1.0
    floor = float(onp.finfo(rdt).tiny / onp.finfo(rdt).eps)
    scale = onp.where(good, mag, typical)
    return _BASE_STEP[method][rdt.itemsize] * onp.maximum(scale, floor)


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}; got {method!r}.")


def coordinate_spacing(x0: onp.ndarray, specs: Sequence[Leaf]) -> onp.ndarray:
    """The ulp of each real coordinate in its own leaf's precision."""
    out = []
    start = 0
    for s in specs:
        seg = onp.abs(x0[start : start + s.real_size]).astype(s.real_dtype)
        with onp.errstate(all="ignore"):
            sp = onp.spacing(onp.where(onp.isfinite(seg), seg, 1)).astype(float)
        out.append(sp)
        start += s.real_size
    return onp.concatenate(out) if out else onp.zeros(0)


def coordinate_eps(specs: Sequence[Leaf]) -> onp.ndarray:
    """The eps of each real coordinate's own precision."""
    parts = [onp.full(s.real_size, s.eps) for s in specs]
    return onp.concatenate(parts) if parts else onp.zeros(0)


def leaf_steps(step: Any, value: Any, spec: Leaf, method: str, name: str = "input") -> onp.ndarray:
    """Steps per real coordinate of one leaf (Re and Im halves share a step)."""
    if step is None:
        s = default_step(
            spec.to_real(value)[: spec.size].reshape(spec.shape)
            if not spec.complex
            else onp.abs(onp.asarray(value)),
            method,
        )
    else:
        try:
            s = onp.asarray(step, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(
                f"step must be a positive float or an array shaped like {name} "
                f"{spec.shape}; got {step!r:.40}."
            ) from None
        if s.ndim and s.shape != spec.shape:
            raise ValueError(
                f"step must be a scalar or an array shaped like the input {name} "
                f"{spec.shape}; got shape {s.shape}."
            )
        s = onp.broadcast_to(s, spec.shape)
        if not onp.all(onp.isfinite(s)) or onp.any(s <= 0):
            raise ValueError(f"step must be positive and finite; got {step!r}.")
    flat = onp.ravel(s).astype(float)
    return onp.concatenate([flat, flat]) if spec.complex else flat


def typical_steps(call: Call, method: str) -> onp.ndarray:
    """Per coordinate, the default step of a typical element of its array: how
    far a step made small by a small element may grow back."""
    out = []
    for s, value in zip(call.specs, call.values):
        mag = onp.abs(onp.asarray(value)).astype(float).ravel()
        good = mag[onp.isfinite(mag) & (mag > 0)]
        typical = float(onp.sqrt(onp.mean(good**2))) if good.size else 1.0
        out.append(onp.full(s.real_size, _BASE_STEP[method][s.real_dtype.itemsize] * typical))
    return onp.concatenate(out) if out else onp.zeros(0)


def steps_for(call: Call, step: Any, method: str) -> onp.ndarray:
    """Steps for every differentiated coordinate: ``step`` is None, a scalar,
    an array like a single-array input, or a structure like the input."""
    out = []
    per_leaf = _step_per_leaf(call, step)
    for s, value, st in zip(call.specs, call.values, per_leaf):
        out.append(leaf_steps(st, value, s, method, s.name))
    return onp.concatenate(out) if out else onp.zeros(0)


def _step_per_leaf(call: Call, step: Any) -> list:
    specs = call.specs
    if step is None or onp.ndim(step) == 0 and not isinstance(step, (list, tuple, dict)):
        return [step] * len(specs)
    if len(specs) == 1:
        return [step]
    leaves, tree = flatten(step)
    if len(call.selected) == 1 and tree == call.selected[0].tree:
        sel = call.selected[0]
        return [st for st, s in zip(leaves, sel.specs) if s is not None]
    raise ValueError(
        f"step must be a positive float, or shaped like the input: the input has "
        f"{len(specs)} arrays ({', '.join(s.name for s in specs)}), step is "
        f"{tree.describe()}. Pass one float, or a structure of steps like the input."
    )


def fd_columns(
    evaluate: Callable,
    x0: onp.ndarray,
    y0: onp.ndarray,
    steps: onp.ndarray,
    spacing: onp.ndarray,
    method: str,
    *,
    columns: onp.ndarray | None = None,
    noise: NoiseModel | None = None,
    out_eps: onp.ndarray | float = 0.0,
    coord_eps: onp.ndarray | None = None,
    grow_to: onp.ndarray | None = None,
    rng: Any = 0,
):
    """Jacobian columns by finite differences: ``(J (m, k), E (m, k), reason, nfev, noise)``.

    f's noise (a :class:`~gradexplorer.noise.NoiseModel`) is probed first
    unless given.
    """
    nfev = 0
    if noise is None:
        noise, nfev = probe_noise(evaluate, x0, y0, steps, spacing, out_eps, rng=rng)
    cols = onp.arange(x0.size) if columns is None else onp.asarray(columns)
    exact = exact_steps(x0[cols], steps[cols], spacing[cols])
    d = directional_derivatives(
        evaluate,
        x0,
        y0,
        noise,
        exact,
        columns=cols,
        method=method,
        spacing=spacing,
        coord_eps=coord_eps,
        grow_to=None if grow_to is None else grow_to[cols],
    )
    return d.est.T, d.err.T, d.reason.T, d.nfev + nfev, noise


def numeric_jacobian(
    f: Callable,
    *args: Any,
    wrt: Any = 0,
    method: str = "richardson",
    step: Any = None,
    vectorized: bool = False,
    executor: Executor | None = None,
    reseed: int | None = None,
    **kwargs: Any,
) -> FDResult | tuple[FDResult, ...]:
    """Finite-difference Jacobian of f at ``args`` with a per-entry error estimate.

    Parameters
    ----------
    f : callable
        Plain numpy code (autograd is not needed here). Arguments and outputs
        may be nested lists / tuples / dicts of arrays.
    *args
        The point. Keyword arguments after the options are passed to f.
    wrt : int, str or sequence of them
        Input(s) to differentiate; a sequence gives a tuple of results.
    method : {"richardson", "central", "forward", "backward", "complex_step"}
        ``richardson`` (default) extrapolates central differences in two
        step families and adapts the step per column until they agree;
        ``complex_step`` is exact to round-off for real-analytic code.
    step : float, array like the input, or structure like the input, optional
        Default: per dtype and per element magnitude (:func:`default_step`).
    vectorized : bool
        f maps a leading batch axis: the perturbed points go in one call.
    executor : concurrent.futures.Executor, optional
        Evaluate the perturbed points in parallel (process pool, dask, ...).
    reseed : int, optional
        Re-seed numpy's global random generator before every call of f, for
        functions that draw random numbers inside.

    Returns
    -------
    FDResult or tuple of FDResult

    Examples
    --------
    >>> import numpy as np
    >>> r = numeric_jacobian(np.sin, np.array([0.0, 1.0]))
    >>> np.allclose(r.jacobian, np.diag(np.cos([0.0, 1.0])), atol=1e-12)
    True
    >>> bool(np.all(r.error < 1e-10)), r.unresolved
    (True, ())
    """
    check_callable(f)
    _check_method(method)
    call = bind_call(f, args, kwargs, wrt, constants_ok=True)
    with keeping_random_state(reseed is not None):
        y, _ = guarded_call(call, reseed=reseed)
        layout = output_layout(y)
        results = []
        for k in range(len(call.selected)):
            sub = Call(call.f, call.args, call.kwargs, [call.selected[k]], True)
            results.append(_numeric_one(sub, layout, y, method, step, vectorized, executor, reseed))
    return call.finish(results)


def _numeric_one(call, layout, y, method, step, vectorized, executor, reseed) -> FDResult:
    gmap = RealMap(call, layout, reseed)
    x0 = onp.concatenate([s.to_real(v).astype(float) for s, v in zip(call.specs, call.values)])
    y0 = onp.asarray(layout.realify(y), dtype=float)
    steps = steps_for(call, step, method)
    spacing = coordinate_spacing(x0, call.specs)
    if method == "complex_step":
        J, E, nfev = complex_step_derivatives(gmap, x0, y0, steps)
        R = onp.zeros(J.shape, onp.int8)
        noise = NoiseModel.quiet(y0.size)
    else:
        evaluate = _evaluator(gmap, vectorized, executor)
        out_eps = onp.concatenate([onp.full(s.real_size, s.eps) for s in layout.leaves])
        J, E, R, nfev, noise = fd_columns(
            evaluate,
            x0,
            y0,
            steps,
            spacing,
            method,
            out_eps=out_eps,
            coord_eps=coordinate_eps(call.specs),
            grow_to=typical_steps(call, method) if step is None else None,
        )
    nfev += 1
    specs = call.specs
    rows = layout.leaves
    unresolved = tuple(
        (f"{_row_label(rows, i)} / {_col_label(specs, j)}", REASONS[int(R[i, j])])
        for i, j in zip(*onp.nonzero(R))
    )
    simple = len(specs) == 1 and len(rows) == 1 and not specs[0].complex and not rows[0].complex
    simple = simple and call.selected[0].tree.is_leaf and layout.tree.is_leaf
    if simple:
        shape = rows[0].shape + specs[0].shape
        J, E = J.reshape(shape), E.reshape(shape)
    step_out = steps[: specs[0].size].reshape(specs[0].shape) if simple else steps
    return FDResult(J, E, step_out, int(nfev), method, noise.coarse, unresolved)


def _row_label(rows: Sequence[Leaf], i: int) -> str:
    for s in rows:
        if i < s.real_size:
            return s.label(i)
        i -= s.real_size
    return f"row {i}"


def _col_label(specs: Sequence[Leaf], j: int) -> str:
    return _row_label(specs, j)


def _evaluator(gmap: RealMap, vectorized: bool, executor: Executor | None):
    """A function from a (k, N) array of points to a (k, m) array of values."""
    if vectorized:
        return gmap.vectorized
    if executor is None:
        return gmap.batch

    def run(V):
        chunks = onp.array_split(V, max(1, min(len(V), 4 * _workers(executor))))
        try:
            return onp.vstack(list(executor.map(gmap.batch, chunks)))
        except Exception as exc:
            if "pickle" in str(exc).lower() or "Can't get local" in str(exc):
                raise TypeError(
                    f"executor could not ship f to its workers ({exc}). Define f at module "
                    "level (not a lambda or closure) for process pools, or use a thread "
                    "pool or dask (which pickles closures)."
                ) from exc
            raise

    return run


def _workers(executor: Executor) -> int:
    return int(getattr(executor, "_max_workers", 0) or 4)


def complex_step_derivatives(
    gmap: RealMap,
    x0: onp.ndarray,
    y0: onp.ndarray,
    steps: onp.ndarray,
    columns=None,
    check: bool = True,
) -> tuple[onp.ndarray, onp.ndarray, int]:
    """Complex-step columns ``Im f(x + i h e_j) / h`` (exact to round-off).

    f must carry an imaginary perturbation through (real-analytic code with
    no abs, conj, real parts or float casts); its real part must not move.
    """
    if any(s.complex for s in gmap.specs):
        raise ValueError(
            "method='complex_step' needs real inputs (it perturbs along the imaginary "
            "axis); for complex inputs use method='richardson' or 'central'."
        )
    if any(s.complex for s in gmap.layout.leaves):
        raise ValueError(
            "method='complex_step' needs real outputs (it reads the derivative from the "
            "imaginary part); f returns complex values: use method='richardson'."
        )
    cols, errs = [], []
    columns = range(x0.size) if columns is None else columns
    for j in columns:
        leaves = []
        for s, a, b in zip(gmap.specs, gmap.bounds[:-1], gmap.bounds[1:]):
            seg = x0[a:b].astype(complex)
            if a <= j < b:
                seg[j - a] += 1j * steps[j]
            value = seg.reshape(s.shape) if s.shape else seg[0]
            leaves.append(value)
        gmap._seed()
        with onp.errstate(all="ignore"):
            y = gmap.call(*leaves)
        ys, _ = flatten(y)
        parts = [onp.ravel(onp.asarray(v)) for v, sp in zip(ys, gmap.layout.specs) if sp]
        yv = onp.concatenate(parts) if parts else onp.zeros(0)
        if not onp.iscomplexobj(yv) or (
            check and not onp.allclose(yv.real, y0, rtol=1e-8, atol=1e-300)
        ):
            raise ValueError(
                "method='complex_step' needs f to be complex-safe (real-analytic code that "
                "carries an imaginary perturbation through): f dropped or changed it "
                f"(perturbing input {j} gave {'a real' if not onp.iscomplexobj(yv) else 'an'} "
                "output whose real part moved). abs, conj, real and casts to float break "
                "it; use method='richardson' instead."
            )
        d = yv.imag / steps[j]
        cols.append(d)
        errs.append(4 * onp.finfo(float).eps * (onp.abs(d) + 1e-300))
    return onp.array(cols).T, onp.array(errs).T, len(cols)
