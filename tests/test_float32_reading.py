"""Functions that take float64 and compute in float32 (``x.astype(np.float32)``).

Such an f reads x through float32's stairs: it is checked at x rounded to float32
with steps on float32's grid (:mod:`gradexplorer.fd.narrow`). Over the gallery's
real examples, each turned into that kind of function with its hand-derived rule:
the right rule passes in both modes and a rule off by 1e-3 in its largest entry
fails at exactly that entry (before, 16 of 76 such rules passed and 2 right ones
failed).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradexplorer as gx
from gradexplorer.fd.narrow import float32_cells, float32_point, read_format
from gradexplorer.gallery.examples import EXAMPLES

REAL = [ex for ex in EXAMPLES.values() if not ex.complex]
EPS64 = np.full(3, 2.0**-52)


def in_float32(ex, args, off=0.0, at=None, seen=None):
    """The example computed in float32 from float64 x (its other inputs held), with
    its hand-derived rule (entry ``at`` off by ``off``); ``seen`` collects the
    points the rule is evaluated at."""
    others = args[1:]
    narrow = [np.asarray(o, np.float32) for o in others]

    def body(x):
        return np.asarray(ex.f(x.astype(np.float32), *narrow), dtype=np.float64)

    f = gx.primitive(body)

    def vjp(ans, x):
        if seen is not None:
            seen.append(np.array(x))
        J = np.asarray(ex.jacobian(x, *others)[0], float).reshape(-1, x.size).copy()
        if at is not None:
            J[at] *= 1 + off
        return lambda g: (np.ravel(g) @ J).reshape(x.shape)

    gx.defvjp(f, vjp)
    return f


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("ex", REAL, ids=lambda ex: ex.name)
def test_right_rules_pass_and_are_judged_at_x_in_float32(ex, mode):
    for seed in range(2):
        args = ex.args(seed)
        seen: list = []
        r = gx.check_grads(in_float32(ex, args, seen=seen), args[0], mode=mode, rng=seed)
        assert r.passed, str(r)
        if any("through float32" in n for n in r.notes):  # every rule call at float32's x
            assert seen and all(np.array_equal(s, s.astype(np.float32)) for s in seen)


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("ex", REAL, ids=lambda ex: ex.name)
def test_a_rule_off_by_1e3_is_found_at_its_entry(ex, mode):
    for seed in range(2):
        args = ex.args(seed)
        J = np.asarray(ex.jacobian(*args)[0]).reshape(-1, args[0].size)
        at = tuple(int(a) for a in np.unravel_index(np.argmax(np.abs(J)), J.shape))
        r = gx.check_grads(in_float32(ex, args, 1e-3, at), args[0], mode=mode, rng=seed)
        assert r.outcome is gx.Outcome.FAILED, str(r)
        assert {(e.row, e.col) for e in r.mismatches} == {at}, str(r)


def test_the_report_says_how_f_was_read():
    f = gx.primitive(lambda x: np.sin(3 * x.astype(np.float32)).astype(float))
    gx.defvjp(f, lambda ans, x: lambda g: g * 3 * np.cos(3 * x))
    r = gx.check_grads(f, np.linspace(-1.3, 1.7, 9))
    assert r.passed, str(r)
    note = next(n for n in r.notes if "through float32" in n)
    assert "rounded to float32" in note and "float32's grid" in note


def _kind(found):
    """read_format's answer for a float32 reader, as (only / partly / "", evaluations)."""
    reading, nfev = found
    if reading is None:
        return "", nfev
    assert reading.format == "float32"
    return ("only" if reading.only else "partly"), nfev


def test_float32_reading_is_told_from_float64_functions():
    x0 = np.array([0.3, -1.7, 2.5])
    f32 = lambda X: np.tanh(X.astype(np.float32)).astype(float)  # noqa: E731
    assert _kind(read_format(f32, x0, EPS64)) == ("only", 5)
    # float64 beside it (a term of x**2): partly, from its jumps at the cells' edges
    assert _kind(read_format(lambda X: f32(X) + X**2, x0, EPS64)) == ("partly", 13)
    # smooth float64, noisy float64 (its noise as large mid-cell as at the edges: 7
    # evaluations, and 12 asking bfloat16's and float16's edges the same), no
    # output that moves, x already float32 (nothing finer to read), x not finite: none
    noisy = lambda X: np.sin(X) + 1e-9 * np.sin(1e12 * X)  # noqa: E731
    assert _kind(read_format(np.sin, x0, EPS64)) == ("", 19)
    assert _kind(read_format(noisy, x0, EPS64)) == ("", 19)
    assert _kind(read_format(lambda X: np.zeros_like(X), x0, EPS64)) == ("", 13)
    assert _kind(read_format(f32, x0, np.full(3, 2.0**-23))) == ("", 0)
    assert _kind(read_format(f32, np.array([0.3, np.nan, 1.0]), EPS64)) == ("", 0)
    # beyond float32's range x cannot be read in float32
    assert _kind(read_format(f32, np.array([1e300, 1.0, 2.0]), EPS64)) == ("", 0)


def test_nan_outputs_do_not_hide_a_float32_reading():
    x0 = np.array([0.3, -1.7, 2.5])
    f = lambda X: np.log(X.astype(np.float32)).astype(float)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _kind(read_format(f, x0, EPS64))[0] == "only"


def test_the_point_and_its_spacing():
    x0 = np.array([0.1, 1e-3, -7.25])
    point, spacing = float32_point(x0, EPS64)
    assert np.array_equal(point, x0.astype(np.float32).astype(float))
    assert np.array_equal(spacing, np.spacing(np.abs(x0).astype(np.float32)).astype(float))
    # a float32 coordinate beside float64 ones keeps its own ulp
    point, spacing = float32_point(x0, np.array([2.0**-52, 2.0**-23, 2.0**-52]))
    assert point[1] == x0[1] and spacing[1] == np.spacing(x0[1])
    cells = float32_cells(x0)
    inside = cells[:2].astype(np.float32)
    assert np.array_equal(inside[0], x0.astype(np.float32))
    assert np.array_equal(inside[1], x0.astype(np.float32))
    assert not np.any(cells[2:].astype(np.float32) == x0.astype(np.float32))


def test_steps_land_on_float32s_grid():
    """Every point the finite differences' column stencils put f at is a float32
    number, wherever it can be (within x's own binade or a finer one; beyond, x
    itself is off the wider binade's grid): no step is rounded before f sees it.
    The noise probes' points, on random lines, are off the grid by design."""
    import gradexplorer.fd.levels as levels

    seen: list = []
    sample = levels.Sampler.__call__

    def spy(self, idx, h, offsets):
        if self.columns is not None:
            for k, i in enumerate(idx):
                j = self.columns[i]
                seen.append((self.x0[j], self.x0[j] + offsets * h[k]))
        return sample(self, idx, h, offsets)

    f = gx.primitive(lambda x: np.sin(3 * x.astype(np.float32)).astype(float))
    gx.defvjp(f, lambda ans, x: lambda g: g * 3 * np.cos(3 * x))
    x = np.random.default_rng(3).standard_normal(12)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(levels.Sampler, "__call__", spy)
        assert gx.check_grads(f, x, mode="full").passed
    assert seen
    for x0, points in seen:
        within = np.frexp(np.abs(points))[1] <= np.frexp(abs(x0))[1]
        inside = points[within]
        assert np.array_equal(inside, inside.astype(np.float32).astype(float)), (x0, points)


def _diagonal(fn, rule):
    """f with an elementwise rule (its Jacobian is diagonal)."""
    f = gx.primitive(fn)
    gx.defvjp(f, lambda ans, x: lambda g: g * rule(x))
    return f


def _with(d, at, value):
    d = np.array(d, dtype=float)
    d[at] = value
    return d


_SAT = [11.65, -10.08, 0.33, -1.30, 0.91, 0.45, -0.54, 0.58]
_CLIP = [1.77, -2.16, 0.57, -0.73, 0.18, 0.41, -0.56, -0.80]
_RELU = [0.0013, -0.0002, -0.0007, -2.44, 1.80, 1.14, -0.33, 0.77]
_LINEAR = [2.04, -2.44, -0.83, -0.87, 0.56, 0.74, 0.19, 0.41]
#: (name, f's body, its right rule, x, the entry a wrong rule moves, the wrong value there):
#: flat and saturated regions, an exactly linear float32 entry, float32's subnormals, a
#: float64 staircase beside a linear block. Each wrong slope was missed by an earlier
#: version of the float32 rounding floors (an adversarial review's findings).
EDGES = [
    ("float16 clip, saturated", lambda x: np.clip(x.astype(np.float16), -1, 1).astype(float),
     lambda x: (np.abs(x) < 1) * 1.0, _CLIP, 0, 2e-2),
    ("float32 clip, linear entry", lambda x: np.clip(x.astype(np.float32), -1, 1).astype(float),
     lambda x: (np.abs(x) < 1) * 1.0, _LINEAR, 3, 1.0001),
    ("float32 relu, flat", lambda x: np.maximum(x.astype(np.float32), 0).astype(float),
     lambda x: (x > 0) * 1.0, _RELU, 3, 1e-4),
    ("float32 tanh, saturated", lambda x: np.tanh(x.astype(np.float32)).astype(float),
     lambda x: 1 - np.tanh(x) ** 2, _SAT, 1, 1e-5),
    ("float32 3x, subnormal x", lambda x: (3 * x.astype(np.float32)).astype(float),
     lambda x: np.full(x.shape, 3.0), np.array(_CLIP) * 1e-41, 0, 3.003),
    ("float64 floor beside 3x", lambda x: np.concatenate([np.floor(x[:4]), 3.0 * x[4:]]),
     lambda x: np.concatenate([np.zeros(4), np.full(4, 3.0)]),
     [0.25, -0.25, 0.75, 0.1, -0.5, 0.25, 1.25, 1.0], 1, 1e-3),
]  # fmt: skip


#: Known misses: x at 1e-41 is subnormal in float32, 7000 ulps of 1.4e-45 (13 bits, a
#: float16's worth): a projection's step there resolves it to 0.4%, not the 0.1% planted.
#: Until 2026-11-29 fast mode found it only because it snapped its directions to
#: 1.3e6 ulps (180 x's wide), as it did on float16's grid (steps of hundreds: exp
#: overflowed and a wrong rule passed).
_FAST_MISSES = {"float32 3x, subnormal x"}


def _edge_params() -> list:
    out = []
    for mode in ("full", "fast"):
        for edge in EDGES:
            known = mode == "fast" and edge[0] in _FAST_MISSES
            marks = (
                [pytest.mark.xfail(strict=True, reason="13-bit effective grid")] if known else []
            )
            out.append(pytest.param(*edge, mode, marks=marks, id=f"{edge[0]}-{mode}"))
    return out


@pytest.mark.parametrize(("name", "fn", "rule", "x", "at", "wrong", "mode"), _edge_params())
def test_flat_saturated_and_exact_entries(name, fn, rule, x, at, wrong, mode):
    x = np.array(x, dtype=float)
    right = gx.check_grads(_diagonal(fn, rule), x, mode=mode, rng=0)
    assert right.outcome is not gx.Outcome.FAILED, str(right)
    bad = _diagonal(fn, lambda v: _with(rule(v), at, wrong))
    r = gx.check_grads(bad, x, mode=mode, rng=0)
    assert r.outcome is gx.Outcome.FAILED, str(r)
    assert {(e.row, e.col) for e in r.mismatches} == {(at, at)}, str(r)


#: f that reads x partly through float32 (float64 beside it): (body, right rule)
MIXED = {
    "sin(x32) + x^2": (
        lambda x: np.sin(x.astype(np.float32)).astype(float) + x**2,
        lambda x: np.cos(x) + 2 * x,
    ),
    "sin(x32) + 1e-9 x": (
        lambda x: np.sin(x.astype(np.float32)).astype(float) + 1e-9 * x,
        lambda x: np.cos(x) + 1e-9,
    ),
    "exp(x32) * x": (
        lambda x: np.exp(x.astype(np.float32)).astype(float) * x,
        lambda x: np.exp(x) * (1 + x),
    ),
}


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("name", list(MIXED))
def test_f_reading_x_partly_through_float32(name, mode):
    """Below a float32 ulp of x the float32 part is flat and the differences read the
    float64 part's slope alone (cos x + 2x read as 2x): such an f, found by its jumps at
    the cells' edges, is checked on float32's grid too; right rules pass, wrong fail."""
    body, rule = MIXED[name]
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal(8)
        r = gx.check_grads(_diagonal(body, rule), x, mode=mode, rng=seed)
        assert r.passed, str(r)
        assert any("reads x partly through float32" in n for n in r.notes), r.notes
        bad = _diagonal(body, lambda v: _with(rule(v), 5, 1.001 * rule(v)[5]))
        r = gx.check_grads(bad, x, mode=mode, rng=seed)
        assert {(e.row, e.col) for e in r.mismatches} == {(5, 5)}, str(r)


# ---- x read in float16 or bfloat16 (mixed-precision code: ``x.half()``) ----------------

ml_dtypes = pytest.importorskip("ml_dtypes")  # bfloat16 for numpy (comes with jax)
READS = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
#: (f's float32 body on x read narrow, its right rule in float64)
NARROW_BODIES = {
    "sin(3x)": (lambda z: np.sin(3 * z), lambda x: 3 * np.cos(3 * x)),
    "x^3 - x": (lambda z: z**3 - z, lambda x: 3 * x**2 - 1),
    "tanh(2x)": (lambda z: np.tanh(2 * z), lambda x: 2 / np.cosh(2 * x) ** 2),
}


def _read_narrow(read, body):
    return lambda x: np.asarray(body(x.astype(read).astype(np.float32)), np.float32).astype(float)


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("body", list(NARROW_BODIES))
@pytest.mark.parametrize("read", list(READS))
def test_x_read_in_float16_or_bfloat16_is_checked_on_that_grid(read, body, mode):
    """Each such f failed its right rule (its differences, and its Taylor test, read
    x rounded to 8 or 11 bits: noise as large as the derivative). Now it is read on
    that format's grid: right rules are never wrong; in float16 a rule off by 1e-2
    is found at its entry (bfloat16's 8 bits resolve less: at most inconclusive)."""
    fn, rule = _read_narrow(READS[read], NARROW_BODIES[body][0]), NARROW_BODIES[body][1]
    x = np.random.default_rng(7).standard_normal(8) * 1.5
    r = gx.check_grads(_diagonal(fn, rule), x, mode=mode, rng=0)
    assert r.outcome is not gx.Outcome.FAILED, str(r)
    assert any(f"only through {read}" in n for n in r.notes), r.notes
    if read == "float16":
        bad = gx.check_grads(_diagonal(fn, lambda v: _with(rule(v), 3, 1.01 * rule(v)[3])), x,
                             mode=mode, rng=0)  # fmt: skip
        assert {(e.row, e.col) for e in bad.mismatches} == {(3, 3)}, str(bad)


def test_the_format_f_reads_x_in_is_told():
    x0 = np.array([0.3, -1.7, 2.5, 1e-3])
    for name, read in READS.items():
        reading, nfev = read_format(_read_narrow(read, np.sin), x0, np.full(4, 2.0**-52))
        assert (reading.format, reading.only, nfev) == (name, True, 13)
    # float32 stays float32 (5 evaluations); beyond float16's range only bfloat16 is asked
    assert read_format(_read_narrow(np.float32, np.sin), x0, np.full(4, 2.0**-52))[0].format \
        == "float32"  # fmt: skip
    big = np.array([7e4, 0.5])
    reading, nfev = read_format(_read_narrow(READS["bfloat16"], np.sin), big, np.full(2, 2.0**-52))
    assert (reading.format, nfev) == ("bfloat16", 9)
    assert read_format(_read_narrow(np.float16, np.sin), big, np.full(2, 2.0**-52))[0] is None
    # a constant f is flat everywhere: read in nothing
    assert read_format(lambda X: np.ones((len(X), 2)), x0, np.full(4, 2.0**-52)) == (None, 13)


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16"])
def test_formats_round_and_cell_as_the_dtypes_do(name):
    from gradexplorer.fd.formats import format_named
    from gradexplorer.fd.narrow import format_cells

    fmt = format_named(name)
    dtype = {"float32": np.float32, **READS}[name]
    rng = np.random.default_rng(0)
    x = rng.standard_normal(20000) * 10.0 ** rng.integers(-8, 5, 20000)
    with np.errstate(all="ignore"):
        # via float32, as frameworks (and ml_dtypes) round float64 to the narrow formats
        ref = x.astype(np.float32).astype(dtype).astype(float)
        assert np.array_equal(fmt.round(x.astype(np.float32)), ref)
        c = ref[np.isfinite(ref)]
        cells = format_cells(c, fmt)
        read = cells.astype(np.float32).astype(dtype).astype(float)
    assert np.array_equal(read[0], c) and np.array_equal(read[1], c)  # inside: c
    assert not (read[2] == c).any() and not (read[3] == c).any()  # just beyond: not
    with pytest.raises(ValueError, match="expected one of"):
        format_named("float8")


@pytest.mark.parametrize("mode", ["full", "fast"])
@pytest.mark.parametrize("read", list(READS))
def test_x_read_partly_in_float16_or_bfloat16(read, mode):
    """A narrow part beside a float64 one (``model(x.half()) + 1e-3·|x|²``): found by
    its jumps at the format's cell edges, checked on that grid. Every right rule failed
    before; float16's wrong rules are found at their entry."""
    narrow = _read_narrow(READS[read], np.sin)
    body, rule = (lambda x: narrow(x) + x**2), (lambda x: np.cos(x) + 2 * x)
    for seed in range(2):
        x = np.random.default_rng(seed).standard_normal(8)
        r = gx.check_grads(_diagonal(body, rule), x, mode=mode, rng=seed)
        assert r.outcome is not gx.Outcome.FAILED, str(r)
        assert any(f"reads x partly through {read}" in n for n in r.notes), r.notes
        if read == "float16":
            bad = _diagonal(body, lambda v: _with(rule(v), 5, 1.01 * rule(v)[5]))
            r = gx.check_grads(bad, x, mode=mode, rng=seed)
            assert {(e.row, e.col) for e in r.mismatches} == {(5, 5)}, str(r)


def test_float64_round_off_of_a_small_output_is_no_float32_reading():
    """tanh(x16 @ w): a float64 w moved by a few ulps moves an output of 0.04, a small
    difference of terms ~2, by 128 of its own ulps, at float32's cell edges as
    anywhere. That is round-off, not a jump of a float32 reading (2^-24 relative for a
    float32 part), and x is read in float16: read in float32, steps on float32's grid
    made 22 entries look flat and failed them."""
    torch = pytest.importorskip("torch")
    for seed in range(4):
        gen = torch.Generator().manual_seed(10 * seed)
        x, w = (
            torch.randn(3, 5, dtype=torch.float64, generator=gen),
            torch.randn(
                5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(10 * seed + 1)
            ),
        )
        x0 = np.concatenate([x.numpy().ravel(), w.numpy().ravel()])

        def f(X):
            X = torch.from_numpy(np.atleast_2d(X))
            xs, ws = X[:, :15].reshape(-1, 3, 5), X[:, 15:].reshape(-1, 5, 4)
            return torch.tanh(xs.half().double() @ ws).reshape(len(X), -1).numpy()

        reading, _ = read_format(f, x0, np.full(x0.size, 2.0**-52))
        assert (reading.format, reading.only) == ("float16", False), seed
