"""A matrix image drawn by repeating each cell's colour over its pixels.

A heatmap's image changes on every move of the explorer. matplotlib's
``AxesImage`` resamples the data to the screen's pixels, then normalizes and
colour-maps every pixel, in masked arrays (about 3 ms for a 3x3 map on
200x200 pixels, most of a small Check view's image time). With nearest
interpolation on straight axes each pixel simply takes its cell's colour, so a
:class:`CellImage` colour-maps the cells once and repeats them, as
matplotlib's own ``NonUniformImage`` does: the same pixels, a third of the time.
Anything else (cells smaller than a pixel, other interpolations, rotated or
non-affine transforms, a magnified or vector renderer) is drawn by ``AxesImage``
itself.
"""

from __future__ import annotations

from typing import Any

import numpy as onp
from matplotlib.image import AxesImage
from matplotlib.transforms import Bbox, IdentityTransform

__all__ = ["CellImage", "cell_image"]


class CellImage(AxesImage):
    """An ``AxesImage`` of matrix cells, drawn by repeating colours on straight axes.

    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> cell_image(ax, onp.eye(2), cmap="RdBu_r").get_array().shape
    (2, 2)
    """

    def make_image(self, renderer: Any, magnification: float = 1.0, unsampled: bool = False):
        fast = None if unsampled or magnification != 1.0 else self._repeated_cells()
        if fast is None:
            return super().make_image(renderer, magnification, unsampled)
        return fast

    def _repeated_cells(self):
        """(image, x, y, transform) as ``make_image`` returns it, or None where the
        shortcut does not apply."""
        A = self.get_array()
        trans = self.get_transform()
        if (
            A is None
            or A.ndim != 2
            or 0 in A.shape
            or self.get_interpolation() != "nearest"
            or self.get_alpha() is not None
            or not trans.is_affine
        ):
            return None
        mtx = trans.get_matrix()
        if mtx[0, 1] != 0 or mtx[1, 0] != 0:  # rotated or skewed
            return None
        m, n = A.shape
        left, right, bottom, top = self.get_extent()
        # the display edges of the first and past-the-last column and row
        x_ends = mtx[0, 0] * onp.array([left, right]) + mtx[0, 2]
        first_row, past_rows = (top, bottom) if self.origin == "upper" else (bottom, top)
        y_ends = mtx[1, 1] * onp.array([first_row, past_rows]) + mtx[1, 2]
        # cells smaller than a pixel: which cell a pixel shows is a tie to break the
        # way the resampler breaks it
        if abs(x_ends[1] - x_ends[0]) < n or abs(y_ends[1] - y_ends[0]) < m:
            return None
        clip = (
            (self.get_clip_box() or self.axes.bbox)
            if self.get_clip_on()
            else self.get_figure(root=True).bbox
        )
        shown = Bbox.intersection(
            Bbox.from_extents(min(x_ends), min(y_ends), max(x_ends), max(y_ends)), clip
        )
        if shown is None:
            return None, 0, 0, None
        # whole pixels, rounded as AxesImage rounds them
        x0 = onp.floor(shown.x0 + 0.5)
        y0 = onp.ceil(shown.y0 - 0.5 - 1e-8)
        x1 = onp.floor(shown.x1 + 0.5 + 1e-8)
        y1 = onp.ceil(shown.y1 - 0.5)
        width, height = int(x1 - x0), int(y1 - y0)
        if width <= 0 or height <= 0:
            return None, 0, 0, None
        # each pixel takes the cell under its centre (bottom row of pixels first)
        cols = _cell_under(x0 + onp.arange(width) + 0.5, x_ends, n)
        rows = _cell_under(y0 + onp.arange(height) + 0.5, y_ends, m)
        rgba = onp.ascontiguousarray(self.to_rgba(A, bytes=True))
        pixels = rgba.view(onp.uint32).reshape(m, n)[rows[:, None], cols[None, :]]
        image = pixels.view(onp.uint8).reshape(height, width, 4)
        return image, x0, y0, IdentityTransform()


def _cell_under(centres: onp.ndarray, ends: onp.ndarray, count: int) -> onp.ndarray:
    """Index of the cell (of ``count`` equal ones between ``ends``) under each centre."""
    with onp.errstate(divide="ignore", invalid="ignore"):
        where = (centres - ends[0]) / (ends[1] - ends[0]) * count
    return onp.clip(onp.floor(onp.nan_to_num(where)), 0, count - 1).astype(onp.intp)


def cell_image(ax: Any, data: onp.ndarray, **kwargs: Any) -> CellImage:
    """``ax.imshow(data, interpolation="nearest", aspect="auto", **kwargs)``, as a
    :class:`CellImage`.

    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> image = cell_image(ax, onp.arange(6.0).reshape(2, 3), extent=(-0.5, 2.5, 1.5, -0.5))
    >>> image in ax.images, [float(y) for y in ax.get_ylim()]  # row 0 on top
    (True, [1.5, -0.5])
    """
    image = CellImage(ax, interpolation="nearest", **kwargs)
    ax.set_aspect("auto")
    image.set_data(data)
    image.set_clip_path(ax.patch)
    image.autoscale_None()
    image.set_extent(image.get_extent())
    ax.add_image(image)
    return image
