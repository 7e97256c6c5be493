"""The R -> R landscape: f, its tangent, and the finite-difference secants at step h.

The step sweep's V made visible as geometry: the forward secant through x and
x + h leans off the tangent by about h f''/2, the central one through x - h and
x + h by about h² f'''/6, so it stays nearly parallel. The right panel is the
same two errors against h on log axes, down to where round-off takes over.
Drawn for :func:`gradexplorer.display.landscape.plot_landscape` (``kind="curve"``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as onp

from .heatmap import TICK_FONT

__all__ = ["draw_curve", "move_curve", "secant_slopes"]

TANGENT_COLOR = "#1f4e9e"

# the step-sweep plot's colours and markers for the same two schemes
SWEEP_STYLES = {"forward": ("#1b9e77", "o"), "central": ("#d95f02", "s")}

DECADES = 13  # the error panel spans h from 1e-13 x the interval to the interval


def secant_slopes(fv: Callable, x: float, h: float) -> tuple[float, float]:
    """Forward (f(x+h) - f(x))/h and central (f(x+h) - f(x-h))/2h slopes.

    >>> secant_slopes(lambda v: v[0] ** 2, 1.0, 0.5)
    (2.5, 2.0)
    """
    at = lambda t: float(fv(onp.array([t], dtype=float)))  # noqa: E731 - one line
    fx, fp, fm = at(x), at(x + h), at(x - h)
    return (fp - fx) / h, (fp - fm) / (2 * h)


def _check_step(step: Any, default: float) -> float:
    if step is None:
        return default
    if not (onp.isscalar(step) and onp.isfinite(step) and step > 0):
        raise ValueError(
            f"step must be a positive number (the secants' h); got {step!r}. "
            "Omit it for the default, 0.1 x the drawn interval."
        )
    return float(step)


def draw_curve(art: Any, fv: Callable, step: Any) -> None:
    """f over the interval (kept by updates) and empty tangent, secant and error artists.

    >>> import autograd.numpy as anp
    >>> from gradexplorer.display.landscape import plot_landscape
    >>> art = plot_landscape(anp.sin, 0.0, span=1.0)
    >>> art.artists["curve"].get_xdata()[[0, -1]]
    array([-1.,  1.])
    """
    ax, axv = art.fig.subplots(1, 2, width_ratios=[1.4, 1])
    lo, hi = art.box
    xs = onp.linspace(lo, hi, 301)
    ys = onp.array([float(fv(onp.array([t]))) for t in xs])
    A = art.artists
    (A["curve"],) = ax.plot(xs, ys, color="black", lw=2.2)
    (A["tangent"],) = ax.plot([], [], color=TANGENT_COLOR, lw=1.8)
    fc, fm = SWEEP_STYLES["forward"], SWEEP_STYLES["central"]
    (A["forward"],) = ax.plot([], [], color=fc[0], lw=1.6, ls="--")
    (A["central"],) = ax.plot([], [], color=fm[0], lw=1.6, ls="-.")
    # forward circles larger, under central squares: both schemes sample x + h
    (A["forward_points"],) = ax.plot([], [], fc[1], color=fc[0], ms=11, mec="black", zorder=5)
    (A["central_points"],) = ax.plot([], [], fm[1], color=fm[0], ms=6, mec="black", zorder=5)
    (A["point"],) = ax.plot([], [], "o", color="white", mec="black", ms=8, mew=1.5, zorder=6)
    finite = ys[onp.isfinite(ys)]
    bottom, top = (finite.min(), finite.max()) if finite.size else (-1.0, 1.0)
    pad = 0.1 * (top - bottom) or 1.0
    ax.set_ylim(bottom - pad, top + pad)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("x")
    ax.set_ylabel("f(x)")
    ax.tick_params(labelsize=TICK_FONT)
    ax.grid(True, alpha=0.3)
    handles = [A["curve"], A["tangent"], A["forward"], A["central"]]
    # under the axes: the lines fill the panel, and the labels carry the numbers
    A["legend"] = ax.legend(
        handles,
        ["f", "", "", ""],
        loc="upper left",
        fontsize=8,
        bbox_to_anchor=(-0.12, -0.13),
        frameon=False,
    )
    (A["v_forward"],) = axv.loglog(
        [], [], color=fc[0], marker=fc[1], ms=2.5, lw=1.2, label="forward"
    )
    (A["v_central"],) = axv.loglog(
        [], [], color=fm[0], marker=fm[1], ms=2.5, lw=1.2, label="central"
    )
    (A["v_marks"],) = axv.plot([], [], "o", color="none", mec="black", ms=10, mew=1.8, zorder=5)
    A["v_step"] = axv.axvline(1.0, color="black", ls=":", lw=1.2, label="the h drawn left")
    axv.set_xlabel("step h")
    axv.set_ylabel("|secant slope − f'(x)|")
    axv.set_title("the same errors against h: the V", fontsize=10)
    axv.tick_params(labelsize=TICK_FONT)
    axv.grid(True, which="major", alpha=0.3)
    axv.legend(fontsize=8, loc="upper center")
    art.step = _check_step(step, 0.2 * art.span)


def move_curve(art: Any, fv: Callable, step: Any) -> None:
    """Tangent, secants, their slopes and errors, and the V, at art.x and step h.

    >>> from gradexplorer.display.landscape import plot_landscape
    >>> art = plot_landscape(lambda x: x**2, 1.0, step=0.5)
    >>> art.slope, art.forward_slope, art.central_slope
    (2.0, 2.5, 2.0)
    """
    A, x, f0 = art.artists, float(art.x[0]), art.value
    h = art.step = _check_step(step, art.step)
    slope = art.slope = float(art.gradient[0])
    fwd, ctr = secant_slopes(fv, x, h)
    art.forward_slope, art.central_slope = fwd, ctr
    lo, hi = art.box
    ends = onp.array([lo, hi])
    A["point"].set_data([x], [f0])
    A["tangent"].set_data(ends, f0 + slope * (ends - x))
    A["forward"].set_data(ends, f0 + fwd * (ends - x))
    fp, fm = (float(fv(onp.array([x + s]))) for s in (h, -h))
    A["central"].set_data(ends, fp + ctr * (ends - x - h))
    A["forward_points"].set_data([x, x + h], [f0, fp])
    A["central_points"].set_data([x - h, x + h], [fm, fp])
    texts = A["legend"].get_texts()
    texts[1].set_text(f"tangent: slope f'(x) = {slope:.6g}")
    texts[2].set_text(f"forward secant, h = {h:.3g}: slope {fwd:.6g}, error {fwd - slope:+.2e}")
    texts[3].set_text(f"central secant, h = {h:.3g}: slope {ctr:.6g}, error {ctr - slope:+.2e}")
    A["legend"].axes.set_title(f"f and its tangent at x = {x:.4g}; secants at step h", fontsize=10)
    # the V: both schemes' errors over 13 decades of h, the drawn h circled
    hs = onp.logspace(-DECADES, 0, 4 * DECADES + 1) * art.span
    errs = onp.array([secant_slopes(fv, x, s) for s in hs]) - slope
    errs = onp.abs(errs)
    floor = max(float(errs[errs > 0].min()) / 10 if onp.any(errs > 0) else 1e-17, 1e-300)
    A["v_forward"].set_data(hs, onp.maximum(errs[:, 0], floor))
    A["v_central"].set_data(hs, onp.maximum(errs[:, 1], floor))
    A["v_marks"].set_data([h, h], [max(abs(fwd - slope), floor), max(abs(ctr - slope), floor)])
    A["v_step"].set_xdata([h, h])
    axv = A["v_forward"].axes
    axv.set_xlim(min(hs[0], h) / 2, max(hs[-1], h) * 2)
    top = max(float(errs.max()), abs(fwd - slope), abs(ctr - slope), floor)
    axv.set_ylim(floor / 3, top * 30)
