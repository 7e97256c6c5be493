"""Sphinx configuration of gradexplorer's documentation site.

Build from the repository root:

    python -m sphinx -W --keep-going -b html docs docs/_build/html

Sphinx with myst-nb rather than mystmd (Jupyter Book 2): it needs no Node.js at build
time, its autodoc reads the numpydoc docstrings the package already has, and myst-nb
executes every notebook and MyST page at build, failing the build on an error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's package, also without `pip install -e`
# the executed pages' kernels import the same package
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))

import gradexplorer  # noqa: E402

project = "gradexplorer"
author = "gradexplorer contributors"
copyright = "gradexplorer contributors"
release = version = gradexplorer.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
]
exclude_patterns = ["_build", "README.md", "**.ipynb_checkpoints", "Thumbs.db", ".DS_Store"]

# --- autodoc / numpydoc: the public API, from gradexplorer.__all__
autosummary_generate = True
# a class page documents its own members, not those inherited from str or Enum
templates_path = ["_templates"]
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# --- myst-nb: every notebook and MyST page is executed at build; an error fails it
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_timeout = 900
nb_merge_streams = True
# No widget manager from a CDN: a live explorer needs a kernel, so its output is left as
# the (invisible) widget reference, labelled by gradexplorer.css; the explorer page shows
# its views as pictures.
nb_ipywidgets_js = {}
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

# --- HTML: a theme installed from PyPI, nothing loaded from the network when viewed
html_theme = "furo"
html_title = f"gradexplorer {release}"
html_static_path = ["_static"]
html_css_files = ["gradexplorer.css"]
html_show_sourcelink = False

# --- the gallery page, written from gradexplorer.gallery at every build
sys.path.insert(0, str(Path(__file__).parent))
import gallery_page  # noqa: E402

gallery_page.write(Path(__file__).with_name("gallery.md"))


def _no_widget_state(app, pagename, *args):
    """Leave out the widget state myst-nb would embed for a page's explorers: without a
    widget manager (which would come from a CDN) nothing reads it, and an explorer's
    state holds every view's numbers (~1 MB a notebook)."""
    pages = getattr(app.env, "nb_metadata", {})
    pages.get(pagename, {}).get("js_files", {}).pop("ipywidgets_state", None)


def setup(app):
    app.connect("html-page-context", _no_widget_state, priority=100)  # before myst-nb's
