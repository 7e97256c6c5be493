"""The step sweep: |FD estimate - AD value| of one entry against the step (matplotlib only)."""

from __future__ import annotations

from typing import Any

import numpy as onp

from .heatmap import TICK_FONT, _new_axes

__all__ = ["plot_step_sweep", "draw_step_sweep", "update_step_sweep"]


def plot_step_sweep(
    f: Any,
    *args: Any,
    entry: tuple = (0, 0),
    wrt: Any = 0,
    ax: Any = None,
    steps: Any = None,
    **options: Any,
) -> dict:
    """``|FD estimate - analytic|`` of one entry against the step, log–log.

    Forward, central and Richardson differences (and the complex step when f
    takes complex input safely) across steps 1e-16..1e-1 show the truncation
    / round-off "V"; the default step of each method is marked (dotted). An
    error of exactly 0 (the complex step often has none) is drawn on a line
    marked "exact". ``entry`` is ``(row, col)`` of the 2-D (real) Jacobian;
    ``options`` (``backend``, ``precision``) go to
    :func:`gradexplorer.check.sweep.step_sweep`.

    >>> import autograd.numpy as anp
    >>> lines = plot_step_sweep(anp.sin, anp.array([0.5, 1.0]), entry=(1, 1))
    >>> sorted(lines)
    ['central', 'complex_step', 'exact', 'forward', 'richardson']
    """
    from ..check.sweep import step_sweep

    sweep = step_sweep(f, *args, entry=entry, wrt=wrt, steps=steps, **options)
    return draw_step_sweep(sweep, _new_axes(ax, None, (6.5, 4.6)))


SWEEP_STYLES = {
    "forward": ("#1b9e77", "o"),
    "central": ("#d95f02", "s"),
    "richardson": ("#7570b3", "^"),
    "complex_step": ("#e7298a", "d"),
}


def _exact_floor(errors: dict) -> float:
    """Where an error of exactly 0 is drawn: a decade below the smallest nonzero one."""
    positive = [e[e > 0] for e in errors.values()]
    smallest = min((float(p.min()) for p in positive if p.size), default=1e-16)
    return 10.0 ** (onp.floor(onp.log10(smallest)) - 1)


def _sweep_title(sweep) -> str:
    return f"entry {sweep.label}: FD error against the step\n(AD value {sweep.analytic:.6g})"


def draw_step_sweep(sweep: Any, ax: Any) -> dict:
    """Draw a :class:`~gradexplorer.check.sweep.StepSweep` on ``ax``; the lines by method
    (the "exact" floor line under the key ``"exact"`` when any error is 0)."""
    floor = _exact_floor(sweep.errors)
    lines = {}
    for method, errs in sweep.errors.items():
        color, marker = SWEEP_STYLES[method]
        (lines[method],) = ax.loglog(
            sweep.steps, onp.where(errs > 0, errs, floor), marker=marker, ms=3, color=color,
            label=method.replace("_", " "),
        )  # fmt: skip
        chosen = sweep.chosen.get(method)
        if chosen is not None:
            ax.axvline(chosen, color=color, ls=":", lw=1.2)
    lines["exact"] = ax.axhline(floor, color="#777777", ls="--", lw=0.8, label="error exactly 0")
    ax.plot([], [], color="black", ls=":", lw=1.2, label="default step (dotted)")
    ax.set_xlabel("step h")
    ax.set_ylabel("|FD estimate − AD value|")
    ax.grid(True, which="major", alpha=0.3)
    ax.tick_params(labelsize=TICK_FONT)
    _sweep_decorations(lines, sweep, ax)
    return lines


def _sweep_decorations(lines: dict, sweep: Any, ax: Any) -> None:
    """Title, the "exact" line only when an error is exactly 0, scale and legend."""
    exact = any(bool(onp.any(e == 0)) for e in sweep.errors.values())
    lines["exact"].set_visible(exact)
    ax.set_title(_sweep_title(sweep), fontsize=10)
    ax.relim(visible_only=True)
    ax.autoscale_view()
    shown = [h for h in ax.get_lines() if h.get_visible() and not h.get_label().startswith("_")]
    # inside the axes: below them it was cut off in a figure laid out by hand (lesson 5's
    # plt.figure(figsize=(6, 4)) left no room for it), and students read the best steps
    # off it; "best" keeps it off the V's bottom, half transparent over what it covers
    ax.legend(handles=shown, fontsize=8, loc="best", framealpha=0.8, ncol=1)


def update_step_sweep(lines: dict, sweep: Any) -> bool:
    """Move the lines of :func:`draw_step_sweep` to a new sweep (same methods)."""
    if set(lines) - {"exact"} != set(sweep.errors):
        return False
    floor = _exact_floor(sweep.errors)
    for method, errs in sweep.errors.items():
        lines[method].set_ydata(onp.where(errs > 0, errs, floor))
    lines["exact"].set_ydata([floor, floor])
    _sweep_decorations(lines, sweep, lines["exact"].axes)
    return True
