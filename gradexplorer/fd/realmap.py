"""f as a map between real vectors, evaluated on fresh arrays in each leaf's precision."""

from __future__ import annotations

from typing import Any

import numpy as onp

from ..core.calls import Call
from ..core.guards import reseeded
from ..core.outputs import OutputLayout
from ..core.tree import Leaf, flatten, map_leaves


class RealMap:
    """f as a map from one real vector (the differentiated leaves, realified
    and concatenated) to one real vector (the float outputs, realified).

    Every evaluation gets fresh arrays in each leaf's own dtype, so a function
    that mutates its input cannot corrupt the points. Picklable when f is, so
    it runs in process pools and dask workers. ``reseed`` re-seeds the global
    random generators (numpy's, Python's, and torch's when loaded) before every
    call (for objectives that draw noise inside).
    """

    def __init__(
        self, call: Call, layout: OutputLayout, reseed: int | None = None, backend: Any = None
    ):
        self.call, self.layout, self.reseed = call, layout, reseed
        # an AD system whose functions take its own arrays (torch, jax): convert in
        # and out; autograd takes numpy as it is
        self._in = getattr(backend, "to_array", None) if backend is not None else None
        self._out = getattr(backend, "to_numpy", None) if backend is not None else None
        if self._in is not None and backend.capabilities.numpy_arrays:
            self._in = self._out = None
        self.specs: list[Leaf] = call.specs
        # each point is built on its input's own device (a CUDA tensor's points on
        # CUDA): the arrays f was given, as the ``like`` of every conversion
        self._likes = list(call.values)
        #: the first error f raised at a point near x (its domain's edge), if any
        self.domain_errors: list[BaseException] = []
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
        for s, like, a, b in zip(self.specs, self._likes, self.bounds[:-1], self.bounds[1:]):
            seg = onp.array(v[a:b], dtype=s.real_dtype)  # a fresh copy
            value = s.from_real(seg)
            if s.pytype is not None:
                value = s.pytype(value)
            elif s.shape == ():
                value = onp.asarray(value, dtype=s.dtype)[()]
            out.append(self._in(value, like=like) if self._in is not None else value)
        return out

    def _seed(self) -> None:
        # every generator reseed covers (numpy's, Python's, torch's CPU and CUDA ones):
        # the same seed f saw when its value at the point was taken
        reseeded(self.reseed)

    def call_leaves(self, leaves: list) -> Any:
        """f on these leaf values as given (complex ones, for the complex step),
        passed as the backend's arrays; its output comes back as numpy."""
        self._seed()
        if self._in is not None:
            leaves = [self._in(v, like=like) for v, like in zip(leaves, self._likes)]
        y = self.call(*leaves)
        return map_leaves(self._out, y) if self._out is not None else y

    def __call__(self, v: onp.ndarray) -> onp.ndarray:
        return self._realified(self._raw(v))

    def _raw(self, v: onp.ndarray) -> Any:
        """f's output at v, as numpy (what f itself raises propagates from here)."""
        self._seed()
        if self._simple:
            spec, call = self.specs[0], self.call
            x = onp.array(v, dtype=spec.dtype).reshape(spec.shape)  # a fresh copy
            if self._in is not None:
                x = self._in(x, like=self._likes[0])
            slot = call.selected[0].slot
            if isinstance(slot, str):
                y = call.f(*call.args, **{**call.kwargs, slot: x})
            else:
                args = list(call.args)
                args[slot] = x
                y = call.f(*args, **call.kwargs)
            return self._out(y) if self._out is not None else y
        y = self.call(*self.leaves(v))
        return map_leaves(self._out, y) if self._out is not None else y

    def _realified(self, y: Any) -> onp.ndarray:
        if (
            self._simple
            and type(y) is onp.ndarray
            and y.dtype.kind == "f"
            and y.shape == self.layout.leaves[0].shape
        ):
            return y.astype(float, copy=False).ravel()
        self.layout.check(y, " between evaluations")
        with onp.errstate(all="ignore"):
            return onp.asarray(self.layout.realify(y), dtype=float)

    def batch(self, X: onp.ndarray) -> onp.ndarray:
        """f at each point (rows of X). A point where f raises (outside its domain:
        a probability above 1, a log of a negative) gives a row of NaN, and the
        first such error is kept in ``domain_errors`` (the report names it)."""
        if not len(X):
            return onp.zeros((0, self.layout.real_size))
        rows: list = []
        failed: list[BaseException] = []
        for x in X:
            try:
                y = self._raw(x)
            except Exception as exc:  # f's own error at this point
                failed.append(exc)
                rows.append(None)
                continue
            rows.append(self._realified(y))
        if failed:
            # every point may be outside at a domain's edge (a probe that moves all
            # coordinates at once): NaN rows, the error kept for the report's note
            if not self.domain_errors:
                self.domain_errors.append(failed[0])
            nan = onp.full(self.layout.real_size, onp.nan)
            rows = [nan if r is None else r for r in rows]
        return onp.stack(rows)

    def vectorized(self, X: onp.ndarray) -> onp.ndarray:
        leaves = []
        for s, like, a, b in zip(self.specs, self._likes, self.bounds[:-1], self.bounds[1:]):
            batch = s.from_real_batch(onp.array(X[:, a:b]))
            leaves.append(self._in(batch, like=like) if self._in is not None else batch)
        self._seed()
        y = self.call(*leaves)
        if self._out is not None:
            y = map_leaves(self._out, y)
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
