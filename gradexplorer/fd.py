"""Finite-difference Jacobians with per-entry error estimates (schemes in ``schemes``).

The checker judges each entry against the estimated error instead of a fixed
tolerance.

Steps default to a per-dtype base times ``max(|x_j|, mean|x|)``, so inputs
of any scale (1e-8 or 1e8) are perturbed in proportion.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as onp

from ._args import (
    Side,
    as_differentiable,
    bind_positional,
    check_callable,
    from_real_batch,
    output_sides,
    param_label,
    realify_output,
    resolve_wrt,
    side_of,
    to_real_vector,
)
from .schemes import SCHEMES, directional_derivatives, eps_of  # noqa: F401

__all__ = ["FDResult", "numeric_jacobian", "default_step", "METHODS", "RealMap"]

METHODS = ("richardson", "central", "forward", "backward", "complex_step")

# Base steps as powers of two (exact in binary), per method and precision.
_BASE_STEP = {
    "forward": {8: 2.0**-26, 4: 2.0**-12, 2: 2.0**-6},
    "backward": {8: 2.0**-26, 4: 2.0**-12, 2: 2.0**-6},
    "central": {8: 2.0**-17, 4: 2.0**-8, 2: 2.0**-4},
    "richardson": {8: 2.0**-7, 4: 2.0**-4, 2: 2.0**-2},
    "complex_step": {8: 1e-20, 4: 1e-20, 2: 1e-20},
}


@dataclass(frozen=True)
class FDResult:
    """A finite-difference Jacobian with its estimated error.

    Attributes
    ----------
    jacobian : ndarray
        ``out.shape + in.shape`` for real functions; the 2-D ``real_jacobian``
        layout when a side is complex.
    error : ndarray
        Estimated absolute error of each entry (truncation + round-off).
    step : ndarray
        The step used for each input element (shaped like the input).
    nfev : int
        Number of evaluations of f.
    method : str
    """

    jacobian: onp.ndarray
    error: onp.ndarray
    step: onp.ndarray
    nfev: int
    method: str

    def __str__(self) -> str:
        scale = float(onp.nanmax(onp.abs(self.jacobian), initial=0.0))
        return (
            f"FDResult({self.method}, jacobian {self.jacobian.shape}, {self.nfev} evaluations, "
            f"median error {float(onp.median(self.error)):.2e}, max error "
            f"{float(onp.max(self.error, initial=0.0)):.2e} (|J| max {scale:.3g}))"
        )

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"

    def _repr_png_(self) -> bytes:
        from .plot import png_of

        return png_of("jacobian", self)


class RealMap:
    """f as a map between real vectors, with the selected inputs concatenated.

    Picklable when f is, so it can run in process pools and dask workers.
    """

    def __init__(self, f, args, kwargs, argnums, sides: Sequence[Side]):
        self.f, self.args, self.kwargs = f, list(args), dict(kwargs)
        self.argnums, self.sides = tuple(argnums), list(sides)
        self.bounds = onp.cumsum([0] + [s.real_size for s in sides])
        # The common case (one real array input) skips the general unpacking.
        self._simple = len(sides) == 1 and not sides[0].complex and sides[0].shape != ()

    def _fill(self, V: onp.ndarray) -> list:
        a = list(self.args)
        for k, (i, s) in enumerate(zip(self.argnums, self.sides)):
            a[i] = from_real_batch(V[:, self.bounds[k] : self.bounds[k + 1]], s)
        return a

    def __call__(self, v: onp.ndarray) -> onp.ndarray:
        if self._simple:
            a = list(self.args)
            a[self.argnums[0]] = v.astype(self.sides[0].dtype, copy=False).reshape(
                self.sides[0].shape
            )
            y = self.f(*a, **self.kwargs)
            if type(y) is onp.ndarray and y.dtype.kind == "f":
                return y.ravel()
            return realify_output(y)
        a = self._fill(onp.asarray(v)[None])
        a = [x[0] if k in self.argnums else x for k, x in enumerate(a)]
        for k in self.argnums:  # keep Python scalars scalar
            if self.sides[self.argnums.index(k)].shape == ():
                a[k] = a[k][()]
        return realify_output(self.f(*a, **self.kwargs))

    def batch(self, V: onp.ndarray) -> onp.ndarray:
        return onp.stack([self(v) for v in V])

    def vectorized(self, V: onp.ndarray) -> onp.ndarray:
        y = self.f(*self._fill(V), **self.kwargs)
        ys = list(y) if isinstance(y, (list, tuple)) else [y]
        if any(onp.ndim(yk) == 0 or onp.shape(yk)[0] != V.shape[0] for yk in ys):
            raise ValueError(
                f"vectorized=True means f maps a leading batch axis: given a batch of "
                f"{V.shape[0]} points it returned shape(s) {[onp.shape(yk) for yk in ys]}. "
                "Make f accept x of shape (batch, ...) or pass vectorized=False."
            )
        parts = [onp.asarray(yk).reshape(V.shape[0], -1) for yk in ys]
        parts = [onp.hstack([p.real, p.imag]) if onp.iscomplexobj(p) else p for p in parts]
        return onp.hstack(parts)


def default_step(x: Any, method: str = "richardson") -> onp.ndarray:
    """Default step for each element of x: a per-dtype base times its scale.

    >>> default_step(onp.array([0.0, 1e-8, 4.0]), "central")
    array([1.01725260e-05, 1.01725260e-05, 3.05175781e-05])
    """
    _check_method(method)
    x = onp.asarray(x)
    rdt = x.real.dtype if x.dtype.kind in "fc" else onp.dtype(float)
    mag = onp.abs(x).astype(float)
    typical = float(onp.mean(mag)) if mag.size and onp.any(mag > 0) else 1.0
    if not onp.isfinite(typical) or typical == 0:
        typical = 1.0
    # never so small that the step itself underflows
    typical = max(typical, float(onp.finfo(rdt).tiny / onp.finfo(rdt).eps))
    return _BASE_STEP[method][rdt.itemsize] * onp.maximum(mag, typical)


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}; got {method!r}.")


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
    gmap: RealMap, x0: onp.ndarray, steps: onp.ndarray
) -> tuple[onp.ndarray, onp.ndarray, int]:
    """Complex-step columns ``Im f(x + i h e_j) / h`` (exact to round-off)."""
    if any(s.complex for s in gmap.sides):
        raise ValueError(
            "method='complex_step' needs real inputs (it perturbs along the imaginary "
            "axis); for complex inputs use method='richardson' or 'central'."
        )
    y0 = gmap(x0)
    cols, errs = [], []
    for j in range(x0.size):
        a = list(gmap.args)
        v = x0.astype(complex)
        v[j] += 1j * steps[j]
        for k, (i, s) in enumerate(zip(gmap.argnums, gmap.sides)):
            seg = v[gmap.bounds[k] : gmap.bounds[k + 1]]
            a[i] = seg.reshape(s.shape) if s.shape else seg[0]
        y = onp.asarray(gmap.f(*a, **gmap.kwargs))
        if not onp.iscomplexobj(y) or not onp.allclose(y.real.ravel(), y0, rtol=1e-8, atol=1e-300):
            raise ValueError(
                "method='complex_step' needs f to be complex-safe (real-analytic code that "
                "carries an imaginary perturbation through): f dropped or changed it "
                f"(perturbing input {j} gave {'a real' if not onp.iscomplexobj(y) else 'a'} "
                "output whose real part moved). abs, conj, real and casts to float break "
                "it; use method='richardson' instead."
            )
        d = y.imag.ravel() / steps[j]
        cols.append(d)
        errs.append(4 * eps_of(x0.dtype) * (onp.abs(d) + onp.abs(y0) * 1e-300))
    return onp.array(cols).T, onp.array(errs).T, x0.size + 1


def input_steps(step: Any, x: Any, side: Side, method: str) -> onp.ndarray:
    """Steps per real coordinate of one input (Re and Im halves share a step)."""
    if step is None:
        s = default_step(x, method)
    else:
        s = onp.asarray(step, dtype=float)
        if s.ndim and s.shape != side.shape:
            raise ValueError(
                f"step must be a scalar or an array shaped like the input {side.name} "
                f"{side.shape}; got shape {s.shape}."
            )
        s = onp.broadcast_to(s, side.shape)
        if not onp.all(onp.isfinite(s)) or onp.any(s <= 0):
            raise ValueError(f"step must be positive and finite; got {step!r}.")
    flat = onp.ravel(s).astype(float)
    return onp.concatenate([flat, flat]) if side.complex else flat


def numeric_jacobian(
    f: Callable,
    *args: Any,
    wrt: Any = 0,
    method: str = "richardson",
    step: Any = None,
    vectorized: bool = False,
    executor: Executor | None = None,
    **kwargs: Any,
) -> FDResult | tuple[FDResult, ...]:
    """Finite-difference Jacobian of f at ``args`` with a per-entry error estimate.

    Parameters
    ----------
    f : callable
        Plain numpy code (autograd is not needed here).
    *args
        The point. Keyword arguments after the options are passed to f.
    wrt : int, str or sequence of them
        Input(s) to differentiate; a sequence gives a tuple of results.
    method : {"richardson", "central", "forward", "backward", "complex_step"}
        ``richardson`` (default) extrapolates central differences at three
        steps (error O(h⁶)); ``complex_step`` is exact to round-off for
        real-analytic code.
    step : float or array like the input, optional
        Default: per dtype and per element scale (:func:`default_step`).
    vectorized : bool
        f maps a leading batch axis: all perturbed points go in one call.
    executor : concurrent.futures.Executor, optional
        Evaluate the perturbed points in parallel (process pool, dask, ...).

    Returns
    -------
    FDResult or tuple of FDResult

    Examples
    --------
    >>> import numpy as np
    >>> r = numeric_jacobian(np.sin, np.array([0.0, 1.0]))
    >>> np.allclose(r.jacobian, np.diag(np.cos([0.0, 1.0])), atol=1e-12), r.nfev
    (True, 13)
    >>> bool(np.all(r.error < 1e-10))
    True
    """
    check_callable(f)
    _check_method(method)
    args, kwargs = bind_positional(f, args, kwargs)
    argnums, single = resolve_wrt(f, wrt, len(args))
    for i in argnums:
        args[i] = as_differentiable(args[i], param_label(f, i))
    results = tuple(
        _numeric_one(f, args, kwargs, i, method, step, vectorized, executor) for i in argnums
    )
    return results[0] if single else results


def _numeric_one(f, args, kwargs, i, method, step, vectorized, executor) -> FDResult:
    side = side_of(args[i], param_label(f, i))
    gmap = RealMap(f, args, kwargs, (i,), [side])
    x0 = to_real_vector(args[i])
    if x0.dtype.kind not in "f":
        x0 = x0.astype(float)
    y = f(*args, **kwargs)
    outs = output_sides(y)
    y0 = realify_output(y)
    steps = input_steps(step, args[i], side, method)
    if method == "complex_step":
        J, E, nfev = complex_step_derivatives(gmap, x0, steps)
    else:
        evaluate = _evaluator(gmap, vectorized, executor)
        steps = exact_steps(x0, steps)
        est, err, nfev = directional_derivatives(
            evaluate,
            x0,
            None,
            x0.size,
            steps,
            method,
            y0,
            onp.result_type(*[onp.asarray(realify_output(yk)) for yk in [y]]),
        )
        J, E = est.T, err.T
        nfev += 1
    any_complex = side.complex or any(o.complex for o in outs)
    if not any_complex and len(outs) == 1:
        shape = outs[0].shape + side.shape
        J, E = J.reshape(shape), E.reshape(shape)
    step_out = steps[: side.size].reshape(side.shape)
    return FDResult(J, E, step_out, int(nfev), method)


def exact_steps(x0: onp.ndarray, steps: onp.ndarray) -> onp.ndarray:
    """Round steps so that x + h is exactly representable (h = (x + h) - x)."""
    s = steps.astype(x0.dtype)
    exact = ((x0 + s) - x0).astype(float)
    return onp.where(exact > 0, exact, steps)
