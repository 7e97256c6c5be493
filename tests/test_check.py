"""check_grads on right derivatives (never a false alarm) and wrong ones (always found)."""

import autograd.numpy as anp
import numpy as np
import pytest
from corpus import CASES

import gradexplorer as gx
from gradexplorer import gallery

EXAMPLES = list(gallery.EXAMPLES.values())
ids = lambda e: e.name  # noqa: E731


@pytest.mark.parametrize("ex", EXAMPLES, ids=ids)
def test_gallery_passes(ex):
    r = gx.check_grads(ex.f, *ex.args(), wrt=ex.wrt, mode="full")
    assert r.passed, str(r)
    assert r.analytic.shape == r.shape == r.numeric.shape
    np.testing.assert_allclose(r.violation.shape, r.shape)


@pytest.mark.parametrize("ex", [e for e in EXAMPLES if e.scalar and not e.complex], ids=ids)
def test_gallery_second_order_passes(ex):
    r = gx.check_grads(ex.f, *ex.args(), wrt=ex.wrt, order=2)
    assert r.passed, str(r)
    assert r.first_order is not None and r.first_order.passed


@pytest.mark.parametrize("ex", [e for e in EXAMPLES if not e.complex], ids=ids)
def test_gallery_float32_passes(ex):
    args = tuple(np.asarray(a, dtype=np.float32) for a in ex.args())
    r = gx.check_grads(ex.f, *args, wrt=ex.wrt)
    assert r.passed, str(r)
    assert r.rtol > 1e-5  # judged at float32 precision


@pytest.mark.parametrize("ex", [e for e in EXAMPLES if not e.complex and len(e.wrt) == 1], ids=ids)
def test_gallery_fast_mode_passes(ex):
    r = gx.check_grads(ex.f, *ex.args(), wrt=ex.wrt, mode="fast", rng=0)
    assert r.passed, str(r)
    assert r.analytic is None and r.mode == "fast"


SCALE_CASES = {
    "huge_outputs": (lambda x: 1e13 * anp.sin(x), np.linspace(0.1, 2, 5)),
    "huge_inputs": (lambda x: anp.sin(x / 1e8) * x, np.linspace(1e8, 3e8, 4)),
    "tiny_outputs": (lambda x: 1e-8 * anp.sin(x), np.linspace(0.1, 2, 5)),
    "tiny_inputs": (lambda x: anp.sin(x * 1e8) * 1e-8, np.linspace(1e-9, 3e-8, 4)),
    "steep": (lambda x: anp.tanh(40 * x), np.linspace(-0.05, 0.05, 5)),
    "exp_large": (lambda x: anp.exp(20 * x), np.linspace(0, 1, 4)),
    "cancellation": (lambda x: (x + 1e6) ** 2 - 1e12, np.linspace(-1, 1, 3)),
    "float32_scale": (lambda x: 1e4 * anp.sin(x), np.linspace(0.1, 2, 5).astype(np.float32)),
}


@pytest.mark.parametrize("name", SCALE_CASES)
def test_no_false_alarm_at_any_scale(name):
    f, x = SCALE_CASES[name]
    r = gx.check_grads(f, x)
    assert r.passed, str(r)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_wrong_derivatives_fail_at_exactly_the_wrong_entries(case):
    r = gx.check_grads(case.f, *case.args, order=case.order, mode="full", **case.kw)
    assert not r.passed
    named = {(e.row, e.col) for e in r.mismatches}
    assert named == case.expected, str(r)
    assert case.order in r.failed_orders
    for e in r.mismatches:
        assert e.verdict and e.verdict != "ok"
        assert " / " in e.label


# A 1e-6 relative error in one of 1000 entries sits at the resolution limit of a
# random projection (it is found in 8 of 10 seeds); full mode, which auto picks at
# that size, always finds it.
FAST_RESOLVABLE = [
    c
    for c in CASES
    if c.order == 1 and c.name not in {"forward_mode_only", "relative_1e-6_in_1000"}
]


@pytest.mark.parametrize("case", FAST_RESOLVABLE, ids=lambda c: c.name)
def test_fast_mode_locates_the_same_entries(case):
    r = gx.check_grads(case.f, *case.args, mode="fast", rng=1)
    assert not r.passed
    named = {(e.row, e.col) for e in r.mismatches}
    if len(case.expected) <= 20:
        assert named == case.expected, str(r)
    else:
        assert named <= case.expected and named


def test_second_order_failure_says_which_order():
    case = next(c for c in CASES if c.name == "second_order_only")
    first = gx.check_grads(case.f, *case.args, order=1)
    assert first.passed
    r = gx.check_grads(case.f, *case.args, order=2)
    assert r.failed_orders == (2,)
    assert "first-order check passed" in str(r)


def test_labels_name_parameters_and_complex_parts():
    case = next(c for c in CASES if c.name == "extra_conjugate")
    r = gx.check_grads(case.f, *case.args)
    labels = {e.label for e in r.mismatches}
    assert "Im y[1] / Re z[1]" in labels
    two = next(c for c in CASES if c.name == "second_input_block")
    r = gx.check_grads(two.f, *two.args)
    assert {e.label for e in r.mismatches} == {"y[0] / y[0]", "y[1] / y[1]"}
    assert {e.wrt for e in r.mismatches} == {1}
    assert r.column_blocks == {"x": slice(0, 3), "y": slice(3, 5)}
    assert r.mismatches[0].in_index in {(0,), (1,)}


def test_entry_records_and_report_text():
    case = next(c for c in CASES if c.name == "single_entry")
    r = gx.check_grads(case.f, *case.args)
    (e,) = r.mismatches
    assert (e.wrt, e.out_index, e.in_index) == (0, (2,), (2,))
    assert e.analytic == pytest.approx(1.01 * e.numeric, rel=1e-9)
    assert e.abs_err == pytest.approx(abs(e.analytic - e.numeric))
    assert e.fd_error < 1e-6 * abs(e.numeric)
    assert r.worst[0] == e and len(r.worst) == 10
    text = str(r)
    assert "FAILED" in text and "y[2] / x[2]" in text and "1.01x" in text
    html = r._repr_html_()
    assert "FAILED" in html and "<table>" in html
    with pytest.raises(gx.GradientError) as info:
        r.raise_if_failed()
    assert info.value.report is r


def test_kink_is_reported_as_not_differentiable():
    leaky = lambda x: anp.where(x > 0, x, 0.1 * x)  # noqa: E731
    r = gx.check_grads(leaky, np.array([0.0, 1.0, -1.0]))
    assert r.passed, str(r)
    assert [(k.row, k.col) for k in r.kinks] == [(0, 0)]
    (k,) = r.kinks
    assert k.verdict is gx.Verdict.RIGHT_AT_KINK and k.one_sided == pytest.approx((1.0, 0.1))
    assert "not differentiable here" in k.reading and "the left one" in k.reading
    assert "kink" in str(r)


@pytest.mark.parametrize("seed", range(12))
def test_an_output_made_by_cancellation_is_named_as_such(seed):
    """y[0] = tanh(a·x) with a·x = 1e-3 from terms of size ~1: its rounding noise is far
    above its own ulps. The check passes, and its note names cancellation (it once asked
    "an iterative solver?" of this plain layer)."""
    n = 16
    rng = np.random.default_rng(seed)
    A, x = rng.standard_normal((n, n)), rng.standard_normal(n)
    A[0, -1] -= (A[0] @ x - 1e-3) / x[-1]
    report = gx.check_grads(lambda v: anp.tanh(A @ v), x, rng=seed)
    assert report.passed and not report.kinks, str(report)
    notes = [t for t in report.notes if "only accurate" in t]
    assert all("small difference of large terms" in t for t in notes)


@pytest.mark.parametrize("one_sided_jvp", [False, True])
def test_a_kink_under_cancellation_noise_is_a_kink(one_sided_jvp):
    """A small kink (1e-4·|x0| at x0 = 0) in an output that is also noisy from
    cancellation: the kink hides in the noise at the probes' scales. The entry is named
    a kink, never 'ok' and never wrong, also when the JVP takes the right-hand slope
    and the VJP the central one (both valid at a kink). A change that probed only
    rows with fine structure for kinks lost the label, and called the JVP wrong."""

    @gx.primitive
    def kinked(x):
        return anp.abs(x)

    gx.defvjp(kinked, lambda ans, x: lambda g: g * anp.sign(x))
    if one_sided_jvp:
        gx.defjvp(kinked, lambda g, ans, x: g * anp.where(x >= 0, 1.0, -1.0))
    else:
        gx.defjvp(kinked, lambda g, ans, x: g * anp.sign(x))
    f = lambda x: 1e-4 * kinked(x[0]) + ((1e6 + anp.sin(x[1])) - 1e6)  # noqa: E731
    for seed in (0, 1):
        report = gx.check_grads(f, np.array([0.0, 0.4]), rng=seed)
        assert report.passed, str(report)
        assert [(k.row, k.col) for k in report.kinks] == [(0, 0)], str(report)


def test_nondeterministic_function_is_detected():
    state = np.random.default_rng(0)
    with pytest.raises(gx.NotDeterministicError, match="not deterministic"):
        gx.check_grads(lambda x: x * state.random(), np.ones(3))


def test_mutating_function_is_detected():
    def mutates(x):
        x[0] = 5.0
        return x * 2

    with pytest.raises(gx.InputMutationError, match="'x'.*in place"):
        gx.check_grads(mutates, np.ones(3))


def test_bad_arguments():
    with pytest.raises(TypeError, match="callable"):
        gx.check_grads(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="order"):
        gx.check_grads(anp.sin, np.ones(3), order=3)
    with pytest.raises(ValueError, match="mode"):
        gx.check_grads(anp.sin, np.ones(3), mode="slow")
    with pytest.raises(TypeError, match="float"):
        gx.check_grads(anp.sin, np.arange(3))
    with pytest.raises(TypeError, match="rng must be"):
        gx.check_grads(lambda x: x, np.ones(3), wrt=0, rng="seed")
    with pytest.raises(TypeError, match="integer"):
        gx.check_grads(lambda x: np.round(x).astype(int), np.ones(3))


def test_nan_outputs_warn_and_are_unresolvable_not_wrong():
    with pytest.warns(gx.NonFiniteWarning, match="y\\[1\\]=nan"):
        r = gx.check_grads(lambda x: anp.log(x), np.array([1.0, -1.0]))
    assert not r.mismatches  # a NaN output is no gradient bug ...
    bad = {(e.row, e.col) for e in r.unresolved}
    assert bad == {(1, 0), (1, 1)}  # ... and its entries are never "ok"
    assert all("not finite at the point" in e.reading for e in r.unresolved)
    assert all(e.verdict is gx.Verdict.UNRESOLVABLE for e in r.unresolved)
    # half the entries cannot be judged: that could hide a wrong block
    assert r.outcome is gx.Outcome.INCONCLUSIVE and "could not be resolved" in r.inconclusive
    assert "unresolvable" in str(r) and "(ok)" not in str(r).split("unresolvable by")[1]


def test_auto_mode_goes_fast_for_large_inputs():
    x = np.linspace(0, 1, 5000)
    r = gx.check_grads(lambda x: anp.sum(anp.sin(x)), x)
    assert r.mode == "fast" and r.passed


def test_fast_mode_large_input_single_bug_is_cheap():
    n = 20_000

    def vjp(ans, x):
        def v(g):
            out = g * np.cos(x)
            out[12345] += 0.5 * g[12345]
            return out

        return v

    p = gx.primitive(lambda x: np.sin(x))
    gx.defvjp(p, vjp)
    x = np.random.default_rng(0).standard_normal(n)
    r = gx.check_grads(p, x, mode="fast", rng=3)
    assert [(e.row, e.col) for e in r.mismatches] == [(12345, 12345)]
    assert r.nfev + r.ngrad < 200


@pytest.mark.parametrize("seed", range(4))
def test_fast_mode_does_not_pass_what_its_fallback_found_inconclusive(seed):
    """A running sum in float32 (stairs of 6e-5..1e-3 on slopes of 1), one input's rule
    with its sign flipped. The projections fail, group testing locates nothing, and the
    full check it falls back on is inconclusive (no entry resolvable): the fast check
    passed, having taken only the fallback's (no) wrong entries: 23 of 40 such checks."""

    def vjp(ans, x):
        def v(g):
            out = np.cumsum(g[::-1])[::-1].copy()
            out[0] = -out[0]
            return out

        return v

    running = gx.primitive(
        lambda x: np.cumsum((1000.0 + x).astype(np.float32), dtype=np.float32).astype(float)
    )
    gx.defvjp(running, vjp)
    x = np.random.default_rng(1003).normal(size=10)
    r = gx.check_grads(running, x, rng=seed, mode="fast")
    assert r.outcome is not gx.Outcome.PASSED, str(r)
    if r.outcome is gx.Outcome.INCONCLUSIVE:
        assert "full check" in r.inconclusive and r.unresolved, str(r)


def test_fast_mode_whose_fallback_passed_is_not_inconclusive():
    """Tiny slopes on a large constant (1e8 + 1e-6·sin x, 50 inputs): neither
    projection can be resolved (their FD errors, the 1e8's rounding over the step,
    exceed the sums they project), so the fast check falls back on the full check,
    which passes. It was reported inconclusive ("the full check is too large to fall
    back on") for having had no projection resolved, though the full check ran."""
    f = gx.primitive(lambda x: 1e8 + 1e-6 * np.sin(x))
    gx.defvjp(f, lambda ans, x: lambda g: g * 1e-6 * np.cos(x))
    x = np.random.default_rng(122).standard_normal(50) * 2
    r = gx.check_grads(f, x, rng=22, mode="fast")
    assert any("no projection could be resolved" in n for n in r.notes), r.notes
    assert r.outcome is gx.Outcome.PASSED, str(r)


def test_several_outputs_are_stacked_rows():
    f = lambda x: [anp.sin(x), anp.sum(x**2)]  # noqa: E731
    r = gx.check_grads(f, np.array([0.3, 0.7]))
    assert r.passed and r.shape == (3, 2)
    assert r.row_label(2) == "y1" and r.row_label(0) == "y0[0]"


@pytest.mark.parametrize(
    ("name", "words"),
    [("transposed", "transpose"), ("scaled", "2x"), ("sign_flipped", "sign flipped")],
)
def test_whole_block_patterns_are_named(name, words):
    case = next(c for c in CASES if c.name == name)
    r = gx.check_grads(case.f, *case.args)
    assert any(words in n for n in r.notes), r.notes


# ---------------------------------------------------------------- the complex step


def _complex_step_refusal(ex):
    """Why the complex step cannot check a gallery example (None: it can)."""
    if ex.name == "logdet":  # slogdet's log|det| is real for a complex matrix
        return "f is not complex-safe: slogdet"
    if any(np.iscomplexobj(a) for a in ex.args()):
        return "f takes complex input"
    if ex.complex:
        return "f returns complex values"
    return None


@pytest.mark.parametrize("ex", EXAMPLES, ids=ids)
def test_complex_step_applicability_over_the_gallery(ex):
    reason = gx.complex_step_applicability(ex.f, *ex.args(), wrt=ex.wrt)
    expected = _complex_step_refusal(ex)
    assert (reason is None) == (expected is None), reason
    if expected:
        assert reason.startswith(expected), reason


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("ex", EXAMPLES, ids=ids)
def test_complex_step_checks_the_gallery_where_it_applies(ex, dtype):
    args = ex.args()
    if dtype == "float32":
        if ex.complex:
            pytest.skip("float32 rows are for real examples")
        args = tuple(np.asarray(a, dtype=np.float32) for a in args)
    expected = _complex_step_refusal(ex)
    run = lambda: gx.check_grads(  # noqa: E731
        ex.f, *args, wrt=ex.wrt, mode="full", method="complex_step", precision="native"
    )
    if expected is None:
        r = run()
        assert r.passed, str(r)
        assert r.method == "complex_step" and r.dtype == dtype
    else:
        with pytest.raises(gx.ComplexStepError) as info:
            run()
        assert info.value.reason.startswith(expected), info.value.reason
        assert "method='richardson'" in str(info.value)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_complex_step_finds_exactly_the_wrong_entries(case):
    real = not any(np.iscomplexobj(a) for a in case.args)
    reason = gx.complex_step_applicability(case.f, *case.args, **case.kw)
    assert (reason is None) == real, reason
    if not real:
        pytest.skip("complex inputs: the complex step does not apply")
    r = gx.check_grads(
        case.f, *case.args, order=case.order, mode="full", method="complex_step", **case.kw
    )
    assert {(e.row, e.col) for e in r.mismatches} == case.expected, str(r)


def _rejects_complex(x):
    if np.iscomplexobj(x):
        raise ValueError("real input only")
    return anp.sin(x)


x_cs = np.linspace(0.2, 1.0, 3)
# (f, the helper's reason contains, check_grads refuses it with the same reason)
NOT_COMPLEX_SAFE = {
    "abs": (lambda x: anp.abs(x) * x, "absolute at test_check.py", True),
    "real": (lambda x: anp.real(x) * x, "real at test_check.py", True),
    "conj": (lambda x: anp.conj(x) * x, "conjugate at test_check.py", True),
    "norm": (lambda x: anp.linalg.norm(x) * x, "norm at", True),
    "astype": (lambda x: x.astype(float) * x, "astype at", True),
    "float()": (lambda x: float(x[0]) * x, "a cast to real at test_check.py", False),
    "raises": (_rejects_complex, "fails on complex input (ValueError: real input only)", True),
    "complex output": (lambda x: anp.exp(1j * x), "f returns complex values", True),
}


@pytest.mark.parametrize("name", NOT_COMPLEX_SAFE)
def test_complex_step_names_what_breaks_it(name):
    f, words, via_check = NOT_COMPLEX_SAFE[name]
    reason = gx.complex_step_applicability(f, x_cs)
    assert reason is not None and words in reason, reason
    if via_check:  # (float() breaks autograd too: check_grads stops before the FD)
        with pytest.raises(gx.ComplexStepError) as info:
            gx.check_grads(f, x_cs, method="complex_step")
        assert words.split(" at ")[0] in info.value.reason, info.value.reason
        assert "Use method='richardson'" in str(info.value)
        # richardson checks the same function without complaint
        assert gx.check_grads(f, x_cs).passed


def test_complex_step_with_a_chosen_step_is_honest():
    # the explorer's step slider: a large step's truncation error is estimated, not
    # called a wrong derivative, and the real part moving with h²f''/2 is no refusal
    x = np.linspace(0.5, 1.0, 3)
    for step in (1e-8, 1e-5, 1e-3, 1e-1):
        r = gx.check_grads(anp.sin, x, method="complex_step", step=step)
        assert r.passed, (step, str(r))
        d = np.diag(r.numeric)
        assert np.all(np.abs(d - np.cos(x)) <= 2 * np.diag(r.fd_error))


def test_complex_step_for_torch_functions():
    torch = pytest.importorskip("torch")
    t = torch.linspace(0.1, 1.0, 3, dtype=torch.float64)
    assert gx.complex_step_applicability(torch.sin, t) is None
    assert gx.check_grads(torch.sin, t, method="complex_step").passed
    reason = gx.complex_step_applicability(torch.relu, t)
    assert reason.startswith("torch backend: f fails on complex input"), reason
    reason = gx.complex_step_applicability(lambda v: torch.abs(v) * v, t)
    assert reason.startswith("torch backend: f is not complex-safe: abs"), reason
    with pytest.raises(gx.ComplexStepError, match="complex-safe"):
        gx.check_grads(lambda v: torch.abs(v) * v, t, method="complex_step")


# ---------------------------------------------------------------- report wording


def test_report_counts_and_passing_entries_are_worded_honestly():
    case = next(c for c in CASES if c.name == "single_entry")
    r = gx.check_grads(case.f, *case.args)
    text = str(r)
    assert r.status == "FAILED: 1 wrong entry"
    assert "1 wrong entry;" in text and "wrong entries" not in text and "  wrong entry:" in text
    (e,) = r.mismatches
    assert e.verdict is gx.Verdict.WRONG and e.reading == "analytic is 1.01x the numeric value"
    assert all(w.reading.startswith("ok") for w in r.worst[1:])
    assert gx.check_grads(anp.sin, x_cs).status == "PASSED"

    # a kink: the kink says so, and no passing entry is described as off or wrong
    r = gx.check_grads(lambda x: anp.abs(x) + x**2, np.array([0.0, 1e-9, 0.5]))
    assert r.passed and [k.verdict for k in r.kinks] == [gx.Verdict.RIGHT_AT_KINK]
    assert r.kinks[0].reading.startswith("right at a kink: f is not differentiable here")
    for w in r.worst:
        assert w.reading.startswith("ok"), w.reading
        assert "off by" not in w.reading and "wrong" not in w.reading
    assert any("within tolerance, " in w.reading for w in r.worst)
    assert "closest to failing (all within tolerance" in str(r)


def test_failing_verdict_is_measured_against_the_whole_allowance():
    from gradexplorer.check.report import verdict_for

    # an FD error of 1e-30 beside an allowance of 256 ulps of the value: the ratio to
    # the FD error alone (1e14x) would say nothing about how wrong the entry is
    assert verdict_for(0.18, 1.0, 1.0 + 1e-14, 1e-30).startswith("ok: within tolerance, 0.18")
    text = verdict_for(3.0, 1.0 + 1e-13, 1.0, 1e-30)
    assert "3x the allowed difference" in text and "FD error" not in text


def test_assert_grads_fails_on_an_inconclusive_check_unless_allowed():
    import warnings

    assert_grads = gx.testing.assert_grads

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AssertionError, match="INCONCLUSIVE"):
            assert_grads(lambda x: anp.log(x), np.array([1.0, -1.0]))
        r = assert_grads(lambda x: anp.log(x), np.array([1.0, -1.0]), allow_inconclusive=True)
    assert r.outcome is gx.Outcome.INCONCLUSIVE and not r.passed
    with pytest.raises(gx.GradientError):
        r.raise_if_failed()
    assert r.raise_if_failed(inconclusive_ok=True) is r


def test_a_vjp_with_an_offset_is_not_linear_whatever_the_draw():
    """vjp(g) = g·J + 1e-6 at one entry: affine, not linear. Its gap shows in one
    coordinate; when round-off happened to show in a quarter of the others too, the
    rule passed for a solver with a 1e-3 tolerance (1 draw in 16). A linear map sends
    0 to exactly 0 (a solver's too), so rule(0) != 0 decides it, in every draw."""
    from autograd import make_vjp
    from autograd.extend import defvjp, primitive

    def smooth(v):
        return anp.sin(3 * v) * anp.cumsum(v)

    @primitive
    def g(v):
        return smooth(v)

    def offset_vjp(ans, v):
        back = make_vjp(smooth)(v)[0]

        def vjp(ct):
            out = back(ct).copy()
            out[4] += 1e-6
            return out

        return vjp

    defvjp(g, offset_vjp)
    x = np.linspace(-1.0, 1.5, 9)
    for seed in range(16):
        report = gx.check_grads(g, x, rng=seed)
        assert report.outcome is gx.Outcome.FAILED, (seed, report)
        assert any("not linear in its cotangent" in n for n in report.notes), (seed, report)


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("drop", ["negative", "sign"])
def test_a_vjp_that_reads_its_cotangents_sign_fails_whatever_the_draw(mode, drop):
    """A scalar loss whose rule drops a negative cotangent (``g.clamp(min=0)``) or
    its sign (``abs(g)``): right for the unit cotangent, wrong for -1. With one
    random scalar cotangent it was found only when the draw was negative (4 of 10
    seeds); the probes now take each coordinate at both signs."""
    from autograd.extend import defvjp, primitive

    @primitive
    def s(v):
        return anp.sin(v)

    bent = (lambda g: np.maximum(g, 0.0)) if drop == "negative" else np.abs
    defvjp(s, lambda ans, v: lambda g: bent(g) * np.cos(v))

    def loss(v):
        return anp.sum(s(v))

    x = np.linspace(-1.0, 1.5, 5)
    for seed in range(10):
        report = gx.check_grads(loss, x, mode=mode, rng=seed)
        assert report.outcome is gx.Outcome.FAILED, (seed, report)
        assert gx.check_grads(lambda v: anp.sum(anp.sin(v)), x, mode=mode, rng=seed).passed


def test_a_taylor_step_across_the_domains_edge_is_no_crash():
    """The Cholesky factor of a matrix 1e-8 from singular: the Taylor stage's
    longer steps leave the positive-definite cone, where f raises. Such a step
    is outside f's domain (as for finite differences), never a crash."""

    def f(a):
        a = a.reshape(3, 3)
        return anp.linalg.cholesky((a + a.T) / 2).ravel()

    Q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(3, 3)))
    a = ((Q * np.array([1.0, 1e-3, 1e-8])) @ Q.T).ravel()
    for seed in range(5):
        report = gx.check_grads(f, a, rng=seed)
        assert report.outcome in (gx.Outcome.INCONCLUSIVE, gx.Outcome.PASSED), (seed, report)


@pytest.mark.parametrize("off", [-2.0, 1e-2, 1e-4])
def test_a_small_row_the_differences_resolve_is_no_round_off(off):
    """``1e-12·sin(x1)`` beside ``1e6·x0·x1``: its row lies below 256 ulps of the
    Jacobian's scale, yet the differences resolve it to 1e-25. A wrong rule there (a
    flipped sign, 1 % or 1e-4 off) fails; a row of round-off (what the allowance is
    for: an imaginary part that is 0) is still judged at the Jacobian's scale."""

    @gx.primitive
    def small(x):
        return 1e-12 * anp.sin(x[1])

    gx.defvjp(small, lambda ans, x: lambda g: g * np.array([0.0, (1 + off) * 1e-12 * np.cos(x[1])]))

    def f(x):
        return anp.stack([1e6 * x[0] * x[1], small(x)])

    x = np.array([0.7, 1.3])
    for seed in range(3):
        assert gx.check_grads(f, x, rng=seed).outcome is gx.Outcome.FAILED, seed
    assert gx.check_grads(lambda x: anp.stack([1e6 * x[0] * x[1], 1e-12 * anp.sin(x[1])]), x).passed
