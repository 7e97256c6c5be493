"""The numbers a heatmap draws: a Jacobian as a matrix, pooled to a screen's worth
of cells, and the bound of a shared colour scale."""

from __future__ import annotations

from typing import Any

import numpy as onp

__all__ = ["MAX_CELLS", "as_matrix", "max_abs", "pool_max_abs"]

MAX_CELLS = 128  # larger matrices are pooled down to at most this many cells a side


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


def as_matrix(J: Any, out_ndim: int | None = None) -> onp.ndarray:
    """A real Jacobian (or a report holding one) as the matrix a heatmap draws:
    its first ``out_ndim`` axes (half, by default) as rows, the rest as columns.

    >>> as_matrix(onp.zeros((2, 3, 4)), out_ndim=1).shape
    (2, 12)
    """
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


def max_abs(*arrays: Any) -> float | None:
    """The largest finite |value| of the arrays: a shared, symmetric colour scale
    (None when there is none: all zero or non-finite).

    >>> max_abs(onp.array([1.0, -3.0]), onp.array([onp.nan, 2.0])), max_abs(onp.zeros(2))
    (3.0, None)
    """
    both = onp.concatenate([onp.ravel(onp.asarray(a, dtype=float)) for a in arrays])
    both = onp.abs(both[onp.isfinite(both)])
    return float(both.max()) if both.size and both.max() > 0 else None
