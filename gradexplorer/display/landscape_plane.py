"""The R^2 -> R landscape's left panel: contours, ∇f, the Hessian's ellipse, Newton's step.

Drawn for :func:`gradexplorer.display.landscape.plot_landscape` (``kind="plane"``):
the contours once (updates keep them), the rest as empty artists that
:func:`move_plane` places at each new point.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as onp
from matplotlib import colors, patheffects
from matplotlib.patches import Ellipse

from .heatmap import TICK_FONT

__all__ = ["draw_plane", "move_plane", "hessian_kind", "HALO", "TEXT_FONT"]

TEXT_FONT = 9  # points; titles 10, ticks TICK_FONT (8): all readable when projected

GRID = 61  # contour samples a side; f is called once per sample (f need not vectorise)

HALO = [patheffects.withStroke(linewidth=3, foreground="white")]

GRAD_COLOR = "#d62728"
EIGEN_COLORS = ("#1f4e9e", "#7b2d8e")
NEWTON_COLOR = "#ff7f0e"


def hessian_kind(lam: onp.ndarray) -> str:
    """ "positive definite", "negative definite", "indefinite" or "singular", with
    eigenvalues within round-off of 0 (1e-9 of the largest) counted as 0.

    >>> hessian_kind(onp.array([-1e-17, 0.5])), hessian_kind(onp.array([-1.0, 2.0]))
    ('singular', 'indefinite')
    """
    tol = 1e-9 * float(onp.max(onp.abs(lam), initial=0.0))
    if tol > 0 and onp.all(lam > tol):
        return "positive definite"
    if tol > 0 and onp.all(lam < -tol):
        return "negative definite"
    return "indefinite" if onp.any(lam > tol) and onp.any(lam < -tol) else "singular"


def _quantile_levels(Z: onp.ndarray) -> onp.ndarray:
    """Contour levels at quantiles of the sampled values: a valley 1000x deeper than
    its walls (Rosenbrock) still gets as many contours inside as outside."""
    finite = Z[onp.isfinite(Z)]
    if finite.size == 0 or finite.min() == finite.max():
        mid = float(finite[0]) if finite.size else 0.0
        return onp.array([mid - 1.0, mid + 1.0])
    return onp.unique(onp.percentile(finite, onp.linspace(0, 100, 15)))


def draw_plane(art: Any, ax: Any, fv: Callable) -> None:
    """f's filled contours over ``art.box`` (kept by updates), and the empty artists
    :func:`move_plane` places: point, ∇f arrow, ellipse, eigen-directions, Newton step.

    >>> from gradexplorer.display.landscape import plot_landscape
    >>> art = plot_landscape(lambda x: x[0] ** 2 + x[1] ** 2, [1.0, 0.0], span=1.0)
    >>> art.artists["arrow"].xy  # ∇f = (2, 0), drawn 0.4 of the box's half-width long
    (1.4, 0.0)
    """
    x0, x1, y0, y1 = art.box
    xs, ys = onp.linspace(x0, x1, GRID), onp.linspace(y0, y1, GRID)
    Z = onp.array([[float(fv(onp.array([a, b]))) for a in xs] for b in ys])
    Z = onp.ma.masked_invalid(Z)
    levels = _quantile_levels(Z.compressed())
    # colours by level index, not value: quantile levels crowd where f is low
    norm = colors.BoundaryNorm(levels, 256, extend="both")
    ax.contourf(xs, ys, Z, levels=levels, cmap="viridis", norm=norm, alpha=0.55, extend="both")
    ax.contour(xs, ys, Z, levels=levels, colors="#333333", linewidths=0.4, alpha=0.5)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_aspect("equal")  # so that ∇f looks perpendicular to the contours
    ax.set_xlabel("x[0]")
    ax.set_ylabel("x[1]")
    ax.set_title("f near x: ∇f, curvature (Hessian), Newton step", fontsize=10)
    ax.tick_params(labelsize=TICK_FONT)
    A = art.artists
    (A["slice_path"],) = ax.plot([], [], color="black", lw=1, ls="--", alpha=0.7)
    A["ellipse"] = ax.add_patch(
        Ellipse((0, 0), 1, 1, fill=False, edgecolor="black", lw=2, path_effects=HALO, zorder=3)
    )
    for k, color in enumerate(EIGEN_COLORS):
        (A[f"eigen{k}"],) = ax.plot([], [], color=color, lw=2.2, path_effects=HALO, zorder=4)
        A[f"eigen{k}_label"] = ax.text(
            0,
            0,
            "",
            color=color,
            fontsize=TEXT_FONT,
            zorder=6,
            path_effects=HALO,
            ha="center",
            va="center",
        )
    A["newton_arrow"] = ax.annotate(
        "",
        (0, 0),
        (0, 0),
        zorder=4,
        arrowprops=dict(
            arrowstyle="-|>", color=NEWTON_COLOR, lw=1.8, ls="--", shrinkA=0, shrinkB=4
        ),
    )
    (A["newton"],) = ax.plot([], [], "*", color=NEWTON_COLOR, ms=15, mec="black", zorder=5)
    A["arrow"] = ax.annotate(
        "",
        (0, 0),
        (0, 0),
        zorder=5,
        arrowprops=dict(
            arrowstyle="-|>",
            color=GRAD_COLOR,
            lw=2.5,
            mutation_scale=18,
            shrinkA=0,
            shrinkB=0,
            path_effects=HALO,
        ),
    )
    A["arrow_label"] = ax.text(
        0,
        0,
        "",
        color=GRAD_COLOR,
        fontsize=TEXT_FONT + 1,
        zorder=6,
        fontweight="bold",
        path_effects=HALO,
        ha="center",
        va="center",
    )
    (A["point"],) = ax.plot([], [], "o", color="white", mec="black", ms=8, mew=1.5, zorder=6)
    A["verdict"] = ax.text(
        0.02,
        0.02,
        "",
        transform=ax.transAxes,
        fontsize=TEXT_FONT,
        zorder=7,
        va="bottom",
        bbox=dict(boxstyle="round", fc="white", alpha=0.85),
    )


def move_plane(art: Any) -> None:
    """Place the point, ∇f, the Hessian's level ellipse (or a saddle's eigen-directions),
    the Newton step and the slice's path at ``art.x``, from the numbers in ``art``.

    >>> from gradexplorer.display.landscape import plot_landscape
    >>> art = plot_landscape(lambda x: x[0] ** 2 - x[1] ** 2, [0.5, 0.5])
    >>> art.artists["ellipse"].get_visible(), "saddle" in art.artists["verdict"].get_text()
    (False, True)
    """
    A, v, g, half = art.artists, art.x, art.gradient, art.span
    lam, vec = art.eigenvalues, art.eigenvectors
    A["point"].set_data([v[0]], [v[1]])
    gnorm = float(onp.linalg.norm(g))
    # a fixed on-screen length (0.4 of the box): |∇f| is printed, not drawn to scale
    tip = v + (0.4 * half * g / gnorm if gnorm > 0 else 0)
    A["arrow"].xy, A["arrow"].xyann = tuple(tip), tuple(v)
    A["arrow"].set_visible(gnorm > 0)
    label_at = v + (0.5 * half * g / gnorm if gnorm > 0 else onp.array([0, 0.08 * half]))
    A["arrow_label"].set_position(tuple(label_at))
    A["arrow_label"].set_text(f"∇f\n|∇f| = {gnorm:.3g}" if gnorm > 0 else "∇f = 0")
    kind = hessian_kind(lam)
    definite = kind in ("positive definite", "negative definite")
    if definite:
        # the level set ½ sᵀHs = c: semi-axes ∝ 1/√|λ|, the longer one 0.35 of the box
        semi = 0.35 * half * onp.sqrt(onp.min(onp.abs(lam)) / onp.abs(lam))
    else:
        semi = onp.full(2, 0.45 * half)
    angle = float(onp.degrees(onp.arctan2(vec[1, 0], vec[0, 0])))
    A["ellipse"].set_center(tuple(v))
    A["ellipse"].set_width(2 * semi[0])
    A["ellipse"].set_height(2 * semi[1])
    A["ellipse"].set_angle(angle)
    A["ellipse"].set_visible(bool(definite))
    for k in range(2):
        end = semi[k] * vec[:, k]
        A[f"eigen{k}"].set_data([v[0] - end[0], v[0] + end[0]], [v[1] - end[1], v[1] + end[1]])
        # label the end away from ∇f, whose own label sits along it (an eigenvector's
        # sign is arbitrary; this end is the one that stays clear)
        away = -1.0 if float(vec[:, k] @ g) > 0 else 1.0
        far = v + away * (end + 0.12 * half * vec[:, k])
        A[f"eigen{k}_label"].set_position(tuple(far))
        # round-off is not curvature: within 1e-9 of the largest |λ|, say 0
        flat = abs(lam[k]) <= 1e-9 * onp.max(onp.abs(lam))
        A[f"eigen{k}_label"].set_text(f"λ{'₁₂'[k]} = " + ("0 (flat)" if flat else f"{lam[k]:.3g}"))
    newton = art.newton
    A["newton"].set_data(*([[newton[0]], [newton[1]]] if newton is not None else [[], []]))
    A["newton_arrow"].xy, A["newton_arrow"].xyann = tuple(v if newton is None else newton), tuple(v)
    A["newton_arrow"].set_visible(newton is not None)
    d, T = art.direction, half
    A["slice_path"].set_data([v[0] - T * d[0], v[0] + T * d[0]], [v[1] - T * d[1], v[1] + T * d[1]])
    if kind == "positive definite":
        words = "positive definite: a minimum's bowl\n★ Newton step x − H⁻¹∇f"
    elif kind == "negative definite":
        words = "negative definite: a maximum's cap\n(no Newton step to a minimum)"
    elif kind == "indefinite":
        words = "indefinite: a saddle\n(curves up along one eigenvector, down the other)"
    else:
        words = "singular: flat along an eigenvector\n(no Newton step)"
    A["verdict"].set_text(f"Hessian {words}\n– – slice along d (right)")
    for name in ("arrow_label", "eigen0_label", "eigen1_label"):
        _keep_inside(A[name], art.box)


#: Where a label's centre may sit, in fractions of the axes: inside by about half a
#: label's size, and below the title (a λ label covered it, "|∇f| = 8.36" ran off).
INSIDE_X, INSIDE_Y = (0.14, 0.86), (0.08, 0.88)


def _keep_inside(text: Any, box: tuple) -> None:
    """Move a label placed in data coordinates so that it stays inside the axes box
    ``(x0, x1, y0, y1)``.

    >>> from matplotlib.figure import Figure
    >>> t = Figure().add_subplot().text(5.0, -3.0, "λ₁")
    >>> _keep_inside(t, (0.0, 1.0, 0.0, 1.0)); t.get_position()
    (0.86, 0.08)
    """
    x0, x1, y0, y1 = box
    x, y = text.get_position()
    fx = min(max((x - x0) / (x1 - x0), INSIDE_X[0]), INSIDE_X[1])
    fy = min(max((y - y0) / (y1 - y0), INSIDE_Y[0]), INSIDE_Y[1])
    text.set_position((x0 + fx * (x1 - x0), y0 + fy * (y1 - y0)))
