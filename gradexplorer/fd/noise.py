"""How noisy is f itself? A per-output noise level, measured (ECnoise).

Round-off in f is rarely one ulp of its output: cancellation (intermediates far
larger than the result), iterative solvers that stop at a tolerance and
adaptive ODE integrators all make f noisier than ``eps·|f|``. Finite
differences divide that noise by the step, so an error estimate that assumes
``eps·|f|`` is confidently wrong. Following Moré and Wild ("Estimating
computational noise", SIAM J. Sci. Comput. 2011), f is sampled at a few
closely spaced points along random directions; high-order differences of the
samples cancel the smooth part and leave the noise, whose standard deviation
they estimate.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> noisy = lambda X: np.sin(X) + 1e-9 * rng.standard_normal(X.shape)
>>> sigma, nfev = estimate_noise(noisy, np.array([0.3]), np.array([1e-3]), rng=0)
>>> bool(3e-10 < sigma[0] < 3e-9), nfev
(True, 16)
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as onp

from .formats import FLOAT32, values_format
from .fusing import fusable
from .narrow import output_eps, reads_float32
from .quantum import output_quantum

__all__ = ["estimate_noise", "NOISE_POINTS", "NoiseModel", "probe_noise"]

#: Samples per direction (the centre included): differences up to order 6.
NOISE_POINTS = 9
_GAMMA = {k: math.factorial(k) ** 2 / math.factorial(2 * k) for k in range(1, NOISE_POINTS)}


#: The difference orders σ is read from: order 3 and up (f's smooth part cancels), at
#: most 6 (9 points allow 8, but the last orders leave one or two differences a line,
#: whose σ estimates fall far below σ now and then).
LOWEST_ORDER, HIGHEST_ORDER = 3, 6
#: Each line's spacing is this many times the last one's. Rounding along equally spaced
#: points is not independent: the rounding error of ``c·(x + k·s)`` is ``frac(a + k·β)``
#: ulps, a straight line over the nine points (invisible to differences) wherever β, the
#: spacing's fraction of an ulp, is within ~1/8 of an integer. Lines that share their
#: spacing share β, and every line of an output that depends on one input holds the same
#: points: f's noise read ~1e6 times too low in 1 probe of 20 (sin(3e5·x)). Narrower, not
#: wider: a wider line holds more of f's smooth part (its 6th differences grow as s^6)
#: and reads noise high where the spacing barely resolves f (sin(1e9·x) at the finest).
LINE_SPREAD = 0.7863
#: An order's σ this many times the next order's still holds f's smooth part: read on.
STILL_FALLING = 2.0
#: Differences spanning the centre this many times above both half-lines': a kink there.
CENTRE_KINK = 8.0


@fusable()
def _sigma_from_lines(F, xp=onp):
    """Noise std per output from samples ``F`` shaped (lines, points, m), the lines
    through one centre.

    For each order k the k-th differences of pure noise of std σ have variance
    ``C(2k, k)·σ²``; σ_k estimates σ from them, pooled over the lines. Low
    orders still carry the smooth part; once the differences are noise, σ_k
    stops falling: the estimate is the first σ_k from order 3 that is not
    :data:`STILL_FALLING` times the next. Not the smallest σ_k: with a few
    differences per order, the smallest of several estimates falls far below σ
    now and then, and an output whose noise is read 10x too small makes finite
    differences look inconsistent (or wrong) where they are not.

    A kink or a tie *at the point* (the centre) is not noise, yet it puts every
    high-order difference that spans the centre far above the noise: each
    half-line (the centre and four points one side) is smooth there, so where
    both halves are :data:`CENTRE_KINK` times quieter, theirs is taken. (Only
    there: with two to four differences an order, the halves read σ 4x too low
    once in 500 outputs; pure noise passes for a kink once in 20,000.) A kink
    elsewhere on a line spoils one half, which then keeps the full value.
    """
    half = F.shape[1] // 2
    full = _noise_floor(F, xp)
    sides = xp.fmax(_noise_floor(F[:, : half + 1], xp), _noise_floor(F[:, half:], xp))
    return xp.where(full > CENTRE_KINK * sides, sides, full)


def _noise_floor(F, xp=onp):
    """σ at the first order (from :data:`LOWEST_ORDER`) where σ_k stopped falling,
    pooled over the lines whose samples are all finite (NaN where none is)."""
    finite = xp.all(xp.isfinite(F), axis=1)  # (lines, m)
    F = xp.where(finite[:, None, :], F, 0.0)
    lines = xp.sum(finite * 1.0, axis=0)
    sigma = falling = None
    D = F
    # at least two differences a line at the highest order: one alone reads ~0 now and
    # then (a half-line's fourth difference of rounding that repeats every 4 samples)
    for k in range(1, min(HIGHEST_ORDER, F.shape[1] - 2) + 1):
        D = xp.diff(D, axis=1)
        if k < LOWEST_ORDER:
            continue
        s_k = xp.sqrt(_GAMMA[k] * xp.sum(D * D, axis=(0, 1)) / (lines * D.shape[1]))
        if sigma is None:
            sigma, falling = s_k, xp.isfinite(s_k)
            continue
        falling = falling & (sigma > STILL_FALLING * s_k)
        sigma = xp.where(falling, s_k, sigma)
    return xp.where(lines > 0, sigma, onp.nan)


def estimate_noise(
    evaluate: Callable[[onp.ndarray], onp.ndarray],
    x0: onp.ndarray,
    spacing: onp.ndarray,
    *,
    directions: int = 2,
    rng: int | onp.random.Generator | None = 0,
    y0: onp.ndarray | None = None,
    magnitude: bool = False,
) -> tuple[onp.ndarray, int]:
    """Per-output noise level σ of f near ``x0`` and the evaluations it took.

    Parameters
    ----------
    evaluate : callable
        Maps points ``(k, N)`` to values ``(k, m)``.
    x0 : ndarray
        The point ``(N,)``.
    spacing : ndarray
        Per-coordinate sample spacing ``(N,)``: small enough that f's smooth
        part is negligible in 4th–6th differences, large enough to stay clear
        of the inputs' own rounding.
    directions : int
        Random sign directions sampled (their differences pooled per output).

    Returns
    -------
    (sigma, nfev)
        ``sigma[i]`` is the estimated standard deviation of output i's noise
        (NaN where samples were not finite). With ``magnitude``, a third
        result: the largest ``|f_i|`` among the samples.
    """
    gen = rng if isinstance(rng, onp.random.Generator) else onp.random.default_rng(rng)
    if y0 is None:
        y0 = onp.asarray(evaluate(x0[None]), dtype=float)[0]
    sigma, vals = _probe_lines(evaluate, x0, spacing, directions, gen, y0)
    if magnitude:
        return sigma, vals.shape[0], onp.asarray(_magnitude(vals, y0))
    return sigma, vals.shape[0]


def _probe_lines(evaluate, x0, spacing, directions, gen, y0, grid=None):
    """σ per output (pooled over the lines, on the host) and the samples,
    ``(points, m)``, where the evaluator keeps them. ``grid``: per coordinate, the
    spacing its offsets are whole multiples of (0: any)."""
    from .evaluation import as_evaluator

    ev = as_evaluator(evaluate)
    xp = ev.xp
    half = NOISE_POINTS // 2
    t = onp.array([k - half for k in range(NOISE_POINTS) if k != half], dtype=float)
    y0_x = y0 if xp is onp else ev.to_device(y0)
    blocks, lines = [], []
    for d in range(directions):
        p = gen.choice([-1.0, 1.0], size=x0.size) * spacing * LINE_SPREAD**d
        if grid is not None:
            p = onp.where(grid > 0, onp.round(p / onp.where(grid > 0, grid, 1.0)) * grid, p)
        block = xp.reshape(ev.line(x0, p, t), (t.size, -1))
        blocks.append(block)
        lines.append(xp.concatenate([block[:half], y0_x[None, :], block[half:]], axis=0))
    with onp.errstate(all="ignore") if xp is onp else contextlib.nullcontext():
        sigma = _sigma_from_lines(xp.stack(lines), xp)
    vals = xp.concatenate(blocks, axis=0)
    return (sigma if xp is onp else ev.to_host(sigma)), vals


@fusable()
def _moved(vals, y0, xp=onp):
    """Per output, whether any sample differs from f at the point."""
    return xp.any(vals != y0[None, :], axis=0)


@fusable()
def _magnitude(vals, y0, xp=onp):
    """The largest |f_i| among the samples and at the point (in ``xp``)."""
    quiet = onp.errstate(all="ignore") if xp is onp else contextlib.nullcontext()
    with quiet:
        mag = xp.max(xp.where(xp.isfinite(vals), xp.abs(vals), 0.0), axis=0)
        return xp.fmax(mag, xp.where(xp.isfinite(y0), xp.abs(y0), 0.0))


#: Probe spacings relative to the FD base step: coarse (what a stencil sees),
#: fine (what is left once the step resolves f's structure) and finest (for an
#: oscillation too fast for the fine probe): each probed only where the one
#: before it found f noisy.
COARSE, FINE, FINEST = 2.0**-5, 2.0**-15, 2.0**-25
#: Noise this many times the output's own rounding makes f "noisy".
NOISY = 1e3
#: Coarse noise this many times the fine noise is structure, not noise.
STRUCTURE = 64.0


@dataclass(frozen=True)
class NoiseModel:
    """f's noise per output, probed at up to three spacings.

    ``coarse`` is what samples a step apart see; ``fine`` what closely spaced
    samples see (the finest scale probed); ``floor`` the rounding of the
    output itself, or the spacing of the grid it moves on (``quantum``: a
    rounding staircase, :mod:`gradexplorer.fd.quantum`). Where coarse noise
    stands far above fine noise, f has *structure* finer than the step (an
    oscillation the step aliases, or a solver's jitter): steps must shrink
    until f looks smooth, down to the scale ``depth`` says (0 coarse, 1 fine,
    2 finest). Where f is noisy (far above its rounding), its derivative is no
    better defined than f itself: ``rel`` (coarse noise over f's magnitude)
    joins each entry's error as a relative term.
    """

    coarse: onp.ndarray
    fine: onp.ndarray
    floor: onp.ndarray
    scale: onp.ndarray
    quantum: onp.ndarray | None = None
    depth: onp.ndarray | None = None

    @property
    def level0(self) -> onp.ndarray:
        return onp.fmax(onp.fmax(self.coarse, self.fine), self.floor)

    @property
    def resolved(self) -> onp.ndarray:
        return onp.fmax(self.fine, self.floor)

    @property
    def noisy(self) -> onp.ndarray:
        return self.coarse > NOISY * onp.maximum(self.floor, onp.finfo(float).tiny)

    @property
    def structured(self) -> onp.ndarray:
        return self.noisy & (self.coarse > STRUCTURE * self.resolved)

    @property
    def quantized(self) -> onp.ndarray:
        return onp.zeros(self.coarse.shape, bool) if self.quantum is None else self.quantum > 0

    @property
    def max_depth(self) -> int:
        """The finest probe scale at which a structured output looked smooth."""
        if self.depth is None or not onp.any(self.structured):
            return 0
        return int(onp.max(self.depth[self.structured], initial=0))

    @property
    def rel(self) -> onp.ndarray:
        with onp.errstate(all="ignore"):
            r = self.coarse / onp.maximum(self.scale, onp.finfo(float).tiny)
        return onp.where(self.noisy & onp.isfinite(r), r, 0.0)

    @classmethod
    def quiet(cls, m: int) -> NoiseModel:
        z = onp.zeros(m)
        return cls(z, z, z, onp.ones(m))

    def take(self, idx) -> NoiseModel:
        pick = lambda a: None if a is None else a[idx]  # noqa: E731
        return NoiseModel(
            self.coarse[idx],
            self.fine[idx],
            self.floor[idx],
            self.scale[idx],
            pick(self.quantum),
            pick(self.depth),
        )

    def with_quantum(self, quantum: onp.ndarray) -> NoiseModel:
        """This model with a (finer-measured) rounding staircase: the floor rises to it."""
        q = quantum if self.quantum is None else onp.fmax(self.quantum, quantum)
        floor = onp.fmax(self.floor, QUANTUM_STD * q)
        return NoiseModel(self.coarse, self.fine, floor, self.scale, q, self.depth)


#: The standard deviation of rounding to a grid of spacing q, over its spacing.
QUANTUM_STD = 0.3


def probe_noise(
    evaluate: Callable[[onp.ndarray], onp.ndarray],
    x0: onp.ndarray,
    y0: onp.ndarray,
    steps: onp.ndarray,
    spacing: onp.ndarray,
    out_eps,
    *,
    rng=0,
    directions: int = 2,
) -> tuple[NoiseModel, int]:
    """f's :class:`NoiseModel` near x0: probed at the coarse spacing, then finer
    where f is noisy there, and finer still where it is noisy at the fine one."""
    from .evaluation import as_evaluator

    ev = as_evaluator(evaluate)
    xp = ev.xp
    host = (lambda a: a) if xp is onp else ev.to_host  # noqa: E731
    y0_x = y0 if xp is onp else ev.to_device(y0)
    gen = rng if isinstance(rng, onp.random.Generator) else onp.random.default_rng(rng)
    out_eps = onp.asarray(out_eps, dtype=float)
    # spacings with random low bits: a power-of-two spacing would put a linear f's
    # samples on a coarse dyadic grid, which the staircase test would take for quanta
    jitter = 1.0 + 0.5 * gen.random(x0.size)

    # where x is read on a grid coarser than float32's (f reads it in float16 or
    # bfloat16), 64 of its ulps are 25-50% of x: probes a few whole ulps apart, on
    # the grid f reads, see f's own rounding rather than x's
    coarse_grid = spacing > 2 * FLOAT32.quantum(x0)
    fewest = onp.where(coarse_grid, 2.0, 64.0) * spacing

    def probe(fraction, lines=directions):
        spaced = onp.maximum(steps * fraction, fewest) * jitter
        return _probe_lines(ev, x0, spaced, lines, gen, y0, onp.where(coarse_grid, spacing, 0.0))

    def quantum(samples):
        return host(output_quantum(xp.concatenate(samples, axis=0), y0_x, out_eps, xp=xp))

    coarse, vals = probe(COARSE)
    nfev = vals.shape[0]
    samples = [vals]
    mag = host(_magnitude(vals, y0_x, xp))
    # rounding scales with |f| around the point, not at it: outputs that cross
    # zero at x are not "noisy" because y(x) happens to be 0; an output cannot
    # move by less than the smallest subnormal: below that it is flat
    with onp.errstate(all="ignore"):
        own = onp.maximum(0.3 * out_eps * mag, onp.finfo(float).smallest_subnormal)
    coarse = onp.where(onp.isfinite(coarse), coarse, 0.0)
    model = NoiseModel(coarse, coarse, own * onp.ones_like(mag), mag).with_quantum(quantum(samples))
    fine, depth = coarse.copy(), onp.zeros(coarse.shape, onp.int8)
    persistent = onp.full(coarse.shape, onp.inf)  # the lowest reading of the finer probes
    for level, fraction in ((1, FINE), (2, FINEST)):
        noisy = fine > NOISY * onp.maximum(model.floor, onp.finfo(float).tiny)
        if not noisy.any():
            break
        # a finer probe sets the noise every deeper step is judged by, and the finer one
        # that reads lowest wins: one line more makes a reading blinded on every line (see
        # LINE_SPREAD) ~10x rarer, for a few evaluations where f is noisy at all
        sigma, vals = probe(fraction, directions + 1)
        nfev += vals.shape[0]
        samples.append(vals)
        sigma = onp.where(onp.isfinite(sigma), sigma, 0.0)
        if level == 2:
            # f exactly flat across the finest probe, which the fine one saw move, and every
            # value f took on a narrower float's grid: float32 inside f, which rounds x to
            # stairs ~1e-7 wide (sin(3x)'s derivative read 0 +- 0.01 for 3). Rounding, not
            # f's shape: this reading is no calm. Stairs of f's own making (round(x, 7),
            # whose values are no float32's) stay f's shape: flat inside a stair
            # so are x's float32 stairs where f goes on in float64 (exp(x.astype(float32))):
            # flat across x's float32 cells, moving just beyond (round(x, k)'s are not)
            rounding = host(output_eps(xp.concatenate(samples, axis=0), y0_x, xp)) > 0
            moved = host(_moved(vals, y0_x, xp))
            if onp.any(noisy & ~moved & ~rounding):
                rounding |= reads_float32(ev, x0, y0)
                nfev += 4
            noisy &= moved | ~rounding
        finer = noisy & (sigma < fine)
        depth = onp.where(finer, level, depth)  # how deep f had to be probed to calm down
        fine = onp.where(finer, sigma, fine)
        persistent = onp.where(noisy, onp.fmin(persistent, sigma), persistent)
        model = model.with_quantum(quantum(samples))
    # noise every finer probe sees, a stencil a step wide sees too: a coarse reading below
    # it was aliased (an oscillation far faster than the probe's spacing whose samples all
    # fell on a slow sinusoid, ~1 coarse probe in 30 at sin(1e10·x)). Every one, not any:
    # a kink 2e-8 from x is "noise" to the fine probe alone, and no reason for steps to
    # stop shrinking short of it
    coarse = onp.where(onp.isfinite(persistent), onp.fmax(coarse, persistent), coarse)
    floor = onp.fmax(
        model.floor, _narrow_floor(xp.concatenate(samples, axis=0), y0_x, mag, xp, host)
    )
    return NoiseModel(coarse, fine, floor, mag, model.quantum, depth), nfev


def _narrow_floor(samples, y0_x, mag, xp, host) -> onp.ndarray:
    """A narrow format's rounding per output where f's outputs are its numbers returned
    wider (float32, float16 or bfloat16; else 0). Evidence from the outputs that moved,
    all of whose values are that format's (2^-29 by chance for each float64 value in
    float32's case); then an output flat across every probe, on that grid too, is flat
    on one of its stairs (tanh one ulp below 1.0, flat for steps under 0.1): its
    rounding is the format's, not its own. A flat output's values may lie on coarser
    grids by chance (1.0 is a bfloat16): none coarser than the moved outputs' counts."""
    eps = host(output_eps(samples, y0_x, xp))
    moved = host(_moved(samples, y0_x, xp))
    shown = float(onp.max(onp.where(moved, eps, 0.0), initial=0.0))
    if not shown:
        # none moved (tanh(10·x.half()) saturated, flat for steps of a few ulps): the
        # values of those on some narrow grid (not the fast check's projections), if
        # all are one format's numbers filling its last bits
        fmt = values_format(onp.asarray(host(y0_x))[eps > 0])
        shown = 0.0 if fmt is None else fmt.eps
    if not shown:
        return onp.zeros(mag.shape)
    return QUANTUM_STD * onp.fmin(eps, shown) * mag
