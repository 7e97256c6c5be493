"""A function to check, as a map between real vectors, validated and guarded.

``build_problem`` binds the call (nested arguments opened into leaves),
refuses functions that mutate their input or are not deterministic, and
realifies complex leaves and several inputs into one real-vector map that
the checkers work on: ``F(*vs)`` traceable by the AD backend for the
analytic side, ``evaluate(X)`` on plain numpy for the finite differences.
Each leaf keeps its own dtype: a float32 leaf is perturbed and judged in
float32 beside a float64 one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as onp

from ..backends import get_backend
from ..core.calls import Call, bind_call
from ..core.guards import guarded_call
from ..core.tree import Leaf
from ..fd.device_map import device_evaluator as fd_device_evaluator
from ..fd.device_map import traceable
from ..fd.evaluation import DeviceEvaluator, HostEvaluator
from ..fd.formats import Format
from ..fd.jacobian import RealMap, coordinate_eps, coordinate_spacing, steps_for, typical_steps
from ..fd.narrow import Reading, narrow_point, read_format
from .report import Blocks

__all__ = ["Problem", "build_problem", "as_rng", "at_narrow_point"]


def as_rng(rng: Any) -> onp.random.Generator:
    """A numpy Generator from a Generator, a RandomState, an int seed or None."""
    if rng is None or isinstance(rng, (int, onp.integer)) and not isinstance(rng, bool):
        return onp.random.default_rng(rng)
    if isinstance(rng, onp.random.Generator):
        return rng
    if isinstance(rng, onp.random.RandomState):
        return onp.random.default_rng(rng.randint(0, 2**31 - 1))
    if rng is onp.random:  # the module itself, as Theano-era code passes it
        return onp.random.default_rng(onp.random.randint(0, 2**31 - 1))  # noqa: NPY002 - the global generator is the point
    raise TypeError(
        f"rng must be a numpy Generator, a RandomState or an int seed; got {type(rng).__name__}."
    )


@dataclass
class Problem:
    """f as a real-vector map ``F(*vs)`` plus what is needed to label and judge it."""

    F: Callable  # traceable: one real vector per leaf in, one real vector out
    vs: list  # the point, one real vector per differentiated leaf (its own dtype)
    cols: Blocks  # the differentiated leaves (columns)
    rows: Blocks  # the float output leaves (rows)
    name: str
    evaluate_one: Callable | None = None  # plain numpy: concatenated x -> y (float64)
    rmap: RealMap | None = None  # f itself as a real map (None for derived problems)
    step: Any = None  # the user's step (None: per dtype and magnitude)
    call: Call | None = None
    reseed: int | None = None
    not_checked: tuple = ()  # (label, reason) of arguments / leaves held constant
    extra_notes: list = field(default_factory=list)
    backend: Any = None  # the AD system (gradexplorer.backends): vjp, jvp, value, np
    #: where f is evaluated for finite differences (:mod:`gradexplorer.fd.evaluation`):
    #: on the host, or on the device the inputs live on
    evaluator: Any = None
    _x0: onp.ndarray | None = field(default=None, repr=False)
    #: how f reads its float64 inputs: through float32, float16 or bfloat16, only or
    #: partly (:mod:`gradexplorer.fd.narrow`); None: as they are
    reading: Reading | None = None
    _uncharged: int = field(default=0, repr=False)  # evaluations no report has counted

    def __post_init__(self):
        if self.evaluator is None:
            owner = self.rmap
            self.evaluator = HostEvaluator(self._batch_host, owner)

    @property
    def x0(self) -> onp.ndarray:
        """The point as one float64 vector, on the host (a copy, made once)."""
        if self._x0 is None:
            to_numpy = self.backend.to_numpy if self.backend is not None else onp.asarray
            self._x0 = onp.concatenate([onp.asarray(to_numpy(v), dtype=float) for v in self.vs])
        return self._x0

    @property
    def device(self) -> str:
        return self.evaluator.device

    @property
    def n(self) -> int:
        return self.cols.size

    @property
    def m(self) -> int:
        return self.rows.size

    def split(self, x: onp.ndarray) -> list:
        """A concatenated vector back into one vector per leaf, in its dtype (as the
        backend's arrays, on the device the point's leaves live on)."""
        out, start = [], 0
        for s, like in zip(self.cols.sides, self.vs):
            n = s.real_size
            seg = onp.asarray(x[start : start + n], dtype=s.real_dtype)
            out.append(self.backend.to_array(seg, like=like) if self.backend is not None else seg)
            start += n
        return out

    def batch(self, X: onp.ndarray) -> onp.ndarray:
        """f at host points (rows of X), evaluated where f lives."""
        return self.evaluator(X)

    def _batch_host(self, X: onp.ndarray) -> onp.ndarray:
        if self.rmap is not None:  # f itself: points outside its domain give NaN rows
            return self.rmap.batch(X)
        return onp.stack([self.evaluate_one(x) for x in X]) if len(X) else onp.zeros((0, self.m))

    @property
    def dtype(self) -> str:
        """The precision the report names: one dtype, or the mix."""
        kinds = sorted({s.dtype for s in self.cols.sides}, key=lambda d: onp.dtype(d).itemsize)
        return kinds[0] if len(kinds) == 1 else "mixed (" + ", ".join(kinds) + ")"

    def spacing(self) -> onp.ndarray:
        """Each coordinate's ulp in the precision f reads it in (float32's where f
        reads float64 inputs through float32: :mod:`gradexplorer.fd.narrow`)."""
        if self.reading is not None:
            return narrow_point(self.x0, self.coord_eps(), self.reading.fmt)[1]
        return coordinate_spacing(self.x0, self.cols.sides)

    @property
    def narrow_format(self) -> Format | None:
        """The narrow format f reads its float64 inputs through (None: none)."""
        return None if self.reading is None else self.reading.fmt

    def charge(self) -> int:
        """Evaluations spent on the problem itself (not by a checker) that no report
        has counted yet; counted once, by the report that asks first."""
        spent, self._uncharged = self._uncharged, 0
        return spent

    def grow_to(self, method: str) -> onp.ndarray | None:
        """How far small-element steps may grow (None for a user's fixed step)."""
        if self.call is None or self.step is not None or method != "richardson":
            return None
        return typical_steps(self.call, method, self.backend.to_numpy)

    def coord_eps(self) -> onp.ndarray:
        return coordinate_eps(self.cols.sides)

    def steps(self, method: str) -> onp.ndarray:
        """Step per real coordinate: the user's ``step``, else the per-dtype default."""
        if self.call is not None:
            return steps_for(self.call, self.step, method, self.backend.to_numpy)
        to_numpy = self.backend.to_numpy if self.backend is not None else onp.asarray
        return onp.concatenate(
            [
                _vector_steps(to_numpy(v), s, self.step, method)
                for v, s in zip(self.vs, self.cols.sides)
            ]
        )

    def eps_matrix(self) -> onp.ndarray:
        """Per entry, the eps of the lower of its row's and column's precisions."""
        re = onp.concatenate([onp.full(s.real_size, s.eps) for s in self.rows.sides])
        ce = onp.concatenate([onp.full(s.real_size, s.eps) for s in self.cols.sides])
        return onp.maximum(re[:, None], ce[None, :])


def _vector_steps(v, s: Leaf, step, method):
    from ..fd.steps import default_step

    if step is not None and onp.ndim(step) == 0:
        return onp.full(v.size, float(step))
    return default_step(onp.asarray(v), method)


def build_problem(
    f: Callable,
    args: tuple,
    kwargs: dict,
    wrt: Any,
    *,
    reseed: int | None = None,
    backend: Any = None,
    read_precision: bool = True,
) -> Problem:
    """Validate the call, guard against mutation and non-determinism, realify.

    ``backend`` names the AD system, or is the backend itself (None: the one
    the arguments' arrays belong to, autograd for numpy). ``read_precision``:
    probe whether f reads its inputs through float32 and move the point there
    (:func:`at_narrow_point`; False leaves that to the caller, after its own
    refusals, which must come before any work). Precision and
    modules are the caller's business (:func:`gradexplorer.backends.opened`).
    """
    backend = get_backend(backend, list(args) + list(kwargs.values()))
    call = bind_call(
        f,
        args,
        kwargs,
        wrt,
        constants_ok=True,
        container=backend.container,
        kind_of=backend.float_kind,
    )
    y, layout = guarded_call(call, reseed=reseed, convert=backend.to_numpy)
    # outputs the AD system itself gives no gradient are listed, never judged
    marks = getattr(backend, "nondifferentiable_outputs", None)
    if marks is not None:
        layout = layout.without(marks(call))
    specs = call.specs
    vs = real_leaves(backend, specs, call.values)
    F = traceable(call, layout, reseed, backend)
    rmap = RealMap(call, layout, reseed, backend)
    not_checked = tuple(call.constants) + tuple(
        (label, f"{reason} (an output with no derivative)") for label, reason in layout.constants
    )
    p = Problem(
        F,
        vs,
        Blocks(tuple(specs)),
        Blocks(tuple(layout.leaves)),
        getattr(f, "__name__", "f"),
        rmap,
        rmap,
        None,
        call,
        reseed,
        not_checked,
        backend=backend,
    )
    p = on_device(p, call.values)
    return at_narrow_point(p) if read_precision else p


def on_device(p: Problem, leaves: list) -> Problem:
    """p evaluated where its inputs ``leaves`` live, with that device's kernels
    (where its backend has devices; else p as it is)."""
    if p.backend.capabilities.devices and leaves:
        p.evaluator = device_evaluator(p, p.backend.device_kit(leaves[0]), leaves)
        p.evaluate_one = lambda x: p.evaluator(x[None])[0]
    return p


def at_narrow_point(p: Problem) -> Problem:
    """p at its point rounded to the format f reads its float64 inputs in (float32,
    float16 or bfloat16; only: f takes the same value there; or partly): steps on
    that format's grid are steps f sees exactly, and a rule is judged where f's
    differences are taken."""
    reading, nfev = read_format(_point_by_point(p), p.x0, p.coord_eps())
    p._uncharged += nfev
    if reading is None:
        return p
    point = narrow_point(p.x0, p.coord_eps(), reading.fmt)[0]
    p.vs, p._x0, p.reading = p.split(point), point, reading
    if isinstance(p.evaluator, DeviceEvaluator):  # its point, made anew where f runs
        p.evaluator = device_evaluator(p, p.evaluator.kit)
        p.evaluate_one = lambda x: p.evaluator(x[None])[0]
    name = reading.format
    p.extra_notes.append(
        f"f reads x only through {name} (the same value across each {name} cell of x): "
        f"checked at x rounded to {name}, where f's value is the same, with steps on "
        f"{name}'s grid."
        if reading.only
        else f"f jumps at the edges of x's {name} cells (it reads x partly through {name}, "
        f"or moves in stairs as fine): checked at x rounded to {name}, with steps on "
        f"{name}'s grid (below a {name} ulp of x, such stairs are flat)."
    )
    return p


def _point_by_point(p: Problem) -> Callable:
    """f at a few host points, one call each: a batch would compile f's batched
    program anew for every check on an accelerator (jax: +8 programs a fast check)."""
    return lambda X: onp.stack([p.batch(x[None])[0] for x in X])


def real_leaves(backend: Any, specs: list, values: list) -> list:
    """Each leaf as a real vector in its real dtype, as the backend's array on
    the leaf's own device (made there, where the backend has devices)."""
    if backend.capabilities.devices and values:
        kit = backend.device_kit(values[0])
        return [
            backend.to_array(kit.realified([v], str(s.real_dtype)), like=v)
            for s, v in zip(specs, values)
        ]
    return [
        backend.to_array(s.to_real(backend.to_numpy(v)).astype(s.real_dtype), like=v)
        for s, v in zip(specs, values)
    ]


def device_evaluator(p: Problem, kit: Any, leaves: list | None = None) -> DeviceEvaluator:
    """A :class:`DeviceEvaluator` of p's F, at p's point (``leaves``: f's own arrays)."""
    return fd_device_evaluator(p.F, kit, p.cols.sides, p.x0, leaves)
