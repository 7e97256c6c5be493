"""The Jacobian as a linear map: a small circle of inputs and where f sends it.

A teaching view, sized for a projector (every text at least 8 pt at 100 dpi).
Left: a circle of radius r around x in two chosen input coordinates, with four
coloured points and the right singular vectors r·v₁, r·v₂. Right: the true image
f(circle), a curve, and the linearisation f(x) + J·(circle − x), an ellipse with
semi-axes rσ₁u₁ and rσ₂u₂ and area πr²·|det J|. When det J < 0 the coloured
points go round the other way. In the Re/Im plane of a complex entry the reading
is Cauchy–Riemann's: a holomorphic f has J = [[a, −b], [b, a]], a rotation and a
scaling, so the circle stays a circle; any other f makes an ellipse.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as onp
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse

from ..ad import real_jacobian
from .heatmap import TICK_FONT, figure_png
from .landscape_plane import HALO, TEXT_FONT
from .realmap import coordinate_name, coordinate_pair, real_map

__all__ = ["LinearMapArtists", "plot_linear_map", "update_linear_map"]

MARK_ANGLES = (0, 90, 180, 270)  # degrees: the marked points, one colour each

MARK_COLORS = ("#d62728", "#2ca02c", "#1f77b4", "#ff7f0e")

SV_COLORS = ("#7b2d8e", "#8c564b")  # first and second singular direction

LINEAR_COLOR = "#1f4e9e"

SAMPLES = 181  # points on the circle; f is called once per point


@dataclass
class LinearMapArtists:
    """What :func:`plot_linear_map` drew, and the numbers it drew them from.

    ``jacobian`` is the 2 x 2 block of the real Jacobian for the chosen output
    (rows) and input (columns) coordinates; ``singular_values`` (σ₁ >= σ₂),
    ``u`` and ``v`` its SVD (columns); ``ellipse_axes`` the semi-axes drawn
    (radius·σᵢ); ``cr_residual`` is None unless the two coordinates on both
    sides are the Re and Im parts of one complex entry.
    """

    fig: Any
    f: Callable
    x: Any
    coords: tuple
    outputs: tuple
    radius: float
    jacobian: onp.ndarray
    singular_values: onp.ndarray
    u: onp.ndarray
    v: onp.ndarray
    det: float
    ellipse_axes: tuple
    cr_residual: float | None = None
    holomorphic: bool | None = None
    artists: dict = field(default_factory=dict)
    layout: tuple = ()  # (shape, complex in, real out size, complex out): what fixes the axes

    def _repr_png_(self) -> bytes:
        return figure_png(self.fig)


# ---------------------------------------------------------------- plot / update


def plot_linear_map(
    f: Callable,
    x: Any,
    *,
    coords: Any = None,
    outputs: Any = None,
    radius: float | None = None,
    fig: Any = None,
) -> LinearMapArtists:
    """Draw how f and its Jacobian map a small circle of inputs around x.

    Parameters
    ----------
    f : callable
        ``f(x)`` returns one array (written with ``autograd.numpy``); real or complex.
    x : array_like
        The point; inputs and outputs are flattened, a complex side as its Re
        parts then its Im parts (as :func:`gradexplorer.real_jacobian` orders them).
    coords, outputs : (int, int) or int, optional
        The two input / output coordinates drawn. Default (0, 1) for a real
        side and (Re, Im) of entry 0 for a complex one; an int picks (Re, Im)
        of that complex entry.
    radius : float, optional
        The circle's radius; default ``0.25 x max(1, |x|)`` in the chosen coordinates.
    fig : matplotlib Figure, optional
        Drawn on (cleared first); a new 8.6 in wide ``Figure`` otherwise.

    Returns
    -------
    LinearMapArtists
        Renders as a PNG in a notebook; pass it to :func:`update_linear_map`.

    Examples
    --------
    >>> import numpy as np
    >>> art = plot_linear_map(lambda x: np.array([[2.0, 0.0], [0.0, 0.5]]) @ x, np.ones(2))
    >>> art.singular_values, art.det
    (array([2. , 0.5]), 1.0)
    >>> art = plot_linear_map(lambda z: z**2, 1.0 + 1.0j, radius=0.1)
    >>> art.holomorphic, art.ellipse_axes
    (True, (0.28284271247461906, 0.282842712474619))
    """
    F, xr, arr, layout = real_map(f, x, "plot_linear_map")
    ci = coordinate_pair(coords, int(onp.prod(layout[0])), layout[1], "input", "plot_linear_map")
    co = coordinate_pair(outputs, layout[2], layout[3], "output", "plot_linear_map")
    if radius is None:
        radius = 0.25 * max(1.0, float(onp.hypot(*xr[list(ci)])))
    elif not (onp.isscalar(radius) and onp.isfinite(radius) and radius > 0):
        raise ValueError(f"radius must be a positive number; got {radius!r}. Omit it for 0.25.")
    fig = fig or Figure(figsize=(8.6, 5.4), layout="constrained")
    fig.clear()
    art = LinearMapArtists(
        fig,
        f,
        arr,
        ci,
        co,
        float(radius),
        onp.eye(2),
        onp.ones(2),
        onp.eye(2),
        onp.eye(2),
        1.0,
        (1.0, 1.0),
        layout=layout,
    )
    _draw(art, layout)
    _move(art, F, xr)
    return art


def update_linear_map(
    art: LinearMapArtists,
    f: Callable,
    x: Any,
    coords: Any = None,
    outputs: Any = None,
    radius: float | None = None,
) -> bool:
    """Move the circle, its images, the singular vectors and the texts to x, in place.

    ``coords`` / ``outputs`` default to the drawn ones and ``radius`` keeps the
    drawn radius. Returns False, drawing nothing, when the caller must draw
    afresh: another f, other coordinates, or other input/output sizes.

    >>> import autograd.numpy as anp
    >>> f = lambda x: anp.array([x[0] * x[1], x[0] + x[1]])
    >>> art = plot_linear_map(f, anp.array([1.0, 2.0]))
    >>> update_linear_map(art, f, anp.array([3.0, 1.0])), art.jacobian
    (True, array([[1., 3.],
           [1., 1.]]))
    """
    F, xr, arr, layout = real_map(f, x, "update_linear_map")
    if f is not art.f or layout != art.layout:
        return False
    ci = (
        art.coords
        if coords is None
        else coordinate_pair(
            coords, int(onp.prod(layout[0])), layout[1], "input", "update_linear_map"
        )
    )
    co = (
        art.outputs
        if outputs is None
        else coordinate_pair(outputs, layout[2], layout[3], "output", "update_linear_map")
    )
    if (ci, co) != (art.coords, art.outputs):
        return False
    if radius is not None:
        if not (onp.isscalar(radius) and onp.isfinite(radius) and radius > 0):
            raise ValueError(f"radius must be a positive number; got {radius!r}.")
        art.radius = float(radius)
    art.x = arr
    _move(art, F, xr)
    return True


# ---------------------------------------------------------------- drawing


def _draw(art: LinearMapArtists, layout: tuple) -> None:
    shape, cin, out_size, cout = layout
    ax_in, ax_out = art.fig.subplots(1, 2)
    A = art.artists
    (A["circle"],) = ax_in.plot([], [], color="black", lw=2)
    (A["image"],) = ax_out.plot([], [], color="black", lw=2.2, label="f(circle): the true image")
    A["ellipse"] = ax_out.add_patch(
        Ellipse(
            (0, 0),
            1,
            1,
            fill=False,
            edgecolor=LINEAR_COLOR,
            lw=2,
            ls="--",
            zorder=3,
            label="f(x) + J·(circle − x): the linear map's ellipse",
        )
    )
    for ax, key in ((ax_in, "x"), (ax_out, "y")):
        (A[f"{key}_point"],) = ax.plot([], [], "o", color="white", mec="black", ms=7, zorder=6)
        # which way round: an arrowhead on the circle, and on its images
        A[f"{key}_turn"] = ax.annotate(
            "",
            (0, 0),
            (0, 0),
            zorder=5,
            arrowprops=dict(arrowstyle="-|>", color="black", lw=0, mutation_scale=20),
        )
        for k, color in enumerate(SV_COLORS):
            # above the marked points: an arrow often ends on one
            A[f"{key}_sv{k}"] = ax.annotate(
                "",
                (0, 0),
                (0, 0),
                zorder=6.5,
                arrowprops=dict(arrowstyle="-|>", color=color, lw=2.2, shrinkA=0, shrinkB=0),
            )
            A[f"{key}_sv{k}_label"] = ax.annotate(
                "",
                (0, 0),
                (0, 0),
                textcoords="offset points",
                color=color,
                fontsize=TEXT_FONT + 1,
                path_effects=HALO,
                zorder=7,
            )
        ax.set_aspect("equal")
        ax.tick_params(labelsize=TICK_FONT)
        ax.grid(True, alpha=0.3)
    for k, color in enumerate(MARK_COLORS):
        (A[f"mark{k}"],) = ax_in.plot([], [], "o", color=color, mec="black", ms=9, zorder=6)
        (A[f"true{k}"],) = ax_out.plot([], [], "o", color=color, mec="black", ms=9, zorder=6)
        (A[f"lin{k}"],) = ax_out.plot(
            [], [], "o", color="none", mec=color, ms=11, mew=2.2, zorder=5
        )
    (mark,) = ax_out.plot([], [], "o", color="#999999", mec="black", ms=8, label="a marked point")
    (lin,) = ax_out.plot(
        [], [], "o", color="none", mec="#999999", mew=2, ms=10, label="where J sends it"
    )
    xin = "z" if cin else "x"
    ax_in.set_xlabel(coordinate_name(art.coords[0], shape, cin, xin))
    ax_in.set_ylabel(coordinate_name(art.coords[1], shape, cin, xin))
    out_shape = (out_size,) if out_size > 1 or cout is False else ()
    ax_out.set_xlabel(coordinate_name(art.outputs[0], out_shape, cout, "y"))
    ax_out.set_ylabel(coordinate_name(art.outputs[1], out_shape, cout, "y"))
    ax_out.set_title("outputs: f(circle) and J's ellipse", fontsize=10)
    art.fig.legend(
        handles=[A["image"], A["ellipse"], mark, lin],
        loc="outside lower center",
        ncol=2,
        fontsize=8,
        frameon=False,
    )
    A["headline"] = art.fig.suptitle("", fontsize=10)


def _circle(art: LinearMapArtists, xr: onp.ndarray, degrees: Any) -> onp.ndarray:
    """Realified inputs on the circle at these angles (one row each)."""
    t = onp.radians(onp.asarray(degrees, dtype=float))
    pts = onp.repeat(xr[None, :], t.size, axis=0)
    pts[:, art.coords[0]] += art.radius * onp.cos(t)
    pts[:, art.coords[1]] += art.radius * onp.sin(t)
    return pts


def _move(art: LinearMapArtists, F: Callable, xr: onp.ndarray) -> None:
    A, r, (i, j), (p, q) = art.artists, art.radius, art.coords, art.outputs
    # rows [Re y; Im y], columns [Re x; Im x]: the order F realifies in
    J = onp.asarray(real_jacobian(art.f)(art.x), dtype=float)[[p, q]][:, [i, j]]
    U, s, Vt = onp.linalg.svd(J)
    art.jacobian, art.singular_values, art.u, art.v = J, s, U, Vt.T
    art.det = float(onp.linalg.det(J))
    art.ellipse_axes = (float(r * s[0]), float(r * s[1]))
    x0, y0 = xr[[i, j]], F(xr)[[p, q]]
    ring = _circle(art, xr, onp.linspace(0, 360, SAMPLES))
    image = onp.array([F(w)[[p, q]] for w in ring])
    A["circle"].set_data(ring[:, i], ring[:, j])
    A["image"].set_data(image[:, 0], image[:, 1])
    A["x_point"].set_data([x0[0]], [x0[1]])
    A["y_point"].set_data([y0[0]], [y0[1]])
    ell = A["ellipse"]
    ell.set_center(tuple(y0))
    ell.set_width(2 * r * s[0])
    ell.set_height(2 * r * s[1])
    ell.set_angle(float(onp.degrees(onp.arctan2(U[1, 0], U[0, 0]))))
    marks = _circle(art, xr, MARK_ANGLES)
    for k, w in enumerate(marks):
        A[f"mark{k}"].set_data([w[i]], [w[j]])
        fw = F(w)[[p, q]]
        A[f"true{k}"].set_data([fw[0]], [fw[1]])
        lin = y0 + J @ (w[[i, j]] - x0)
        A[f"lin{k}"].set_data([lin[0]], [lin[1]])
    # the arrowheads at 45°, pointing the way the angle grows
    turn = _circle(art, xr, (40, 50))
    A["x_turn"].xyann, A["x_turn"].xy = tuple(turn[0, [i, j]]), tuple(turn[1, [i, j]])
    fturn = [F(w)[[p, q]] for w in turn]
    A["y_turn"].xyann, A["y_turn"].xy = tuple(fturn[0]), tuple(fturn[1])
    for k, sub in enumerate("₁₂"):
        vin, vout = r * Vt[k], r * s[k] * U[:, k]
        A[f"x_sv{k}"].xyann, A[f"x_sv{k}"].xy = tuple(x0), tuple(x0 + vin)
        A[f"y_sv{k}"].xyann, A[f"y_sv{k}"].xy = tuple(y0), tuple(y0 + vout)
        # σ₂ = 0 has no arrow to draw (the headline says J is singular)
        shown = s[k] > 1e-12 * max(s[0], 1e-300)
        _label(A[f"x_sv{k}_label"], f"r·v{sub}", x0 + 0.6 * vin, Vt[k])
        _label(A[f"y_sv{k}_label"], f"rσ{sub}u{sub}" if shown else "", y0 + 0.6 * vout, U[:, k])
        A[f"y_sv{k}"].set_visible(bool(shown))
    _texts(art, xr)
    _limits(A["circle"].axes, ring[:, [i, j]], x0, 1.35 * r)
    ends = onp.vstack([image, y0 + r * (U * s).T, y0 - r * (U * s).T])
    _limits(A["image"].axes, ends, y0, 0.12 * float(onp.ptp(ends, axis=0).max()) or r)


def _label(text: Any, words: str, at: onp.ndarray, along: onp.ndarray) -> None:
    """Write beside an arrow, not on it: a few points off to its left side, aligned
    so the text grows away from the arrow (equal aspect: data and screen agree)."""
    n = onp.array([-along[1], along[0]]) / (onp.hypot(*along) or 1.0)
    text.xy, text.xyann = tuple(at), tuple(7 * n)
    text.set_ha("right" if n[0] < -0.3 else "left" if n[0] > 0.3 else "center")
    text.set_va("top" if n[1] < -0.3 else "bottom" if n[1] > 0.3 else "center")
    text.set_text(words)


def _limits(ax: Any, pts: onp.ndarray, center: onp.ndarray, pad: float) -> None:
    """A square window around the points: with equal aspect, both panels stay the same size."""
    lo = onp.minimum(pts.min(axis=0), center) - pad
    hi = onp.maximum(pts.max(axis=0), center) + pad
    mid, half = (lo + hi) / 2, float((hi - lo).max()) / 2
    ax.set_xlim(mid[0] - half, mid[0] + half)
    ax.set_ylim(mid[1] - half, mid[1] + half)


def _texts(art: LinearMapArtists, xr: onp.ndarray) -> None:
    A, s, det, r = art.artists, art.singular_values, art.det, art.radius
    shape, cin, out_size, cout = art.layout
    n = int(onp.prod(shape))
    i, j = art.coords
    point = ", ".join(f"{xr[k]:.3g}" for k in (i, j))
    A["circle"].axes.set_title(
        f"inputs: circle of radius r = {r:.3g} around ({point})", fontsize=10
    )
    n_in, n_out = n * (2 if cin else 1), out_size * (2 if cout else 1)
    # J itself only when f is R^2 -> R^2; else the 2 x 2 block the picture draws, named
    # (a 3 x 3 f drew its x[0], x[1] -> y[0], y[1] block and called it "det J")
    det_name = "det J"
    if (n_in, n_out) != (2, 2):
        ins = ", ".join(coordinate_name(k, shape, cin, "x") for k in (i, j))
        outs = ", ".join(coordinate_name(k, (out_size,), cout, "y") for k in art.outputs)
        det_name = "det B"
        lines = [f"B = the 2 x 2 block ∂({outs}) / ∂({ins}) of the {n_out} x {n_in} J"]
    else:
        lines = []
    lines.append(f"σ₁ = {s[0]:.3g}, σ₂ = {s[1]:.3g}:  area × |{det_name}| = {abs(det):.3g}")
    if det < 0:
        lines.append(
            f"{det_name} < 0: orientation flips, the coloured points go round the other way"
        )
    elif det == 0:
        lines.append(f"{det_name} = 0: singular, the circle collapses onto a line")
    complex_pair = cin and cout and j == i + n and art.outputs[1] == art.outputs[0] + out_size
    art.cr_residual = art.holomorphic = None
    if complex_pair:
        (a, b), (c, d) = art.jacobian
        art.cr_residual = float(abs(a - d) + abs(b + c))
        art.holomorphic = art.cr_residual <= 1e-8 * max(1.0, float(onp.abs(art.jacobian).max()))
        lines.append(
            f"Cauchy–Riemann residual |a − d| + |b + c| = {art.cr_residual:.3g}: "
            + (
                "holomorphic, J = [[a, −b], [b, a]] rotates and scales: circle → circle"
                if art.holomorphic
                else "not holomorphic: circle → ellipse (σ₁ ≠ σ₂)"
            )
        )
    A["headline"].set_text("\n".join(lines))
