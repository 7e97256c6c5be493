"""The layering cannot erode: every import in the package is read (ast) and judged.

Layers, bottom up (a module may import its own layer and lower ones only):

    errors < core < backends < (ad, fd, gallery) < check < locate < display < explorer
    < results

The one upward call allowed: a result's ``_repr_png_``/``plot()`` hands itself
to ``gradexplorer.display.render``, imported inside the function.
"""

import ast
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "gradexplorer"
RANK = {
    "errors": 0,
    "core": 1,
    "backends": 2,
    "ad": 3,
    "fd": 3,
    "gallery": 3,
    "check": 4,
    "locate": 5,
    "display": 6,
    "explorer": 7,
    "__init__": 9,
    "results": 8,
    "__main__": 9,
}
#: Only these layers may import an AD library itself (the gallery is user code).
AD_LIBRARIES = {
    "autograd": {"backends", "ad", "gallery"},
    "torch": {"backends", "gallery"},
    "jax": {"backends", "gallery"},
}
DISPLAY_LIBRARIES = {"matplotlib": {"display", "explorer"}, "ipywidgets": {"explorer"}}


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        yield path, ["gradexplorer", *parts] if parts != ["__init__"] else ["gradexplorer"]


def _imports(path: Path, dotted: list[str]):
    """(target module, lazy?) for every import; relative ones made absolute."""
    tree = ast.parse(path.read_text())
    package = dotted if path.name == "__init__.py" else dotted[:-1]
    out = []

    def visit(node, lazy):
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                out.extend((a.name, inner) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package[: len(package) - child.level + 1]
                    mod = ".".join(base + ([child.module] if child.module else []))
                    if child.module is None:  # from . import x
                        out.extend((f"{mod}.{a.name}", inner) for a in child.names)
                        continue
                else:
                    mod = child.module
                out.append((mod, inner))
                if mod.startswith("gradexplorer"):
                    out.extend((f"{mod}.{a.name}", inner) for a in child.names)
            visit(child, inner)

    visit(tree, False)
    return out


def _layer(dotted: list[str]) -> str:
    return dotted[1].split(".")[0] if len(dotted) > 1 else "__init__"


def _rank(module: str) -> tuple[str, int] | None:
    parts = module.split(".")
    if parts[0] != "gradexplorer" or len(parts) < 2:
        return None
    layer = parts[1]
    return (layer, RANK[layer]) if layer in RANK else None


MODULES = list(_modules())


def test_every_module_sits_in_a_known_layer():
    for path, dotted in MODULES:
        assert _layer(dotted) in RANK, path


IDS = [".".join(d) for _, d in MODULES]


@pytest.mark.parametrize(("path", "dotted"), MODULES, ids=IDS)
def test_imports_point_down(path, dotted):
    layer = _layer(dotted)
    for target, lazy in _imports(path, dotted):
        ranked = _rank(target)
        if ranked is None:
            continue
        t_layer, t_rank = ranked
        if t_rank <= RANK[layer]:
            continue
        # the one door up: a result hands itself to display.render, lazily
        assert lazy and target in ("gradexplorer.display", "gradexplorer.display.render"), (
            f"{'.'.join(dotted)} ({layer}) imports {target} ({t_layer}): imports must point down"
        )


@pytest.mark.parametrize(("path", "dotted"), MODULES, ids=IDS)
def test_libraries_stay_in_their_layers(path, dotted):
    layer = _layer(dotted)
    for target, _lazy in _imports(path, dotted):
        root = target.split(".")[0]
        for lib, allowed in {**AD_LIBRARIES, **DISPLAY_LIBRARIES}.items():
            if root == lib:
                where = ".".join(dotted)
                assert layer in allowed, f"{where} imports {lib}: only {sorted(allowed)} may"


def test_no_import_cycles_among_modules():
    """Module-level imports (not lazy ones) form no cycle."""
    names = {".".join(d) for _, d in MODULES}
    graph = defaultdict(set)
    for path, dotted in MODULES:
        me = ".".join(dotted)
        for target, lazy in _imports(path, dotted):
            if lazy:
                continue
            while target and target not in names:  # from pkg.mod import name -> pkg.mod
                target = target.rpartition(".")[0]
            if target and target != me and not me.startswith(target + "."):
                graph[me].add(target)
    state: dict[str, int] = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt] if nxt in stack else [node, nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


def test_modules_are_small():
    big = {".".join(d): n for p, d in MODULES if (n := len(p.read_text().splitlines())) > 420}
    assert not big, f"split these by job: {big}"


# -------------------------------------------------------------- public APIs only

#: Attributes with a leading underscore that are not a library's private state: Python's
#: and IPython's display protocols, and the package's own namespaced mark on a figure.
NOT_PRIVATE = re.compile(r"_(repr_\w+_|ipython_display_|gradexplorer_\w+)")
VIEW_MODULES = [(p, d) for p, d in MODULES if _layer(d) in ("display", "explorer")]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_uses(path: Path) -> list[str]:
    """``obj._name`` on anything but ``self``/``cls``, and private names or modules
    imported from another package: what a library's next release may change."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if NOT_PRIVATE.fullmatch(node.attr):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [a.name for a in node.names]
            if any(_private(part) for part in [*node.module.split("."), *names]):
                found.append(f"line {node.lineno}: from {node.module} import {names}")
    return found


@pytest.mark.parametrize(
    "path,dotted", VIEW_MODULES, ids=[".".join(d[1:]) for _, d in VIEW_MODULES]
)
def test_the_views_touch_no_private_api(path, dotted):
    """ipympl's and matplotlib's private APIs were overridden for speed (get_diff_image,
    _last_buff, make_image, ft2font's kerning): each release could break them."""
    assert not _private_uses(path), f"{'.'.join(dotted)}: {_private_uses(path)}"


def test_the_private_api_finder_finds_them(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from matplotlib._pylab_helpers import Gcf\n"
        "from ipywidgets.widgets.widget import _remove_buffers\n"
        "def f(canvas, fig, self):\n"
        "    canvas._last_buff = None; fig._gradexplorer_height = 3\n"
        "    return self._own, fig._repr_png_(), canvas.__class__\n"
    )
    assert [u.split(":")[0] for u in _private_uses(sample)] == ["line 1", "line 2", "line 4"]


def test_the_explorer_runs_without_ipympl():
    """No module of the package imports ipympl, the modules its workarounds lived in are
    gone, and an explorer made and moved loads neither ipympl nor pyplot."""
    for path, dotted in MODULES:
        assert not [m for m, _ in _imports(path, dotted) if m.split(".")[0] == "ipympl"], path
    gone = {"cellimage.py", "celltext.py", "figures.py"}
    assert not gone & {p.name for p in ROOT.rglob("*.py")}
    assert not any("FastCanvas" in p.read_text() for p in ROOT.rglob("*.py"))
    code = (
        "import sys, autograd.numpy as anp, gradexplorer as gx\n"
        "e = gx.explore(lambda x: anp.tanh(x) * x, anp.ones(3))\n"
        "e.fill_views()\n"
        "bad = [m for m in ('ipympl', 'matplotlib.pyplot') if m in sys.modules]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
