"""executor=: None, an int (local processes), any concurrent.futures.Executor, or a
map-like callable; all through one .map; clear errors for anything else."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import gradexplorer as gx
from gradexplorer import gallery
from gradexplorer.fd.executors import opened_executor

# module-level functions of the gallery: process pools pickle them by reference
REAL = [e for e in gallery.EXAMPLES.values() if not e.complex]
ids = lambda e: e.name  # noqa: E731


def _jacobians(ex, executor):
    return gx.numeric_jacobian(ex.f, *ex.args(), wrt=ex.wrt[0], executor=executor)


def tanh_affine(x, W, b):
    return np.tanh(W @ x + b)


def test_two_local_processes_give_the_serial_jacobian():
    for ex in (gallery.get("softmax"), gallery.get("tanh_affine")):
        f = ex.f if ex.name == "softmax" else tanh_affine  # the gallery's is a lambda
        args = ex.args()
        serial = gx.numeric_jacobian(f, *args, wrt=ex.wrt[0])
        parallel = gx.numeric_jacobian(f, *args, wrt=ex.wrt[0], executor=2)
        np.testing.assert_array_equal(parallel.jacobian, serial.jacobian)
        np.testing.assert_array_equal(parallel.error, serial.error)
        assert parallel.nfev == serial.nfev
        J = np.asarray(ex.jacobian(*args)[0])
        np.testing.assert_allclose(parallel.jacobian, J, atol=1e-9)


@pytest.mark.parametrize("ex", REAL[:6], ids=ids)
def test_a_map_like_callable_gives_the_serial_jacobian(ex):
    seen = []

    def counting_map(fn, chunks):
        chunks = list(chunks)
        seen.append(len(chunks))
        return map(fn, chunks)

    serial = _jacobians(ex, None)
    for mapper in (map, counting_map):
        r = _jacobians(ex, mapper)
        np.testing.assert_array_equal(r.jacobian, serial.jacobian)
    assert seen and max(seen) > 1  # the points were handed out in chunks


def test_a_thread_pool_gives_the_serial_jacobian_and_stays_open():
    ex = gallery.get("rosenbrock")
    with ThreadPoolExecutor(2) as pool:
        r = _jacobians(ex, pool)
        assert pool.submit(int, 3).result() == 3  # ours to shut down, not gradexplorer's
    np.testing.assert_array_equal(r.jacobian, _jacobians(ex, None).jacobian)


def test_an_int_pool_is_shut_down_after_the_call():
    with opened_executor(2) as pool:
        assert pool.submit(abs, -1).result() == 1
    with pytest.raises(RuntimeError, match="shutdown"):
        pool.submit(abs, -1)


def test_dask_in_process_client_executor():
    distributed = pytest.importorskip("distributed")
    ex = gallery.get("softmax")
    with distributed.Client(processes=False, dashboard_address=None, n_workers=1) as client:
        r = _jacobians(ex, client.get_executor())
    np.testing.assert_allclose(r.jacobian, ex.jacobian(*ex.args())[0], atol=1e-10)
    np.testing.assert_array_equal(r.jacobian, _jacobians(ex, None).jacobian)


class _HasMap:
    def map(self, fn, items):
        return map(fn, items)


@pytest.mark.parametrize(
    "bad, error, words",
    [
        ("processes", TypeError, "concurrent.futures.Executor"),
        (0, ValueError, "int >= 1"),
        (-2, ValueError, "int >= 1"),
        (True, TypeError, "executor=4"),
        (2.5, TypeError, "map-like callable"),
        (ThreadPoolExecutor, TypeError, "instance, not the class"),
        (_HasMap(), TypeError, "executor=obj.map"),
        (lambda fn: fn, TypeError, "cannot be called with"),
    ],
    ids=["string", "zero", "negative", "bool", "float", "class", "has-map", "one-arg-callable"],
)
def test_bad_executors_are_refused_clearly(bad, error, words):
    with pytest.raises(error, match=words):
        gx.numeric_jacobian(np.sin, np.ones(2), executor=bad)


def test_a_map_like_callable_that_drops_results_is_refused():
    with pytest.raises(TypeError, match="fn\\(item\\) for every item"):
        gx.numeric_jacobian(np.sin, np.ones(3), executor=lambda fn, xs: map(fn, list(xs)[:1]))


@pytest.mark.parametrize("executor", [None, 2, map], ids=["serial", "two-processes", "map"])
def test_check_grads_spreads_its_evaluations_with_the_same_verdicts(executor):
    ex = gallery.get("softmax")
    r = gx.check_grads(ex.f, *ex.args(), executor=executor, rng=0)
    base = gx.check_grads(ex.f, *ex.args(), rng=0)
    assert r.passed and r.nfev == base.nfev
    np.testing.assert_array_equal(r.numeric, base.numeric)
    np.testing.assert_array_equal(r.fd_error, base.fd_error)


def test_check_grads_of_a_torch_function_through_an_executor():
    torch = pytest.importorskip("torch")
    x = torch.linspace(-1, 1, 4, dtype=torch.float64)
    with ThreadPoolExecutor(2) as pool:
        r = gx.check_grads(torch.tanh, x, executor=pool)
    assert r.passed
    with pytest.raises(ValueError, match="int >= 1"):
        gx.check_grads(torch.tanh, x, executor=0)


def test_check_grads_hands_its_points_to_the_executor():
    chunks = []

    def counting_map(fn, items):
        items = list(items)
        chunks.extend(len(c) for c in items)
        return map(fn, items)

    ex = gallery.get("softmax")
    r = gx.check_grads(ex.f, *ex.args(), executor=counting_map)
    # all the finite differences: f at the point (twice) and the probe of how f reads x
    # (x0, six points at its float32 cells and twelve at bfloat16's and float16's:
    # gradexplorer.fd.narrow) are taken here
    assert r.passed and r.nfev - 21 <= sum(chunks) < r.nfev
