"""A hard, table-driven corpus for ``check_grads``: right derivatives that are hard
to check (RIGHT) and subtly wrong ones whose wrong entries are derived by hand (WRONG).

Layout reminder (the report's 2-D matrix): rows are the output leaves flattened and
stacked in order (a tuple output (a, b): rows of a, then of b; dict outputs in
insertion order); columns are the checked arguments' leaves flattened and
concatenated (dict leaves in insertion order). A complex leaf takes 2*size
coordinates, [Re part; Im part], for rows and columns alike. ``(-1, j)`` is a
"linearity" entry: the VJP is not linear in its cotangent, so no single row is
wrong; j is the input coordinate where vjp(random u) differs from u·J.

For order=2 the report is the Jacobian of G(x, u) = vjp_f(x)(u): rows are the input
coordinates (d(u·y)/dx[i]), columns are the input coordinates followed by the
cotangent block u (m columns; m = 1 and u = 1 for a scalar f).

Every ``expected`` set below is derived from the bug as written (see the comment
beside each case), never from running the checker.

autograd's complex convention (used in the derivations): the cotangent of a
complex value w is g = dL/dRe w - i dL/dIm w, and a holomorphic f has VJP
g -> g * f'(z) (no conjugate). A realified complex map with local derivative
c = a + ib has the real Jacobian [[a, -b], [b, a]] (rows [Re; Im], columns
[Re; Im]); a rule that uses conj(c) instead gives [[a, b], [-b, a]], i.e. it is
wrong exactly on the diagonals of the two off-diagonal blocks where b != 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import autograd.numpy as anp
import autograd.scipy.stats.multivariate_normal as mvn
import numpy as np
from autograd.builtins import tuple as ag_tuple
from autograd.scipy.integrate import odeint
from autograd.scipy.special import logsumexp

import gradexplorer as gx


@dataclass
class Case:
    name: str
    f: object
    args: tuple
    expected: set = field(default_factory=set)
    order: int = 1
    kw: dict = field(default_factory=dict)  # check_grads options: wrt, reseed, ...
    note: str = ""
    # optional extras the tests also assert
    kind: str | None = None  # when set: every full-mode mismatch has this kind
    not_checked: frozenset | None = None  # labels that must be listed in r.not_checked
    fast: bool = True  # also run mode="fast"
    weak_order2: bool = False  # assert only r.failed_orders == (2,)


def _prim(fun, vjp, jvp=None):
    p = gx.primitive(fun)
    gx.defvjp(p, vjp)
    if jvp is not None:
        gx.defjvp(p, jvp)
    return p


def _all(m, n):
    return {(i, j) for i in range(m) for j in range(n)}


def _diag(n, row0=0, col0=0):
    return {(row0 + i, col0 + i) for i in range(n)}


_r = np.random.default_rng(20240611)


def _randn(*shape):
    return _r.standard_normal(shape)


def _unif(lo, hi, *shape):
    return _r.uniform(lo, hi, shape)


RIGHT: list[Case] = []
WRONG: list[Case] = []

# =====================================================================================
# RIGHT: correct derivatives that are hard to check (expected is always empty)
# =====================================================================================

# ---- nested parameters --------------------------------------------------------------
_mlp_params = [(_randn(4, 3) * 0.7, _randn(4) * 0.1), (_randn(2, 4) * 0.7, _randn(2) * 0.1)]
_mlp_x = _randn(3)
_mlp_t = np.array([0.3, -0.4])


def mlp2_loss(params, x):
    (W1, b1), (W2, b2) = params
    h = anp.tanh(W1 @ x + b1)
    y = W2 @ h + b2
    return anp.sum((y - _mlp_t) ** 2)


RIGHT.append(Case("mlp2_nested_loss", mlp2_loss, (_mlp_params, _mlp_x)))


def mlp2_logits_and_loss(params, x):
    (W1, b1), (W2, b2) = params
    h = anp.tanh(W1 @ x + b1)
    logits = W2 @ h + b2
    return logits, logits[0] - logsumexp(logits)


RIGHT.append(Case("mlp2_tuple_out", mlp2_logits_and_loss, (_mlp_params, _mlp_x)))

_rnn_params = {"W_hh": _randn(3, 3) * 0.5, "W_xh": _randn(3, 2) * 0.5, "b": _randn(3) * 0.1}
_rnn_xs = [_randn(2) for _ in range(3)]


def rnn3(params, xs):
    h = anp.zeros(3)
    for x in xs:
        h = anp.tanh(params["W_hh"] @ h + params["W_xh"] @ x + params["b"])
    return h


RIGHT.append(Case("rnn_dict_3steps", rnn3, (_rnn_params, _rnn_xs)))

_H, _D = 2, 2
_lstm_params = {"W": _randn(4 * _H, _H + _D) * 0.5, "b": _randn(4 * _H) * 0.1}
_lstm_xs = [_randn(_D) for _ in range(3)]


def _sigmoid(z):
    return 0.5 * (anp.tanh(0.5 * z) + 1.0)


def lstm3(params, xs):
    h = anp.zeros(_H)
    c = anp.zeros(_H)
    for x in xs:
        z = params["W"] @ anp.concatenate([h, x]) + params["b"]
        i, f, o, g = z[:_H], z[_H : 2 * _H], z[2 * _H : 3 * _H], z[3 * _H :]
        c = _sigmoid(f) * c + _sigmoid(i) * anp.tanh(g)
        h = _sigmoid(o) * anp.tanh(c)
    return h, c


def lstm_params_only(params):
    return lstm3(params, _lstm_xs)


RIGHT.append(
    Case(
        "lstm_dict_3steps_tuple_out",
        lstm_params_only,
        (_lstm_params,),
        note="xs in the closure: only params checked; output (h, c)",
    )
)

_deep = {"enc": [(_randn(2, 3), _randn(2))], "dec": {"B": _randn(3, 2), "scale": 0.7}}


def deep_nesting(p, x):
    ((A, a),) = p["enc"]
    z = anp.sin(A @ x + a)
    return p["dec"]["scale"] * anp.sum(anp.exp(p["dec"]["B"] @ z) * x)


RIGHT.append(Case("deep_nesting_python_float_leaf", deep_nesting, (_deep, _randn(3))))


# ---- tuple / dict outputs -----------------------------------------------------------
def mean_var(x):
    mu = anp.mean(x)
    return mu, anp.mean((x - mu) ** 2)


RIGHT.append(Case("mean_var_tuple", mean_var, (_randn(6),)))


def eigh_sym(B):
    w, v = anp.linalg.eigh(B + B.T)
    return w, v


RIGHT.append(Case("eigh_tuple_out", eigh_sym, (_randn(3, 3),)))


def svd_tuple(A):
    U, s, Vt = anp.linalg.svd(A, full_matrices=False)
    return U, s, Vt


RIGHT.append(Case("svd_tuple_out_tall", svd_tuple, (_randn(4, 3),)))


def dict_out(x):
    return {"loss": anp.sum(x**2), "feat": anp.tanh(x), "pair": (x[0] * x[1], anp.exp(x[2]))}


RIGHT.append(Case("dict_and_nested_output", dict_out, (_randn(4),)))


# ---- high-frequency oscillation ------------------------------------------------------
RIGHT.append(Case("sin_50x", lambda x: anp.sin(50 * x), (np.linspace(0.1, 1.0, 5),)))
RIGHT.append(Case("sin_1e3x", lambda x: anp.sin(1e3 * x), (np.array([0.1, 0.37, 0.9]),)))
RIGHT.append(
    Case("chirp_damped", lambda x: anp.exp(-x) * anp.sin(1e3 * x**2), (np.array([0.2, 0.55, 1.3]),))
)


# ---- kinks / jumps a little away from x ---------------------------------------------
RIGHT.append(
    Case(
        "floor_jump_1e-4_away",
        lambda x: x**2 + anp.floor(10 * x),
        (np.array([0.3 + 1e-4, 0.55, 0.71]),),
        note="floor(10x) jumps at x=0.3, 1e-4 from x[0]",
    )
)
RIGHT.append(
    Case(
        "where_jump_1e-5_away",
        lambda x: anp.where(x > 0.5, x**2, -x),
        (np.array([0.5 + 1e-5, 0.5 - 2e-5, 0.1]),),
    )
)
RIGHT.append(
    Case(
        "abs_kink_few_e-6_away",
        lambda x: anp.abs(x - 0.2),
        (np.array([0.2 + 3e-6, 0.2 - 5e-6, 0.5]),),
    )
)
RIGHT.append(
    Case(
        "maximum_kink_1e-6_away",
        lambda x: anp.maximum(x, 0.7) * x,
        (np.array([0.7 - 1e-6, 0.7 + 1e-6, 0.1]),),
    )
)

_relu_x = np.array([0.4, -0.3, 0.8])
_relu_W1 = _randn(4, 3)
_relu_b1 = _randn(4) * 0.1
_relu_b1[2] = 1e-7 - _relu_W1[2] @ _relu_x  # hidden unit 2 sits 1e-7 above its kink
_relu_params = [(_relu_W1, _relu_b1), (_randn(2, 4), _randn(2) * 0.1)]


def relu_mlp(params):
    (W1, b1), (W2, b2) = params
    return W2 @ anp.maximum(W1 @ _relu_x + b1, 0.0) + b2


RIGHT.append(Case("relu_unit_1e-7_above_zero", relu_mlp, (_relu_params,)))


# ---- cancellation --------------------------------------------------------------------
RIGHT.append(
    Case("cancellation_1e6", lambda x: (x + 1e6) ** 2 - 1e12, (np.array([-0.7, 0.3, 1.1]),))
)
RIGHT.append(
    Case("log_exp_big", lambda x: anp.log(anp.exp(x)), (np.array([700.0, 300.0, -700.0]),))
)
RIGHT.append(
    Case("huge_intermediates", lambda x: (1e8 * x + anp.sin(x)) - 1e8 * x, (np.array([0.3, 1.7]),))
)
RIGHT.append(Case("logsumexp_large", lambda x: logsumexp(x), (np.array([1000.0, 1001.0, 1002.5]),)))


# ---- iterative / adaptive ------------------------------------------------------------
def newton_sqrt(a):
    y = anp.ones_like(a)
    for _ in range(100):
        y = 0.5 * (y + a / y)
        if anp.all(anp.abs(y * y - a) <= 1e-14 * a):
            break
    return y


RIGHT.append(Case("newton_sqrt_tolerance_stop", newton_sqrt, (np.array([2.0, 7.0, 0.3]),)))


def fixed_point_cos(a):
    y = anp.zeros_like(a)
    for _ in range(500):
        y_new = anp.cos(a * y)
        if anp.max(anp.abs(y_new - y)) < 1e-12:
            y = y_new
            break
        y = y_new
    return y


RIGHT.append(Case("fixed_point_cos_tolerance_stop", fixed_point_cos, (np.array([0.5, 0.9, 1.2]),)))

_t_ode = np.array([0.0, 0.5, 1.0])


def ode_tuple_args(y0, a, b):
    def dyn(y, t, a, b):
        return -a * y + b * anp.sin(t)

    return odeint(dyn, y0, _t_ode, ag_tuple((a, b)))


RIGHT.append(
    Case(
        "odeint_tuple_args",
        ode_tuple_args,
        (np.array([1.0, -0.5]), np.array([0.7, 1.3]), np.array([0.2, -0.1])),
    )
)

_odenet = {"W": _randn(2, 2) * 0.8, "b": _randn(2) * 0.2}


def ode_net(params, y0):
    def dyn(y, t, W, b):
        return anp.tanh(W @ y + b)

    ys = odeint(dyn, y0, np.array([0.0, 1.0]), ag_tuple((params["W"], params["b"])))
    return ys[-1]


RIGHT.append(Case("ode_net_dict_params", ode_net, (_odenet, np.array([0.5, -0.3]))))


# ---- overflow-prone --------------------------------------------------------------------
RIGHT.append(
    Case(
        "exp_at_700_and_709",
        lambda x: anp.exp(x),
        (np.array([700.0, 709.0]),),
        note="exp overflows at 709.78: a step above 0.78 overflows",
    )
)
RIGHT.append(
    Case(
        "softplus_at_700", lambda x: anp.logaddexp(0.0, x), (np.array([700.0, -700.0, 0.5, 30.0]),)
    )
)


# ---- very different magnitudes in one array -------------------------------------------
RIGHT.append(Case("log_magnitudes_1e-8_1_1e8", lambda x: anp.log(x), (np.array([1e-8, 1.0, 1e8]),)))
_s = np.array([1e8, 1.0, 1e-8])
RIGHT.append(
    Case("scaled_sin_magnitudes", lambda x: anp.sin(x * _s) / _s, (np.array([0.7e-8, 0.7, 0.7e8]),))
)


# ---- small entries beside huge ones in the same row ------------------------------------
def row_1e9_and_1em9(x):
    # row 0: d/dx0 ~ 1e9, d/dx1 ~ 1e-9, and the value itself is small (~1e-3),
    # so the small entry is resolvable
    return anp.stack([1e9 * anp.sin(x[0]) + 1e-9 * anp.exp(x[1]), anp.sin(x[1])])


RIGHT.append(Case("row_with_1e9_and_1e-9_resolvable", row_1e9_and_1em9, (np.array([1e-12, 0.5]),)))
RIGHT.append(
    Case(
        "row_with_1e9_and_1e-9_big_value",
        lambda x: 1e9 * x[0] + 1e-9 * x[1] ** 2 + x[2],
        (np.array([1.0, 0.5, 2.0]),),
        note="the 1e-9 entry sits under f's round-off (~1e-7): unresolvable, not wrong",
    )
)


# ---- precision ------------------------------------------------------------------------
def mixed_precision(a32, b64):
    return anp.sin(a32) * b64 + anp.sum(a32 * b64)


RIGHT.append(
    Case(
        "mixed_float32_float64",
        mixed_precision,
        (_unif(0.1, 1.0, 4).astype(np.float32), _unif(0.5, 2.0, 4)),
    )
)
_W32 = (_randn(3, 4) * 0.5).astype(np.float32)
RIGHT.append(
    Case(
        "float32_tanh_layer",
        lambda x: anp.tanh(_W32 @ x) + x[:3] ** 2,
        (_randn(4).astype(np.float32),),
    )
)
RIGHT.append(
    Case(
        "float32_exp_range",
        lambda x: 3 * anp.exp(x),
        (np.array([-3.0, 0.0, 5.0, 10.0], np.float32),),
    )
)


# ---- complex --------------------------------------------------------------------------
_z3 = _randn(3) + 1j * _randn(3)
RIGHT.append(Case("complex_holomorphic", lambda z: z**3 + anp.sin(z) * anp.exp(z), (_z3,)))
RIGHT.append(
    Case(
        "complex_nonholomorphic_real_out",
        lambda z: anp.abs(z) ** 2 + anp.real(z * anp.conj(z[::-1])),
        (_z3.copy(),),
    )
)
RIGHT.append(
    Case(
        "complex_nonholomorphic_complex_out",
        lambda z: anp.conj(z) * z**2 + anp.abs(z),
        (_z3.copy(),),
    )
)
RIGHT.append(Case("real_to_complex", lambda x: anp.exp(1j * x) * x, (_unif(0.2, 2.0, 3),)))
RIGHT.append(
    Case(
        "complex_matrix_vector", lambda A, z: A @ z, (_randn(2, 3) + 1j * _randn(2, 3), _z3.copy())
    )
)


# ---- realistic models ------------------------------------------------------------------
_mvn_A = _randn(3, 3) * 0.5


def mvn_logpdf(A, x, mean):
    cov = A @ A.T + anp.eye(3)
    return mvn.logpdf(x, mean, cov)


RIGHT.append(Case("mvn_logpdf_sym_cov", mvn_logpdf, (_mvn_A, _randn(3), _randn(3) * 0.3)))

_gp_X = np.linspace(-1.0, 1.0, 5)
_gp_y = np.sin(3 * _gp_X) + 0.1 * _randn(5)


def gp_nll(p):
    ls, sf, sn = anp.exp(p["log_ls"]), anp.exp(p["log_sf"]), anp.exp(p["log_sn"])
    d = _gp_X[:, None] - _gp_X[None, :]
    K = sf**2 * anp.exp(-0.5 * d**2 / ls**2) + sn**2 * anp.eye(5)
    alpha = anp.linalg.solve(K, _gp_y)
    _, logdet = anp.linalg.slogdet(K)
    return 0.5 * anp.dot(_gp_y, alpha) + 0.5 * logdet + 2.5 * anp.log(2 * anp.pi)


RIGHT.append(
    Case(
        "gp_negative_log_likelihood",
        gp_nll,
        ({"log_ls": np.array(-0.5), "log_sf": np.array(0.2), "log_sn": np.array(-1.5)},),
    )
)

_gmm_X = _randn(6, 2)


def gmm_loglik(p):
    K = p["means"].shape[0]
    logw = p["logits"] - logsumexp(p["logits"])
    sig2 = anp.exp(2 * p["log_sigmas"])
    d2 = anp.sum((_gmm_X[:, None, :] - p["means"][None, :, :]) ** 2, axis=2)  # (N, K)
    logn = -0.5 * d2 / sig2 - 2 * p["log_sigmas"] - anp.log(2 * anp.pi)
    assert K == 3
    return anp.sum(logsumexp(logw + logn, axis=1))


RIGHT.append(
    Case(
        "gmm_loglik_logsumexp",
        gmm_loglik,
        ({"means": _randn(3, 2), "log_sigmas": _randn(3) * 0.3, "logits": _randn(3)},),
    )
)

_vae_x = _randn(4)


def vae_elbo(p):
    h = anp.tanh(p["enc_W"] @ _vae_x)
    mu, log_s = h[:2], h[2:] - 1.0
    eps = np.random.randn(2)  # noqa: NPY002 -- noise drawn inside f: needs reseed
    z = mu + anp.exp(log_s) * eps
    xr = p["dec_W"] @ z
    rec = -0.5 * anp.sum((xr - _vae_x) ** 2)
    kl = 0.5 * anp.sum(mu**2 + anp.exp(2 * log_s) - 2 * log_s - 1)
    return rec - kl


RIGHT.append(
    Case(
        "vae_elbo_noise_reseed",
        vae_elbo,
        ({"enc_W": _randn(4, 4) * 0.5, "dec_W": _randn(4, 2) * 0.5},),
        kw={"reseed": 0},
    )
)


def dropout_net(W, x):
    mask = np.random.rand(4) > 0.4  # noqa: NPY002 -- dropout drawn inside f
    return anp.tanh(W @ x) * mask / 0.6


RIGHT.append(Case("dropout_reseed", dropout_net, (_randn(4, 3), _randn(3)), kw={"reseed": 0}))


# ---- integer / string arguments -------------------------------------------------------
def with_int_and_str(x, n, mode):
    y = x**n
    return anp.sin(y) if mode == "sin" else anp.cos(y)


RIGHT.append(
    Case(
        "int_and_string_args",
        with_int_and_str,
        (_randn(3), 3, "sin"),
        not_checked=frozenset({"n", "mode"}),
    )
)


def gather_int_array(x, idx):
    return anp.exp(x[idx]) * 2.0


RIGHT.append(
    Case(
        "int_array_arg",
        gather_int_array,
        (_randn(4), np.array([3, 0, 0, 2])),
        not_checked=frozenset({"idx"}),
    )
)


def softmax_xent(params, labels):
    logits = _softx_X @ params["W"] + params["b"]
    logp = logits - logsumexp(logits, axis=1, keepdims=True)
    return -anp.mean(logp[np.arange(labels.size), labels])


_softx_X = _randn(5, 3)
RIGHT.append(
    Case(
        "softmax_xent_int_labels",
        softmax_xent,
        ({"W": _randn(3, 4), "b": _randn(4)}, np.array([0, 3, 1, 1, 2])),
        not_checked=frozenset({"labels"}),
    )
)


# ---- linear algebra & misc --------------------------------------------------------------
RIGHT.append(
    Case(
        "linear_solve",
        lambda A, b: anp.linalg.solve(A + 4 * anp.eye(3), b),
        (_randn(3, 3), _randn(3)),
    )
)
RIGHT.append(
    Case(
        "cholesky_logdet",
        lambda A: 2 * anp.sum(anp.log(anp.diag(anp.linalg.cholesky(A @ A.T + anp.eye(3))))),
        (_randn(3, 3),),
    )
)
RIGHT.append(Case("norm_at_1e-100", lambda x: anp.linalg.norm(x), (np.array([3e-100, 4e-100]),)))
RIGHT.append(Case("python_float_arg", lambda x, s: anp.sin(s * x) * s, (_randn(3), 0.8)))


def kw_const(x, *, scale):
    return anp.tanh(scale * x)


RIGHT.append(Case("keyword_held_constant", kw_const, (_randn(3),), kw={"scale": 2.5}))

_Wbig = _randn(300, 300) / np.sqrt(300)
RIGHT.append(
    Case("tanh_layer_300", lambda x: anp.tanh(_Wbig @ x) * anp.sum(x), (_randn(300) * 0.1,))
)


# =====================================================================================
# WRONG: subtly wrong rules; expected = the exact wrong (row, col) entries
# =====================================================================================


# W: 1e-6 relative in one entry of a 300-input gradient -------------------------------
def _vjp_rel1e6(ans, x):
    def vjp(g):
        out = g * np.cos(x)
        out[137] *= 1 + 1e-6
        return out

    return vjp


_sin_rel1e6 = _prim(lambda x: np.sin(x), _vjp_rel1e6)
WRONG.append(
    Case(
        "rel_1e-6_one_entry_of_300",
        lambda x: anp.sum(_sin_rel1e6(x)),
        (_unif(-1, 1, 300),),
        {(0, 137)},
        note="scalar output: row 0; only x[137]'s entry is scaled by 1+1e-6",
    )
)


# W: 1e-9 relative (10x-100x above Richardson's FD error on a smooth exp) ----------------
def _vjp_rel1e9(ans, x):
    def vjp(g):
        out = g * ans
        out[7] *= 1 + 1e-9
        return out

    return vjp


_exp_rel1e9 = _prim(lambda x: np.exp(x), _vjp_rel1e9)
WRONG.append(
    Case(
        "rel_1e-9_one_entry",
        _exp_rel1e9,
        (_unif(-0.5, 0.5, 12),),
        {(7, 7)},
        note="elementwise exp; the VJP scales entry (7, 7) by 1+1e-9",
    )
)


# W: wrong small entry beside a huge one in the same row ---------------------------------
def _two_scale(x):
    return np.array([1e9 * np.sin(x[0]) + 1e-9 * np.exp(x[1]), np.sin(x[1])])


def _two_scale_vjp(ans, x):
    def vjp(g):
        return np.array(
            [g[0] * 1e9 * np.cos(x[0]), g[0] * 1e-9 * np.exp(x[1]) * 1.01 + g[1] * np.cos(x[1])]
        )

    return vjp


_two_scale_p = _prim(_two_scale, _two_scale_vjp)
WRONG.append(
    Case(
        "small_entry_beside_1e9",
        _two_scale_p,
        (np.array([1e-12, 0.5]),),
        {(0, 1)},
        note="row 0 = 1e9 sin(x0) + 1e-9 exp(x1) ~ 1e-3; entry (0,1) ~2.7e-9 is 1% off",
    )
)


# W: one leaf of nested params: only params[1][0][2, 3] ---------------------------------
def _matvec_vjp_W_bug(i, k, factor):
    def maker(ans, W, h):
        def vjp(g):
            out = np.outer(g, h)
            out[i, k] *= factor
            return out

        return vjp

    return maker


def _make_matvec(i, k, factor):
    p = gx.primitive(lambda W, h: W @ h)
    gx.defvjp(p, _matvec_vjp_W_bug(i, k, factor), lambda ans, W, h: lambda g: W.T @ g)
    return p


_matvec_23 = _make_matvec(2, 3, 1.01)
_nest_params = [(_randn(5, 3) * 0.6, _randn(5) * 0.1), (_randn(4, 5) * 0.6, _randn(4) * 0.1)]


def mlp_nested_bug(params, x):
    (W1, b1), (W2, b2) = params
    return _matvec_23(W2, anp.tanh(W1 @ x + b1)) + b2


# columns: W1 0-14, b1 15-19, W2 20-39 (W2[2,3] = 20 + 2*5 + 3 = 33), b2 40-43, x 44-46.
# y_i depends on W2[2,3] only for i = 2 (dy_2/dW2[2,3] = h[3]); the bug scales exactly that.
WRONG.append(
    Case("nested_leaf_params[1][0][2,3]", mlp_nested_bug, (_nest_params, _randn(3)), {(2, 33)})
)


# W: bug only in the second output of a tuple --------------------------------------------
_cube_2x = _prim(lambda x: x**3, lambda ans, x: lambda g: g * 2 * x**2)  # should be 3x^2
WRONG.append(
    Case(
        "bug_only_in_second_output",
        lambda x: (anp.sin(x), _cube_2x(x)),
        (_unif(0.5, 1.5, 4),),
        _diag(4, row0=4),
        note="rows 0-3 are sin(x) (right), rows 4-7 the cube with 2x^2 for 3x^2",
    )
)


# W: one wrong row among 2000 outputs (fast mode) ---------------------------------------
_B2000 = _randn(2000, 5)
_w2000 = np.ones(2000)
_w2000[1234] = 1.001


def _rows2000_vjp(ans, x):
    def vjp(g):
        return _B2000.T @ (g * np.cos(_B2000 @ x) * _w2000)

    return vjp


_rows2000 = _prim(lambda x: np.sin(_B2000 @ x), _rows2000_vjp)
WRONG.append(
    Case(
        "one_row_of_2000_outputs",
        _rows2000,
        (_randn(5) * 0.3,),
        {(1234, j) for j in range(5)},
        note="row 1234's cotangent is scaled by 1.001: its 5 entries are wrong",
    )
)


# W: a scalar-output VJP that forgets to multiply by g -----------------------------------
# Unit cotangent (u = 1) gives the right gradient, so no (0, j) entry is wrong. For a
# random scalar u the rule still returns grad, not u*grad: rule(a u + b v) - a rule(u)
# - b rule(v) = (1 - a - b) grad != 0, so every input coordinate with grad_j != 0 is a
# linearity entry (-1, j). (x has no zero, so all j.) A right JVP is given so forward
# mode does not derive its tangents from the broken VJP.
_x_nz = np.array([0.3, -1.1, 0.8, 1.7, -0.4])
_sqsum_forget = _prim(
    lambda x: np.sum(x**2), lambda ans, x: lambda g: 2 * x, lambda g, ans, x: np.sum(2 * x * g)
)
WRONG.append(
    Case(
        "scalar_vjp_forgets_g",
        _sqsum_forget,
        (_x_nz,),
        {(-1, j) for j in range(5)},
        kind="linearity",
    )
)

# same rule with no JVP: forward mode would derive its tangent from the broken VJP.
# The Jacobian's entries are all right (unit cotangent); the only true finding is the
# linearity of the VJP, so the exact expectation is still {(-1, j)}: a "jvp" entry
# at (0, j) would blame a defjvp rule that does not exist.
_sqsum_forget_nojvp = _prim(lambda x: np.sum(x**2), lambda ans, x: lambda g: 2 * x)
WRONG.append(
    Case(
        "scalar_vjp_forgets_g_no_jvp_rule",
        _sqsum_forget_nojvp,
        (_x_nz.copy(),),
        {(-1, j) for j in range(5)},
        kind="linearity",
    )
)


# W: affine VJP in a log-softmax rule: g - exp(ans) for g - exp(ans)*sum(g) ---------------
# unit cotangent e_i: e_i - s in both, so every (i, j) entry is right. For random u the
# rule gives u - s instead of u - s*sum(u): off by s*(sum(u) - 1) in every coordinate
# (s_j > 0): linearity entries (-1, j) for all j.
def _logsoftmax_np(x):
    return x - np.log(np.sum(np.exp(x)))


_lsm_affine = _prim(
    _logsoftmax_np,
    lambda ans, x: lambda g: g - np.exp(ans),
    lambda g, ans, x: g - np.sum(np.exp(ans) * g),
)
WRONG.append(
    Case(
        "affine_logsoftmax_vjp",
        _lsm_affine,
        (_randn(5),),
        {(-1, j) for j in range(5)},
        kind="linearity",
    )
)


# W: a vector VJP that ignores g entirely --------------------------------------------------
# unit e_i gives cos(x) in every coordinate: (i, j), i != j, is cos(x_j) where 0 is right;
# (i, i) is right. Linearity: rule(au+bv) - a rule(u) - b rule(v) = 1.5 cos(x) != 0 and
# vjp(u) = cos(x) != u*cos(x): every j is a linearity entry too.
_sin_ignore_g = _prim(
    lambda x: np.sin(x), lambda ans, x: lambda g: np.cos(x), lambda g, ans, x: g * np.cos(x)
)
WRONG.append(
    Case(
        "vector_vjp_ignores_g",
        _sin_ignore_g,
        (_unif(0.2, 1.2, 3),),
        {(i, j) for i in range(3) for j in range(3) if i != j} | {(-1, j) for j in range(3)},
    )
)


# W: an additive bias in the VJP (g*cos(x) + 1e-3) -----------------------------------------
# unit e_i: cos(x_i) + 1e-3 on the diagonal, 1e-3 off it: all 9 entries wrong. Random u:
# u*cos(x) + 1e-3 vs u*cos(x): every column is also a linearity entry.
_sin_bias = _prim(
    lambda x: np.sin(x),
    lambda ans, x: lambda g: g * np.cos(x) + 1e-3,
    lambda g, ans, x: g * np.cos(x),
)
WRONG.append(
    Case(
        "vjp_with_additive_bias",
        _sin_bias,
        (_unif(0.2, 1.2, 3),),
        _all(3, 3) | {(-1, j) for j in range(3)},
    )
)


# W: wrong JVP only (VJP right) ------------------------------------------------------------
_tanh_badjvp = _prim(
    lambda x: np.tanh(x), lambda ans, x: lambda g: g * (1 - ans**2), lambda g, ans, x: g * (1 - ans)
)
WRONG.append(
    Case(
        "jvp_only_tanh",
        _tanh_badjvp,
        (_unif(0.3, 1.0, 4),),
        _diag(4),
        kind="jvp",
        note="JVP g*(1-ans) for g*(1-ans^2): diagonal, forward mode only",
    )
)

_A4 = _randn(4, 4)
_mv_badjvp = _prim(
    lambda x: _A4 @ x, lambda ans, x: lambda g: _A4.T @ g, lambda g, ans, x: _A4.T @ g
)
WRONG.append(
    Case(
        "jvp_only_transposed",
        _mv_badjvp,
        (_randn(4),),
        {(i, j) for i in range(4) for j in range(4) if i != j},
        kind="jvp",
        note="JVP uses A^T: wrong where A_ij != A_ji (all off-diagonal)",
    )
)


# W: wrong JVP in f where another op has NO JVP rule -------------------------------------
_jw = np.array([1.0, 1.01, 1.0, 1.0])
_sin_jvp_bug1 = _prim(
    lambda x: np.sin(x),
    lambda ans, x: lambda g: g * np.cos(x),
    lambda g, ans, x: g * np.cos(x) * _jw,
)
_M34 = _randn(3, 4)
_mix_nojvp = _prim(lambda y: _M34 @ y, lambda ans, y: lambda g: _M34.T @ g)  # no JVP rule
WRONG.append(
    Case(
        "jvp_bug_beside_op_without_jvp",
        lambda x: _mix_nojvp(_sin_jvp_bug1(x)),
        (_unif(0.2, 1.2, 4),),
        {(i, 1) for i in range(3)},
        kind="jvp",
        note="tangent of x[1] scaled 1.01 by the first op; M mixes it into all 3 rows",
    )
)

# W: JVP wrong only for the second argument ---------------------------------------------
_mul_jvp2 = gx.primitive(lambda x, y: x * y)
gx.defvjp(_mul_jvp2, lambda ans, x, y: lambda g: g * y, lambda ans, x, y: lambda g: g * x)
gx.defjvp(_mul_jvp2, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x * 1.05)
WRONG.append(
    Case(
        "jvp_bug_second_argument_only",
        _mul_jvp2,
        (_randn(3), _randn(3)),
        _diag(3, col0=3),
        kind="jvp",
    )
)


# W: second-order only: the autograd test_tests.py pattern ------------------------------
# foo(x) = 2x, vjp g -> bar(g)*2 (right value); bar(x) = x with VJP g*1.001 (wrong).
# G(x, u) = 2*bar(u): dG/dx = 0 (right), dG_i/du_j = 2 delta_ij, analytic 2.002 delta_ij.
# rows i (d(u.y)/dx[i]) 0-2, columns x 0-2 then u 3-5: wrong (i, 3+i).
_bar = _prim(lambda x: x, lambda ans, x: lambda g: g * 1.001)
_foo = _prim(lambda x: 2.0 * x, lambda ans, x: lambda g: _bar(g) * 2)
WRONG.append(Case("order2_testtests_pattern", _foo, (_randn(3),), _diag(3, col0=3), order=2))

# W: second-order only: a vector cube whose VJP's helper has a wrong VJP -----------------
# cube'(x) = three_sq(x) = 3x^2 (right value); three_sq's VJP g*3x (should be 6x).
# G_i(x, u) = u_i * 3x_i^2: dG_i/dx_i analytic 3 u_i x_i vs 6 u_i x_i: diagonal wrong
# (u random, nonzero); dG/du = diag(3x^2) right.
_three_sq = _prim(lambda x: 3 * x**2, lambda ans, x: lambda g: g * 3 * x)
_cube_v = _prim(lambda x: x**3, lambda ans, x: lambda g: g * _three_sq(x))
WRONG.append(Case("order2_vector_cube_helper", _cube_v, (_unif(0.5, 1.5, 3),), _diag(3), order=2))

# W: second-order only, matrix: sum(tanh(W x)) with tanh's VJP g*dtanh(ans) and dtanh's
# own VJP g*(-a) where -2a is right. With a = tanh(z), z = W x, u = 1 (scalar f):
# the Hessian's error is J_z^T diag(delta) J_z with delta_i = a_i (1 - a_i^2) != 0.
# dz_i/dW_jk = delta_ij x_k, dz_i/dx_k = W_ik, so the error is nonzero at
#   (W_jk, W_lm) iff j == l;  (W_jk, x_m) and (x_m, W_jk) always;  (x_k, x_m) always.
# The u column (index 9) is right: dG/du = the gradient itself.
_dtanh = _prim(lambda a: 1 - a**2, lambda ans, a: lambda g: g * (-a))
_tanh2 = _prim(lambda z: np.tanh(z), lambda ans, z: lambda g: g * _dtanh(ans))
_W23 = _randn(2, 3) * 0.5
_x3 = _unif(0.4, 1.2, 3) * np.array([1, -1, 1])


def _order2_tanh_expected():
    out = set()
    Wcols = [(j, k) for j in range(2) for k in range(3)]
    for p, (j, _k) in enumerate(Wcols):
        for q, (l, _m) in enumerate(Wcols):
            if j == l:
                out.add((p, q))
        for m in range(3):
            out.add((p, 6 + m))
            out.add((6 + m, p))
    for k in range(3):
        for m in range(3):
            out.add((6 + k, 6 + m))
    return out


WRONG.append(
    Case(
        "order2_tanh_matrix_hessian",
        lambda W, x: anp.sum(_tanh2(W @ x)),
        (_W23, _x3),
        _order2_tanh_expected(),
        order=2,
        note="63 wrong Hessian entries of 81; the u column is right",
    )
)


# W: conjugation bugs (complex) -----------------------------------------------------------
_z_c = _randn(3) + 1j * _randn(3)
# z**3 with g*conj(3z^2): wrong on the off-diagonal blocks' diagonals where Im(3z^2) != 0
_cube_conj = _prim(lambda z: z**3, lambda ans, z: lambda g: g * np.conj(3 * z**2))
WRONG.append(
    Case(
        "complex_extra_conj_holomorphic",
        _cube_conj,
        (_z_c,),
        {(k, 3 + k) for k in range(3)} | {(3 + k, k) for k in range(3)},
    )
)

# |z|^2 (real out) with g*2z instead of g*2*conj(z): dL/dIm z = -Im(2z) = -2y, true 2y
_abs2_noconj = _prim(lambda z: np.real(z * np.conj(z)), lambda ans, z: lambda g: g * 2 * z)
WRONG.append(
    Case(
        "complex_missing_conj_real_output",
        _abs2_noconj,
        (_z_c.copy(),),
        {(k, 3 + k) for k in range(3)},
        note="rows: 3 real outputs; columns [Re z; Im z]; Im columns sign-flipped",
    )
)

# exp(ix) (real in, complex out) with real(g*conj(i*ans)) instead of real(g*i*ans):
# with g = p - iq: right -p sin + q cos, buggy -p sin - q cos: the Im rows flip sign.
_expi_conj = _prim(
    lambda x: np.exp(1j * x), lambda ans, x: lambda g: np.real(g * np.conj(1j * ans))
)
WRONG.append(
    Case(
        "complex_out_extra_conj",
        _expi_conj,
        (_unif(0.2, 1.2, 3),),
        {(3 + k, k) for k in range(3)},
        note="rows [Re y (3); Im y (3)], columns x (3)",
    )
)

# y = A z with conj(A)^T g (Hermitian transpose) instead of A^T g: the real Jacobian
# becomes [[P, Q], [-Q, P]] for [[P, -Q], [Q, P]] (A = P + iQ): both off-diagonal
# blocks are wrong wherever Q_ij != 0 (all of them).
_Ac = _randn(2, 3) + 1j * _randn(2, 3)
_herm = _prim(lambda z: _Ac @ z, lambda ans, z: lambda g: np.conj(_Ac).T @ g)
WRONG.append(
    Case(
        "complex_hermitian_transpose_vjp",
        _herm,
        (_z_c.copy(),),
        {(i, 3 + j) for i in range(2) for j in range(3)}
        | {(2 + i, j) for i in range(2) for j in range(3)},
    )
)

# JVP conj bug on a holomorphic function (VJP right): forward only
_sq_jvpconj = _prim(
    lambda z: z**2, lambda ans, z: lambda g: g * 2 * z, lambda g, ans, z: g * np.conj(2 * z)
)
WRONG.append(
    Case(
        "complex_jvp_conj",
        _sq_jvpconj,
        (_z_c.copy(),),
        {(k, 3 + k) for k in range(3)} | {(3 + k, k) for k in range(3)},
        kind="jvp",
    )
)


# W: sign flips ------------------------------------------------------------------------------
_sin_sign = _prim(lambda x: np.sin(x), lambda ans, x: lambda g: -g * np.cos(x))
WRONG.append(Case("sign_flip_elementwise", _sin_sign, (_unif(0.2, 1.2, 4),), _diag(4)))

_mul_sign = gx.primitive(lambda x, y: x * y)
gx.defvjp(_mul_sign, lambda ans, x, y: lambda g: g * y, lambda ans, x, y: lambda g: -g * x)
WRONG.append(Case("sign_flip_second_argument", _mul_sign, (_randn(4), _randn(4)), _diag(4, col0=4)))


# W: transposed rules on non-symmetric matrices --------------------------------------------
_A_t = _randn(4, 4)
_mv_transposed = _prim(lambda x: _A_t @ x, lambda ans, x: lambda g: _A_t @ g)
WRONG.append(
    Case(
        "transposed_matvec",
        _mv_transposed,
        (_randn(4),),
        {(i, j) for i in range(4) for j in range(4) if i != j},
    )
)

# Y = X B (X 2x3, B 3x3); VJP g B for g B^T: dY_ik/dX_lj analytic delta_il B_kj vs
# delta_il B_jk: wrong for i == l, j != k. Row i*3+k, column i*3+j.
_Bt = _randn(3, 3)
_mm_transposed = _prim(lambda X: X @ _Bt, lambda ans, X: lambda g: g @ _Bt)
WRONG.append(
    Case(
        "transposed_matmat",
        _mm_transposed,
        (_randn(2, 3),),
        {(i * 3 + k, i * 3 + j) for i in range(2) for j in range(3) for k in range(3) if j != k},
    )
)

# Y = inv(A) with VJP -Y g Y (transposes missing): dY_ij/dA_kl analytic -Y_ki Y_jl vs
# -Y_ik Y_lj: the two products are the same monomial when (k == i and l == j) or when
# (i == j and k == l); every other entry is wrong (66 of 81). Row i*3+j, column k*3+l.
_inv_notrans = _prim(lambda A: np.linalg.inv(A), lambda ans, A: lambda g: -ans @ g @ ans)
WRONG.append(
    Case(
        "inverse_missing_transposes",
        _inv_notrans,
        (_randn(3, 3) + 3 * np.eye(3),),
        {
            (i * 3 + j, k * 3 + l)
            for i in range(3)
            for j in range(3)
            for k in range(3)
            for l in range(3)
            if not (k == i and l == j) and not (i == j and k == l)
        },
    )
)

# eigvalsh(B + B^T) with eigenvector matrix transposed in the VJP: analytic
# dlam_k/dB_ij = 2 v_ki v_kj vs 2 v_ik v_jk: equal only for i == j == k.
_eigvalsh_T = _prim(
    lambda S: np.linalg.eigvalsh(S),
    lambda ans, S: lambda g: (lambda v: v.T @ np.diag(g) @ v)(np.linalg.eigh(S)[1]),
)
WRONG.append(
    Case(
        "eigvalsh_transposed_eigenvectors",
        lambda B: _eigvalsh_T(B + B.T),
        (_randn(3, 3),),
        {(k, i * 3 + j) for k in range(3) for i in range(3) for j in range(3) if not (i == j == k)},
    )
)


# W: scaled rules -------------------------------------------------------------------------
# y = W x with W's cotangent 0.5*outer(g, x): dy_i/dW_jk = delta_ij x_k all halved
_mv_halfW = gx.primitive(lambda W, x: W @ x)
gx.defvjp(
    _mv_halfW, lambda ans, W, x: lambda g: 0.5 * np.outer(g, x), lambda ans, W, x: lambda g: W.T @ g
)
WRONG.append(
    Case(
        "scaled_weight_block",
        _mv_halfW,
        (_randn(2, 3), _randn(3)),
        {(i, i * 3 + k) for i in range(2) for k in range(3)},
        note="x columns 6-8 right; W columns: only (i, i*3+k) are nonzero",
    )
)

# y = s * x with s a 0-d leaf and its cotangent sum(g*x)*1.01
_scal = gx.primitive(lambda x, s: s * x)
gx.defvjp(
    _scal, lambda ans, x, s: lambda g: g * s, lambda ans, x, s: lambda g: np.sum(g * x) * 1.01
)
WRONG.append(
    Case(
        "scaled_zero_d_argument",
        _scal,
        (_unif(0.3, 1.3, 4), np.array(0.7)),
        {(i, 4) for i in range(4)},
    )
)


# W: float32 with a 1% bug --------------------------------------------------------------
def _vjp_f32(ans, x):
    def vjp(g):
        out = g * ans
        out[1] *= 1.01
        return out

    return vjp


_exp32 = _prim(lambda x: np.exp(x), _vjp_f32)
WRONG.append(
    Case(
        "float32_one_percent",
        _exp32,
        (np.array([0.1, -0.4, 0.9, 1.3, -1.0], np.float32),),
        {(1, 1)},
    )
)


# W: mixed precision: bug only in the float64 argument's block --------------------------
def _mixvjp_b(ans, a, b):
    def vjp(g):
        out = (g * a).astype(np.float64)
        out[0] *= 1.01
        return out

    return vjp


_mul_mixed = gx.primitive(lambda a, b: a * b)
gx.defvjp(_mul_mixed, lambda ans, a, b: lambda g: (g * b).astype(a.dtype), _mixvjp_b)
WRONG.append(
    Case(
        "mixed_precision_bug_in_float64_block",
        _mul_mixed,
        (np.array([0.5, 1.5, -0.8], np.float32), np.array([1.2, -0.3, 2.0])),
        {(0, 3)},
    )
)


# W: one element of a dict-valued output --------------------------------------------------
def _vjp_exp_el2(ans, x):
    def vjp(g):
        out = g * ans
        out[2] *= 1.001
        return out

    return vjp


_exp_el2 = _prim(lambda x: np.exp(x), _vjp_exp_el2)
WRONG.append(
    Case(
        "dict_output_one_element",
        lambda x: {"a": anp.sin(x), "b": _exp_el2(x), "c": anp.sum(x)},
        (_randn(4),),
        {(6, 2)},
        note="rows: 'a' 0-3, 'b' 4-7, 'c' 8: b[2] is row 6",
    )
)


# W: RNN with dict params: bug in one element of W_hh's cotangent -------------------------
_matvec_12 = _make_matvec(1, 2, 1.01)
_rnnb_params = {"W_xh": _randn(3, 2) * 0.6, "W_hh": _randn(3, 3) * 0.6, "b": _randn(3) * 0.3}
_rnnb_xs = [_randn(2) for _ in range(3)]


def rnn_bug(params, xs):
    h = anp.zeros(3)
    for x in xs:
        h = anp.tanh(_matvec_12(params["W_hh"], h) + params["W_xh"] @ x + params["b"])
    return h


# columns: W_xh 0-5, W_hh 6-14 (W_hh[1,2] = 11), b 15-17, xs 18-23. The error in
# dh3_i/dW_hh[1,2] is 0.01 * sum_t gpre_t[1] h_{t-1}[2]; h_0 = 0, and the t = 2 term
# (W_hh[i,1] (1-h3_i^2)(1-h2_1^2) h1_2) is nonzero for every i: all 3 rows.
WRONG.append(
    Case("rnn_dict_W_hh[1,2]", rnn_bug, (_rnnb_params, _rnnb_xs), {(i, 11) for i in range(3)})
)


# W: MLP whose custom softplus is wrong for hidden unit 2 only ----------------------------
_wsp = np.array([1.0, 1.0, 1.001, 1.0, 1.0])
_softplus_bug = _prim(
    lambda z: np.logaddexp(0.0, z), lambda ans, z: lambda g: g * _wsp / (1 + np.exp(-z))
)
_mlpb = [(_randn(5, 3) * 0.6, _randn(5) * 0.2), (_randn(1, 5), _randn(1) * 0.1)]


def mlp_unit_bug(params, x):
    (W1, b1), (W2, b2) = params
    return anp.sum(W2 @ _softplus_bug(W1 @ x + b1) + b2)


# columns: W1 0-14 (row 2: 6,7,8), b1 15-19 (b1[2] = 17), W2 20-24, b2 25, x 26-28.
# W2 and b2 do not pass through softplus's VJP; x's entries all get the unit-2 term.
WRONG.append(
    Case(
        "mlp_hidden_unit_2_softplus",
        mlp_unit_bug,
        (_mlpb, _randn(3)),
        {(0, 6), (0, 7), (0, 8), (0, 17), (0, 26), (0, 27), (0, 28)},
    )
)


# W: broadcasting / wrong index -----------------------------------------------------------
# Y_ij = x_i w_j; w's cotangent sum_i g_ij * x_j (should be x_i): dY_ij/dw_k analytic
# delta_jk x_k vs delta_jk x_i: wrong for j == k, i != k. Row i*3+j, column 3+j.
_outer = gx.primitive(lambda x, w: np.outer(x, w))
gx.defvjp(_outer, lambda ans, x, w: lambda g: g @ w, lambda ans, x, w: lambda g: g.sum(0) * x)
WRONG.append(
    Case(
        "outer_wrong_index",
        _outer,
        (np.array([0.5, -1.2, 2.0]), _randn(3)),
        {(i * 3 + j, 3 + j) for i in range(3) for j in range(3) if i != j},
    )
)


# W: leaky relu: the negative slope is wrong (0.02 for 0.01): only negative x -------------
_lrelu = _prim(
    lambda x: np.where(x > 0, x, 0.01 * x), lambda ans, x: lambda g: g * np.where(x > 0, 1.0, 0.02)
)
WRONG.append(
    Case(
        "leaky_relu_negative_slope",
        _lrelu,
        (np.array([-1.2, 0.5, -0.3, 2.0, -0.05]),),
        {(0, 0), (2, 2), (4, 4)},
    )
)


# W: an iterative (Newton, tolerance stop) primitive with a 1e-5 bug in one entry ---------
def _cbrt_newton(a):
    y = np.ones_like(a)
    for _ in range(200):
        y_new = y - (y**3 - a) / (3 * y**2)
        if np.all(np.abs(y_new - y) <= 1e-15 * np.abs(y_new)):
            return y_new
        y = y_new
    return y


def _cbrt_vjp(ans, a):
    def vjp(g):
        out = g / (3 * ans**2)
        out[2] *= 1 + 1e-5
        return out

    return vjp


_cbrt = _prim(_cbrt_newton, _cbrt_vjp)
WRONG.append(Case("newton_cbrt_rule_1e-5", _cbrt, (np.array([2.0, 5.0, 7.0, 11.0]),), {(2, 2)}))


# W: keyword argument held constant, transposed rule in x ---------------------------------
_Wk = _randn(3, 3)
_mv_kw = gx.primitive(lambda x, W: W @ x)
gx.defvjp(_mv_kw, lambda ans, x, W: lambda g: W @ g)  # should be W.T @ g


def kw_transposed(x, *, W):
    return _mv_kw(x, W)


WRONG.append(
    Case(
        "keyword_const_transposed_rule",
        kw_transposed,
        (_randn(3),),
        {(i, j) for i in range(3) for j in range(3) if i != j},
        kw={"W": _Wk},
    )
)


# W: integer argument present (listed in not_checked) and a bug in x ----------------------
def _vjp_el0(ans, x, k):
    def vjp(g):
        out = g * np.exp(x) * k
        out[0] *= 0.99
        return out

    return vjp


_expk = gx.primitive(lambda x, k: np.exp(x) * k)
gx.defvjp(_expk, _vjp_el0)
WRONG.append(
    Case("int_argument_and_bug", _expk, (_randn(3), 2), {(0, 0)}, not_checked=frozenset({"k"}))
)


# =====================================================================================
# Second batch: mixed precision, adaptive solvers, bugs beside kinks, NaN, JVP linearity
# =====================================================================================

# ---- RIGHT --------------------------------------------------------------------------
_g3 = np.random.default_rng(3)
_a32 = _g3.uniform(0.1, 1.0, 4).astype(np.float32)
_b64 = _g3.uniform(0.5, 2.0, 4)
RIGHT.append(
    Case(
        "mixed_float32_feature_plus_float64_bias",
        lambda a, b: anp.sin(a) + b,
        (_a32, _b64),
        note="sin is computed in float32, the output is float64 (NumPy promotion)",
    )
)
RIGHT.append(
    Case("float32_input_float64_output", lambda a: anp.sin(a) * np.ones(4), (_a32.copy(),))
)
RIGHT.append(
    Case(
        "mixed_plain_product",
        lambda a, b: a * b,
        (np.array([0.5, 1.5, -0.8], np.float32), np.array([1.2, -0.3, 2.0])),
    )
)


def ode_default_tol(y0, a):
    # default odeint tolerances (rtol ~1.5e-8), horizon t = 4: the adjoint derivative is
    # within 8e-8 of the exact one (checked against odeint at rtol=atol=1e-13)
    def dyn(y, t, a):
        return -a * y * anp.sin(5 * t) + anp.cos(y)

    return odeint(dyn, y0, np.linspace(0.0, 4.0, 5), ag_tuple((a,)))


RIGHT.append(
    Case(
        "odeint_default_tolerance_t4",
        ode_default_tol,
        (np.array([1.0, -0.5]), np.array([0.7, 1.3])),
    )
)
RIGHT.append(Case("mlp2_loss_order2", mlp2_loss, (_mlp_params, _mlp_x), order=2))
RIGHT.append(
    Case(
        "gp_nll_order2",
        gp_nll,
        ({"log_ls": np.array(-0.5), "log_sf": np.array(0.2), "log_sn": np.array(-1.5)},),
        order=2,
    )
)
RIGHT.append(
    Case(
        "complex_abs_sin_order2",
        lambda z: anp.sum(anp.abs(anp.sin(z)) ** 2),
        (_z3.copy(),),
        order=2,
    )
)


# ---- WRONG --------------------------------------------------------------------------
# the float64 block of a mixed call is 2x wrong at one entry, the JVPs are right:
# (0, 3) = dy0/db0 (columns a 0-2 float32, b 3-5 float64)
def _mixvjp_b2(ans, a, b):
    def vjp(g):
        out = (g * a).astype(np.float64)
        out[0] *= 2.0
        return out

    return vjp


_mul_mixed2 = gx.primitive(lambda a, b: a * b)
gx.defvjp(_mul_mixed2, lambda ans, a, b: lambda g: (g * b).astype(a.dtype), _mixvjp_b2)
gx.defjvp(_mul_mixed2, lambda g, ans, a, b: g * b, lambda g, ans, a, b: g * a)
WRONG.append(
    Case(
        "mixed_precision_vjp_2x_right_jvp",
        _mul_mixed2,
        (np.array([0.5, 1.5, -0.8], np.float32), np.array([1.2, -0.3, 2.0])),
        {(0, 3)},
    )
)

# a 1% bug in x**2's VJP, 1e-4 away from a jump of floor(10 x): any step below 1e-4
# resolves the smooth part exactly
_sq_1pct = _prim(lambda x: x**2, lambda ans, x: lambda g: g * 2 * x * 1.01)
WRONG.append(
    Case(
        "bug_1pct_1e-4_from_floor_jump",
        lambda x: _sq_1pct(x) + anp.floor(10 * x),
        (np.array([0.3 + 1e-4]),),
        {(0, 0)},
    )
)

# a 10% bug in abs's VJP (1.1*sign); x[0] is 3e-6 right of the kink, x[1] 5e-6 left:
# abs is exactly linear on each side, so a step below 3e-6 resolves slope +-1 exactly
_abs_10pct = _prim(lambda x: np.abs(x), lambda ans, x: lambda g: 1.1 * g * np.sign(x))
WRONG.append(
    Case(
        "abs_bug_10pct_near_kink",
        lambda x: _abs_10pct(x - 0.2),
        (np.array([0.2 + 3e-6, 0.2 - 5e-6, 0.5]),),
        _diag(3),
    )
)

# where(x > 0.5, sq_1pct(x), -x): both points on the x**2 branch, x[0] 1e-5 from the jump
WRONG.append(
    Case(
        "where_branch_bug_1e-5_from_jump",
        lambda x: anp.where(x > 0.5, _sq_1pct(x), -x),
        (np.array([0.5 + 1e-5, 0.6]),),
        _diag(2),
    )
)

# a VJP that is NaN in one column (x/x at x = 0) for every cotangent: column 1 of every
# row is NaN where the derivative is finite (cos); a right JVP is given
_sin_nan = _prim(
    lambda x: np.sin(x),
    lambda ans, x: lambda g: g * np.cos(x) * x / x,
    lambda g, ans, x: g * np.cos(x),
)
WRONG.append(
    Case(
        "vjp_nan_in_one_column", _sin_nan, (np.array([0.3, 0.0, 0.8]),), {(i, 1) for i in range(3)}
    )
)

# a JVP that cubes its tangent: right for unit tangents (1^3 = 1, 0^3 = 0), wrong for any
# other: forward mode's linearity entries are (i, -1) for every output row i
_tanh_cube_t = _prim(
    lambda x: np.tanh(x),
    lambda ans, x: lambda g: g * (1 - ans**2),
    lambda g, ans, x: g**3 * (1 - ans**2),
)
WRONG.append(
    Case(
        "jvp_nonlinear_in_tangent",
        _tanh_cube_t,
        (np.array([0.3, 0.8, -0.5]),),
        {(i, -1) for i in range(3)},
        kind="linearity",
    )
)
