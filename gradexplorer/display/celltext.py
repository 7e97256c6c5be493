"""Cell values stamped from cached text images.

A heatmap's cell values change on every move of the explorer, and matplotlib
lays out and rasterizes every glyph of every text again on each draw (about a
millisecond for a short number): for a small Check view that was more than
the rest of its redraw. On an Agg canvas (the explorer's, and every PNG) a
:class:`CellValue` draws its one centred line as an image rendered once per
string, font and size; on other canvases (PDF, SVG) and for anything else
(rotation, several lines, math, a box, path effects, clipping) it is an ordinary
:class:`~matplotlib.text.Text`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as onp
from matplotlib import cbook, colors, font_manager
from matplotlib.backends.backend_agg import RendererAgg, get_hinting_flag
from matplotlib.text import Text

__all__ = ["CellValue", "add_cell_value", "cell_text"]


class CellValue(Text):
    """A centred text that an Agg renderer stamps from a cached image.

    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> add_cell_value(ax, 0.5, 0.5, "0.25").get_text()
    '0.25'
    """

    def draw(self, renderer: Any) -> None:
        if not self._stampable(renderer):
            super().draw(renderer)
            return
        x, y = self.get_transform().transform(self.get_unitless_position())
        if not (onp.isfinite(x) and onp.isfinite(y)):
            return
        prop = self.get_fontproperties()
        coverage, left, bottom = _rendered(
            font_manager.findfont(prop),
            prop.get_size_in_points(),
            renderer.dpi,
            self.get_text(),
            get_hinting_flag(),
        )
        if coverage.size:
            rgba = colors.to_rgba(self.get_color(), self.get_alpha())
            image = onp.empty(coverage.shape + (4,), onp.uint8)
            image[..., :3] = onp.round(onp.multiply(rgba[:3], 255)).astype(onp.uint8)
            image[..., 3] = coverage if rgba[3] == 1 else onp.round(coverage * rgba[3])
            gc = renderer.new_gc()
            renderer.draw_image(gc, round(x + left), round(y + bottom), image)
            gc.restore()
        self.stale = False

    def _stampable(self, renderer: Any) -> bool:
        text = self.get_text()
        return (
            isinstance(renderer, RendererAgg)
            and self.get_visible()
            and not self.get_clip_on()
            and bool(text)
            and "\n" not in text
            and not cbook.is_math_text(text)
            and not self.get_usetex()
            and self.get_rotation() == 0
            and self.get_horizontalalignment() == "center"
            and self.get_verticalalignment() == "center"
            and self.get_bbox_patch() is None
            and not self.get_path_effects()
        )


def cell_text(v: float) -> str:
    """A cell's value in three significant digits; NaN and infinities in words.

    >>> [cell_text(v) for v in (0.123456, -1e-9, float("nan"), float("-inf"))]
    ['0.123', '-1e-09', 'NaN', '-inf']
    """
    if onp.isnan(v):
        return "NaN"
    if onp.isposinf(v):
        return "+inf"
    if onp.isneginf(v):
        return "-inf"
    return f"{v:.3g}"


def add_cell_value(ax: Any, x: float, y: float, text: str, **kwargs: Any) -> CellValue:
    """A :class:`CellValue` centred on data point ``(x, y)`` of ``ax``.

    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> add_cell_value(ax, 0, 0, "1.5", fontsize=8) in ax.texts
    True
    """
    kwargs = {"ha": "center", "va": "center", "clip_on": False, **kwargs}
    return ax.add_artist(CellValue(x, y, text, transform=ax.transData, **kwargs))


@lru_cache(maxsize=4096)
def _rendered(path: str, size: float, dpi: float, text: str, flags: int) -> tuple:
    """Ink coverage of ``text`` and its lower-left corner relative to the anchor.

    The ink is centred across; up and down, the line box is centred as
    matplotlib centres one line (at least the font's typographic ascent and
    descent), so that the values of a row sit on one baseline.
    """
    font = font_manager.get_font(path)
    font.set_size(size, dpi)
    font.set_text(text, 0.0, flags=flags)
    height = font.get_width_height()[1] / 64
    descent = font.get_descent() / 64
    font.draw_glyphs_to_bitmap(antialiased=True)
    # Agg's draw_image takes the bottom row first.
    coverage = onp.array(font.get_image(), dtype=onp.uint8)[::-1]
    inked = onp.flatnonzero(coverage.any(axis=0))
    if not inked.size:
        return coverage[:, :0], 0.0, 0.0
    line_ascent, line_descent = _line_metrics(font, size, dpi)
    ascent = max(height - descent, line_ascent)
    baseline = -(ascent - max(descent, line_descent)) / 2
    left = -(inked[0] + inked[-1] + 1) / 2
    # the bitmap pads the ink box by a pixel or so above and below
    bottom = baseline - descent - (coverage.shape[0] - round(height)) / 2
    coverage.setflags(write=False)
    return coverage, left, bottom


def _line_metrics(font: Any, size: float, dpi: float) -> tuple[float, float]:
    scale = size * dpi / 72 / font.units_per_EM
    table = font.get_sfnt_table("OS/2")
    if table is not None and "sTypoAscender" in table:
        return table["sTypoAscender"] * scale, -table["sTypoDescender"] * scale
    return font.ascender * scale, -font.descender * scale
