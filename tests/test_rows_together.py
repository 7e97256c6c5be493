"""Many backward passes at once on autograd (backends/autograd/batched.py): the rows
of a Jacobian from a stack of cotangents equal one backward pass per row, over the
gallery, and the stack goes through the operations users write most."""

import autograd.numpy as anp
import numpy as np
import pytest

import gradexplorer as gx
from gradexplorer import gallery
from gradexplorer.backends.autograd import batched
from gradexplorer.backends.autograd.tracing import trace_vjp

EXAMPLES = list(gallery.EXAMPLES.values())
ids = lambda e: e.name  # noqa: E731


def _rows(tr, y):
    m = np.size(y)
    units = np.eye(m).reshape((m,) + np.shape(y))
    together = tr.backward_rows(units)
    one_by_one = [
        np.stack([np.asarray(tr.backward(u)[k]) for u in units]) for k in range(len(together))
    ]
    return together, one_by_one


@pytest.mark.parametrize("ex", EXAMPLES, ids=ids)
def test_rows_together_equal_one_backward_pass_per_row(ex):
    args = ex.args()
    tr = trace_vjp(lambda *a: ex.f(*a), list(args))
    y = np.asarray(tr.value)
    if y.dtype.kind != "f":
        pytest.skip("complex output: rows of a complex cotangent go one by one")
    together, one_by_one = _rows(tr, y)
    for a, b in zip(together, one_by_one):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14 * (1 + np.abs(b).max()))


@pytest.fixture
def loops(monkeypatch):
    """The operations that went row by row."""
    seen = []
    original = batched._loop

    def counting(node, recipe, G):
        seen.append(gx.backends.autograd.op_name(node.fun))
        return original(node, recipe, G)

    monkeypatch.setattr(batched, "_loop", counting)
    return seen


RNG = np.random.default_rng(0)
# at least STACK_FROM rows each: fewer go one by one
W, V = RNG.standard_normal((20, 5)), RNG.standard_normal((5, 16))

TOGETHER = {
    "tanh(W @ x)": (lambda x: anp.tanh(W @ x), RNG.standard_normal(5)),
    "x @ V": (lambda x: x @ V, RNG.standard_normal(5)),
    "dot(W, X)": (lambda X: anp.dot(W, X), RNG.standard_normal((5, 3))),
    "X.T @ W": (lambda X: anp.matmul(X.T, W), RNG.standard_normal((20, 2))),
    "arithmetic": (lambda x: (x * 2.0 - x / 3.0 + 1.0) / (2.0 + x * x), RNG.standard_normal(17)),
    "broadcast": (lambda x: (x[:, None] * x[None, :]) + x, RNG.standard_normal(5)),
    "exp, sin, log": (lambda x: anp.exp(anp.sin(x)) + anp.log(1.0 + x**2), RNG.standard_normal(18)),
}


@pytest.mark.parametrize("name", TOGETHER)
def test_common_operations_go_together(name, loops):
    f, x = TOGETHER[name]
    tr = trace_vjp(f, [x])
    together, one_by_one = _rows(tr, np.asarray(tr.value))
    np.testing.assert_allclose(together[0], one_by_one[0], rtol=1e-12, atol=1e-15)
    stacked = {"matmul", "dot", "multiply", "add", "subtract", "true_divide", "divide"}
    stacked |= {"tanh", "exp", "sin", "log"}
    assert not [op for op in loops if op in stacked]


def test_an_operation_whose_vjp_is_not_linear_goes_row_by_row(loops):
    @gx.primitive
    def wavy(x):
        return np.sin(x)

    # not linear in g: the rows from unit cotangents are what one-by-one passes give
    gx.defvjp(wavy, lambda ans, x: lambda g: g**2 * np.cos(x))
    x = np.linspace(0.1, 1.0, 5)
    tr = trace_vjp(lambda x: wavy(W @ x), [x])
    together, one_by_one = _rows(tr, np.asarray(tr.value))
    np.testing.assert_allclose(together[0], one_by_one[0], rtol=1e-12)
    assert "wavy" in loops


def test_an_elementwise_vjp_not_linear_in_g_is_not_stacked():
    """A primitive on a numpy ufunc whose rule squares g: the stacked call and the
    combination disagree, so the node goes row by row (and the check still names it)."""
    squaring = gx.primitive(np.tanh)
    gx.defvjp(squaring, lambda ans, x: lambda g: g * g * (1 - ans**2))
    x = np.linspace(-1, 1, 20)
    tr = trace_vjp(lambda x: squaring(x * 1.5), [x])
    together, one_by_one = _rows(tr, np.asarray(tr.value))
    np.testing.assert_allclose(together[0], one_by_one[0], rtol=1e-12)
    assert False in tr.stackable.values()
    report = gx.check_grads(lambda x: squaring(x * 1.5), x)
    assert not report.passed
    assert any("not linear in its cotangent" in n for n in report.notes)


def test_a_higher_derivative_goes_row_by_row_and_is_right():
    ex = gallery.get("rosenbrock")
    (x,) = ex.args()
    np.testing.assert_allclose(gx.hessian(ex.f)(x), ex.hessian(x), rtol=1e-10)


def test_stacks_are_chunked_to_a_memory_budget(monkeypatch):
    sizes = []
    original = batched._stacked

    def recording(trace, G):
        sizes.append(G.shape[0])
        return original(trace, G)

    monkeypatch.setattr(batched, "_stacked", recording)
    monkeypatch.setattr(batched, "MAX_STACK_BYTES", 8 * 20 * 3)  # 3 rows of 20 values
    tr = trace_vjp(lambda x: anp.tanh(W @ x), [RNG.standard_normal(5)])
    tr.backward_rows(np.eye(20))
    assert sizes == [3] * 6 + [2]


def test_the_checker_builds_its_jacobian_together(loops):
    B = RNG.standard_normal((40, 30)) / 6
    report = gx.check_grads(lambda x: anp.tanh(B @ x), RNG.standard_normal(30))
    assert report.passed
    assert "matmul" not in loops and "tanh" not in loops
