"""The operators on torch and jax functions, through each framework's own AD.

One table: every gallery function, written with torch and with jax
(``gallery/for_torch.py``, ``gallery/for_jax.py``), through every operator, against
the hand-derived derivatives and against the same operator on the autograd version.
jax runs here in 64-bit mode, so that the comparisons are tight; dtypes and devices
of the results are asserted in ``test_operators_devices.py``.
"""

import contextlib
import warnings

import numpy as np
import pytest

import gradexplorer as gx
from gradexplorer import gallery

#: torch compiles its forward-mode decompositions with torch.jit.script on first use
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")

SYSTEMS = []
for _name in ("torch", "jax"):
    try:
        __import__(_name)
        SYSTEMS.append(_name)
    except ImportError:
        pass
if not SYSTEMS:
    pytest.skip("neither torch nor jax is installed", allow_module_level=True)


def _examples(system):
    if system == "torch":
        from gradexplorer.gallery.for_torch import examples
    else:
        from gradexplorer.gallery.for_jax import examples
    return examples()


def _x64(system):
    if system == "jax":
        import jax

        return jax.enable_x64(True)
    return contextlib.nullcontext()


def _arr(system, a):
    """A float64 / complex128 array of the system."""
    a = np.asarray(a)
    if system == "torch":
        import torch

        return torch.from_numpy(a.copy())
    import jax.numpy as jnp

    return jnp.asarray(a)


def to_np(x):
    if hasattr(x, "detach"):
        return x.detach().cpu().resolve_conj().numpy()
    return np.asarray(x)


def close(a, b, tol=1e-10):
    a, b = to_np(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * scale)


NAMES = list(gallery.EXAMPLES)
REAL = [n for n in NAMES if not gallery.EXAMPLES[n].complex]
COMPLEX = [n for n in NAMES if gallery.EXAMPLES[n].complex]
SCALAR = [n for n in REAL if gallery.EXAMPLES[n].scalar]
HESS = [n for n in SCALAR if gallery.EXAMPLES[n].hessian is not None]
HOLO = [n for n in COMPLEX if gallery.EXAMPLES[n].holomorphic]


@pytest.fixture(params=SYSTEMS)
def system(request):
    with _x64(request.param):
        yield request.param


def _case(system, name):
    """(example on the system, its float64 arguments, the autograd example, numpy args)."""
    ex = _examples(system)[name]
    ag = gallery.EXAMPLES[name]
    np_args = tuple(np.asarray(a) for a in ag.args())
    return ex, tuple(_arr(system, a) for a in np_args), ag, np_args


def _wrt(ex):
    return ex.wrt if len(ex.wrt) > 1 else ex.wrt[0]


def _tuple(x, ex):
    return x if len(ex.wrt) > 1 else (x,)


@pytest.mark.parametrize("name", REAL)
@pytest.mark.parametrize("mode", ["auto", "rev", "fwd"])
def test_jacobian_matches_hand_and_autograd(system, name, mode):
    ex, args, ag, np_args = _case(system, name)
    got = _tuple(gx.jacobian(ex.f, wrt=_wrt(ex), mode=mode)(*args), ex)
    mode_ag = "rev" if name == "logdet" else mode  # autograd has no JVP for slogdet
    want_ag = _tuple(gx.jacobian(ag.f, wrt=_wrt(ag), mode=mode_ag)(*np_args), ag)
    for g, hand, a in zip(got, ex.jacobian(*np_args), want_ag, strict=True):
        close(g, hand)
        close(g, a)
        assert tuple(g.shape) == np.shape(a)  # out.shape + in.shape


@pytest.mark.parametrize("name", NAMES)
def test_real_jacobian_matches_hand(system, name):
    ex, args, ag, np_args = _case(system, name)
    got = _tuple(gx.real_jacobian(ex.f, wrt=_wrt(ex))(*args), ex)
    for g, hand in zip(got, ex.jacobian(*np_args), strict=True):
        close(g, np.reshape(hand, tuple(g.shape)))


@pytest.mark.parametrize("name", SCALAR)
def test_grad_and_value_and_grad(system, name):
    ex, args, ag, np_args = _case(system, name)
    g = _tuple(gx.grad(ex.f, wrt=_wrt(ex))(*args), ex)
    value, grads = gx.value_and_grad(ex.f, wrt=ex.wrt)(*args)
    assert float(to_np(value)) == pytest.approx(float(ag.f(*np_args)), rel=1e-12)
    for a, b, hand in zip(g, grads, ex.jacobian(*np_args), strict=True):
        close(a, hand)
        close(b, hand)


@pytest.mark.parametrize("name", HESS)
def test_hessian_and_hvp(system, name):
    ex, args, ag, np_args = _case(system, name)
    H = gx.hessian(ex.f)(*args)
    close(H, ex.hessian(*np_args), 1e-9)
    close(H, gx.hessian(ag.f)(*np_args), 1e-9)
    v = np.random.default_rng(1).standard_normal(np.shape(np_args[0]))
    hv = gx.hvp(ex.f)(*args, _arr(system, v))
    n = v.size
    close(hv, (np.reshape(ex.hessian(*np_args), (n, n)) @ v.ravel()).reshape(v.shape), 1e-9)


@pytest.mark.parametrize("name", REAL)
def test_lop_rop_match_the_jacobian(system, name):
    ex, args, ag, np_args = _case(system, name)
    i = ex.wrt[0]
    y = ag.f(*np_args)
    J = np.reshape(ex.jacobian(*np_args)[0], (np.size(y), np.size(np_args[i])))

    def fi(xi):
        a = list(args)
        a[i] = xi
        return ex.f(*a)

    rng = np.random.default_rng(2)
    u = rng.standard_normal(np.shape(y))
    v = rng.standard_normal(np.shape(np_args[i]))
    close(gx.Lop(fi, args[i], _arr(system, u)), (u.ravel() @ J).reshape(np.shape(np_args[i])))
    close(gx.Rop(fi, args[i], _arr(system, v)), (J @ v.ravel()).reshape(np.shape(y)))


@pytest.mark.parametrize("name", NAMES)
def test_rop_of_complex_functions_is_the_directional_derivative(system, name):
    ex, args, ag, np_args = _case(system, name)
    if len(ex.wrt) > 1:
        return
    v = np.random.default_rng(3).standard_normal(np.shape(np_args[0]))
    if np.iscomplexobj(np_args[0]):
        v = v + 1j * np.random.default_rng(4).standard_normal(v.shape)
    fi = lambda x: ex.f(x, *args[1:])  # noqa: E731
    fa = lambda x: ag.f(x, *np_args[1:])  # noqa: E731
    close(gx.Rop(fi, args[0], _arr(system, v)), gx.Rop(fa, np_args[0], v))


@pytest.mark.parametrize("name", HOLO)
def test_holomorphic_jacobian_and_blocks(system, name):
    ex, args, ag, np_args = _case(system, name)
    J = gx.jacobian(ex.f, holomorphic=True)(*args)
    close(J, gx.jacobian(ag.f, holomorphic=True)(*np_args))
    blocks = gx.complex_blocks(ex.f, *args)
    assert isinstance(blocks.dz, np.ndarray)  # a result object: numbers on the host
    close(J, blocks.dz)
    assert blocks.is_holomorphic()


@pytest.mark.parametrize("name", COMPLEX)
def test_complex_without_holomorphic_points_to_real_jacobian(system, name):
    ex, args, _, _ = _case(system, name)
    with pytest.raises(TypeError, match="real_jacobian"):
        gx.jacobian(ex.f)(*args)


@pytest.mark.parametrize("name", [n for n in COMPLEX if gallery.EXAMPLES[n].holomorphic is False])
def test_non_holomorphic_blocks_match_autograd(system, name):
    ex, args, ag, np_args = _case(system, name)
    got, want = gx.complex_blocks(ex.f, *args), gx.complex_blocks(ag.f, *np_args)
    assert not got.is_holomorphic()
    for block in ("dre_dre", "dre_dim", "dim_dre", "dim_dim"):
        close(getattr(got, block), getattr(want, block))


def test_complex_grad_follows_gx_convention_on_both(system):
    """torch's own gradient of |z|² is 2z; jax's and autograd's 2 z̄: gx gives 2 z̄."""
    z = np.array([1.0 + 2.0j, -0.5 + 0.25j])
    want = gx.grad(lambda z: np.sum(np.abs(z) ** 2))(z)
    close(want, 2 * np.conj(z))
    lib = _lib(system)
    got = gx.grad(lambda z: lib.sum(lib.abs(z) ** 2))(_arr(system, z))
    close(got, want)
    _, (g,) = gx.value_and_grad(lambda z: lib.sum(lib.abs(z) ** 2))(_arr(system, z))
    close(g, want)
    close(gx.Lop(lambda z: lib.abs(z) ** 2, _arr(system, z), _arr(system, np.ones(2))), want)


def _lib(system):
    if system == "torch":
        import torch

        return torch
    import jax.numpy as jnp

    return jnp


def test_gradient_function_and_weighted_value_and_grad(system):
    lib = _lib(system)
    x1, x2 = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    dy1, dy2 = np.array([1.0, -1.0]), np.array([0.5, 2.0])
    g = gx.gradient_function(lambda a, b: (a * b, lib.sin(a)))
    dx1, dx2 = g(*(_arr(system, a) for a in (x1, x2, dy1, dy2)))
    close(dx1, dy1 * x2 + dy2 * np.cos(x1))
    close(dx2, dy1 * x1)
    f = lambda x: [x**2, 3 * x]  # noqa: E731
    dy = [_arr(system, [1.0, 0.0]), np.array([0.0, 2.0])]  # numpy cotangents are taken too
    value, (gr,) = gx.value_and_grad(f)(_arr(system, x1), dy=dy)
    assert isinstance(value, list) and len(value) == 2
    close(gr, np.array([2.0, 6.0]))


def test_wrt_by_name_keyword_and_sequence(system):
    lib = _lib(system)

    def f(x, y, *, scale=1.0):
        return lib.sum(x**3 * y) * scale

    x, y = _arr(system, [1.0, 2.0]), _arr(system, [3.0, 4.0])
    close(gx.grad(f, wrt="y")(x, y=y), [1.0, 8.0])
    gx_, gy = gx.grad(f, wrt=("x", "y"))(x, y)
    close(gx_, 3 * np.array([1.0, 4.0]) * [3.0, 4.0])
    close(gy, [1.0, 8.0])
    with pytest.raises(ValueError, match="all integers or all parameter names"):
        gx.grad(f, wrt=[0, "y"])(x, y)


def test_nested_structures_keep_their_form(system):
    lib = _lib(system)
    p = {"w": _arr(system, [1.0, 2.0]), "b": [_arr(system, [0.5]), _arr(system, 3.0)]}

    def loss(p):
        return lib.sum(p["w"] ** 2) + lib.sum(p["b"][0] * p["b"][1])

    g = gx.grad(loss)(p)
    assert set(g) == {"w", "b"} and isinstance(g["b"], list)
    close(g["w"], [2.0, 4.0])
    close(g["b"][0], [3.0])
    close(g["b"][1], 0.5)
    J = gx.jacobian(lambda p: (p["w"] * p["b"][1], p["b"][0]))(p)
    assert isinstance(J, tuple) and set(J[0]) == {"w", "b"}
    close(J[0]["w"], 3.0 * np.eye(2))
    close(J[0]["b"][1], [1.0, 2.0])
    close(J[1]["b"][0], [[1.0]])
    H = gx.hessian(loss)(p)
    close(H["w"]["w"], 2 * np.eye(2))
    close(H["b"][0]["b"][1], [1.0])
    ones = {"w": _arr(system, [1.0, 1.0]), "b": [_arr(system, [1.0]), _arr(system, 1.0)]}
    hv = gx.hvp(loss)(p, ones)
    close(hv["w"], [2.0, 2.0])
    close(hv["b"][1], 1.0)
    r = gx.Rop(lambda a, b: (a * b, a), [p["w"], p["w"]], [p["w"], p["w"]])
    assert isinstance(r, tuple)
    close(r[0], 2 * np.array([1.0, 4.0]))
    lop = gx.Lop(lambda a, b: a * b, (p["w"], p["w"]), _arr(system, [1.0, 1.0]))
    assert isinstance(lop, tuple)
    close(lop[0], [1.0, 2.0])


def test_real_jacobian_of_structures_stacks_the_leaves(system):
    lib = _lib(system)
    z = _arr(system, [1.0 + 1.0j])
    x = _arr(system, [2.0])
    J = gx.real_jacobian(lambda a: (a[0] * a[1], lib.abs(a[1])))([x, z])
    # rows [Re y0; Im y0; y1], columns [x; Re z; Im z]
    close(J, [[1.0, 2.0, 0.0], [1.0, 0.0, 2.0], [0.0, 1 / np.sqrt(2), 1 / np.sqrt(2)]])


@pytest.mark.parametrize("policy", ["raise", "warn", "ignore"])
def test_disconnected_inputs(system, policy):
    lib = _lib(system)
    f = lambda a, b, c: lib.sum(a**2) + 0.0 * lib.sum(lib.where(c > 0, 1.0, 2.0))  # noqa: E731
    a = _arr(system, [1.0, 2.0])
    g = gx.grad(f, wrt=(0, 1, 2), disconnected_inputs=policy, return_disconnected="none")
    if policy == "raise":
        with pytest.raises(gx.DisconnectedInputError, match="'b'"):
            g(a, a, a)
        return
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = g(a, a, a)
    named = [str(w.message) for w in seen if "does not depend" in str(w.message)]
    # b is not used; c only decides a branch (no derivative flows through a comparison)
    assert len(named) == (2 if policy == "warn" else 0), named
    close(out[0], [2.0, 4.0])
    assert out[1] is None and out[2] is None
    marker = gx.grad(f, wrt=1, disconnected_inputs="ignore", return_disconnected="disconnected")
    assert marker(a, a, a) is gx.DISCONNECTED
    zero = gx.grad(f, wrt=1, disconnected_inputs="ignore")(a, a, a)
    close(zero, [0.0, 0.0])


def test_a_once_differentiable_backward_has_no_silent_zero_hessian():
    """torch.func refuses a once_differentiable Function; the eager fallback's second
    backward pass found its gradient without a graph and read it as a zero Hessian.
    A linear f's constant gradient (truly zero second derivatives) stays zero."""
    torch = pytest.importorskip("torch")

    class OnceSin(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos()

    x = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64)
    with pytest.raises(NotImplementedError, match="OnceSin.*second derivatives are unknown"):
        gx.hessian(lambda a: OnceSin.apply(a).sum())(x)
    with pytest.raises(NotImplementedError, match="OnceSin"):
        gx.hvp(lambda a: OnceSin.apply(a).sum())(x, torch.ones(3, dtype=torch.float64))
    assert torch.equal(gx.hessian(lambda a: (2 * a).sum())(x), torch.zeros(3, 3, dtype=x.dtype))
    from gradexplorer.backends.torch.eager import hessian_blocks

    assert torch.equal(
        hessian_blocks(lambda a: (2 * a).sum(), [x])[0][0], torch.zeros(3, 3).double()
    )
