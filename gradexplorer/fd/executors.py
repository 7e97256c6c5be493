"""Where finite differences evaluate f in parallel: one ``.map`` for every kind of executor.

``executor=`` takes ``None`` (in this process), an ``int`` (that many local
processes, a :class:`~concurrent.futures.ProcessPoolExecutor` created and shut
down here), any :class:`concurrent.futures.Executor` (a thread or process pool,
dask's ``Client.get_executor()``, mpi4py's ``MPIPoolExecutor``), or a map-like
callable (``map(fn, iterable)``-shaped: the builtin ``map``, a
``multiprocessing.Pool``'s ``pool.map``). A callable is wrapped in a tiny
adapter, so the evaluation has one code path: the executor's ``.map`` over
chunks of points.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any

import numpy as onp

__all__ = ["opened_executor", "spread", "spread_evaluator", "MapAdapter", "EXECUTOR_KINDS"]

#: What ``executor=`` accepts, for error messages.
EXECUTOR_KINDS = (
    "None, an int >= 1 (that many local processes), a concurrent.futures.Executor "
    "(a thread or process pool, dask's client.get_executor(), mpi4py's MPIPoolExecutor) "
    "or a map-like callable (map, a multiprocessing Pool's pool.map)"
)
#: Chunks handed out per worker: enough to balance uneven columns, few enough to ship cheaply.
CHUNKS_PER_WORKER = 4
#: Workers assumed where an executor does not say how many it has.
DEFAULT_WORKERS = 4


class MapAdapter:
    """A map-like callable seen as an executor: ``.map(fn, *iterables)``.

    >>> list(MapAdapter(map).map(abs, [-1, 2]))
    [1, 2]
    """

    def __init__(self, mapper: Callable, workers: int = DEFAULT_WORKERS):
        self.mapper = mapper
        self.workers = workers

    def map(self, fn: Callable, *iterables: Any) -> Any:
        return self.mapper(fn, *iterables)


def _check_executor(executor: Any) -> None:
    """Refuse what cannot map: a string, a bool, an int below 1, a class, a non-callable."""
    if executor is None:
        return
    what = f"{type(executor).__name__} {executor!r:.60}"
    if isinstance(executor, (bool, onp.bool_)):
        raise TypeError(
            f"executor must be {EXECUTOR_KINDS}; got {what}. For local processes pass "
            "their number, e.g. executor=4."
        )
    if isinstance(executor, (int, onp.integer)):
        if executor < 1:
            raise ValueError(
                f"executor={int(executor)} asks for {int(executor)} processes; pass an int >= 1 "
                "(the number of local processes) or None to evaluate in this process."
            )
        return
    if isinstance(executor, type) and issubclass(executor, Executor):
        raise TypeError(
            f"executor must be an instance, not the class {executor.__name__}: pass "
            f"{executor.__name__}(max_workers=4) (and shut it down yourself), or an int "
            "such as executor=4 for that many local processes."
        )
    if isinstance(executor, Executor):
        return
    if isinstance(executor, (str, bytes)) or not callable(executor):
        hint = ""
        if callable(getattr(executor, "map", None)):
            hint = " It has a .map method: pass that (executor=obj.map)."
        raise TypeError(f"executor must be {EXECUTOR_KINDS}; got {what}.{hint}")
    try:
        inspect.signature(executor).bind(abs, [0])
    except TypeError:
        raise TypeError(
            f"executor is a callable, so it must be map-like, map(fn, iterable) -> results; "
            f"{getattr(executor, '__name__', what)} cannot be called with (fn, iterable). "
            f"executor must be {EXECUTOR_KINDS}."
        ) from None
    except ValueError:  # a builtin without a signature (map itself): trusted
        pass


@contextlib.contextmanager
def opened_executor(executor: Any) -> Iterator[Any]:
    """The executor as something with ``.map`` (None for in-process evaluation);
    an int's process pool is created here and shut down on exit.

    >>> with opened_executor(map) as ex:
    ...     list(ex.map(str, [1, 2]))
    ['1', '2']
    >>> with opened_executor(None) as ex:
    ...     ex is None
    True
    """
    _check_executor(executor)
    if executor is None:
        yield None
    elif isinstance(executor, (int, onp.integer)):
        with ProcessPoolExecutor(int(executor)) as pool:
            yield pool
    elif isinstance(executor, Executor):
        yield executor
    else:
        yield MapAdapter(executor)


def _workers(executor: Any) -> int:
    """How many workers an executor has, where it says (a pool's ``_max_workers``,
    an adapter's ``workers``, a dask executor's client), else :data:`DEFAULT_WORKERS`."""
    for attr in ("workers", "_max_workers"):
        n = getattr(executor, attr, None)
        if isinstance(n, (int, onp.integer)) and n > 0:
            return int(n)
    client = getattr(executor, "_client", None)
    with contextlib.suppress(Exception):
        return max(1, sum(client.nthreads().values()))
    return DEFAULT_WORKERS


def spread(batch: Callable[[onp.ndarray], onp.ndarray], executor: Any, width: int):
    """``batch`` (rows of points -> rows of values, ``width`` columns) evaluated in
    chunks through ``executor.map``; None: ``batch`` itself.

    >>> run = spread(lambda X: X * 2, MapAdapter(map), 2)
    >>> run(onp.arange(6.0).reshape(3, 2)).tolist()
    [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]]
    """
    if executor is None:
        return batch
    workers = _workers(executor)

    def run(X: onp.ndarray) -> onp.ndarray:
        if not len(X):
            return batch(X)
        chunks = onp.array_split(X, max(1, min(len(X), CHUNKS_PER_WORKER * workers)))
        try:
            parts = list(executor.map(batch, chunks))
        except Exception as exc:
            if "pickle" in str(exc).lower() or "Can't get local" in str(exc):
                raise TypeError(
                    f"executor could not ship f to its workers ({exc}). Define f at module "
                    "level (not a lambda or closure) for process pools, or use a thread "
                    "pool or dask (which pickles closures)."
                ) from exc
            raise
        return _stacked(parts, chunks, width)

    return run


def _stacked(parts: list, chunks: list, width: int) -> onp.ndarray:
    """The chunks' results as one array, refusing what a map-like callable got wrong."""
    shapes = [(len(c), width) for c in chunks]
    got = [onp.shape(p) for p in parts]
    if len(parts) != len(chunks) or any(g != s for g, s in zip(got, shapes)):
        raise TypeError(
            f"executor's map returned {len(parts)} result(s) shaped {got[:4]} for "
            f"{len(chunks)} chunk(s) shaped {shapes[:4]}: a map-like executor must return "
            "fn(item) for every item, in order, as map(fn, iterable) does."
        )
    return onp.vstack(parts)


def spread_evaluator(rmap: Any, executor: Any, device: str) -> Any:
    """A host evaluator of f (a :class:`~gradexplorer.fd.realmap.RealMap`) whose points
    go through ``executor`` (None: None, the caller keeps its own evaluator)."""
    from .evaluation import HostEvaluator

    if executor is None:
        return None
    if device != "cpu":
        raise ValueError(
            f"executor= evaluates f in other workers on host (numpy) points, but f's inputs "
            f"live on {device}, where gradexplorer evaluates f with that device's kernels. "
            "Drop executor= (the device evaluates batches of points itself), or move the "
            "inputs to the CPU to spread f over CPU workers."
        )
    return HostEvaluator(spread(rmap.batch, executor, rmap.layout.real_size), rmap)
