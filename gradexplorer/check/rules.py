"""The rules under test as numpy functions, and whether they are linear.

A VJP must be linear in its cotangent and a JVP in its tangent; unit
cotangents alone cannot tell. A rule that disagrees with itself only a
little is an adaptive computation (an ODE adjoint, a solver), judged to the
precision it shows."""

from __future__ import annotations

import numpy as onp

from ..fd.formats import Format, values_format
from ..fd.noise import NoiseModel
from .problem import Problem
from .progress import checkpoint

#: Round-off allowed when comparing a rule with itself (linearity), in ulps.
LINEARITY_ULPS = 1024.0


def flat(grads: list, backend) -> onp.ndarray:
    """Cotangents (the backend's arrays, one per leaf) as one float vector."""
    return onp.concatenate(
        [onp.ravel(onp.asarray(backend.to_numpy(g), dtype=float)) for g in grads]
    )


def vjp_rule(tr, backend, y_dtype):
    """The VJP as a numpy function of a cotangent vector."""
    return lambda u: flat(tr.backward(backend.to_array(onp.asarray(u, y_dtype))), backend)


def rows_rule(tr, backend, y_dtype, cotangents=None):
    """The VJP of a stack of cotangents (rows), where the trace can run them
    together; None where it runs one backward pass per row. ``cotangents``
    makes the backend's array of the stack (default: ``y_dtype`` numpy, as is)."""
    if not hasattr(tr, "backward_rows"):
        return None
    if cotangents is None:

        def cotangents(U):
            return backend.to_array(onp.asarray(U, y_dtype))

    def rule(U):
        grads = tr.backward_rows(cotangents(U))
        k = U.shape[0]
        return onp.concatenate(
            [onp.asarray(backend.to_numpy(g), dtype=float).reshape(k, -1) for g in grads], axis=1
        )

    return rule


def jvp_rule(p: Problem):
    """The JVP (with VJP-derived tangents where rules are missing) as a numpy function."""

    def rule(d):
        _, jv, _ = p.backend.jvp(p.F, p.vs, p.split(d), fallback=True)
        return onp.ravel(onp.asarray(p.backend.to_numpy(jv), dtype=complex))

    return rule


#: Rows of the Jacobian built together between two checkpoints.
ROWS_AT_ONCE = 128


def reverse_rows(rule, m: int, stacked=None) -> onp.ndarray:
    """The Jacobian's rows from unit cotangents: ``stacked`` (see :func:`rows_rule`)
    takes them a block at a time, ``rule`` one at a time."""
    if stacked is not None:
        blocks = []
        for start in range(0, m, ROWS_AT_ONCE):
            checkpoint()
            stop = min(m, start + ROWS_AT_ONCE)
            blocks.append(stacked(onp.eye(stop - start, m, start)))
        return onp.concatenate(blocks).reshape(m, -1)
    rows = []
    basis = onp.zeros(m)
    for i in range(m):
        checkpoint()  # a 1024-row Jacobian is ~0.2-0.4 s of backward passes and no f
        basis[i] = 1
        rows.append(rule(basis))
        basis[i] = 0
    return onp.array(rows).reshape(m, -1)


#: A rule inconsistent with itself by less than this (relative) is an adaptive
#: or iterative computation with that precision, not a rule with a missing g.
RULE_NOISE_MAX = 1e-4
#: The share of coordinates in which an adaptive rule's inexactness must show.
BROAD = 0.25


def linearity_gap(rule, size_in: int, size_out: int, gen, dtype, eps):
    """Per output coordinate of ``rule``, ``|rule(a·u + b·v) - a·rule(u) - b·rule(v)|``
    divided by its round-off allowance (> 1: the rule is not linear there).

    Returns ``(ratio, relative_gap, ((u, rule(u)), (v, rule(v))))`` so callers can
    compare the rule at both probes with finite differences too; ``relative_gap``
    is the gap over the values' size. Every coordinate of ``v`` has the sign
    opposite to ``u``'s: a rule that treats its argument's sign differently
    (``g.clamp(min=0)``, ``abs(g)``) is right at one of them and wrong at the
    other, also for a scalar cotangent, which one random draw would leave to chance.

    A linear map sends 0 to exactly 0, an adaptive solver's too (an ODE adjoint
    or a conjugate gradient started from zero stays there): where ``rule(0)`` is
    a finite nonzero, the rule adds a term not multiplied by its argument, and both
    ratios are infinite there (never the small, broad gap of a solver's tolerance).
    """
    u = gen.standard_normal(size_in)
    v = (-onp.sign(u) * onp.abs(gen.standard_normal(size_in))).astype(dtype)
    u = u.astype(dtype)
    a, b = 0.75, -1.25  # exact in binary: the combination adds no rounding of its own
    ru, rv, ruv = rule(u), rule(v), rule(a * u + b * v)
    at_zero = rule(onp.zeros(size_in, dtype))
    offset = onp.isfinite(at_zero) & (at_zero != 0)  # (a NaN is reported as a NaN)
    gap = onp.abs(ruv - (a * ru + b * rv))
    size = onp.abs(a * ru) + onp.abs(b * rv) + onp.abs(ruv)
    allowed = LINEARITY_ULPS * eps * size
    with onp.errstate(invalid="ignore", divide="ignore"):
        ratio = onp.where(allowed > 0, gap / allowed, onp.where(gap > 0, onp.inf, 0.0))
        rel = onp.where(size > 0, gap / size, onp.where(gap > 0, onp.inf, 0.0))
    probes = ((u, ru), (v, rv))
    return onp.where(offset, onp.inf, ratio), onp.where(offset, onp.inf, rel), probes


def at_worst_probe(judged: list[tuple]) -> tuple:
    """Per coordinate, the fields of the probe judged worst: ``judged`` holds one
    tuple of equally long arrays per probe, its first the violations (NaN: not
    judged, the lowest).

    >>> v, a = at_worst_probe([(onp.array([0.5, 3.0]), onp.array([1, 2])),
    ...                        (onp.array([2.0, onp.nan]), onp.array([7, 8]))])
    >>> v.tolist(), a.tolist()
    ([2.0, 3.0], [7, 2])
    """
    stacked = [onp.stack(c) for c in zip(*judged)]
    worst = onp.argmax(onp.nan_to_num(stacked[0], nan=-1.0), axis=0)
    return tuple(c[worst, onp.arange(c.shape[1])] for c in stacked)


def nonlinearity_explains(ru, combined, num) -> onp.ndarray:
    """Where a rule's value at a random seed ``ru`` differs from the combination of its
    unit-seed values ``combined`` by a material part (a quarter or more) of its gap to
    the finite differences ``num``: there its nonlinearity is what is wrong. Where the
    two agree (a cast's backward rounds the seed: they differ by that rounding) and
    both miss the differences, the unit-seed entries are wrong, and are reported so.

    >>> nonlinearity_explains(onp.array([1.0, 1.0]), onp.array([0.2, 1.0 + 1e-7]),
    ...                       onp.array([0.2, 1.5])).tolist()
    [True, False]
    """
    with onp.errstate(invalid="ignore"):
        return onp.abs(ru - combined) >= 0.25 * onp.abs(ru - num)


def rule_precision(ratio: onp.ndarray, rel: onp.ndarray, fmt: Format | None = None) -> float:
    """The relative tolerance a rule earns by disagreeing with itself: 0 for an
    exact rule; for one visibly above round-off yet small (an adaptive backward
    pass, an iterative solver), whose systematic error (a solver's tolerance)
    is far larger than its scatter, ``min(1e3·scatter, sqrt(scatter))``.

    An adaptive computation is inexact everywhere; round-off in an entry that
    is a small difference of large terms shows in a few coordinates only. So
    the gap must be visible in at least :data:`BROAD` of the coordinates the
    rule produces.

    A rule that computes in a narrow format ``fmt`` (:func:`rule_format`) is as
    exact as that format: :data:`NARROW_RULE_ULPS` of its eps, or the scatter it
    shows where that is larger and still a rounding of its size (a larger gap is no
    rounding, and is judged as any other)."""
    visible = ratio > 1
    produced = onp.isfinite(rel) & (rel > 0)
    if fmt is not None:
        floor = NARROW_RULE_ULPS * fmt.eps
        scatter = float(onp.max(rel[visible & onp.isfinite(rel)], initial=0.0))
        return max(floor, scatter) if scatter <= NARROW_SCATTER_ULPS * fmt.eps else floor
    if not visible.any() or visible.sum() < BROAD * max(int(produced.sum()), 1):
        return 0.0
    scatter = float(onp.max(rel[visible]))
    if scatter > RULE_NOISE_MAX:
        return 0.0
    return min(1e3 * scatter, float(onp.sqrt(scatter)))


#: A rule computing in a narrow format is judged to at least this many of its eps
#: (its value rounded to it, after a few operations in it) ...
NARROW_RULE_ULPS = 4.0
#: ... and its self-disagreement up to this many of its eps is its rounding.
NARROW_SCATTER_ULPS = 16.0


def rule_format(probes: tuple, eps: onp.ndarray | float) -> Format | None:
    """The narrow format a rule computes in, from its values at random arguments
    (``probes``: ``(argument, value)`` pairs of :func:`linearity_gap`): the coarsest
    of float32, float16 and bfloat16 holding every finite nonzero value, where it is
    coarser than the precision ``eps`` the rule is judged in and some value fills one
    of its last three bits (None: none is). A rule computed in float64 gives such
    values by chance once in 2^29 per value.

    >>> u = onp.array([0.3, -1.1])
    >>> rule_format(((u, onp.array([0.5, -1.0078125])),), 2.0**-52).name
    'bfloat16'
    >>> [rule_format(((u, r),), 2.0**-52) for r in (u * 3.1, onp.array([1.0, -3.0]))]
    [None, None]
    """
    parts = [onp.ravel(onp.asarray(r)) for _, r in probes]
    vals = onp.concatenate([onp.concatenate([r.real, r.imag]) for r in parts]).astype(float)
    return values_format(vals, float(onp.max(eps)))


def solver_slack(noise: NoiseModel) -> onp.ndarray:
    """sqrt of each output's relative unevenness, where f is measurably uneven."""
    from ..fd.noise import NOISY

    with onp.errstate(all="ignore"):
        rho = noise.coarse / onp.maximum(noise.scale, onp.finfo(float).tiny)
    uneven = noise.coarse > NOISY * onp.maximum(noise.floor, onp.finfo(float).tiny)
    return onp.where(uneven & onp.isfinite(rho), onp.sqrt(rho), 0.0)


def scale_allowance(precision: float | onp.ndarray, A, N) -> onp.ndarray | float:
    """For an inexact rule: its precision (one, or one per column) relative to the
    size of the entries around each one (the largest of its row and column), since a
    solver's error is relative to the whole solution, not to each tiny sensitivity."""
    if not onp.any(precision):
        return 0.0
    with onp.errstate(invalid="ignore"):
        big = onp.fmax(
            onp.abs(onp.where(onp.isfinite(A), A, 0.0)), onp.abs(onp.where(onp.isfinite(N), N, 0.0))
        )
    return precision * onp.maximum(big.max(axis=1, keepdims=True), big.max(axis=0, keepdims=True))


#: Random tangents through which forward mode must reproduce the reverse-mode
#: Jacobian before the latter stands for it.
AGREEMENT_PROBES = 2


def forward_columns(
    p: Problem, A: onp.ndarray | None = None, gen=None, eps: onp.ndarray | None = None
) -> tuple[onp.ndarray | None, list[str], str | None, int]:
    """The forward-mode Jacobian (m, n), the operations whose tangents came
    from their VJPs, a note when forward mode could not run at all, and the
    number of forward passes run.

    Given the reverse-mode Jacobian ``A`` (with a generator and the per-entry
    machine epsilon ``eps``), forward mode first runs along a few random
    tangents d. Where J_fwd·d equals A·d to round-off for each, J_fwd is A to
    round-off: an entry of J_fwd that differs from A by more than round-off
    shows in (J_fwd - A)·d unless random weights cancel it exactly, so A is
    returned after :data:`AGREEMENT_PROBES` JVPs instead of n. Any doubt (a
    larger gap, an imaginary tangent, non-finite values) runs the n columns.

    >>> import autograd.numpy as anp
    >>> from gradexplorer.check.problem import build_problem
    >>> p = build_problem(anp.sin, (onp.ones(3),), {}, 0)
    >>> A = onp.diag(onp.cos(onp.ones(3)))
    >>> fwd, _, _, passes = forward_columns(p, A, onp.random.default_rng(0), p.eps_matrix())
    >>> bool(onp.array_equal(fwd, A)), passes
    (True, 2)
    >>> fwd, _, _, passes = forward_columns(p, 1.01 * A, onp.random.default_rng(0), p.eps_matrix())
    >>> bool(onp.allclose(fwd, A)), passes
    (True, 4)
    """
    n, m = p.n, p.m
    used: list[str] = []
    passes = 0
    if A is not None and gen is not None and eps is not None:
        try:
            passes = _forward_agrees(p, A, gen, eps, used)
            if passes > 0:
                return onp.array(A, dtype=float), used, None, passes
            passes = -passes
        except NotImplementedError as exc:
            return None, used, f"forward mode not checked: {exc}", passes
    cols = onp.zeros((m, n), complex)
    basis = onp.zeros(n)
    try:
        for c in range(n):
            basis[c] = 1
            _, jv, ops = p.backend.jvp(p.F, p.vs, p.split(basis), fallback=True)
            # a real output's tangent must be real: keep any imaginary part to judge it
            cols[:, c] = onp.ravel(onp.asarray(p.backend.to_numpy(jv), dtype=complex))
            used.extend(o for o in ops if o not in used)
            basis[c] = 0
    except NotImplementedError as exc:
        return None, used, f"forward mode not checked: {exc}", passes
    if not onp.any(cols.imag):
        cols = cols.real.copy()
    return cols, used, None, passes + n


def _forward_agrees(p: Problem, A: onp.ndarray, gen, eps: onp.ndarray, used: list[str]) -> int:
    """Does forward mode give A·d, to round-off, along random tangents d? The
    passes run: positive when it does, negative when it does not."""
    if onp.iscomplexobj(A) or not onp.all(onp.isfinite(A)):
        return 0
    row_eps = eps.max(axis=1)
    for k in range(1, AGREEMENT_PROBES + 1):
        d = gen.standard_normal(p.n)
        _, jv, ops = p.backend.jvp(p.F, p.vs, p.split(d), fallback=True)
        used.extend(o for o in ops if o not in used)
        jd = onp.ravel(onp.asarray(p.backend.to_numpy(jv), dtype=complex))
        if jd.shape != (p.m,) or onp.any(jd.imag) or not onp.all(onp.isfinite(jd)):
            return -k
        with onp.errstate(all="ignore"):
            ad = A @ d
            allowed = LINEARITY_ULPS * row_eps * (onp.abs(A) @ onp.abs(d) + onp.abs(jd.real))
        if onp.any(onp.abs(jd.real - ad) > allowed):
            return -k
    return AGREEMENT_PROBES
