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
    """The operations that went row by row; ``loops.stacked``: those that went as a stack."""
    seen = Ways()
    original_loop, original_agrees = batched._loop, batched._agrees

    def counting(node, recipe, G):
        seen.append(gx.backends.autograd.op_name(node.fun))
        return original_loop(node, recipe, G)

    def agreeing(node, *args):
        ok = original_agrees(node, *args)
        if ok:
            seen.stacked.append(gx.backends.autograd.op_name(node.fun))
        return ok

    monkeypatch.setattr(batched, "_loop", counting)
    monkeypatch.setattr(batched, "_agrees", agreeing)
    return seen


class Ways(list):
    def __init__(self):
        super().__init__()
        self.stacked: list[str] = []


RNG = np.random.default_rng(0)
N = batched.STACK_FROM  # rows enough to go together; fewer go one by one
W, V = RNG.standard_normal((N, 5)), RNG.standard_normal((5, N))

TOGETHER = {
    "tanh(W @ x)": (lambda x: anp.tanh(W @ x), RNG.standard_normal(5)),
    "x @ V": (lambda x: x @ V, RNG.standard_normal(5)),
    "dot(W, X)": (lambda X: anp.dot(W, X), RNG.standard_normal((5, 3))),
    "X.T @ W": (lambda X: anp.matmul(X.T, W), RNG.standard_normal((N, 10))),
    "arithmetic": (lambda x: (x * 2.0 - x / 3.0 + 1.0) / (2.0 + x * x), RNG.standard_normal(N)),
    "broadcast": (lambda x: (x[:, None] * x[None, :]) + x, RNG.standard_normal(7)),
    "exp, sin, log": (lambda x: anp.exp(anp.sin(x)) + anp.log(1.0 + x**2), RNG.standard_normal(N)),
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
    assert loops.stacked and set(loops.stacked) <= stacked


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


def test_a_users_rule_on_a_ufunc_runs_as_written():
    """A primitive on a numpy ufunc whose rule squares g: the user's rule is the one
    under test, row by row (and the check still names it)."""
    squaring = gx.primitive(np.tanh)
    gx.defvjp(squaring, lambda ans, x: lambda g: g * g * (1 - ans**2))
    x = np.linspace(-1, 1, N)
    tr = trace_vjp(lambda x: squaring(x * 1.5), [x])
    together, one_by_one = _rows(tr, np.asarray(tr.value))
    np.testing.assert_allclose(together[0], one_by_one[0], rtol=1e-12)
    report = gx.check_grads(lambda x: squaring(x * 1.5), x)
    assert not report.passed
    assert any("not linear in its cotangent" in n for n in report.notes)


def test_a_users_wrapped_dot_slightly_wrong_is_still_found():
    """A user's own dot whose VJP is 5e-5 too large (float32) is the rule under test:
    never replaced by the stacked rule of autograd's dot (a combination of 128 rows
    held to 64 ulps of their size let it through)."""
    gen = np.random.default_rng(7)
    D = gen.standard_normal((128, 16)).astype(np.float32)
    x = gen.standard_normal(16).astype(np.float32)
    dot = gx.primitive(np.dot)
    gx.defvjp(
        dot,
        lambda ans, a, b: lambda g: anp.outer(g, b),
        lambda ans, a, b: lambda g: anp.dot(g, a) * np.float32(1.00005),
    )
    f = lambda x: anp.sin(dot(D, x))  # noqa: E731
    J = np.asarray(gx.jacobian(f)(x), float)
    true = np.cos(D.astype(float) @ x)[:, None] * D
    assert abs(np.median(J / true) - 1.00005) < 2e-6
    assert not gx.check_grads(f, x).passed


def test_a_redefined_rule_of_autograds_own_runs_row_by_row(monkeypatch, loops):
    from autograd.core import primitive_vjps

    own = primitive_vjps[anp.multiply]

    def off_by_a_thousandth(argnums, ans, args, kwargs):
        vjp = own(argnums, ans, args, kwargs)
        return lambda g: [1.001 * v for v in vjp(g)]

    monkeypatch.setitem(primitive_vjps, anp.multiply, off_by_a_thousandth)
    x = RNG.standard_normal(N)
    tr = trace_vjp(lambda x: x * x, [x])
    together, one_by_one = _rows(tr, np.asarray(tr.value))
    np.testing.assert_allclose(together[0], one_by_one[0], rtol=1e-14)
    np.testing.assert_allclose(np.diag(together[0]), 1.001 * 2 * x, rtol=1e-14)
    assert "multiply" in loops


def test_rows_far_apart_in_scale_are_each_right():
    scales = 10.0 ** np.linspace(-13, 13, N)
    tr = trace_vjp(lambda x: anp.tanh(W @ x) * scales, [RNG.standard_normal(5)])
    together, one_by_one = _rows(tr, np.asarray(tr.value))
    np.testing.assert_allclose(together[0], one_by_one[0], rtol=1e-13, atol=0)


def test_a_rule_returning_the_wrong_shape_raises_as_before():
    th = gx.primitive(np.tanh)
    gx.defvjp(th, lambda ans, x: lambda g: np.sum(g * (1 - ans**2)))
    A = RNG.standard_normal((N, 16))
    with pytest.raises(ValueError):
        gx.jacobian(lambda x: A @ th(x))(RNG.standard_normal(16))


def test_floating_point_errors_raise_as_they_would_row_by_row():
    x = np.linspace(0.0, 1.0, N)
    with np.errstate(all="raise"), pytest.raises(FloatingPointError):
        gx.jacobian(lambda x: anp.sqrt(x) * 2.0, mode="rev")(x)


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
    monkeypatch.setattr(batched, "MAX_STACK_BYTES", 8 * N * 5)  # 5 rows of N values
    tr = trace_vjp(lambda x: anp.tanh(W @ x), [RNG.standard_normal(5)])
    tr.backward_rows(np.eye(N))
    assert sizes == [5] * (N // 5) + ([N % 5] if N % 5 else [])


def test_the_checker_builds_its_jacobian_together(loops):
    B = RNG.standard_normal((2 * N, 30)) / 6
    report = gx.check_grads(lambda x: anp.tanh(B @ x), RNG.standard_normal(30))
    assert report.passed
    assert "matmul" not in loops and "tanh" not in loops
    assert {"matmul", "tanh"} <= set(loops.stacked)
