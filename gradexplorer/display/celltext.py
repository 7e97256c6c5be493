"""Cell values stamped from cached text images.

A heatmap's cell values change on every move of the explorer, and matplotlib
lays out and rasterizes every glyph of every text again on each draw (about a
millisecond for a short number): for a small Check view that was more than
the rest of its redraw. On an Agg canvas (the explorer's, and every PNG) a
:class:`CellValue` draws its one centred line as an image, and builds that
image from glyphs rendered once per character, font and size, placed and
combined as FreeType's layout in matplotlib places and combines them (the same
pixels; a value seen for the first time costs a fifth of rendering it). On other
canvases (PDF, SVG) and for anything else (rotation, several lines, math, a box,
path effects, clipping) it is an ordinary :class:`~matplotlib.text.Text`.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as onp
from matplotlib import cbook, colors, font_manager, ft2font
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
    laid_out = _from_glyphs(path, size, dpi, text, flags)
    if laid_out is None:
        laid_out = _from_freetype(path, size, dpi, text, flags)
    ink, height, descent = laid_out
    coverage = ink[::-1]  # Agg's draw_image takes the bottom row first
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


def _from_freetype(path: str, size: float, dpi: float, text: str, flags: int) -> tuple:
    """The line's ink (top row first), height and descent, as FreeType lays it out."""
    font = font_manager.get_font(path)
    font.set_size(size, dpi)
    font.set_text(text, 0.0, flags=flags)
    font.draw_glyphs_to_bitmap(antialiased=True)
    ink = onp.array(font.get_image(), dtype=onp.uint8)
    return ink, font.get_width_height()[1] / 64, font.get_descent() / 64


@lru_cache(maxsize=1024)
def _glyph(path: str, size: float, dpi: float, char: str, flags: int) -> tuple:
    """One character alone: its ink, the left of its box, its top and bottom (all in
    FreeType's 1/64 pixel), its advance and its index in the font."""
    ink, height, descent = _from_freetype(path, size, dpi, char, flags)
    font = font_manager.get_font(path)
    left = font.get_bitmap_offset()[0]
    advance = font.load_char(ord(char), flags=flags).horiAdvance
    top, bottom = round(64 * (height - descent)), -round(64 * descent)
    return ink, left, top, bottom, advance, font.get_char_index(ord(char))


def _from_glyphs(path: str, size: float, dpi: float, text: str, flags: int) -> tuple | None:
    """:func:`_from_freetype`'s result, pixel for pixel, from cached glyphs; None
    where the glyphs alone cannot give it (kerning, or a glyph at a fraction of a
    pixel: FreeType would render it differently there)."""
    font = font_manager.get_font(path)
    font.set_size(size, dpi)
    placed, pen, previous = [], 0, None
    for char in text:
        ink, left, top, bottom, advance, index = _glyph(path, size, dpi, char, flags)
        if previous is not None and font.get_kerning(previous, index, ft2font.Kerning.UNSCALED):
            return None
        if pen % 64 or top % 64:
            return None
        placed.append((ink, pen + left, top, bottom))
        pen, previous = pen + advance, index
    if not placed:
        return None
    # FreeType puts each glyph at its whole-pixel left, less the line's left edge
    # (truncated), its top row below the line's top, and ORs overlapping pixels
    line_left = min(x for _, x, _, _ in placed) / 64
    line_top, line_bottom = max(p[2] for p in placed), min(p[3] for p in placed)
    columns = [math.trunc(math.floor(x / 64) - line_left) for _, x, _, _ in placed]
    width = max(c + p[0].shape[1] for c, p in zip(columns, placed))
    out = onp.zeros(((line_top - line_bottom) // 64 + 2, width), onp.uint8)
    for column, (ink, _, top, _) in zip(columns, placed):
        row = (line_top - top) // 64
        rows = min(ink.shape[0], out.shape[0] - row)
        target = out[row : row + rows, column : column + ink.shape[1]]
        onp.bitwise_or(target, ink[:rows], out=target)
    return out, (line_top - line_bottom) / 64, -line_bottom / 64


def _line_metrics(font: Any, size: float, dpi: float) -> tuple[float, float]:
    scale = size * dpi / 72 / font.units_per_EM
    table = font.get_sfnt_table("OS/2")
    if table is not None and "sTypoAscender" in table:
        return table["sTypoAscender"] * scale, -table["sTypoDescender"] * scale
    return font.ascender * scale, -font.descender * scale
