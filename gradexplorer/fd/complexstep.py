"""The complex step, ``Im f(x + ih·e_j) / h``: exact to round-off where it applies.

It applies to real inputs, real outputs and *complex-safe* code, code that
carries an imaginary perturbation through analytically. Nothing in f's
signature says whether it is: ``abs``, ``real``, ``angle`` or a cast to float
drop the perturbation, ``conj`` flips it, and the derivative comes out wrong
without an error. So the columns are cross-checked once against ordinary
finite differences along a random direction (:func:`verify_complex_step`);
a disagreement beyond the finite differences' own error means f is not
complex-safe, and says so.

The real part of ``f(x + ih·e_j)`` is not compared with ``f(x)``. It is
computed in complex128 (even for a float32 leaf, whose own evaluation rounds
differently) and moves by ``h²·f''/2`` for a larger step, while a dropped
perturbation (abs, real) leaves it as it was: that comparison refused good
functions and let bad ones through.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as onp

from ..core.tree import flatten
from ..errors import ComplexStepError
from .directional import directional_derivatives, resolution_floor
from .noise import probe_noise
from .realmap import RealMap
from .steps import default_step

__all__ = ["complex_step_derivatives", "verify_complex_step", "complex_step_jacobian"]

#: Steps up to this (relative to the coordinate) leave a truncation error
#: ``(h/L)²/6`` below round-off for anything varying on scales L above 1e-4 of
#: the coordinate; larger steps (a user's) get a second, halved step.
TINY_STEP = 1e-16
#: Round-off of a complex-step derivative, in ulps (as for an AD derivative).
ROUNDOFF_ULPS = 4.0
#: The checker's rule (gradexplorer.check.judging), repeated: fd/ sits below check/.
FD_SAFETY, RTOL_ULPS = 2.0, 256.0

_ADVICE = "Use method='richardson' (or 'central') instead."
_CULPRITS = "abs, real, imag, angle, conj, a cast to float, np.asarray(..., dtype=float)"


def complex_step_derivatives(
    gmap: RealMap,
    x0: onp.ndarray,
    y0: onp.ndarray,
    steps: onp.ndarray,
    columns: Any = None,
    *,
    refine: bool = True,
) -> tuple[onp.ndarray, onp.ndarray, int]:
    """Complex-step columns ``(J (m, k), E (m, k), nfev)``.

    Each column j is ``Im f(x + ih_j·e_j) / h_j``, evaluated in complex128.
    With ``refine``, a step too large to be exact (above :data:`TINY_STEP`
    relative to its coordinate) is repeated at ``h/2``: the two give the
    truncation error and a Richardson-extrapolated value. Raises
    :class:`~gradexplorer.errors.ComplexStepError` where the complex step
    cannot apply (complex sides; f fails on complex input or returns a real
    output). It does not check that f is complex-safe: see
    :func:`verify_complex_step`.
    """
    refuse_complex_sides(gmap)
    cols = list(range(x0.size)) if columns is None else [int(c) for c in columns]
    J, err = _columns(gmap, x0, y0, steps, cols)
    nfev = len(cols)
    if refine and cols:
        scale = default_step(x0, "complex_step") / 1e-20  # each coordinate's magnitude
        big = [t for t, j in enumerate(cols) if steps[j] > TINY_STEP * scale[j]]
        if big:
            half, half_err = _columns(gmap, x0, y0, steps / 2, [cols[t] for t in big])
            nfev += len(big)
            full = J[:, big]
            # the truncation error is h²f'''/6 + O(h⁴): 4x smaller at h/2; the gap
            # bounds the extrapolated value's error with a margin (O(h⁴) is left)
            J[:, big] = (4 * half - full) / 3
            err[:, big] = onp.abs(half - full) + 2 * onp.maximum(half_err, err[:, big])
    return J, resolution_floor(J, err), nfev


def refuse_complex_sides(gmap: RealMap) -> None:
    """Raise :class:`ComplexStepError` for a complex input or output leaf."""
    for s in gmap.specs:
        if s.complex:
            raise ComplexStepError(
                f"method='complex_step' needs real inputs: it perturbs each input along the "
                f"imaginary axis, but {s.name} is complex ({s.dtype}). {_ADVICE}",
                f"f takes complex input ({s.name})",
            )
    for s in gmap.layout.leaves:
        if s.complex:
            raise ComplexStepError(
                f"method='complex_step' needs real outputs: it reads each derivative from the "
                f"imaginary part of f's output, but {s.name} is complex ({s.dtype}). "
                "Use method='richardson'.",
                f"f returns complex values ({s.name})",
            )


def _columns(gmap: RealMap, x0, y0, steps, cols) -> tuple[onp.ndarray, onp.ndarray]:
    """Columns ``Im f(x + ih_j·e_j) / h_j`` and their round-off errors."""
    out = onp.zeros((y0.size, len(cols)))
    err = onp.zeros((y0.size, len(cols)))
    fi = onp.finfo(float)
    for t, j in enumerate(cols):
        leaves = []
        for s, a, b in zip(gmap.specs, gmap.bounds[:-1], gmap.bounds[1:]):
            seg = x0[a:b].astype(complex)
            if a <= j < b:
                seg[j - a] += 1j * steps[j]
            leaves.append(seg.reshape(s.shape) if s.shape else seg[0])
        yv = _evaluate(gmap, leaves, _col_label(gmap, j))
        if yv.size != y0.size:
            raise ComplexStepError(
                f"method='complex_step': f's output changed size on complex input ({yv.size} "
                f"values, {y0.size} on real input). {_ADVICE}",
                "f's output changes shape on complex input",
            )
        out[:, t] = yv.imag / steps[j]
        # Im f is h·f' rounded: a few ulps of it, and never finer than the subnormal
        # grid where h·f' underflows (f' ~ 1e-300 at h = 1e-20 keeps ~4 digits)
        with onp.errstate(all="ignore"):
            im_ulp = onp.maximum(fi.eps * onp.abs(yv.imag), fi.smallest_subnormal)
            err[:, t] = ROUNDOFF_ULPS * im_ulp / steps[j]
    return out, err


def _col_label(gmap: RealMap, j: int) -> str:
    b = int(onp.searchsorted(gmap.bounds, j, side="right") - 1)
    return gmap.specs[b].label(j - int(gmap.bounds[b]))


def _evaluate(gmap: RealMap, leaves: list, label: str) -> onp.ndarray:
    """f's float outputs at a complex point, concatenated; refusals as ComplexStepError."""
    try:
        with onp.errstate(all="ignore"), warnings.catch_warnings():
            # a cast of a complex array to float warns (ComplexWarning): the real
            # output that results is the refusal below, with advice
            warnings.simplefilter("ignore")
            y = gmap.call_leaves(leaves)
    except Exception as exc:
        text = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        raise ComplexStepError(
            f"method='complex_step' evaluates f at complex points x + ih·e_j, and f raised "
            f"{text} there (perturbing {label}): it does not accept complex input (math.* "
            f"functions, float(), comparisons, an AD system or layer without complex "
            f"support). {_ADVICE}",
            f"f fails on complex input ({text[:100]})",
        ) from exc
    ys, _ = flatten(y)
    parts = [onp.ravel(onp.asarray(v)) for v, sp in zip(ys, gmap.layout.specs) if sp is not None]
    yv = onp.concatenate(parts) if parts else onp.zeros(0)
    if parts and not onp.iscomplexobj(yv):
        raise ComplexStepError(
            f"method='complex_step' needs f to be complex-safe: it evaluates f at x + ih·e_j "
            f"and reads the derivative from the imaginary part of the output, but perturbing "
            f"{label} gave a real output: f dropped the imaginary part ({_CULPRITS}). "
            f"{_ADVICE}",
            "f is not complex-safe: its output is real for complex input (the imaginary "
            "part is dropped)",
        )
    return yv.astype(complex)


def verify_complex_step(
    gmap: RealMap,
    evaluate: Callable[[onp.ndarray], onp.ndarray],
    x0: onp.ndarray,
    y0: onp.ndarray,
    J: onp.ndarray,
    E: onp.ndarray,
    fd_steps: onp.ndarray,
    spacing: onp.ndarray,
    *,
    out_eps: Any = 0.0,
    coord_eps: onp.ndarray | None = None,
    rng: Any = 0,
    columns: Any = None,
) -> int:
    """Cross-check complex-step columns against finite differences; return nfev.

    ``J d`` for a random sign direction d (each coordinate scaled by its
    Richardson step ``fd_steps``) must agree with Richardson differences along
    d, judged by the checker's own rule (twice both errors plus 256 ulps).
    ``columns`` says which coordinates J's columns are (default: all); d
    moves only those.
    Raises :class:`~gradexplorer.errors.ComplexStepError` (f is not
    complex-safe) where it does not. Outputs the finite differences cannot
    resolve are not judged: the cross-check never refuses on noise.
    """
    if x0.size == 0 or y0.size == 0:
        return 0
    h = float(onp.max(fd_steps))
    if not (onp.isfinite(h) and h > 0):
        return 0
    gen = rng if isinstance(rng, onp.random.Generator) else onp.random.default_rng(rng)
    cols = onp.arange(x0.size) if columns is None else onp.asarray(columns, dtype=int)
    vec = onp.zeros((1, x0.size))
    vec[0, cols] = gen.choice([-1.0, 1.0], size=cols.size) * fd_steps[cols] / h
    noise, n1 = probe_noise(evaluate, x0, y0, fd_steps, spacing, out_eps, rng=gen, directions=1)
    d = directional_derivatives(
        evaluate,
        x0,
        y0,
        noise,
        onp.array([h]),
        vectors=vec,
        spacing=spacing,
        coord_eps=coord_eps,
    )
    v = d.vectors[0] if d.vectors is not None else vec[0]
    fd, fd_err = d.est[0], d.err[0]
    with onp.errstate(all="ignore"):
        cs = J @ v[cols]
        cs_err = onp.abs(E) @ onp.abs(v[cols])
        gap = onp.abs(cs - fd)
        allowed = FD_SAFETY * (fd_err + cs_err) + RTOL_ULPS * onp.finfo(float).eps * onp.maximum(
            onp.abs(cs), onp.abs(fd)
        )
        ratio = gap / allowed
    bad = onp.isfinite(fd_err) & onp.isfinite(fd) & onp.isfinite(cs) & (ratio > 1)
    if bad.any():
        i = int(onp.flatnonzero(bad)[onp.argmax(ratio[bad])])
        row = _row_label(gmap, i)
        raise ComplexStepError(
            "method='complex_step' needs f to be complex-safe, and f is not: along a random "
            f"direction d, the complex step gives (J·d) = {cs[i]:.6g} for {row}, finite "
            f"differences give {fd[i]:.6g} ± {fd_err[i]:.2g}. An operation in f bends or drops "
            f"the imaginary perturbation ({_CULPRITS}, sign, maximum/minimum/where on "
            f"complex values, slogdet, ...). {_ADVICE} "
            "gx.complex_step_applicability(f, *args) names the operation where it can.",
            f"f is not complex-safe: its complex-step derivative disagrees with finite "
            f"differences at {row}",
        )
    return n1 + d.nfev


def _row_label(gmap: RealMap, i: int) -> str:
    for s in gmap.layout.leaves:
        if i < s.real_size:
            return s.label(i)
        i -= s.real_size
    return f"output {i}"


def complex_step_jacobian(
    gmap: RealMap,
    evaluate: Callable[[onp.ndarray], onp.ndarray],
    x0: onp.ndarray,
    y0: onp.ndarray,
    steps: onp.ndarray,
    fd_steps: onp.ndarray,
    spacing: onp.ndarray,
    *,
    out_eps: Any = 0.0,
    coord_eps: onp.ndarray | None = None,
    rng: Any = 0,
) -> tuple[onp.ndarray, onp.ndarray, int]:
    """Every complex-step column, cross-checked (:func:`verify_complex_step`)."""
    J, E, nfev = complex_step_derivatives(gmap, x0, y0, steps)
    nfev += verify_complex_step(
        gmap,
        evaluate,
        x0,
        y0,
        J,
        E,
        fd_steps,
        spacing,
        out_eps=out_eps,
        coord_eps=coord_eps,
        rng=rng,
    )
    return J, E, nfev
