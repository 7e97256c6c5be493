"""The operators on torch and jax: results on the inputs' device, in their dtype, and
what f may get wrong (said in words, never a raw framework error).

Every device present is tested from one table: ``cpu`` always, ``cuda`` (torch) and a
jax GPU where there is one. Every result of every operator is asserted to be the
framework's own array, on the device of the inputs, in their precision.
"""

import contextlib
import functools
import gc
import warnings

import numpy as np
import pytest

import gradexplorer as gx

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = jax.numpy

TORCH_DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
#: torch compiles its forward-mode decompositions with torch.jit.script on first use
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")

JAX_DEVICES = ["cpu"] + (["gpu"] if any(d.platform == "gpu" for d in jax.devices()) else [])
CASES = [("torch", d, dt) for d in TORCH_DEVICES for dt in ("float32", "float64")] + [
    ("jax", d, dt) for d in JAX_DEVICES for dt in ("float32", "float64")
]


class System:
    """Arrays of one framework on one device in one dtype, and the checks of a result."""

    def __init__(self, name, device, dtype):
        self.name, self.device, self.dtype = name, device, dtype
        self.lib = torch if name == "torch" else jnp
        self.seen = []  # the device of every array f was called with (torch: eager)

    def __call__(self, a, complex_=False):
        a = np.asarray(a, dtype=self.dtype)
        if complex_:
            a = a + 0.5j * a[::-1]
        if self.name == "torch":
            return torch.from_numpy(a.copy()).to(self.device)
        return jax.device_put(jnp.asarray(a), jax.devices(self.device)[0])

    def check(self, r, complex_=False):
        """r (and every leaf under it) is the system's array, on the device, in the dtype."""
        if isinstance(r, (list, tuple)):
            for x in r:
                self.check(x, complex_)
            return
        if isinstance(r, dict):
            for x in r.values():
                self.check(x, complex_)
            return
        want = (
            self.dtype if not complex_ else {"float32": "complex64"}.get(self.dtype, "complex128")
        )
        assert str(r.dtype).removeprefix("torch.") == want, (r.dtype, want)
        if self.name == "torch":
            assert isinstance(r, torch.Tensor) and r.device.type == self.device, r.device
        else:
            assert isinstance(r, jax.Array)
            assert {d.platform for d in r.devices()} == {self.device}, r.devices()

    def f(self, fn):
        """fn, noting the device of each array it is called with."""

        def wrapped(*args):
            for a in args:
                if isinstance(a, torch.Tensor):
                    self.seen.append(a.device.type)
            return fn(*args)

        return wrapped


@pytest.fixture(params=CASES, ids=["-".join(c) for c in CASES])
def s(request):
    name, device, dtype = request.param
    ctx = jax.enable_x64(True) if name == "jax" and dtype == "float64" else contextlib.nullcontext()
    with ctx:
        yield System(name, device, dtype)


def test_every_operator_keeps_device_and_dtype(s):
    lib = s.lib
    x, v = s([0.5, -1.0, 2.0]), s([1.0, 0.5, -0.25])
    layer = s.f(lambda x: lib.tanh(x) * lib.sum(x))
    loss = s.f(lambda x: lib.sum(x**3) + lib.sum(lib.sin(x)))
    for mode in ("auto", "rev", "fwd"):
        s.check(gx.jacobian(layer, mode=mode)(x))
    s.check(gx.real_jacobian(layer)(x))
    s.check(gx.grad(loss)(x))
    value, grads = gx.value_and_grad(loss)(x)
    s.check(value)
    s.check(grads)
    s.check(gx.hessian(loss)(x))
    s.check(gx.hvp(loss)(x, v))
    s.check(gx.Lop(layer, x, v))
    s.check(gx.Rop(layer, x, v))
    s.check(gx.gradient_function(lambda a, b: a * b)(x, v, v))
    z = s([1.0, 2.0], complex_=True)
    s.check(gx.jacobian(lambda z: z**2, holomorphic=True)(z), complex_=True)
    s.check(gx.real_jacobian(lambda z: z**2)(z))
    s.check(gx.grad(lambda z: lib.sum(lib.abs(z) ** 2))(z), complex_=True)
    s.check(gx.Rop(lambda z: z * lib.conj(z), z, z), complex_=True)
    blocks = gx.complex_blocks(lambda z: z**2, z)
    assert isinstance(blocks.dz, np.ndarray)  # a result object, on the host
    assert set(s.seen) <= {s.device}, s.seen  # f never ran on another device


def test_structures_keep_device_and_dtype(s):
    lib = s.lib
    p = {"W": s(np.ones((2, 3))), "b": [s([0.1, 0.2])]}
    x = s([1.0, 2.0, 3.0])
    loss = lambda p, x: lib.sum(lib.tanh(p["W"] @ x + p["b"][0]))  # noqa: E731
    s.check(gx.grad(loss)(p, x))
    s.check(gx.jacobian(lambda p, x: (p["W"] @ x, p["b"][0]))(p, x))
    s.check(gx.hessian(loss)(p, x))


@pytest.mark.parametrize("device", TORCH_DEVICES)
def test_a_module_by_its_parameters_on_its_device(device):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    model = model.to(device)
    x = torch.randn(3, device=device)
    before = [p.detach().clone() for p in model.parameters()]
    J = gx.jacobian(model, wrt="0.weight")(x)
    assert J.shape == (2, 4, 3) and J.device.type == device
    want = torch.func.jacrev(lambda w: torch.func.functional_call(model, {"0.weight": w}, (x,)))(
        model[0].weight.detach()
    )
    torch.testing.assert_close(J, want)
    value, grads = gx.value_and_grad(lambda *a: model(*a).sum())(x)
    assert len(grads) == 1 and grads[0].shape == (3,)
    # a module as f: every parameter by name (as check_grads does), in named_parameters order
    value, grads = gx.value_and_grad(model)(x)
    assert [tuple(g.shape) for g in grads] == [tuple(p.shape) for p in model.parameters()]
    assert all(g.device.type == device for g in grads)
    assert gx.jacobian(model)(x).shape == (2, 3)  # wrt=0: the input
    for p, q in zip(before, model.parameters()):
        assert torch.equal(p, q.detach())  # the user's model untouched


# ---------------------------------------------------------------- what f gets wrong


def _raises(exc, match, fn):
    with pytest.raises(exc, match=match) as info:
        fn()
    return info


@pytest.mark.parametrize("system", ["torch", "jax"])
def test_wrong_inputs_are_said_in_words(system):
    s = System(system, "cpu", "float64")
    lib = s.lib
    with jax.enable_x64(True):
        x = s([1.0, 2.0])
        ints = torch.tensor([1, 2]) if system == "torch" else jnp.array([1, 2])
        _raises(TypeError, "pass floats", lambda: gx.jacobian(lambda x: x * 2)(ints))
        _raises(TypeError, "pass floats", lambda: gx.grad(lambda x: lib.sum(x))(ints))
        _raises(TypeError, "must be a callable", lambda: gx.jacobian(x))
        _raises(TypeError, "scalar output", lambda: gx.grad(lambda x: x * 2)(x))
        _raises(TypeError, "scalar output", lambda: gx.hessian(lambda x: x * 2)(x))
        z = s([1.0, 2.0], complex_=True)
        _raises(TypeError, "real_jacobian", lambda: gx.jacobian(lambda z: z * 2)(z))
        _raises(TypeError, "real_jacobian", lambda: gx.jacobian(lambda x: x * 1j)(x))
        _raises(TypeError, "real output", lambda: gx.grad(lambda z: lib.sum(z * z))(z))
        _raises(TypeError, "real inputs", lambda: gx.hessian(lambda z: lib.sum(lib.abs(z)))(z))
        _raises(TypeError, "tangent of a real input", lambda: gx.Rop(lambda x: x, x, z))
        _raises(
            ValueError, r"shaped like the input", lambda: gx.hvp(lambda x: lib.sum(x))(x, s([1.0]))
        )
        _raises(ValueError, "tangent shaped like", lambda: gx.Rop(lambda x: x, x, s([1.0])))
        _raises(ValueError, "dy has shape", lambda: gx.value_and_grad(lambda x: x)(x, dy=s([1.0])))
        _raises(ValueError, "one cotangent per output", lambda: gx.Lop(lambda x: [x, x], x, [x]))
        _raises(ValueError, "mode must be", lambda: gx.jacobian(lambda x: x, mode="x")(x))
        _raises(TypeError, "returned None", lambda: gx.jacobian(lambda x: None)(x))
        _raises(TypeError, "returned a str", lambda: gx.jacobian(lambda x: "y")(x))
        _raises(TypeError, "no float", lambda: gx.jacobian(lambda x: x > 0)(x))
        with pytest.warns(gx.errors.NonFiniteWarning, match=r"y\[0\]=nan"):
            gx.jacobian(lambda x: lib.log(x - 1.5))(x)
        with pytest.warns(gx.errors.NonFiniteWarning, match=r"y=nan"):
            gx.grad(lambda x: lib.sum(lib.log(x - 1.5)))(x)


def test_torch_f_that_changes_its_input_is_refused_and_the_input_kept():
    x = torch.tensor([1.0, 2.0])

    def f(x):
        x.mul_(2)
        return x.sin()

    for op in (
        lambda: gx.jacobian(f)(x),
        lambda: gx.jacobian(f, mode="fwd")(x),
        lambda: gx.grad(lambda x: f(x).sum())(x),
        lambda: gx.hessian(lambda x: f(x).sum())(x),
        lambda: gx.hvp(lambda x: f(x).sum())(x, x),
        lambda: gx.Rop(f, x, x),
    ):
        _raises(gx.errors.InputMutationError, "in place", op)
        assert torch.equal(x, torch.tensor([1.0, 2.0]))


def test_conversions_to_numpy_and_python_are_said_in_words():
    xt, xj = torch.tensor([1.0, 2.0]), jnp.array([1.0, 2.0])
    _raises(TypeError, "converts a tensor to numpy",
            lambda: gx.jacobian(lambda x: torch.from_numpy(x.numpy() * 2))(xt))  # fmt: skip
    _raises(TypeError, "returned a numpy array", lambda: gx.jacobian(lambda x: np.ones(2))(xt))
    _raises(TypeError, "converts a jax array to numpy",
            lambda: gx.jacobian(lambda x: jnp.asarray(np.sin(np.asarray(x))))(xj))  # fmt: skip
    _raises(TypeError, "Python value", lambda: gx.jacobian(lambda x: x * float(x[0]))(xj))


class OldStyle(torch.autograd.Function):
    """A custom Function written the old way: torch.func refuses it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()


def test_old_style_torch_function_falls_back_to_eager_autograd():
    x = torch.tensor([0.3, 1.0, -2.0], dtype=torch.float64)
    cos, sin = torch.diag(x.cos()), torch.diag(-x.sin())
    torch.testing.assert_close(gx.jacobian(OldStyle.apply)(x), cos)
    torch.testing.assert_close(gx.jacobian(lambda v: OldStyle.apply(v).repeat(3))(x),
                               cos.repeat(3, 1))  # fmt: skip
    torch.testing.assert_close(gx.hessian(lambda v: OldStyle.apply(v).sum())(x), sin)
    torch.testing.assert_close(gx.hvp(lambda v: OldStyle.apply(v).sum())(x, x), sin @ x)
    torch.testing.assert_close(gx.Rop(OldStyle.apply, x, x), cos @ x)
    _raises(NotImplementedError, "mode='rev'", lambda: gx.jacobian(OldStyle.apply, mode="fwd")(x))


def test_jax_custom_vjp_without_forward_rule():
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (g * jnp.cos(x),))
    x = jnp.array([0.3, 1.0])
    np.testing.assert_allclose(gx.jacobian(f)(x), np.diag(np.cos([0.3, 1.0])), rtol=1e-6)
    tall = gx.jacobian(lambda v: f(jnp.outer(v, jnp.ones(4))))(x)  # auto picks forward: falls back
    assert tall.shape == (2, 4, 2)
    np.testing.assert_allclose(gx.Rop(f, x, x), np.cos([0.3, 1.0]) * [0.3, 1.0], rtol=1e-6)
    _raises(NotImplementedError, "custom_vjp", lambda: gx.jacobian(f, mode="fwd")(x))


def test_jax_python_control_flow_runs_eagerly():
    def f(x):
        if x[0] > 0:  # jit cannot trace this; jax's transforms can, eagerly
            return jnp.sin(x)
        return jnp.cos(x)

    x = jnp.array([0.5, 1.0])
    np.testing.assert_allclose(gx.jacobian(f)(x), np.diag(np.cos([0.5, 1.0])), rtol=1e-6)
    np.testing.assert_allclose(gx.jacobian(f)(-x), np.diag(np.sin([0.5, 1.0])), rtol=1e-6)
    np.testing.assert_allclose(gx.grad(lambda v: jnp.sum(f(v)))(x), np.cos([0.5, 1.0]), rtol=1e-6)
    masked = gx.jacobian(lambda v: jnp.sum(v[v > 0.7]))(x)  # a value-dependent shape
    np.testing.assert_allclose(masked, [0.0, 1.0])


W = jnp.array([1.0, 1.0])


def _reads_a_global(x):
    return jnp.sum(W * x)


def test_jax_compiled_programs_follow_what_f_reads():
    global W
    x = jnp.array([1.0, 2.0])
    np.testing.assert_allclose(gx.grad(_reads_a_global)(x), [1.0, 1.0])
    W = jnp.array([5.0, 7.0])  # rebound: a new program, never the old constant
    np.testing.assert_allclose(gx.grad(_reads_a_global)(x), [5.0, 7.0])
    scale = jnp.array(2.0)
    f = lambda v, n: jnp.sum(scale * v**n)  # noqa: E731
    np.testing.assert_allclose(gx.grad(f)(x, 2), [4.0, 8.0])  # n: a static argument
    np.testing.assert_allclose(gx.grad(f)(x, 3), [6.0, 24.0])
    np.testing.assert_allclose(
        gx.grad(lambda v, c: jnp.sum(c * v))(x, np.array([3.0, 4.0])), [3.0, 4.0]
    )
    np.testing.assert_allclose(
        gx.grad(lambda v, c: jnp.sum(c * v))(x, np.array([5.0, 6.0])), [5.0, 6.0]
    )
    np.testing.assert_allclose(gx.jacobian(jax.jit(lambda v: v**2))(x), np.diag([2.0, 4.0]))

    class Model:
        def __init__(self, a):
            self.a = a

        def loss(self, v):
            return jnp.sum(self.a * v**2)

        def __call__(self, v):
            return jnp.sum(self.a * v**2)

    model = Model(jnp.asarray(1.0))
    np.testing.assert_allclose(gx.grad(model.loss)(x), [2.0, 4.0])
    np.testing.assert_allclose(gx.grad(model)(x), [2.0, 4.0])
    model.a = jnp.asarray(3.0)  # an attribute rebound: seen by a method and by __call__
    np.testing.assert_allclose(gx.grad(model.loss)(x), [6.0, 12.0])
    np.testing.assert_allclose(gx.grad(model)(x), [6.0, 12.0])


def test_repeated_calls_on_parameter_structures_read_each_calls_own_arrays():
    """A dict of parameters (and a batch held constant beside it) keeps its binding
    by structure and arrays' signature: each call still differentiates its own
    values, and a new structure (another key, another order) binds afresh."""

    def loss(p, batch):
        h = jnp.tanh(p["W"] @ batch["x"] + p["b"])
        return jnp.sum((h - batch["y"]) ** 2) + jnp.sum(p["extra"][0] ** 2)

    rng = np.random.default_rng(0)
    for k in range(4):
        p = {
            "W": jnp.asarray(rng.standard_normal((3, 2))),
            "b": jnp.asarray(rng.standard_normal(3)),
        }
        p["extra"] = [jnp.asarray(rng.standard_normal(2))]
        if k == 3:  # the same arrays in another order: another structure
            p = {"b": p["b"], "extra": p["extra"], "W": p["W"]}
        batch = {"x": jnp.asarray(rng.standard_normal(2)), "y": jnp.asarray(rng.standard_normal(3))}
        got, want = gx.grad(loss)(p, batch), jax.grad(loss)(p, batch)
        assert list(got) == list(p)
        for key in p:
            np.testing.assert_allclose(
                np.asarray(jax.tree_util.tree_leaves(got[key])),
                np.asarray(jax.tree_util.tree_leaves(want[key])),
                rtol=1e-5,
                atol=1e-6,  # float32: jit and eager jax round apart
            )
    tloss = lambda p, c: ((p["W"] @ c).tanh() * p["b"]).sum()  # noqa: E731
    for _ in range(3):
        p = {"W": torch.randn(3, 2, dtype=torch.float64), "b": torch.randn(3, dtype=torch.float64)}
        c = torch.randn(2, dtype=torch.float64)
        got = gx.grad(tloss)(p, c)
        want = torch.func.grad(tloss)(p, c)
        for key in p:
            torch.testing.assert_close(got[key], want[key])


def test_jax_repeated_calls_see_each_calls_numpy_scalars():
    """A numpy scalar held constant (a weight, an index from np.argmax, a flag) has a
    shape and a dtype, so its binding is kept, but jax bakes its value into the
    program: a repeated call must not reuse the program of another value."""
    x = jnp.array([1.0, 2.0, 3.0])
    g = gx.grad(lambda v, c: jnp.sum(c * v**2))
    got = [g(x, np.float32(c)).tolist() for c in (1.0, 1.0, 5.0)]
    assert got == [[2.0, 4.0, 6.0], [2.0, 4.0, 6.0], [10.0, 20.0, 30.0]]
    pick = gx.grad(lambda v, i: v[i] ** 2)
    assert [pick(x, np.int64(i)).tolist() for i in (0, 0, 2)][-1] == [0.0, 0.0, 6.0]
    sign = gx.jacobian(lambda v, flip: -v if flip else v)
    assert [float(sign(x, np.bool_(b))[0, 0]) for b in (False, False, True)] == [1, 1, -1]
    scaled = gx.grad(lambda p, c: jnp.sum(c["s"] * p["w"] ** 2))
    for s in (1.0, 1.0, 3.0):
        out = scaled({"w": x}, {"s": np.float32(s)})
        np.testing.assert_allclose(out["w"], 2 * s * np.asarray(x))


def test_jax_programs_kept_per_function_stay_bounded():
    """Repeated calls keep a shortcut to their program beside the binding, weakly:
    the cache's limit per f still decides how many compiled programs stay alive."""
    from gradexplorer.backends.jax import staging

    def f(v):
        return jnp.sum(v**2)

    g = gx.grad(f)
    for n in range(1, staging.PER_FUNCTION + 12):
        g(jnp.ones(n))
        g(jnp.ones(n))
    gc.collect()
    pins = staging._fingerprint(f)
    alive = [o for o in gc.get_objects() if isinstance(o, staging._Entry) and o.pins == pins]
    assert 0 < len(alive) <= staging.PER_FUNCTION
    np.testing.assert_allclose(g(jnp.ones(3)), [2.0, 2.0, 2.0])  # an evicted shape again


def test_operator_of_a_partial_keeps_a_name():
    g = gx.grad(functools.partial(lambda v, c: jnp.sum(c * v), c=2.0))
    assert g.__name__ == "grad_f" and g(jnp.ones(2)).tolist() == [2.0, 2.0]


def test_jax_repeated_calls_read_each_calls_own_arrays():
    """A call that repeats f, ``wrt`` and the arrays' shapes reuses its binding and
    program; the arguments held constant are still this call's, whichever their
    position."""
    g = lambda c, v, d: jnp.sum(c * v) + jnp.sum(d)  # noqa: E731
    x = jnp.array([1.0, 2.0])
    for c in ([3.0, 4.0], [5.0, 6.0], [-1.0, 0.5]):
        d = jnp.array(c) * 2
        np.testing.assert_allclose(gx.grad(g, 1)(jnp.array(c), x, d), c)
        np.testing.assert_allclose(gx.jacobian(g, 2)(jnp.array(c), x, d), [1.0, 1.0])
        np.testing.assert_allclose(gx.grad(g, 1)(np.array(c), x, np.asarray(d)), c)


def test_operators_compose_with_jax_transforms():
    x = jnp.array([0.5, 1.5])
    inner = gx.grad(lambda v: jnp.sum(v**3))
    np.testing.assert_allclose(jax.jit(inner)(x), 3 * np.asarray(x) ** 2, rtol=1e-6)
    np.testing.assert_allclose(gx.jacobian(inner)(x), np.diag(6 * np.asarray(x)), rtol=1e-6)


def test_no_warnings_on_a_plain_call():
    x = torch.tensor([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gx.jacobian(torch.sin)(x)
        gx.grad(lambda v: (v**2).sum())(jnp.array([1.0]))


def test_a_framework_function_given_numpy_says_to_pass_its_arrays():
    x = np.ones(2)
    _raises(
        TypeError, r"Pass jax arrays \(jnp.asarray", lambda: gx.jacobian(lambda v: jnp.tanh(v))(x)
    )
    assert gx.jacobian(jnp.tanh)(x).shape == (2, 2)  # a jax function by its type: jax's AD
    _raises(TypeError, r"Pass torch tensors", lambda: gx.grad(lambda v: torch.tanh(v).sum())(x))
    _raises(TypeError, r"Pass torch tensors", lambda: gx.Lop(lambda v: torch.sin(v), x, x))
