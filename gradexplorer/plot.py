"""Pictures of derivatives (matplotlib only; no widgets).

Every function draws on a given ``ax``/``fig`` or makes a new
:class:`~matplotlib.figure.Figure` (not a pyplot one), and returns its
artists so that callers can update them in place (:func:`update_heatmap`).

- signed values: a diverging colormap centred on 0 (RdBu, colour-blind safe);
- errors: log scale, sequential colormaps (viridis / cividis);
- NaN / +inf / -inf: drawn grey and named in words (cell text or caption);
- large matrices: pooled in blocks keeping the entry of largest |value|, so a
  single bad entry is never averaged away; the block size is in the caption.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

import matplotlib
import numpy as onp
from matplotlib import colors
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

__all__ = [
    "plot_jacobian",
    "plot_check",
    "plot_hessian",
    "plot_complex_blocks",
    "plot_step_sweep",
    "pool_max_abs",
    "update_heatmap",
    "Heatmap",
    "png_of",
]

ANNOTATE_MAX = 12  # matrices up to 12 x 12 get their values written in the cells
MAX_CELLS = 128  # larger matrices are pooled down to at most this many cells a side
SIGNED_CMAP = "RdBu_r"
ERROR_CMAP = "viridis"
VIOLATION_CMAP = "cividis"
BAD_COLOR = "#9e9e9e"


def pool_max_abs(M: Any, max_cells: int = MAX_CELLS) -> tuple[onp.ndarray, tuple[int, int]]:
    """Pool M in blocks, keeping in each the entry of largest magnitude (NaN first).

    Returns ``(pooled, (block_rows, block_cols))``.

    >>> M = onp.zeros((300, 300)); M[123, 45] = -7.0
    >>> P, block = pool_max_abs(M, 100)
    >>> P.shape, block, P.min()
    ((100, 100), (3, 3), -7.0)
    """
    M = onp.asarray(M, dtype=float)
    m, n = M.shape
    br, bc = max(1, -(-m // max_cells)), max(1, -(-n // max_cells))
    if br == 1 and bc == 1:
        return M, (1, 1)
    pm, pn = -(-m // br), -(-n // bc)
    padded = onp.zeros((pm * br, pn * bc))
    padded[:m, :n] = M
    blocks = padded.reshape(pm, br, pn, bc).transpose(0, 2, 1, 3).reshape(pm, pn, br * bc)
    magnitude = onp.where(onp.isnan(blocks), onp.inf, onp.abs(blocks))
    pick = onp.argmax(magnitude, axis=2)
    return onp.take_along_axis(blocks, pick[..., None], axis=2)[..., 0], (br, bc)


def _as_matrix(J: Any, out_ndim: int | None = None) -> onp.ndarray:
    J = getattr(J, "jacobian", J)
    J = onp.asarray(J)
    if onp.iscomplexobj(J):
        raise TypeError(
            "plot_jacobian draws real matrices; for a complex Jacobian use "
            "gx.real_jacobian(f) (or plot_complex_blocks(f, *args))."
        )
    if J.ndim == 2:
        return J.astype(float)
    if J.ndim < 2:
        return J.reshape(1, -1).astype(float)
    k = J.ndim - J.ndim // 2 if out_ndim is None else out_ndim
    return J.reshape(int(onp.prod(J.shape[:k])), -1).astype(float)


def _nonfinite_words(M: onp.ndarray) -> str:
    parts = []
    for name, mask in (("NaN", onp.isnan(M)), ("+inf", onp.isposinf(M)), ("-inf", onp.isneginf(M))):
        if mask.any():
            parts.append(f"{int(mask.sum())} {name}")
    return ", ".join(parts)


def _cell_text(v: float) -> str:
    if onp.isnan(v):
        return "NaN"
    if onp.isposinf(v):
        return "+inf"
    if onp.isneginf(v):
        return "-inf"
    return f"{v:.3g}"


@dataclass
class Heatmap:
    """The artists of one heatmap, kept so that updates reuse them."""

    ax: Any
    image: Any
    colorbar: Any
    texts: list = field(default_factory=list)
    caption: str = ""
    xlabel: str = ""
    separators: list = field(default_factory=list)
    kind: str = "signed"  # "signed", "log" or "violation"
    block: tuple = (1, 1)
    shape: tuple = (0, 0)
    symlog: bool = False


def _norm(M: onp.ndarray, kind: str, symlog: bool = False, vmax: float | None = None):
    finite = M[onp.isfinite(M)]
    if kind == "signed":
        half = float(onp.max(onp.abs(finite), initial=0.0)) if vmax is None else vmax
        half = half or 1.0
        if symlog:
            nonzero = onp.abs(finite[finite != 0])
            lin = float(onp.percentile(nonzero, 10)) if nonzero.size else half * 1e-3
            return colors.SymLogNorm(linthresh=max(lin, half * 1e-12), vmin=-half, vmax=half)
        return colors.CenteredNorm(vcenter=0.0, halfrange=half)
    positive = finite[finite > 0]
    lo = float(positive.min()) if positive.size else 1e-16
    hi = float(positive.max()) if positive.size else 1.0
    if kind == "violation":
        lo, hi = min(lo, 1e-3), max(hi, 10.0)  # keep the pass/fail line (1) inside the scale
    if hi <= lo:
        hi = lo * 10
    return colors.LogNorm(vmin=lo, vmax=hi)


def _cmap(kind: str):
    name = {"signed": SIGNED_CMAP, "log": ERROR_CMAP, "violation": VIOLATION_CMAP}[kind]
    return matplotlib.colormaps[name].with_extremes(bad=BAD_COLOR)


def _display(M: onp.ndarray, kind: str, norm) -> onp.ndarray:
    """Non-finite cells are masked (drawn grey); on log scales exact zeros sit
    at the bottom of the scale, since "no error" is not "no value"."""
    shown = onp.where(onp.isfinite(M), M, onp.nan)
    if kind != "signed":
        shown = onp.where(shown > 0, shown, onp.where(onp.isnan(shown), onp.nan, norm.vmin))
    return shown  # NaN cells take the colormap's "bad" colour


def _new_axes(ax, fig, figsize=(5, 4)):
    if ax is not None:
        return ax
    fig = fig or Figure(figsize=figsize, layout="constrained")
    return fig.add_subplot()


def plot_jacobian(
    J: Any,
    ax: Any = None,
    *,
    row_label: Any = None,
    col_label: Any = None,
    row_blocks: dict | None = None,
    col_blocks: dict | None = None,
    out_ndim: int | None = None,
    kind: str = "signed",
    symlog: bool = False,
    title: str | None = None,
    xlabel: str = "input x[j]",
    ylabel: str = "output y[i]",
    max_cells: int = MAX_CELLS,
    vmax: float | None = None,
) -> Heatmap:
    """Heatmap of a Jacobian (rows = outputs, columns = inputs).

    Parameters
    ----------
    J : array or FDResult
        2-D, or ``out.shape + in.shape`` (``out_ndim`` says where to split).
    ax : matplotlib Axes, optional
    row_label, col_label : callable, optional
        ``i -> "y[2, 1]"`` for tick labels of small matrices.
    row_blocks, col_blocks : dict of slices, optional
        Separator lines between stacked outputs / concatenated inputs.
    kind : {"signed", "log", "violation"}
    symlog : bool
        Symmetric log colour scale for wide dynamic ranges.

    Returns
    -------
    Heatmap

    Examples
    --------
    >>> h = plot_jacobian(onp.array([[1.0, -2.0], [onp.nan, onp.inf]]))
    >>> [t.get_text() for t in h.texts]
    ['1', '-2', 'NaN', '+inf']
    """
    M = _as_matrix(J, out_ndim)
    ax = _new_axes(ax, None)
    P, block = pool_max_abs(M, max_cells)
    norm = _norm(P, kind, symlog, vmax)
    # extent keeps the axes in the original index coordinates when pooled
    image = ax.imshow(
        _display(P, kind, norm),
        cmap=_cmap(kind),
        norm=norm,
        interpolation="nearest",
        aspect="auto",
        extent=(-0.5, M.shape[1] - 0.5, M.shape[0] - 0.5, -0.5),
    )
    cbar = ax.figure.colorbar(image, ax=ax, shrink=0.9)
    if kind == "violation":
        cbar.ax.axhline(1.0, color="red", lw=2)
        cbar.set_label("violation (>1 fails)")
    h = Heatmap(ax, image, cbar, kind=kind, block=block, shape=M.shape, symlog=symlog)
    _decorate(h, M, P, row_label, col_label, row_blocks, col_blocks, xlabel, ylabel, title)
    return h


def _decorate(h, M, P, row_label, col_label, row_blocks, col_blocks, xlabel, ylabel, title):
    ax = h.ax
    h.xlabel = xlabel
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    m, n = M.shape
    if h.block == (1, 1) and m <= 24 and n <= 24:
        ax.set_xticks(range(n))
        ax.set_yticks(range(m))
        if col_label:
            ax.set_xticklabels([col_label(j) for j in range(n)], rotation=90, fontsize=7)
        if row_label:
            ax.set_yticklabels([row_label(i) for i in range(m)], fontsize=7)
    for blocks, line in ((row_blocks, ax.axhline), (col_blocks, ax.axvline)):
        for sl in list((blocks or {}).values())[1:]:
            h.separators.append(line(sl.start - 0.5, color="black", lw=1.2))
    if m <= ANNOTATE_MAX and n <= ANNOTATE_MAX and h.block == (1, 1):
        for i in range(m):
            for j in range(n):
                h.texts.append(ax.text(j, i, "", ha="center", va="center", fontsize=8))
    _update_texts(h, M)


def _update_texts(h: Heatmap, M: onp.ndarray) -> None:
    """Cell values in contrasting ink, and the caption under the x label."""
    if h.texts:
        shown = _display(M, h.kind, h.image.norm).ravel()
        rgba = h.image.cmap(h.image.norm(onp.ma.masked_invalid(shown)))
        luminance = rgba[:, :3] @ onp.array([0.299, 0.587, 0.114])
        for t, v, lum in zip(h.texts, M.ravel(), luminance):
            t.set_text(_cell_text(v))
            t.set_color("white" if lum < 0.45 else "black")
    parts = []
    if h.block != (1, 1):
        parts.append(
            f"{M.shape[0]} x {M.shape[1]} pooled in {h.block[0]}x{h.block[1]} blocks (max |value|)"
        )
    words = _nonfinite_words(M)
    if words:
        parts.append(f"grey: {words}")
    h.caption = "; ".join(parts)
    h.ax.set_xlabel(h.xlabel + (f"\n{h.caption}" if h.caption else ""))


def update_heatmap(
    h: Heatmap, J: Any, out_ndim: int | None = None, vmax: float | None = None
) -> bool:
    """Redraw an existing heatmap with new values (same shape): ``set_data``
    and ``set_norm``, no new artists. Returns False when the shape changed
    (the caller then draws afresh).
    """
    M = _as_matrix(J, out_ndim)
    if M.shape != h.shape:
        return False
    cells = max(-(-M.shape[0] // h.block[0]), -(-M.shape[1] // h.block[1]))
    P, _ = pool_max_abs(M, cells)
    norm = _norm(P, h.kind, h.symlog, vmax)
    h.image.set_norm(norm)
    h.image.set_data(_display(P, h.kind, norm))
    _update_texts(h, M)
    return True


# ---------------------------------------------------------------- check


@dataclass
class CheckArtists:
    """What :func:`draw_check` drew, for :func:`update_check`."""

    fig: Any
    heatmaps: list
    marks: list
    shape: tuple
    mode: str


def plot_check(report: Any, fig: Any = None) -> Figure:
    """analytic | numeric | |difference| | violation, for a CheckReport.

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
    verdict = "PASSED" if report.passed else f"FAILED: {len(report.mismatches)} wrong entries"
    title = (
        f"check_grads({report.function}) {verdict}  [{report.mode} mode, "
        f"{report.method}, {report.dtype}]"
    )
    return title, "#1a7f37" if report.passed else "#b42318"


def draw_check(report: Any, fig: Any = None) -> CheckArtists:
    fig = fig or Figure(figsize=(15, 3.8), layout="constrained")
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
    axes = fig.subplots(1, 4)
    labels = dict(
        row_label=report.row_label,
        col_label=report.col_label,
        row_blocks=report.row_blocks,
        col_blocks=report.column_blocks,
    )
    vmax = _shared_vmax(report)
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


def _shared_vmax(report) -> float | None:
    both = onp.concatenate([report.numeric.ravel(), report.analytic.ravel()])
    both = onp.abs(both[onp.isfinite(both)])
    return float(both.max()) if both.size and both.max() > 0 else None


def update_check(art: CheckArtists, report: Any) -> bool:
    """Redraw a check figure in place; False when the layout must change."""
    if art.mode != "full" or report.analytic is None or report.shape != art.shape:
        return False
    vmax = _shared_vmax(report)
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
    br, bc = art.heatmaps[0].block
    for e in report.mismatches[:400]:
        for h in art.heatmaps:
            art.marks.append(
                h.ax.add_patch(
                    Rectangle(
                        (e.col - e.col % bc - 0.5, e.row - e.row % br - 0.5),
                        bc,
                        br,
                        fill=False,
                        edgecolor="#ff7f00",
                        lw=1.5,
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


def draw_hessian(H: Any, fig: Any = None) -> PanelArtists:
    H = _square(H)
    n = H.shape[0]
    fig = fig or Figure(figsize=(13, 3.8), layout="constrained")
    fig.clear()
    a0, a1, a2 = fig.subplots(1, 3)
    hm = [
        plot_jacobian(H, a0, title="Hessian", xlabel="input x[j]", ylabel="input x[i]"),
        plot_jacobian(
            H - H.T, a1, title="asymmetry H - Hᵀ", xlabel="input x[j]", ylabel="input x[i]"
        ),
    ]
    ev, kind = _eigen(H)
    a2.axhline(0, color="grey", lw=0.8)
    (line,) = a2.plot(range(n), ev, "o", color="#2166ac")
    a2.set_title("eigenvalues of (H + Hᵀ)/2")
    a2.set_xlabel("index (ascending)")
    a2.set_ylabel("eigenvalue")
    text = a2.text(0.02, 0.98, kind, transform=a2.transAxes, va="top", fontsize=9)
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
    from .complex import complex_blocks

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
    fig = fig or Figure(figsize=(16, 3.6), layout="constrained")
    fig.clear()
    axes = fig.subplots(1, 5)
    vmax = max(float(onp.nanmax(onp.abs(blk), initial=0.0)) for blk in _blocks_of(b)) or 1.0
    x, y = b.in_name, b.out_name
    titles = (f"dRe {y}/dRe {x}", f"dRe {y}/dIm {x}", f"dIm {y}/dRe {x}", f"dIm {y}/dIm {x}")
    hm = [
        plot_jacobian(blk, ax, title=t, vmax=vmax, xlabel=f"input {x}[j]", ylabel=f"output {y}[i]")
        for ax, blk, t in zip(axes, _blocks_of(b), titles)
    ]
    hm.append(
        plot_jacobian(
            b.cr_residual,
            axes[4],
            kind="log",
            title="Cauchy–Riemann residual",
            xlabel=f"input {x}[j]",
            ylabel=f"output {y}[i]",
        )
    )
    fig.suptitle(_complex_title(b))
    return PanelArtists(fig, hm, [], b.dre_dre.shape)


def update_complex(art: PanelArtists, b: Any) -> bool:
    if b.dre_dre.shape != art.shape:
        return False
    vmax = max(float(onp.nanmax(onp.abs(blk), initial=0.0)) for blk in _blocks_of(b)) or 1.0
    for h, blk in zip(art.heatmaps, _blocks_of(b)):
        update_heatmap(h, blk, vmax=vmax)
    update_heatmap(art.heatmaps[4], b.cr_residual)
    art.fig.suptitle(_complex_title(b))
    return True


# ---------------------------------------------------------------- step sweep


def plot_step_sweep(
    f: Any, *args: Any, entry: tuple = (0, 0), wrt: Any = 0, ax: Any = None, steps: Any = None
) -> dict:
    """|FD estimate - analytic| of one entry against the step, log–log.

    Forward, central and Richardson differences (and the complex step when f
    takes complex input safely) across steps 1e-16..1e-1 show the truncation
    / round-off "V"; the default step of each method is marked. ``entry`` is
    ``(row, col)`` of the 2-D (real) Jacobian.

    >>> import autograd.numpy as anp
    >>> lines = plot_step_sweep(anp.sin, anp.array([0.5, 1.0]), entry=(1, 1))
    >>> sorted(lines)
    ['central', 'complex_step', 'forward', 'richardson']
    """
    from .sweep import step_sweep

    sweep = step_sweep(f, *args, entry=entry, wrt=wrt, steps=steps)
    ax = _new_axes(ax, None, (5.5, 4))
    styles = {
        "forward": ("#1b9e77", "o"),
        "central": ("#d95f02", "s"),
        "richardson": ("#7570b3", "^"),
        "complex_step": ("#e7298a", "d"),
    }
    lines = {}
    for method, errs in sweep.errors.items():
        color, marker = styles[method]
        shown = onp.where(errs > 0, errs, onp.nan)
        (lines[method],) = ax.loglog(
            sweep.steps, shown, marker=marker, ms=3, color=color, label=method
        )
        chosen = sweep.chosen.get(method)
        if chosen is not None:
            ax.axvline(chosen, color=color, ls=":", lw=1)
    ax.set_xlabel("step h")
    ax.set_ylabel("|FD estimate - analytic|")
    ax.set_title(f"step sweep of {sweep.label} (analytic {sweep.analytic:.6g})")
    ax.legend(fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    return lines


# ---------------------------------------------------------------- png


def png_of(kind: str, obj: Any) -> bytes:
    """Render a result to PNG bytes without touching pyplot (for ``_repr_png_``)."""
    if kind == "check":
        fig = plot_check(obj)
    else:
        fig = Figure(figsize=(5, 4), layout="constrained")
        plot_jacobian(obj, fig.add_subplot(), title=f"{obj.method} finite differences")
    return figure_png(fig)


def freeze_layout(fig: Figure) -> None:
    """Lay the figure out once, then keep those positions.

    Constrained layout costs more than the drawing itself; values change on
    every update, the layout need not.
    """
    if not isinstance(fig.canvas, FigureCanvasAgg) and not hasattr(fig.canvas, "draw_idle"):
        FigureCanvasAgg(fig)
    fig.set_layout_engine("constrained")
    fig.draw_without_rendering()
    fig.set_layout_engine("none")


def figure_png(fig: Figure, dpi: int = 80) -> bytes:
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
