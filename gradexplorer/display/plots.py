"""Pictures of derivatives (matplotlib only; no widgets).

Every function draws on a given ``ax``/``fig`` or makes a new
:class:`~matplotlib.figure.Figure` (not a pyplot one), and returns its
artists or figure; ``draw_*``/``update_*`` pairs let the explorer update the
same artists in place. Heatmap conventions are in :mod:`gradexplorer.heatmap`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as onp
from matplotlib import patheffects
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from .heatmap import (  # noqa: F401 - re-exported: plot is the display API
    TICK_FONT,
    Heatmap,
    _new_axes,
    figure_png,
    plot_jacobian,
    pool_max_abs,
    update_heatmap,
)
from .selection import mark_selection  # noqa: F401 - re-exported
from .values import max_abs

__all__ = [
    "plot_jacobian",
    "plot_check",
    "plot_hessian",
    "plot_complex_blocks",
    "plot_step_sweep",
    "draw_step_sweep",
    "update_step_sweep",
    "mark_selection",
    "CheckArtists",
    "pool_max_abs",
    "update_heatmap",
    "Heatmap",
]


# ---------------------------------------------------------------- check


@dataclass
class CheckArtists:
    """What :func:`draw_check` drew, for :func:`update_check`."""

    fig: Any
    heatmaps: list
    marks: list
    shape: tuple
    mode: str
    marked: tuple = ()  # the (row, col) of the outlined entries


def plot_check(report: Any, fig: Any = None) -> Figure:
    """analytic, numeric, ``|difference|`` and violation, for a CheckReport.

    Analytic and numeric share one signed scale; the difference is on a log
    scale; the violation (difference / allowed error) has the pass/fail line
    at 1 on its colourbar. Failing cells are outlined, the worst is marked
    with a star, the verdict is the title. A fast-mode report (no dense
    matrices) draws its located entries on the index grid.

    >>> import gradexplorer as gx, autograd.numpy as anp
    >>> fig = plot_check(gx.check_grads(anp.sin, anp.ones(3)))
    >>> len(fig.axes) >= 4
    True
    """
    return draw_check(report, fig).fig


def _check_title(report) -> tuple[str, str]:
    verdict = report.status
    title = (
        f"{report.checker}({report.function}) {verdict}  [{report.mode} mode, "
        f"{report.method}, {report.dtype}]"
    )
    return title, "#1a7f37" if report.passed else "#b42318"


def draw_check(report: Any, fig: Any = None) -> CheckArtists:
    fig = fig or Figure(figsize=(8.6, 7.2), layout="constrained")
    fig.clear()
    title, color = _check_title(report)
    fig.suptitle(title, color=color, fontweight="bold")
    if report.analytic is None:
        ax = fig.add_subplot()
        m, n = report.shape
        ax.set_xlim(-0.5, n - 0.5)
        ax.set_ylim(m - 0.5, -0.5)
        ax.set_xlabel("input (column)")
        ax.set_ylabel("output (row)")
        ax.set_title("entries located by group testing")
        if report.mismatches:
            cols = [e.col for e in report.mismatches]
            rows = [e.row for e in report.mismatches]
            ax.scatter(cols, rows, s=60, marker="s", color="#b42318")
            for e in report.mismatches[:5]:
                ax.annotate(
                    e.label, (e.col, e.row), textcoords="offset points", xytext=(6, 6), fontsize=8
                )
        return CheckArtists(fig, [], [], report.shape, "fast")
    # a 2 x 2 grid fits a notebook's output width; four panels in a row do not
    axes = fig.subplots(2, 2).ravel()
    labels = dict(
        row_label=report.row_label,
        col_label=report.col_label,
        row_blocks=report.row_blocks,
        col_blocks=report.column_blocks,
    )
    labels.update(axis_labels(report))
    vmax = max_abs(report.numeric, report.analytic)
    heatmaps = [
        plot_jacobian(report.analytic, axes[0], title="analytic (AD)", vmax=vmax, **labels),
        plot_jacobian(report.numeric, axes[1], title="numeric (FD)", vmax=vmax, **labels),
        plot_jacobian(report.abs_err, axes[2], kind="log", title="|analytic - numeric|", **labels),
        plot_jacobian(
            report.violation,
            axes[3],
            kind="violation",
            title="violation = |diff| / allowed",
            **labels,
        ),
    ]
    art = CheckArtists(fig, heatmaps, [], report.shape, "full")
    _mark_failures(art, report)
    return art


def axis_labels(report: Any) -> dict:
    """Axis labels naming f's inputs and outputs, as the report's blocks do.

    >>> import gradexplorer as gx, numpy as np
    >>> axis_labels(gx.check_grads(lambda x, w: x * w, np.ones(2), np.ones(2), wrt=(0, 1)))
    {'xlabel': 'inputs x, w (flattened)', 'ylabel': 'output y (flattened)'}
    """
    ins, outs = list(report.column_blocks), list(report.row_blocks)
    xlabel = f"input {ins[0]}" if len(ins) == 1 else "inputs " + ", ".join(ins)
    ylabel = f"output {outs[0]}" if len(outs) == 1 else "outputs " + ", ".join(outs)
    return {"xlabel": xlabel + " (flattened)", "ylabel": ylabel + " (flattened)"}


def update_check(art: CheckArtists, report: Any) -> bool:
    """Redraw a check figure in place; False when the layout must change."""
    if art.mode != "full" or report.analytic is None or report.shape != art.shape:
        return False
    vmax = max_abs(report.numeric, report.analytic)
    mats = (report.analytic, report.numeric, report.abs_err, report.violation)
    for h, M, v in zip(art.heatmaps, mats, (vmax, vmax, None, None)):
        update_heatmap(h, M, vmax=v)
    title, color = _check_title(report)
    art.fig.suptitle(title, color=color, fontweight="bold")
    _mark_failures(art, report)
    return True


def _mark_failures(art: CheckArtists, report) -> None:
    for mark in art.marks:
        mark.remove()
    art.marks.clear()
    art.marked = tuple((e.row, e.col) for e in report.mismatches[:400])
    br, bc = art.heatmaps[0].block
    # orange on a dark rim: visible on every colour of the four scales, and apart
    # from the grid's block separators (black, thin)
    rim = [patheffects.withStroke(linewidth=3.5, foreground="black")]
    for e in report.mismatches[:400]:
        for h in art.heatmaps:
            art.marks.append(
                h.ax.add_patch(
                    Rectangle(
                        (e.col - e.col % bc - 0.5, e.row - e.row % br - 0.5),
                        bc,
                        br,
                        fill=False,
                        edgecolor="#ff9900",
                        lw=2.0,
                        path_effects=rim,
                        zorder=4,
                    )
                )
            )
    if report.mismatches:
        worst = report.mismatches[0]
        for h in art.heatmaps:
            # in the cell's corner, clear of the value written in it
            (star,) = h.ax.plot(
                worst.col - 0.3,
                worst.row - 0.3,
                marker="*",
                color="black",
                ms=11,
                markeredgecolor="white",
                label="worst entry",
            )
            art.marks.append(star)


# ---------------------------------------------------------------- hessian


@dataclass
class PanelArtists:
    """Heatmaps and lines of a multi-panel figure, for in-place updates."""

    fig: Any
    heatmaps: list
    lines: list
    shape: tuple
    texts: list = field(default_factory=list)


def plot_hessian(H: Any, fig: Any = None) -> Figure:
    """Heatmap of H, its asymmetry H - Hᵀ, and the eigenvalues of (H + Hᵀ)/2.

    Inputs are flattened: H is drawn as an n x n matrix.

    >>> fig = plot_hessian(onp.array([[2.0, 1.0], [1.0, -3.0]]))
    >>> [ax.get_title() for ax in fig.axes[:3]]
    ['Hessian', 'asymmetry H - Hᵀ', 'eigenvalues of (H + Hᵀ)/2']
    """
    return draw_hessian(H, fig).fig


def _square(H: Any) -> onp.ndarray:
    H = onp.asarray(H, dtype=float)
    n = int(round(onp.sqrt(H.size)))
    if n * n != H.size:
        raise ValueError(f"a Hessian has n x n entries; got shape {H.shape}.")
    return H.reshape(n, n)


def _eigen(H: onp.ndarray) -> tuple[onp.ndarray, str]:
    sym = (H + H.T) / 2
    if not onp.all(onp.isfinite(sym)):
        return onp.full(H.shape[0], onp.nan), "non-finite entries: no eigenvalues"
    ev = onp.linalg.eigvalsh(sym)
    kind = (
        "positive definite"
        if onp.all(ev > 0)
        else "negative definite"
        if onp.all(ev < 0)
        else "indefinite"
    )
    return ev, kind


def draw_hessian(H: Any, fig: Any = None, name: str = "x") -> PanelArtists:
    H = _square(H)
    n = H.shape[0]
    fig = fig or Figure(figsize=(8.6, 6.8), layout="constrained")
    fig.clear()
    panels = fig.subplot_mosaic([["H", "A"], ["E", "E"]], height_ratios=[3, 2])
    a0, a1, a2 = panels["H"], panels["A"], panels["E"]
    hm = [
        plot_jacobian(H, a0, title="Hessian", xlabel=f"{name}[j]", ylabel=f"{name}[i]"),
        plot_jacobian(
            H - H.T, a1, title="asymmetry H - Hᵀ", xlabel=f"{name}[j]", ylabel=f"{name}[i]"
        ),
    ]
    ev, kind = _eigen(H)
    a2.axhline(0, color="grey", lw=0.8)
    (line,) = a2.plot(range(n), ev, "o", color="#2166ac")
    a2.set_title("eigenvalues of (H + Hᵀ)/2")
    a2.set_xlabel("index (ascending)")
    a2.xaxis.set_major_locator(MaxNLocator(integer=True))
    a2.set_ylabel("eigenvalue")
    text = a2.text(0.02, 0.95, kind, transform=a2.transAxes, va="top", fontsize=10)
    return PanelArtists(fig, hm, [line], H.shape, [text])


def update_hessian(art: PanelArtists, H: Any) -> bool:
    H = _square(H)
    if H.shape != art.shape:
        return False
    update_heatmap(art.heatmaps[0], H)
    update_heatmap(art.heatmaps[1], H - H.T)
    ev, kind = _eigen(H)
    art.lines[0].set_ydata(ev)
    art.lines[0].axes.relim()
    art.lines[0].axes.autoscale_view()
    art.texts[0].set_text(kind)
    return True


# ---------------------------------------------------------------- complex


def plot_complex_blocks(f: Any, *args: Any, wrt: Any = 0, fig: Any = None) -> Figure:
    """The four real blocks of a complex function's Jacobian (one shared
    scale) and the Cauchy–Riemann residual, which is zero iff f is
    holomorphic here.

    >>> import autograd.numpy as anp
    >>> fig = plot_complex_blocks(lambda z: z**2, anp.array([1 + 1j, 2j]))
    >>> 'holomorphic' in fig.get_suptitle()
    True
    """
    from ..ad.complex import complex_blocks

    return draw_complex(complex_blocks(f, *args, wrt=wrt), fig).fig


def _blocks_of(b) -> tuple:
    return (b.dre_dre, b.dre_dim, b.dim_dre, b.dim_dim)


def _complex_title(b) -> str:
    return (
        f"{'holomorphic' if b.is_holomorphic() else 'not holomorphic'} here (max "
        f"Cauchy–Riemann residual {onp.max(b.cr_residual, initial=0.0):.3g})"
    )


def draw_complex(b: Any, fig: Any = None) -> PanelArtists:
    """Draw a :class:`~gradexplorer.ComplexBlocks`."""
    fig = fig or Figure(figsize=(8.6, 6.4), layout="constrained")
    fig.clear()
    # the four blocks as the 2 x 2 real Jacobian they are; the residual beside them
    mosaic = fig.subplot_mosaic([["rr", "ri", "cr"], ["ir", "ii", "cr"]])
    axes = [mosaic[k] for k in ("rr", "ri", "ir", "ii", "cr")]
    vmax = max_abs(*_blocks_of(b)) or 1.0
    x, y = b.in_name, b.out_name
    titles = (f"dRe {y}/dRe {x}", f"dRe {y}/dIm {x}", f"dIm {y}/dRe {x}", f"dIm {y}/dIm {x}")
    hm = [
        plot_jacobian(blk, ax, title=t, vmax=vmax, xlabel=f"{x}[j]", ylabel=f"{y}[i]")
        for ax, blk, t in zip(axes, _blocks_of(b), titles)
    ]
    hm.append(
        plot_jacobian(
            b.cr_residual,
            axes[4],
            kind="magnitude",
            title="Cauchy–Riemann residual\n(0 where holomorphic)",
            xlabel=f"input {x}[j]",
            ylabel=f"output {y}[i]",
        )
    )
    fig.suptitle(_complex_title(b))
    return PanelArtists(fig, hm, [], b.dre_dre.shape)


def update_complex(art: PanelArtists, b: Any) -> bool:
    if b.dre_dre.shape != art.shape:
        return False
    vmax = max_abs(*_blocks_of(b)) or 1.0
    for h, blk in zip(art.heatmaps, _blocks_of(b)):
        update_heatmap(h, blk, vmax=vmax)
    update_heatmap(art.heatmaps[4], b.cr_residual)
    art.fig.suptitle(_complex_title(b))
    return True


from .sweep import (  # noqa: E402 - re-exported: plots is the display API
    draw_step_sweep,
    plot_step_sweep,
    update_step_sweep,
)
