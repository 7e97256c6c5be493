"""The landscape of a scalar function: gradient, curvature, Newton step, Taylor models.

A teaching view, sized for a projector (every text at least 8 pt at 100 dpi).
For ``f: R^2 -> R`` the left panel is f's contours around x with the gradient
arrow, the Hessian's level ellipse (or, at a saddle, its two eigen-directions)
and the Newton step; the right panel is f along a line through x with its first-
and second-order Taylor models. ``f: R -> R`` shows the tangent and the finite
difference secants at step h beside their error against h (the step sweep's V);
``f: R^n -> R`` (n > 2) shows the slice panel alone. Everything is drawn once by
:func:`plot_landscape` and moved in place by :func:`update_landscape`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as onp
from matplotlib.figure import Figure

from ..ad import grad, hessian, hvp
from .heatmap import TICK_FONT, figure_png
from .landscape_curve import draw_curve, move_curve
from .landscape_plane import draw_plane, hessian_kind, move_plane

__all__ = ["LandscapeArtists", "plot_landscape", "update_landscape"]

TAYLOR_COLORS = ("#1b9e77", "#d95f02")  # the step sweep's forward / central colours


@dataclass
class LandscapeArtists:
    """What :func:`plot_landscape` drew, and the numbers it drew them from.

    ``kind`` is ``"plane"`` (R^2 -> R), ``"curve"`` (R -> R) or ``"slice"``
    (R^n -> R, n > 2). ``artists`` maps names (``"point"``, ``"arrow"``,
    ``"ellipse"``, ``"tangent"``, ...) to the matplotlib artists that
    :func:`update_landscape` moves; the other fields are the values drawn:
    ``hessian`` is None for a slice (only ``curvature`` = dᵀHd is computed).
    """

    fig: Any
    kind: str
    f: Callable
    x: onp.ndarray
    value: float
    gradient: onp.ndarray
    hessian: onp.ndarray | None
    direction: onp.ndarray
    curvature: float
    span: float
    box: tuple
    artists: dict = field(default_factory=dict)
    eigenvalues: onp.ndarray | None = None
    eigenvectors: onp.ndarray | None = None
    newton: onp.ndarray | None = None
    slope: float = onp.nan  # of the drawn tangent (R -> R)
    step: float = onp.nan
    forward_slope: float = onp.nan
    central_slope: float = onp.nan
    shape: tuple = ()

    def _repr_png_(self) -> bytes:
        return figure_png(self.fig)


# ---------------------------------------------------------------- f and its derivatives


def scalar_function(f: Callable, x: Any, who: str = "plot_landscape") -> tuple:
    """``(fv, v, shape)``: f as a function of the flat real vector v, checked to
    return a real scalar at x (the errors say what came and what to do)."""
    if not callable(f):
        raise TypeError(f"{who} takes a function f first; got {type(f).__name__}.")
    arr = onp.asarray(x)
    if onp.iscomplexobj(arr):
        raise TypeError(
            f"{who} draws a real function of real inputs; x is complex ({arr.dtype}). "
            "For a complex function use plot_linear_map(f, z), which draws the Re/Im plane."
        )
    if arr.dtype.kind not in "biuf" or arr.size == 0:
        raise ValueError(
            f"{who} needs x as a non-empty array of real numbers; got {arr.dtype} with shape "
            f"{arr.shape}. Pass the point as floats, e.g. np.array([1.0, 2.0])."
        )
    v = arr.astype(float).ravel()
    if not onp.all(onp.isfinite(v)):
        raise ValueError(f"{who} needs a finite point x; got {v}. Pick a point where f is defined.")
    shape = arr.shape

    def fv(w):
        return f(w.reshape(shape))

    y = fv(v)
    if onp.ndim(y) != 0 or onp.iscomplexobj(y):
        what = f"an array of shape {onp.shape(y)}" if onp.ndim(y) else f"a complex {y!r}"
        raise TypeError(
            f"{who} draws a real scalar function (a landscape), but f(x) returned {what}. "
            "Draw one output (lambda x: f(x)[0]) or a scalar of it (lambda x: "
            "anp.sum(f(x)**2)); for a map to several outputs use plot_linear_map."
        )
    return fv, v, shape


def _direction(direction: Any, g: onp.ndarray, n: int) -> onp.ndarray:
    if direction is None:
        norm = onp.linalg.norm(g)
        # steepest descent; at a critical point (g = 0) any axis will do
        return -g / norm if norm > 0 else onp.eye(n)[0]
    d = onp.asarray(direction, dtype=float).ravel()
    if d.size != n or not onp.all(onp.isfinite(d)) or not onp.any(d):
        raise ValueError(
            f"direction must be a finite, nonzero vector with x's {n} entries; got "
            f"{onp.asarray(direction)!r}. Pass e.g. direction=np.ones({n}) (it is normalised)."
        )
    return d / onp.linalg.norm(d)


def _local(fv: Callable, v: onp.ndarray, direction: Any) -> dict:
    """Value, gradient, Hessian (n <= 2) or curvature along d, and the Newton step."""
    n = v.size
    g = onp.asarray(grad(fv, disconnected_inputs="ignore")(v), dtype=float).ravel()
    d = _direction(direction, g, n)
    out = {"value": float(fv(v)), "gradient": g, "direction": d, "hessian": None}
    if n <= 2:
        H = onp.asarray(hessian(fv)(v), dtype=float).reshape(n, n)
        H = (H + H.T) / 2
        lam, vec = onp.linalg.eigh(H)
        out.update(hessian=H, eigenvalues=lam, eigenvectors=vec, curvature=float(d @ H @ d))
        pd = hessian_kind(lam) == "positive definite"
        out["newton"] = v - onp.linalg.solve(H, g) if pd else None
    else:
        # a slice needs dᵀHd only: one Hessian-vector product, not n of them
        out["curvature"] = float(d @ onp.ravel(hvp(fv)(v, d)))
    return out


def _default_span(v: onp.ndarray, loc: dict) -> float:
    """Half-width of the box (or the slice's t-range): x's own size, widened to show
    where the quadratic model turns (|∇f·d| / |dᵀHd|) and where Newton's step lands."""
    size = max(float(onp.max(onp.abs(v))), 1.0)
    cands = [0.6 * size]
    slope, c = abs(float(loc["gradient"] @ loc["direction"])), abs(loc["curvature"])
    if c > 0:
        cands.append(2.0 * slope / c)
    if loc.get("newton") is not None:
        cands.append(1.3 * float(onp.max(onp.abs(loc["newton"] - v))))
    return float(min(max(cands), 2.5 * size))


# ---------------------------------------------------------------- plot / update


def plot_landscape(
    f: Callable,
    x: Any,
    *,
    fig: Any = None,
    direction: Any = None,
    span: float | None = None,
    step: float | None = None,
) -> LandscapeArtists:
    """Draw a scalar function around x: gradient, curvature and Taylor models.

    Parameters
    ----------
    f : callable
        ``f(x)`` returns a real scalar (written with ``autograd.numpy``).
    x : array_like
        The point: 1 entry (a curve with tangent and secants), 2 entries (contours,
        ∇f, the Hessian's ellipse, the Newton step, and a slice), or more (the
        slice alone).
    fig : matplotlib Figure, optional
        Drawn on (cleared first); a new 8.6 in wide ``Figure`` otherwise.
    direction : array_like, optional
        The slice's direction d (normalised); default the steepest descent ``-∇f/|∇f|``.
    span : float, optional
        Half-width of the box / interval / slice; default from ``|x|`` and f's curvature.
    step : float, optional
        The finite-difference step h of the secants (R -> R); default 0.1 x the interval.

    Returns
    -------
    LandscapeArtists
        Renders as a PNG in a notebook; pass it to :func:`update_landscape`.

    Examples
    --------
    >>> import autograd.numpy as anp
    >>> art = plot_landscape(lambda x: x[0] ** 2 + 3 * x[1] ** 2, anp.array([1.0, 1.0]))
    >>> art.kind, art.gradient, art.eigenvalues
    ('plane', array([2., 6.]), array([2., 6.]))
    """
    fv, v, shape = scalar_function(f, x)
    loc = _local(fv, v, direction)
    if span is not None and not (onp.isfinite(span) and span > 0):
        raise ValueError(f"span must be a positive number; got {span!r}. Omit it for the default.")
    half = float(span) if span is not None else _default_span(v, loc)
    n = v.size
    kind = "curve" if n == 1 else "plane" if n == 2 else "slice"
    fig = fig or Figure(figsize=(8.6, 4.6 if n != 2 else 5.0), layout="constrained")
    fig.clear()
    box = tuple(onp.ravel([(c - half, c + half) for c in v]))
    art = LandscapeArtists(
        fig, kind, f, v, 0.0, loc["gradient"], None, loc["direction"], 0.0, half, box, shape=shape
    )
    if kind == "curve":
        draw_curve(art, fv, step)
    else:
        axes = fig.subplots(1, 2, width_ratios=[1.1, 1]) if kind == "plane" else [fig.add_subplot()]
        if kind == "plane":
            draw_plane(art, axes[0], fv)
        _draw_slice(art, axes[-1])
    _move(art, fv, v, loc, step)
    return art


def update_landscape(
    art: LandscapeArtists, f: Callable, x: Any, direction: Any = None, step: float | None = None
) -> bool:
    """Move the drawn point, arrow, ellipse, Newton step, slice and secants to x.

    The background (contours, or the curve of f) is kept, so this works while x
    stays inside the drawn box and f is the same function. Returns False, drawing
    nothing, when the caller must draw afresh: another f, another number of
    entries, or x outside the box.

    >>> import autograd.numpy as anp
    >>> f = lambda x: anp.sum(x**2)
    >>> art = plot_landscape(f, anp.array([1.0, 0.5]))
    >>> update_landscape(art, f, anp.array([0.5, 0.2])), art.gradient
    (True, array([1. , 0.4]))
    >>> update_landscape(art, f, anp.array([9.0, 0.0]))
    False
    """
    fv, v, shape = scalar_function(f, x, "update_landscape")
    lo, hi = onp.array(art.box[0::2]), onp.array(art.box[1::2])
    if f is not art.f or v.size != art.x.size:
        return False
    if art.kind != "slice" and not onp.all((lo < v) & (v < hi)):
        return False
    art.shape = shape
    _move(art, fv, v, _local(fv, v, direction), step)
    return True


def _move(art: LandscapeArtists, fv: Callable, v: onp.ndarray, loc: dict, step: Any) -> None:
    art.x, art.value, art.gradient = v, loc["value"], loc["gradient"]
    art.hessian, art.direction, art.curvature = loc["hessian"], loc["direction"], loc["curvature"]
    art.eigenvalues, art.eigenvectors = loc.get("eigenvalues"), loc.get("eigenvectors")
    art.newton = loc.get("newton")
    if art.kind == "curve":
        move_curve(art, fv, step)
        return
    if art.kind == "plane":
        move_plane(art)
    _move_slice(art, fv)


# ---------------------------------------------------------------- the slice


def _draw_slice(art: LandscapeArtists, ax: Any) -> None:
    A = art.artists
    (A["slice_f"],) = ax.plot([], [], color="black", lw=2.2, label="f(x + t·d)")
    (A["slice_tangent"],) = ax.plot([], [], color=TAYLOR_COLORS[0], lw=1.8, ls="--")
    (A["slice_quadratic"],) = ax.plot([], [], color=TAYLOR_COLORS[1], lw=2, ls=":")
    (A["slice_point"],) = ax.plot([0], [0], "o", color="white", mec="black", ms=8, mew=1.5)
    ax.axvline(0, color="grey", lw=0.6)
    ax.set_xlabel("t (distance along d)")
    ax.set_ylabel("f")
    ax.tick_params(labelsize=TICK_FONT)
    ax.set_xlim(-art.span, art.span)
    ax.grid(True, alpha=0.3)
    # made once; its texts are rewritten in place (a new legend would be a new artist)
    A["slice_legend"] = ax.legend(
        [A["slice_f"], A["slice_tangent"], A["slice_quadratic"]],
        ["f(x + t·d)", "", ""],
        loc="upper center",
        fontsize=8,
        framealpha=0.9,
    )


def _move_slice(art: LandscapeArtists, fv: Callable) -> None:
    A, v, d, T = art.artists, art.x, art.direction, art.span
    ts = onp.linspace(-T, T, 201)
    phi = onp.array([float(fv(v + t * d)) for t in ts])
    f0, slope, c = art.value, float(art.gradient @ d), art.curvature
    tangent = f0 + slope * ts
    A["slice_f"].set_data(ts, phi)
    A["slice_tangent"].set_data(ts, tangent)
    A["slice_quadratic"].set_data(ts, tangent + 0.5 * c * ts**2)
    A["slice_point"].set_data([0], [f0])
    texts = A["slice_legend"].get_texts()
    texts[1].set_text(f"1st order: f(x) + t ∇f·d  (∇f·d = {slope:.3g})")
    texts[2].set_text(f"2nd order: … + t²/2 dᵀHd  (dᵀHd = {c:.3g})")
    ax = A["slice_f"].axes
    finite = phi[onp.isfinite(phi)]
    lo, hi = (finite.min(), finite.max()) if finite.size else (f0 - 1, f0 + 1)
    pad = 0.12 * (hi - lo) or 1.0
    # f's own range: the models may run off it, f must not
    ax.set_ylim(lo - pad, hi + 2.5 * pad)
    steepest = art.kind != "curve" and onp.allclose(
        d, -art.gradient / (onp.linalg.norm(art.gradient) or 1)
    )
    where = (
        f"f: R{_superscript(v.size)} → R along x + t·d"
        if art.kind == "slice"
        else "f along x + t·d"
    )
    ax.set_title(f"{where}, d = {'−∇f/|∇f|' if steepest else 'the given direction'}", fontsize=10)


def _superscript(n: int) -> str:
    return str(n).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
