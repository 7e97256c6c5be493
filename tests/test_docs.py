"""The documentation site's sources: what it documents, what it executes, what it loads.

The site itself is built by ``.ci/run`` (``python -m sphinx -W --keep-going ...``: every
page and notebook executed, warnings as errors) and then checked by
``docs/check_offline.py``; these tests keep its sources in step with the package.
"""

import ast
import re
import sys
from pathlib import Path

import pytest

import gradexplorer as gx

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS))

import check_offline  # noqa: E402
import gallery_page  # noqa: E402


def _conf() -> dict:
    """conf.py's plain assignments, read without running it (running it writes pages)."""
    values = {}
    for node in ast.parse((DOCS / "conf.py").read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return values


def test_every_page_and_notebook_is_executed_and_an_error_fails_the_build():
    conf = _conf()
    assert conf["nb_execution_mode"] == "force"
    assert conf["nb_execution_raise_on_error"] is True
    assert conf["nb_ipywidgets_js"] == {}, "the widget manager would be loaded from a CDN"
    assert {"myst_nb", "numpydoc", "sphinx.ext.autodoc"} <= set(conf["extensions"])


def test_the_api_reference_lists_exactly_the_public_api():
    listed = re.findall(r"^   (\w+)$", (DOCS / "api.md").read_text(), re.M)
    assert len(listed) == len(set(listed)), "listed twice"
    assert set(listed) == set(gx.__all__), set(listed) ^ set(gx.__all__)


def test_every_notebook_is_in_the_site():
    index = (DOCS / "index.md").read_text()
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert f"notebooks/{nb.stem}\n" in index, f"{nb.name} is not in docs/index.md's toctree"
    assert (DOCS / "notebooks").resolve() == (ROOT / "notebooks").resolve()


@pytest.mark.parametrize(
    "page", sorted(p.stem for p in (DOCS / "howto").glob("*.md") if p.stem != "index")
)
def test_a_howto_page_is_listed_and_is_an_executed_notebook(page):
    assert f"\n{page}\n" in (DOCS / "howto" / "index.md").read_text()
    text = (DOCS / "howto" / f"{page}.md").read_text()
    assert text.startswith("---\nfile_format: mystnb\n"), "not executed: no mystnb front matter"
    assert text.count("```{code-cell} ipython3") >= 2


def test_the_gallery_page_shows_every_example(tmp_path):
    page = tmp_path / "gallery.md"
    gallery_page.write(page)
    text = page.read_text()
    for name in gx.gallery.names():
        assert f"\n## `{name}`\n" in text
        assert f"show({name!r})" in text
    before = page.stat().st_mtime_ns
    gallery_page.write(page)  # unchanged: left alone, so Sphinx does not rebuild it
    assert page.stat().st_mtime_ns == before


SITE = {
    "index.html": """<html><head>
<link rel="stylesheet" href="_static/furo.css">
<link rel="canonical" href="https://example.org/index.html">
<script src="_static/documentation_options.js"></script>
<script defer src="https://cdn.example.net/widgets.js"></script>
<link href="//fonts.googleapis.com/css?family=Inter" rel="stylesheet">
</head><body><a href="https://anywidget.dev">anywidget</a>
<img alt="map" src="http://example.org/map.png">
<img alt="a plot" src="data:image/png;base64,iVBORw0KGgoAB//360aNECdnZ2Ym//cdnjsdelivr+/=">
</body></html>""",
    "_static/theme.css": "@import url('https://cdn.example.net/font.css');\n.a{color:red}",
    "_static/local.css": ".b{background:url(_images/x.png)}",
    "_static/app.js": "const ok = 'https://docs.example.org/page';\n"
    "load('https://unpkg.com/@jupyter-widgets/html-manager');",
}


def test_check_offline_names_every_remote_load_and_no_link(tmp_path):
    for name, text in SITE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = check_offline.external_loads(tmp_path)
    assert sorted(found) == sorted(
        [
            "index.html: https://cdn.example.net/widgets.js",
            "index.html: //fonts.googleapis.com/css?family=Inter",
            "index.html: http://example.org/map.png",
            "_static/theme.css: https://cdn.example.net/font.css",
            "_static/app.js: https://unpkg.com/@jupyter-widgets/html-manager",
        ]
    ), found
    assert check_offline.main([str(tmp_path)]) == 1
    for name in ("index.html", "_static/theme.css", "_static/app.js"):
        (tmp_path / name).unlink()
    assert check_offline.external_loads(tmp_path) == []
    assert check_offline.main([str(tmp_path)]) == 0
    assert check_offline.main([str(tmp_path / "missing")]) == 2
