"""Pictures of derivatives (matplotlib only, no widgets): pure functions
``(data, ax) -> artists``, updated in place by ``update_*``."""

from .ad_graph import ADGraphArtists, plot_ad_sweep, update_ad_sweep
from .graph import plot_localization
from .heatmap import figure_png, plot_jacobian
from .landscape import LandscapeArtists, plot_landscape, update_landscape
from .linear_map import LinearMapArtists, plot_linear_map, update_linear_map
from .plots import plot_check, plot_complex_blocks, plot_hessian, plot_step_sweep
from .precision import plot_precision
from .render import render

__all__ = [
    "plot_jacobian", "plot_check", "plot_hessian", "plot_complex_blocks", "plot_step_sweep",
    "plot_localization", "plot_precision", "render", "figure_png",
    "plot_landscape", "update_landscape", "plot_linear_map", "update_linear_map",
    "LandscapeArtists", "LinearMapArtists", "plot_ad_sweep", "update_ad_sweep", "ADGraphArtists",
]  # fmt: skip
