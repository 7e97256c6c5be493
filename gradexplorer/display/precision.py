"""The picture of a low-precision check: where the float32 gradient is worse
than float32 allows (matplotlib only)."""

from __future__ import annotations

from typing import Any

import numpy as onp
from matplotlib.figure import Figure

from .heatmap import plot_jacobian
from .plots import CheckArtists, _mark_failures

__all__ = ["plot_precision"]


def plot_precision(report: Any, fig: Any = None) -> Figure:
    """low precision | float64 | error in eps | violation, for a PrecisionReport.

    The two Jacobians share one signed scale; the error is in eps of the low
    precision times the block's scale, on a log scale; the violation (error /
    what the precision allows) fails above 1. Failing cells are outlined.

    >>> import numpy as np, autograd.numpy as anp, gradexplorer as gx
    >>> r = gx.check_precision(anp.tanh, np.linspace(-2, 2, 4).astype(np.float32))
    >>> len(plot_precision(r).axes) >= 4
    True
    """
    fig = fig or Figure(figsize=(15, 3.8), layout="constrained")
    fig.clear()
    verdict = (
        "PASSED: as good as its precision allows"
        if report.passed
        else f"FAILED: {len(report.mismatches)} entries worse than {report.low_dtype} allows"
    )
    fig.suptitle(
        f"check_precision({report.function}) {verdict}  [{report.low_dtype} vs float64]",
        color="#1a7f37" if report.passed else "#b42318",
        fontweight="bold",
    )
    axes = fig.subplots(1, 4)
    labels = dict(
        row_label=report.row_label,
        col_label=report.col_label,
        row_blocks=report.row_blocks,
        col_blocks=report.column_blocks,
    )
    both = onp.concatenate([report.reference.ravel(), report.analytic.ravel()])
    both = onp.abs(both[onp.isfinite(both)])
    vmax = float(both.max()) if both.size and both.max() > 0 else None
    heatmaps = [
        plot_jacobian(
            report.analytic, axes[0], title=f"{report.low_dtype} backward", vmax=vmax, **labels
        ),
        plot_jacobian(report.reference, axes[1], title="float64 backward", vmax=vmax, **labels),
        plot_jacobian(
            report.eps_units,
            axes[2],
            kind="log",
            title=f"|error| in {report.low_dtype} eps",
            **labels,
        ),
        plot_jacobian(
            report.violation, axes[3], kind="violation", title="error / allowed", **labels
        ),
    ]
    art = CheckArtists(fig, heatmaps, [], report.shape, "full")
    _mark_failures(art, report)
    return fig
