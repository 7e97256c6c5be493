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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as onp

from ..backends import opened
from ..core.calls import Call, bind_call, check_callable
from ..core.guards import guarded_call, keeping_random_state
from ..core.outputs import output_layout
from ..core.tree import Leaf
from .complexstep import complex_step_derivatives, complex_step_jacobian
from .device_map import call_on_device
from .directional import directional_derivatives, exact_steps
from .executors import opened_executor, spread
from .noise import NoiseModel, probe_noise
from .realmap import RealMap
from .reasons import Unresolvable
from .steps import _check_method, coordinate_eps, coordinate_spacing, steps_for, typical_steps

__all__ = [
    "FDResult",
    "numeric_jacobian",
    "complex_step_derivatives",
    "fd_columns",
    "coordinate_spacing",
]


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
    device : str
        Where f ran and the samples were reduced: ``"cpu"`` for numpy code, the
        inputs' own device for torch tensors and jax arrays (``"cuda:0"``).
    copies : int
        Host <-> device copies the estimate took (0 on the host).
    """

    jacobian: onp.ndarray
    error: onp.ndarray
    step: onp.ndarray
    nfev: int
    method: str
    noise: onp.ndarray = field(default_factory=lambda: onp.zeros(0))
    unresolved: tuple = ()
    device: str = "cpu"
    copies: int = 0

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
        from ..display import render

        return render(self, png=True)


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
    one_sided: bool = False,
):
    """Jacobian columns by finite differences: ``(J (m, k), E (m, k), reason, nfev, noise)``.

    f's noise (a :class:`~gradexplorer.noise.NoiseModel`) is probed first
    unless given. With ``one_sided``, a sixth result ``(right, left,
    side_err, quantum)``: at entries where f is not differentiable (reason
    KINK) its right and left derivatives (m, k) and their error (None where
    there are none), and per output the staircase f moves on (or None).
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
        out_eps=out_eps,
    )
    out = (d.est.T, d.err.T, d.reason.T, d.nfev + nfev, noise)
    if not one_sided:
        return out
    T = lambda a: None if a is None else a.T  # noqa: E731
    return (*out, (T(d.right), T(d.left), T(d.side_err), T(d.quantum)))


def numeric_jacobian(
    f: Callable,
    *args: Any,
    wrt: Any = 0,
    method: str = "richardson",
    step: Any = None,
    vectorized: bool = False,
    executor: Any = None,
    reseed: int | None = None,
    backend: str | None = None,
    precision: str | None = None,
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
    executor : None, int, concurrent.futures.Executor or map-like callable
        Evaluate the perturbed points in parallel: an int starts that many
        local processes (and shuts them down after); an Executor is used as
        it is (a process pool, dask's ``Client.get_executor()``, mpi4py's
        ``MPIPoolExecutor``); a callable shaped like ``map(fn, iterable)``
        (``pool.map`` of a ``multiprocessing.Pool``) is wrapped to look like
        one. Process pools need f defined at module level (dask pickles
        closures too).
    reseed : int, optional
        Re-seed numpy's global random generator before every call of f, for
        functions that draw random numbers inside.
    backend : {"autograd", "torch", "jax"}, optional
        Whose arrays f takes (default: recognised from the arguments; numpy
        for autograd). f is always evaluated on that system's arrays.
    precision : {None, "float64", "native"}
        None evaluates torch and jax functions in float64 (lower-precision
        inputs promoted on copies) and numpy in the inputs' own precision.

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

    Parallel evaluation, e.g. on a dask cluster (``executor=4`` for four
    local processes):

    >>> from distributed import Client  # doctest: +SKIP
    >>> with Client() as client:  # doctest: +SKIP
    ...     r = numeric_jacobian(np.sin, np.ones(100), executor=client.get_executor())
    >>> numeric_jacobian(np.sin, np.ones(3), executor=map).nfev == numeric_jacobian(
    ...     np.sin, np.ones(3)).nfev
    True
    """
    check_callable(f)
    _check_method(method)
    with (
        opened_executor(executor) as executor,
        opened(f, args, kwargs, wrt, backend=backend, precision=precision) as (system, prep),
        keeping_random_state(reseed is not None),
    ):
        call = bind_call(
            prep.f, prep.args, prep.kwargs, prep.wrt, constants_ok=True, kind_of=system.float_kind
        )
        y, _ = guarded_call(call, reseed=reseed, convert=system.to_numpy)
        layout = output_layout(y)
        results = []
        for k in range(len(call.selected)):
            sub = Call(call.f, call.args, call.kwargs, [call.selected[k]], True)
            results.append(
                _numeric_one(sub, layout, y, method, step, vectorized, executor, reseed, system)
            )
    return call.finish(results)


def _numeric_one(call, layout, y, method, step, vectorized, executor, reseed, system) -> FDResult:
    gmap = RealMap(call, layout, reseed, system)
    x0 = onp.concatenate(
        [s.to_real(system.to_numpy(v)).astype(float) for s, v in zip(call.specs, call.values)]
    )
    y0 = onp.asarray(layout.realify(y), dtype=float)
    steps = steps_for(call, step, method, system.to_numpy)
    spacing = coordinate_spacing(x0, call.specs)
    on_device = None
    if not vectorized and executor is None and method != "complex_step":
        on_device = call_on_device(call, layout, reseed, system, x0)
    evaluate = _evaluator(gmap, vectorized, executor) if on_device is None else on_device
    out_eps = onp.concatenate([onp.full(s.real_size, s.eps) for s in layout.leaves])
    if method == "complex_step":
        J, E, nfev = complex_step_jacobian(
            gmap,
            evaluate,
            x0,
            y0,
            steps,
            steps_for(call, None, "richardson", system.to_numpy),
            spacing,
            out_eps=out_eps,
            coord_eps=coordinate_eps(call.specs),
        )
        R = onp.zeros(J.shape, onp.int8)
        noise = NoiseModel.quiet(y0.size)
    else:
        J, E, R, nfev, noise = fd_columns(
            evaluate,
            x0,
            y0,
            steps,
            spacing,
            method,
            out_eps=out_eps,
            coord_eps=coordinate_eps(call.specs),
            grow_to=typical_steps(call, method, system.to_numpy) if step is None else None,
        )
    nfev += 1
    specs = call.specs
    rows = layout.leaves
    unresolved = tuple(
        (f"{_row_label(rows, i)} / {_col_label(specs, j)}", Unresolvable(int(R[i, j])).text)
        for i, j in zip(*onp.nonzero(R))
    )
    simple = len(specs) == 1 and len(rows) == 1 and not specs[0].complex and not rows[0].complex
    simple = simple and call.selected[0].tree.is_leaf and layout.tree.is_leaf
    if simple:
        shape = rows[0].shape + specs[0].shape
        J, E = J.reshape(shape), E.reshape(shape)
    step_out = steps[: specs[0].size].reshape(specs[0].shape) if simple else steps
    where = ("cpu", 0) if on_device is None else (on_device.device, on_device.copies)
    return FDResult(J, E, step_out, int(nfev), method, noise.coarse, unresolved, *where)


def _row_label(rows: Sequence[Leaf], i: int) -> str:
    for s in rows:
        if i < s.real_size:
            return s.label(i)
        i -= s.real_size
    return f"row {i}"


def _col_label(specs: Sequence[Leaf], j: int) -> str:
    return _row_label(specs, j)


def _evaluator(gmap: RealMap, vectorized: bool, executor: Any):
    """A function from a (k, N) array of points to a (k, m) array of values."""
    if vectorized:
        return gmap.vectorized
    return spread(gmap.batch, executor, gmap.layout.real_size)
