"""numeric_jacobian: accuracy, honest error estimates, steps, executors."""

import math
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import autograd.numpy as anp
import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import gradexplorer as gx
from gradexplorer import gallery
from gradexplorer.fd.reasons import Unresolvable

REAL = [e for e in gallery.EXAMPLES.values() if not e.complex]
ALL = list(gallery.EXAMPLES.values())
ids = lambda e: e.name  # noqa: E731
TOL = {"richardson": 1e-9, "central": 1e-6, "forward": 1e-5, "backward": 1e-5}


def analytic_2d(ex, args, i=0):
    J = np.asarray(ex.jacobian(*args)[i])
    return J if ex.complex else J.reshape(np.size(ex.f(*args)), -1)


@pytest.mark.parametrize("method", list(TOL))
@pytest.mark.parametrize("ex", ALL, ids=ids)
def test_methods_match_analytic_and_error_covers_truth(ex, method):
    args = ex.args()
    r = gx.numeric_jacobian(ex.f, *args, wrt=ex.wrt[0], method=method)
    J = analytic_2d(ex, args)
    got = r.jacobian.reshape(J.shape)
    err = r.error.reshape(J.shape)
    scale = max(1.0, np.max(np.abs(J)))
    assert np.max(np.abs(got - J)) <= TOL[method] * scale
    # the estimate bounds the true error (a safety factor of 4 as the checker uses)
    assert np.all(np.abs(got - J) <= 4 * err + 1e-14 * scale)
    assert r.method == method and r.nfev > 0


@pytest.mark.parametrize("ex", [e for e in REAL if e.name not in {"logdet"}], ids=ids)
def test_complex_step_is_exact(ex):
    args = ex.args()
    r = gx.numeric_jacobian(ex.f, *args, wrt=ex.wrt[0], method="complex_step")
    J = analytic_2d(ex, args)
    np.testing.assert_allclose(r.jacobian.reshape(J.shape), J, rtol=1e-13, atol=1e-13)


def test_complex_step_refuses_unsafe_functions_and_complex_inputs():
    with pytest.raises(ValueError, match="complex-safe"):
        gx.numeric_jacobian(lambda x: np.abs(x), np.array([1.0, -2.0]), method="complex_step")
    with pytest.raises(ValueError, match="real inputs"):
        gx.numeric_jacobian(lambda z: z**2, np.array([1j]), method="complex_step")
    # abs and conj inside keep the output complex, but the derivative comes out wrong:
    # the cross-check against finite differences refuses them instead of answering
    x = np.array([0.5, -2.0, 1.5])
    for f in (lambda v: np.abs(v) * v, lambda v: np.conj(v) * v, lambda v: np.real(v) + v):
        with pytest.raises(gx.ComplexStepError, match="complex-safe, and f is not") as info:
            gx.numeric_jacobian(f, x, method="complex_step")
        assert info.value.reason.startswith("f is not complex-safe")
    with pytest.raises(gx.ComplexStepError, match="f raised TypeError") as info:
        gx.numeric_jacobian(lambda v: v * np.floor(v + 10), x, method="complex_step")
    assert info.value.reason.startswith("f fails on complex input (TypeError: ufunc 'floor'")
    # a complex scalar through math.sin loses its imaginary part (a ComplexWarning only)
    with pytest.raises(gx.ComplexStepError, match="complex-safe"):
        gx.numeric_jacobian(lambda v: v * math.sin(v[0]), x, method="complex_step")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_complex_step_in_any_real_precision(dtype):
    # a float32 leaf is perturbed in complex128: its real part rounds unlike f's own
    # float32 evaluation, which is no reason to refuse
    x = np.linspace(0.1, 1.0, 4).astype(dtype)
    r = gx.numeric_jacobian(lambda v: np.sin(v) * v, x, method="complex_step")
    truth = np.diag(np.cos(x) * x + np.sin(x)).astype(float)
    np.testing.assert_allclose(r.jacobian, truth, rtol=1e-6 if dtype == np.float32 else 1e-14)
    assert np.all(np.abs(r.jacobian - truth) <= 2 * r.error + 1e-6 * np.abs(truth))


def test_error_estimates_respect_the_float_resolution():
    from gradexplorer.check.report import format_fd_error
    from gradexplorer.fd.directional import resolution_floor

    tiny, eps = np.finfo(float).tiny, np.finfo(float).eps
    # estimates once came out as 6.7e-320: rounding of subnormal values, not errors
    cases = [
        (lambda v: anp.abs(v) + v**2, np.array([0.0, 1e-9, 0.5])),
        (lambda v: anp.maximum(v, 0.0), np.array([0.0, -1.0, 1e-12, 2.0])),
        (lambda v: anp.exp(-(v**2)), np.array([30.0, 0.0])),
        (lambda v: v * 1e-300, np.array([1.0, 2.0])),
    ]
    for k, (f, x) in enumerate(cases):
        for method in ("richardson", "central", "complex_step"):
            if method == "complex_step" and k < 2:
                continue  # abs and maximum are not complex-safe
            r = gx.numeric_jacobian(f, x, method=method)
            E, J = r.error, r.jacobian
            assert np.all(E >= tiny) and np.all(E >= 0.5 * eps * np.abs(J)), (method, E)
    # a derivative of 1e-300 is still judged to 2e-8 of itself (tiny / 1e-300)
    r = gx.numeric_jacobian(lambda v: v * 1e-300, np.array([1.0, 2.0]))
    assert np.all(np.diag(r.error) == tiny)
    assert gx.check_grads(lambda v: v * 1e-300, np.array([1.0, 2.0])).passed
    E = resolution_floor(np.array([0.0, 1.0, np.nan]), np.array([1e-320, 1e-30, np.inf]))
    np.testing.assert_array_equal(E, [tiny, 0.5 * eps, np.inf])
    assert format_fd_error(6.7e-320) == "<1e-300" and format_fd_error(3e-9) == "3.0e-09"
    text = str(gx.check_grads(lambda v: anp.exp(-(v**2)), np.array([30.0, 0.0])))
    assert "e-31" not in text and "e-32" not in text


@pytest.mark.parametrize("offset", [0.0, 1e4])
@pytest.mark.parametrize("ex", [e for e in REAL if len(e.wrt) == 1], ids=ids)
def test_a_derivative_a_rule_puts_on_an_input_f_ignores_is_caught(ex, offset):
    """Appended inputs that f never reads have exactly zero columns. Their steps grow until
    the columns are known far below the Jacobian's scale, also when f's value is large
    (the offset): a rule that says y depends on them by 1e-10 of that scale (1e-9 beside
    an output of 1e4) is wrong there, and found at exactly those entries. (A change that
    stopped growing such columns as 'known well enough' missed 1e-9 leaks beside an
    output of 1e4: this guards it.)"""
    args = list(ex.args())
    k = ex.wrt[0]
    x = np.asarray(args[k], dtype=float)
    n, pad = x.size, 6

    def padded(v):
        call = list(args)
        call[k] = anp.reshape(v[:n], x.shape)
        return ex.f(*call) + offset

    z = np.concatenate([x.ravel(), np.linspace(-1.0, 2.0, pad)])
    wide = gx.numeric_jacobian(padded, z)
    J = wide.jacobian.reshape(-1, n + pad)
    E = wide.error.reshape(-1, n + pad)
    assert np.all(J[:, n:] == 0)
    scale = np.max(np.abs(J[:, :n]))
    leak = (1e-9 if offset else 1e-10) * scale
    assert np.all(E[:, n:] <= 0.1 * leak)

    @gx.primitive
    def nothing(w):
        return 0.0 * anp.sum(w)

    gx.defvjp(nothing, lambda ans, w: lambda g: leak * anp.sum(g) * anp.ones_like(w))
    wrong = gx.check_grads(lambda v: padded(v) + nothing(v[n:]), z)
    if scale > 0:
        assert not wrong.passed
        assert {e.in_index[0] for e in wrong.mismatches} == set(range(n, n + pad))


def test_layouts():
    r = gx.numeric_jacobian(lambda A: A @ np.ones(3), np.ones((2, 3)))
    assert r.jacobian.shape == (2, 2, 3) and r.error.shape == (2, 2, 3)
    assert r.step.shape == (2, 3)
    rc = gx.numeric_jacobian(lambda z: z**2, np.array([1 + 1j, 2.0]))
    assert rc.jacobian.shape == (4, 4)
    r2 = gx.numeric_jacobian(lambda x, y: x * y, np.ones(2), np.ones(2), wrt=("x", "y"))
    assert isinstance(r2, tuple) and len(r2) == 2


def test_steps_scale_with_input_and_dtype():
    big = gx.default_step(np.array([1e8, 2e8]))
    small = gx.default_step(np.array([1e-8, 2e-8]))
    assert np.all(big > 1e5) and np.all(small < 1e-9)
    s32 = gx.default_step(np.ones(2, np.float32), "central")
    s64 = gx.default_step(np.ones(2), "central")
    assert np.all(s32 > 100 * s64)
    r = gx.numeric_jacobian(np.sin, np.ones(3), step=1e-3, method="central")
    assert np.allclose(r.step, 1e-3)
    with pytest.raises(ValueError, match="shaped like the input"):
        gx.numeric_jacobian(np.sin, np.ones(3), step=np.ones(2))
    with pytest.raises(ValueError, match="positive"):
        gx.numeric_jacobian(np.sin, np.ones(3), step=-1.0)
    with pytest.raises(ValueError, match="method"):
        gx.numeric_jacobian(np.sin, np.ones(3), method="spline")


def test_float32_error_estimate_is_float32_sized():
    x = np.linspace(0.1, 1, 4).astype(np.float32)
    r = gx.numeric_jacobian(np.sin, x)
    J = np.diag(np.cos(x.astype(float)))
    assert np.all(np.abs(r.jacobian - J) <= 4 * r.error + 1e-12)
    assert np.max(r.error) > 1e-7  # honest about float32


def batched_tanh(X):
    W = np.arange(12.0).reshape(3, 4) / 10
    return np.tanh(X @ W.T)


def test_vectorized_matches_serial_with_one_call():
    calls = []

    def f(X):
        calls.append(X.shape)
        return batched_tanh(X)

    x = np.linspace(-1, 1, 4)
    r = gx.numeric_jacobian(f, x, vectorized=True)
    calls_before = len(calls)
    serial = gx.numeric_jacobian(lambda v: batched_tanh(v[None])[0], x)
    np.testing.assert_allclose(r.jacobian, serial.jacobian, rtol=1e-12, atol=1e-14)
    batched = [c for c in calls[:calls_before] if len(c) == 2]
    # noise probes (two spacings), the stencils, and refinements: a few calls in all
    assert len(batched) <= 5 and sum(c[0] for c in batched) == r.nfev - 1
    with pytest.raises(ValueError, match="leading batch axis"):
        gx.numeric_jacobian(lambda X: np.sum(X), x, vectorized=True)


def test_thread_and_process_pool_executors():
    x = np.linspace(0, 1, 6)
    serial = gx.numeric_jacobian(np.sin, x)
    with ThreadPoolExecutor(2) as pool:
        threaded = gx.numeric_jacobian(np.sin, x, executor=pool)
    with ProcessPoolExecutor(2) as pool:
        proc = gx.numeric_jacobian(np.sin, x, executor=pool)
        with pytest.raises(TypeError, match="module level"):
            local = np.cos
            gx.numeric_jacobian(lambda v: local(v), x, executor=pool)
    np.testing.assert_array_equal(threaded.jacobian, serial.jacobian)
    np.testing.assert_array_equal(proc.jacobian, serial.jacobian)


def test_dask_local_cluster_executor():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=None,
            processes=True,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        ex = gallery.get("softmax")
        (x,) = ex.args()
        r = gx.numeric_jacobian(ex.f, x, executor=client.get_executor())
    J = ex.jacobian(x)[0]
    np.testing.assert_allclose(r.jacobian, J, atol=1e-10)


def test_nonfinite_values_give_infinite_error():
    with np.errstate(invalid="ignore"):
        r = gx.numeric_jacobian(lambda x: np.log(x), np.array([1.0, 0.0]), method="central")
    assert np.isinf(r.error[1, 1]) and np.isfinite(r.error[0, 0])


def test_fdresult_text():
    r = gx.numeric_jacobian(np.sin, np.ones(2))
    assert "richardson" in str(r) and "evaluations" in r._repr_html_()


# ------------------------------------------------------------------ hypothesis

UNARY = {
    "sin": anp.sin,
    "x_exp_x": lambda x: x * anp.exp(x),
    "softmax": gallery.get("softmax").f,
    "cumsum": anp.cumsum,
    "tanh_scaled": lambda x: anp.tanh(3 * x),
    "square": lambda x: x**2,
}


# derandomized (CI sees the same 40 examples each run, the checker the same draws); to
# explore, set derandomize=False and run over many --hypothesis-seed values, as the FD
# fixes of 2026-11-27 were found (their cases are the examples below). Known left: a
# fast oscillation (sin of 1e4 x) whose large entry never settles under some draws of
# the noise probes (honest, but unresolved).
@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    names=st.lists(st.sampled_from(sorted(UNARY)), min_size=1, max_size=4),
    x=st.lists(st.floats(-1.5, 1.5), min_size=2, max_size=6),
)
@example(
    names=["x_exp_x", "square", "softmax"], x=[0.0, 1.3495263878396933, 0.0, 1.3495263878396933]
)
# a tiny element's steps lost in cumsum's rounding (-2.2e-16 and 8.4e-72 beside 1.04)
@example(names=["cumsum", "square", "x_exp_x"], x=[-2.2e-16, 8.4e-72, 1.038])
@example(names=["x_exp_x", "cumsum", "square", "x_exp_x"], x=[1.43, -0.35, -1.5, -0.62, -9.1e-237])
# sin(5e14) and sin(6e11): erratic rows beside resolvable ones
@example(names=["cumsum", "x_exp_x", "x_exp_x", "sin"], x=[1.5, 1.0])
@example(names=["cumsum", "x_exp_x", "x_exp_x", "sin"], x=[0.0, 0.875, 1.453125])
# sin(1417): noise the probes read low once in five draws (a false alarm before)
@example(names=["cumsum", "cumsum", "x_exp_x", "sin"], x=[0.927040715583336, 1.45494085128943, 0.0])
# tanh(3 * 40) == 1.0 exactly; 81 * (8e-252)**2 underflows to 0
@example(names=["sin", "cumsum", "cumsum", "tanh_scaled"], x=[1.4, 1.09, 1.44, -1.05, 1.4, 2e-58])
@example(names=["tanh_scaled", "tanh_scaled", "square", "cumsum"], x=[0.0, 8.4e-252, -1.08])
def test_random_compositions_agree_with_fd_within_reported_error(names, x):
    def f(v):
        for n in names:
            v = UNARY[n](v)
        return v

    x = np.array(x)
    with np.errstate(all="ignore"):
        assume(np.all(np.abs(f(x)) < 1e100))  # compositions of exp can overflow
    J = gx.jacobian(f)(x)
    r = gx.numeric_jacobian(f, x)
    scale = max(1.0, float(np.max(np.abs(J))))
    assert np.all(np.abs(r.jacobian - J) <= 4 * r.error + 1e-13 * scale)
    report = gx.check_grads(f, x, rng=0)
    assert report.outcome is not gx.Outcome.FAILED, report
    # inconclusive only where an entry sits under f's own round-off beside far larger
    # ones in its row (softmax's e^-27 outputs at an exact 0), or where no step shows
    # it: tanh(3 * 40) is 1.0 exactly, sin(5e14) changes by its own size within ulps
    # (ERRATIC is said of an output: it may hold for an entry whose own column could be
    # resolved, where another column makes the output erratic at every step explored)
    rows = np.max(np.abs(J), axis=1)
    for e in report.unresolved:
        beside_row = max(abs(e.analytic), abs(e.numeric)) <= 1e-8 * rows[e.row]
        slope = e.analytic if e.analytic != 0 else e.numeric
        if beside_row or not _some_step_shows(f, x, e.row, e.col, slope):
            continue
        assert e.reason is Unresolvable.ERRATIC, (e, report)
        columns = [k for k in range(x.size) if J[e.row, k] != 0]
        assert any(not _some_step_shows(f, x, e.row, k, J[e.row, k]) for k in columns), e


def _some_step_shows(f, x, i, j, slope):
    """Whether f_i's central difference along x_j matches ``slope`` to 10%, by a change
    well above f's rounding, at some step the FD search explores: its base step (for
    x_j's own magnitude, or its array's typical one for a zero) shrunk by its deepest
    search or grown by all its growing levels. (An element far below the rest of its
    array keeps steps of its own scale, where f's change may be lost in rounding: f may
    have structure there, tanh(v / 1e-19), that a typical step would see across.)"""
    from gradexplorer.fd.levels import DEEP_SHRINK
    from gradexplorer.fd.sampling import SHRINK
    from gradexplorer.fd.steps import root_mean_square

    typical = root_mean_square(np.abs(x[x != 0])) if np.any(x != 0) else 1.0
    base = 2.0**-8 * (abs(x[j]) or typical)
    smallest, largest = base * float(SHRINK) ** -DEEP_SHRINK, base * float(SHRINK) ** 3
    for h in np.geomspace(max(smallest, 1e-300), largest, 160):
        e_j = np.zeros_like(x)
        e_j[j] = h
        with np.errstate(all="ignore"):
            up, down = f(x + e_j)[i], f(x - e_j)[i]
        # a change of a few ulps matches any slope to 10% by luck: a thousand at least
        above_rounding = abs(up - down) >= 1e3 * np.spacing(max(abs(up), abs(down)))
        if above_rounding and abs((up - down) / (2 * h) - slope) <= 0.1 * abs(slope):
            return True
    return False


@pytest.mark.parametrize("seed", range(4))
def test_the_screened_staircase_detector_gives_the_unscreened_numbers(seed):
    """direction_quantum on the host skips the bit arithmetic where no grid is possible:
    its result is output_quantum's, direction by direction, on samples that mix smooth
    outputs, staircases (1e10 + s) - 1e10, outputs that do not move, single moves and
    non-finite values, in float64 and on a float32 grid."""
    from gradexplorer.fd.quantum import direction_quantum, output_quantum

    rng = np.random.default_rng(seed)
    k, points, m = 7, 8, 9
    y0 = rng.standard_normal(m)
    F = y0 + 1e-4 * rng.standard_normal((k, points, m))
    F[:, :, 1] = (1e10 + F[:, :, 1]) - 1e10  # a staircase of ulp(1e10)
    F[:, :, 2] = y0[2]  # does not move
    F[:, 1:, 3] = y0[3]  # moves once
    F[:, :, 4] = np.float32(F[:, :, 4])  # a float32 grid inside float64
    F[2, 3, 5] = np.nan
    F[4, 0, 6] = np.inf
    y0[1] = (1e10 + y0[1]) - 1e10
    eps = np.full(m, np.finfo(float).eps)
    got = direction_quantum(F, y0, eps)
    want = np.stack([output_quantum(F[i], y0, eps) for i in range(k)])
    np.testing.assert_array_equal(got, want)
    assert np.all(got[:, 1] > 0) and np.all(got[:, 2] == 0) and np.all(got[:, 0] == 0)


def test_noise_is_rarely_read_far_below_its_level():
    """f's noise per output is read from few samples; an output read 10x too quiet
    makes its finite differences look inconsistent or wrong where they are not. Over
    20,000 outputs of pure noise (σ = 1e-10 on a smooth f), the estimate falls below
    σ/8 for at most a few (the smallest σ_k of orders 3..8, as before, did so for 226,
    1.1%, and a dense 2000-output check shrank its steps for them)."""
    from gradexplorer.fd.noise import estimate_noise

    m, sigma = 20_000, 1e-10
    noise = np.random.default_rng(0)
    weights = np.linspace(0.5, 2.0, m)

    def f(X):
        X = np.atleast_2d(X)
        smooth = np.sin(X.sum(axis=1, keepdims=True) * weights)
        return smooth + sigma * noise.standard_normal((X.shape[0], m))

    x0 = np.array([0.3, -0.2])
    est, nfev = estimate_noise(f, x0, np.full(2, 1e-4), rng=0)
    assert nfev == 16
    ratio = est / sigma
    assert np.sum(ratio < 1 / 8) <= 10, np.sort(ratio)[:20]
    assert np.sum(ratio < 1 / 4) <= 40, np.sort(ratio)[:50]
    assert 0.8 < np.median(ratio) < 1.2
    assert np.sum(ratio > 3) <= 10  # and not made safe by reading it high


@pytest.mark.parametrize(
    "c, x",
    [(21278.417192984354, -1.6461028936813031), (10**5.5, 0.68328246), (1e7, 0.3),
     (12345.678, 1.2345), (3.3e3, -0.77)],
)  # fmt: skip
def test_rounding_along_equally_spaced_points_is_rarely_read_as_silence(c, x):
    """sin(c x) is as noisy as the rounding of c·x (~1e5 ulps of f here). Along equally
    spaced points that rounding is a lattice, ``frac(a + k·β)`` ulps, a straight line
    (invisible to differences) wherever β is near an integer. The probe's two lines
    shared their spacing (and in one dimension their points): 26 of these 2000 probes
    read the noise 1000x low, each one a step whose error looks 1000x too sharp."""
    from gradexplorer.fd.noise import estimate_noise

    gen = np.random.default_rng(1)
    level = 0.3 * np.spacing(c * x) * abs(np.cos(c * x))
    silent = 0
    for i in range(400):
        spacing = 2e-10 * (1 + gen.random(1))
        sigma, _ = estimate_noise(lambda X: np.sin(c * X), np.array([x]), spacing, rng=i)
        silent += sigma[0] < 1e-3 * level
    assert silent <= 1, silent


def test_a_half_line_is_not_read_from_one_difference():
    """The halves of a line (is there a kink at the point?) had one fourth difference
    each; the rounding of c·x here repeats every 4 samples, so that difference is ~0 and
    both halves read f as smooth: the noise was read 1e-17 for 1e-12 (a kink 'explained'
    it). Halves are read from order 3, two differences each."""
    from gradexplorer.fd.noise import estimate_noise

    c, x = 21278.417192984354, np.array([-1.6461028936813031])
    sigma, _ = estimate_noise(lambda X: np.sin(c * X), x, np.array([2.154874735683256e-10]),
                              directions=1)  # fmt: skip
    assert 3e-13 < sigma[0] < 3e-12, sigma


@pytest.mark.parametrize(
    "c, x, seed",
    [(10**5.5, [0.99298312, 0.68328246, 0.93249019], 3),
     (2896989.0566759664, [0.7030697677898399, 0.2331157919001372, -0.45082033979250413], 121),
     (21278.417192984354, [0.33243767880043595, 0.3399500264009956, -1.6461028936813031], 87),
     (18242387037.408566, [1.3399528158336023, -0.4727408801350448, -0.6978175355971823], 62)],
)  # fmt: skip
def test_an_oscillation_whose_noise_a_probe_misread_is_no_false_alarm(c, x, seed):
    """The right derivative of sin(c x) was reported wrong in each: the noise probe read
    the rounding of c·x as silence (the first three: a lone consistent level deep down
    looked sharp, FD 287918.7112 +- 3e-5 for 287918.7138), or a coarse probe's samples
    all fell on a slow alias of sin(1.8e10 x) (the last: 727 +- 9 for -1.8e10). The
    first three pass, the last is inconclusive (nothing resolves it)."""
    r = gx.check_grads(lambda v: anp.sin(c * v), np.array(x), rng=seed)
    want = gx.Outcome.PASSED if c < 1e9 else gx.Outcome.INCONCLUSIVE
    assert r.outcome is want, str(r)


@pytest.mark.parametrize("seed", range(4))
def test_a_kink_only_the_fine_probe_straddles_does_not_hide_a_wrong_slope(seed):
    """|x - x0 - d| + sin x, the kink d = 2e-8 from x, a slope 1% wrong. The fine noise
    probe (spacing ~1e-7) straddles the kink and reads it as noise; the finest does not.
    Raising the coarse noise to any finer reading (not only to one every finer probe
    shares: an aliased coarse probe) stopped the steps short of the kink, and the entry
    was called a kink, its error unjudged."""
    x = np.array([-1.013516207015659, -0.8011696633629151, -0.27716845429000037])
    x0, d = x.copy(), 1.9645553455627627e-08
    kinked = gx.primitive(lambda v: np.abs(v - x0 - d) + np.sin(v))
    slope = lambda v: np.sign(v - x0 - d) + np.cos(v)  # noqa: E731
    gx.defvjp(kinked, lambda ans, v: lambda g: g * slope(v) * np.array([1.0, 1.01, 1.0]))
    r = gx.check_grads(lambda v: kinked(v) * 1.0, x, rng=seed)
    assert r.outcome is gx.Outcome.FAILED, str(r)
    assert {(e.row, e.col) for e in r.mismatches} == {(1, 1)}, str(r)


def test_a_larger_step_does_not_overrule_a_stair():
    """round(x, 3) at points 2-5e-4 from its jumps: f is constant there, so each
    diagonal entry is 0, known sharply once the steps shrink onto the stair. A larger
    step sees the slope across the stairs (1); it was taken as a sign that the sharp
    estimate's error was too small (an FD error of 1 where 1e-11 is right)."""
    round3 = gx.primitive(lambda x: np.round(x * 1000.0) / 1000.0)
    gx.defvjp(round3, lambda ans, x: lambda g: 0.0 * g)
    x = np.array([2.685009210157367, 0.3112, -1.0773])
    for seed in (0, 1):
        r = gx.check_grads(lambda v: round3(v) * 1.0, x, rng=seed)
        assert r.passed, str(r)
        assert np.all(r.numeric.diagonal() == 0), str(r)
        assert np.all(r.fd_error.diagonal() < 1e-9), str(r)


def test_an_erratic_row_is_unresolvable_beside_a_large_entry_of_another_row():
    """sin(5e14) changes by its own size within ulps of x: its FD estimate bounds
    nothing, however small its error looks beside row 0's 7e4 (it used to be kept as
    0.1 +- 20 against a derivative of 2e16, and 'settled' at -5e9 +- 1e8 for sin(6e11))."""
    for x in ([1.5, 1.0], [0.0, 0.875, 1.453125]):
        x = np.array(x)
        f = lambda v: anp.sin(_x_exp_x(_x_exp_x(anp.cumsum(v))))  # noqa: E731
        r = gx.numeric_jacobian(f, x)
        assert np.all(np.isinf(r.error[-1])), r.error
        assert {reason for _, reason in r.unresolved} == {Unresolvable.ERRATIC.text}
        assert np.all(np.isfinite(r.error[0]))


def _x_exp_x(v):
    return v * anp.exp(v)


def test_noise_a_smaller_smooth_step_measures_holds_for_the_kept_estimate():
    """sin(1417) along x: the probes read its noise 3-8x low in some draws, and the
    estimate kept at a larger step claimed +-3e-8 where it was off by 1e-7 (a false
    alarm once in five checks). The smaller step's stencil measures the noise from
    more samples; the kept estimate carries it."""
    x = np.array([0.9270407155833364, 1.4549408512894262, 0.0])
    f = lambda v: anp.sin(_x_exp_x(anp.cumsum(anp.cumsum(v))))  # noqa: E731
    J = gx.jacobian(f)(x)
    for seed in range(6):
        report = gx.check_grads(f, x, rng=seed)
        assert report.outcome is gx.Outcome.PASSED, report
        r = gx.numeric_jacobian(f, x)
        assert np.all(np.abs(r.jacobian - J) <= r.error + 1e-12 * np.abs(J))


def test_a_zero_row_made_of_large_intermediates_is_dust_and_judged():
    """(a + b) - a - b with a = 1e6 sin(...): a row that is 0 up to the rounding of
    intermediates far larger than any output. Its noise is comparable to itself but
    negligible beside f's outputs: round-off dust, whose FD estimate bounds the
    derivative (0 +- 2e-7), so a wrong rule there is caught, not left unresolvable."""

    def f(v):
        a = 1e6 * anp.sin(v[0] + v[1])
        b = v[2] ** 2
        return anp.concatenate([(v[0] * v[1])[None], ((a + b) - a - b)[None], anp.sin(v[2])[None]])

    x = np.array([0.7, -1.3, 0.4])
    r = gx.numeric_jacobian(f, x)
    assert np.all(np.isfinite(r.error[1])) and np.all(np.abs(r.jacobian[1]) <= 1e-5)
    for seed in range(3):
        assert gx.check_grads(f, x, rng=seed).outcome is gx.Outcome.PASSED


@pytest.mark.parametrize(
    ("x", "typical"), [([0.0, 5.4e-265], 5.4e-265), ([0.0, 1e200, 3e200], np.sqrt(5.0) * 1e200)]
)
def test_a_zero_takes_its_arrays_typical_magnitude_without_underflow_or_overflow(x, typical):
    """The typical magnitude is a root mean square: its squares of 5e-265 underflowed to
    0 and of 3e200 overflowed, and a zero's step fell back to 2^-8 beside elements of
    1e-265 (or 1e200)."""
    from gradexplorer.fd.steps import default_step

    steps = default_step(np.array(x))
    assert steps[0] == pytest.approx(2.0**-8 * typical, rel=1e-12)


def test_an_oscillation_far_faster_than_the_step_is_rarely_a_false_alarm():
    """sin(c x) with c from 1e10 to 1e14: the stencil's offsets are multiples of h/10, so
    the samples of such an oscillation lie on a slower sinusoid that looks smooth at ~1
    step level in 20, and (steps 8x apart) often at the next one too, where the two
    agreed. Such a level, refuted by rough smaller steps or by a level disagreeing in the
    leading digit, is no estimate; levels are 7.93x apart. The right derivative was
    reported wrong in 17 of these 60 checks (3 before the noise probes' lattice fix);
    the entries are unresolvable (inconclusive)."""
    gen = np.random.default_rng(3)
    false_alarms = 0
    for i in range(60):
        c, x = 10 ** gen.uniform(10, 14), gen.uniform(-2, 2, 3)
        r = gx.check_grads(lambda v, c=c: anp.sin(c * v), x, rng=i)
        false_alarms += r.outcome is gx.Outcome.FAILED
        assert r.outcome is not gx.Outcome.PASSED, (c, x, str(r))
    assert false_alarms <= 1, false_alarms


def test_a_moderate_oscillation_is_still_resolved():
    """The same guard must not cost a smooth f its verdicts: sin(c x) with c from 1e2 to
    1e6, its right derivative passes (or, where FD cannot pin an entry, is inconclusive),
    a derivative off by 1e-6 relative fails."""
    gen = np.random.default_rng(4)
    outcomes = []
    for i in range(30):
        c, x = 10 ** gen.uniform(2, 6), gen.uniform(-2, 2, 3)
        outcomes.append(gx.check_grads(lambda v, c=c: anp.sin(c * v), x, rng=i).outcome)
        wrong = gx.primitive(lambda v, c=c: np.sin(c * v))
        gx.defvjp(wrong, lambda ans, v, c=c: lambda g: g * c * np.cos(c * v) * (1 + 1e-6))
        bad = gx.check_grads(lambda v, w=wrong: w(v) * 1.0, x, rng=i)
        assert bad.outcome is not gx.Outcome.PASSED, (c, x, str(bad))
    assert outcomes.count(gx.Outcome.FAILED) <= 1
    # 27 before the noise probes' lattice fix, 30 now
    assert outcomes.count(gx.Outcome.PASSED) >= 28, outcomes


def test_float32_rounding_stairs_are_rounding_not_flatness():
    """f computed in float32 from float64 inputs rounds x to stairs ~1e-7 wide, far
    narrower than any step: the finest noise probe can sit on one stair and see f
    exactly flat. That is rounding, not f's calm (its values are float32's): the
    estimate is the slope across the stairs, not the 0 of one stair. Stairs of f's own
    making (``round(x, 7)`` in float64) stay f's shape: 0 inside a stair."""

    def f32(v):  # near its zeros, where its rounding is large beside its value
        return np.sin(3 * v.astype(np.float32)).astype(np.float64)

    rng = np.random.default_rng(0)
    flat = outside = 0
    for _ in range(10):
        x = np.arange(1, 7) * np.pi / 3 + rng.uniform(-1e-3, 1e-3, 6)
        r = gx.numeric_jacobian(f32, x)
        d, e = np.diag(r.jacobian), np.diag(r.error)
        flat += int(np.sum(d == 0))
        outside += int(np.sum(np.abs(d - 3 * np.cos(3 * x)) > e))
    assert flat == 0 and outside <= 1
    x = np.array([0.547846749, -0.920853145, -1.836105904])
    r = gx.numeric_jacobian(lambda v: np.round(v, 7), x)
    assert np.all(np.diag(r.jacobian) == 0), r.jacobian


def test_inputs_rounded_to_float32_where_f_goes_on_in_float64():
    """``exp(x.astype(float32))`` in float64: only x is on float32's stairs, f's values
    are no float32's. The steps shrank onto one stair and read 0 +- 1e-7 for exp(x),
    and a right rule failed in every check. f is the same across each float32 cell of
    x and moves just beyond it: rounding, not f's shape. round(x, 7)'s stairs, whose
    edges are its own, stay flat (the test above)."""

    def f(v):
        return np.exp(v.astype(np.float32).astype(np.float64))

    resolved = 0
    for seed in range(5):
        x = np.random.default_rng(seed).standard_normal(4)
        r = gx.numeric_jacobian(f, x)
        d, e = np.diag(r.jacobian), np.diag(r.error)
        ok = np.isfinite(e)  # an entry may stay unresolvable (honest), none read wrong
        assert np.all(np.abs(d - np.exp(x))[ok] <= e[ok]), (d, e)
        resolved += int(np.sum(ok & (e < 1e-3 * np.exp(x))))
    assert resolved >= 16, resolved
    right = gx.primitive(f)
    gx.defvjp(right, lambda ans, v: lambda g: g * np.exp(v))
    wrong = gx.primitive(f)
    gx.defvjp(wrong, lambda ans, v: lambda g: g * np.exp(v) * (1 + 1e-3))
    x = np.array([0.5, 1.3, -0.7])
    assert gx.check_grads(right, x, rng=0).passed
    assert gx.check_grads(wrong, x, rng=0).outcome is gx.Outcome.FAILED


def test_a_grown_step_takes_the_noise_its_own_stencil_sees():
    """A float32 softmax's steps grow to a quarter of x where f's noise is low: there the
    samples are 2.4x larger than at x and so is their rounding, which the noise probed at
    x does not show; pooled over 100 directions, the one input's own stencil residual
    was diluted, and an entry was 2x outside its error bar."""

    def softmax32(v):
        z = v.astype(np.float32)
        e = np.exp(z - z.max())
        return (e / e.sum()).astype(np.float64)

    x = np.random.default_rng(104).standard_normal(100) * 2
    r = gx.numeric_jacobian(softmax32, x)
    s = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    exact = np.diag(s) - np.outer(s, s)
    assert np.all(np.abs(r.jacobian - exact) <= r.error)
