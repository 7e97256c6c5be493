"""locate names the wrong operation and its line; the CLI gates on it."""

import re
import subprocess
import sys
from pathlib import Path

import autograd.numpy as anp
import buggy_ops as B
import numpy as np
import pytest

import gradexplorer as gx
from gradexplorer.locate import CutInput

HERE = Path(__file__).parent
SOURCE = (HERE / "buggy_ops.py").read_text().splitlines()


def line_of(marker: str) -> int:
    return next(i + 1 for i, ln in enumerate(SOURCE) if f"# CALL:{marker}" in ln)


CASES = [
    (B.uses_scaled, (np.array([0.3, -0.2, 0.9]),), "scaled_exp", "scaled"),
    (B.uses_mix, (np.array([0.3, -0.2, 0.9, 0.1]),), "mix", "mix"),
    (B.uses_square, (np.array([1.0 + 0.5j, -0.3 + 0.2j]),), "square", "square"),
    (B.deep_function, (np.array([0.3, -0.2, 0.9, 0.1]),), "mix", "deep"),
]


@pytest.mark.parametrize(("f", "args", "name", "marker"), CASES, ids=[c[3] for c in CASES])
def test_culprit_is_named_with_its_line(f, args, name, marker):
    loc = gx.locate(f, *args)
    assert loc.culprit is not None, str(loc)
    assert loc.culprit.name == name
    path, line = loc.culprit.source.rsplit(":", 1)
    assert Path(path).name == "buggy_ops.py" and int(line) == line_of(marker)
    assert loc.culprit.verdict == "wrong VJP"
    assert loc.culprit.local_error > 1
    assert loc.culprit.report is not None and not loc.culprit.report.passed


def test_deep_function_traces_about_thirty_operations_and_only_one_is_wrong():
    loc = gx.locate(B.deep_function, np.array([0.3, -0.2, 0.9, 0.1]))
    assert len(loc.nodes) >= 25
    assert [n.name for n in loc.nodes if n.wrong] == ["mix"]
    assert all(n.verdict in {"ok", "wrong VJP", "kink"} for n in loc.nodes), str(loc)
    assert [n.index for n in loc.nodes] == list(range(len(loc.nodes)))
    assert all(all(p < n.index for p in n.parents) for n in loc.nodes)


@pytest.mark.parametrize("ex", [e for e in gx.gallery.EXAMPLES.values()], ids=lambda e: e.name)
def test_right_functions_have_no_culprit(ex):
    loc = gx.locate(ex.f, *ex.args(), wrt=ex.wrt)
    assert loc.culprit is None, str(loc)
    assert not loc.cuts, str(loc)  # no input reaches an operation outside the AD graph


def _cut_cases():
    """(system, f, the operation whose 1st input is cut off, x): a value that depends on
    x made a constant of the graph, the ways each framework allows."""
    from autograd.tracer import getval

    cases = [
        ("autograd", lambda v: anp.sum(getval(anp.sin(v)) * v), "multiply", np.linspace(0.1, 1, 4))
    ]
    try:
        import torch

        x = torch.linspace(0.1, 1.0, 4, dtype=torch.float64)
        cases += [
            ("torch", lambda v: (torch.sin(v).detach() * v).sum(), "mul", x),
            ("torch", lambda v: (torch.sin(v).data * v).sum(), "mul", x),
            ("torch", lambda v: (torch.tensor(v.sum().item()) * v).sum(), "mul", x),
        ]
    except ImportError:
        pass
    try:
        import jax
        import jax.numpy as jnp

        stop = jax.lax.stop_gradient
        cases.append(
            ("jax", lambda v: jnp.sum(stop(jnp.sin(v)) * v), "mul", jnp.linspace(0.1, 1.0, 4))
        )
    except ImportError:
        pass
    return cases


@pytest.mark.parametrize(
    ("system", "f", "op", "x"), _cut_cases(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_an_input_cut_off_the_graph_is_named(system, f, op, x):
    """All operations are right, f's derivative is not: locate names the operation whose
    input depends on x outside the AD graph, with the line it is on."""
    assert not gx.check_grads(f, x).passed
    loc = gx.locate(f, x)
    assert loc.culprit is None and [n.name for n in loc.cuts] == [op], str(loc)
    assert loc.cuts[0].cut == (CutInput(0),)
    assert loc.cuts[0].cut_from[0].split(" at ")[0] in ("sin", "sum"), loc.cuts[0].cut_from
    text = str(loc)
    assert "outside the AD graph" in text and "1st input cut off" in text
    assert "test_locate.py:" in loc.cuts[0].source
    assert "outside the AD graph" in loc._repr_html_()
    fig = loc.plot()  # the Where view: the cut named above the graph, and in the legend
    drawn = [t.get_text() for a in fig.axes for t in a.texts] + [fig.axes[0].get_title()]
    assert any("input cut off the AD graph" in t for t in drawn), drawn
    assert any(f"the input of {op} at" in t for t in drawn), drawn


def _torch_part_cuts() -> list:
    """(f, the operation, its cut input, x): a value cut off inside a list argument, or
    passed as a keyword."""
    torch = pytest.importorskip("torch")
    x = torch.linspace(0.1, 1.0, 3, dtype=torch.float64)
    w = torch.ones(2, 3, dtype=torch.float64)
    linear = torch.nn.functional.linear

    def in_list(v):
        return torch.cat([torch.sin(v), torch.cos(v).detach()]).sum()

    def as_keyword(v):
        return linear(v, w, bias=torch.exp(v[:2]).detach()).sum()

    return [(in_list, "cat", CutInput(0, 1), x), (as_keyword, "linear", CutInput("bias"), x)]


@pytest.mark.parametrize("case", range(2))
def test_a_cut_inside_a_list_or_a_keyword_argument_is_named(case):
    """torch.cat([a, b.detach()]) and linear(x, w, bias=b.detach()): check_grads fails,
    and locate said "all operations have right derivatives" and nothing else (the
    traced list argument was taken whole, keywords were not looked at)."""
    f, op, cut, x = _torch_part_cuts()[case]
    assert not gx.check_grads(f, x).passed
    loc = gx.locate(f, x)
    assert [(n.name, n.cut) for n in loc.cuts] == [(op, (cut,))], str(loc)
    assert f"{cut} cut off" in str(loc) and loc.cuts[0].cut_from[0].split(" at ")[0] in (
        "cos",
        "exp",
    )


def test_a_cut_that_cancels_is_named_but_blames_nothing():
    """logsumexp with its max held constant (for stability, added back): its derivative is
    right, and locate still says where the max reaches the graph as a constant."""
    from autograd.tracer import getval

    def lse(x):
        m = getval(anp.max(x))
        return m + anp.log(anp.sum(anp.exp(x - m)))

    x = np.linspace(0.1, 1.0, 4)
    assert gx.check_grads(lse, x).passed
    loc = gx.locate(lse, x)
    assert loc.culprit is None
    cuts = [(n.name, n.cut) for n in loc.cuts]
    assert cuts == [("subtract", (CutInput(1),)), ("add", (CutInput(0),))], str(loc)
    assert "harmless only where its effects cancel" in str(loc)


def test_right_custom_primitive_has_no_culprit():
    assert gx.locate(B.right_function, np.array([0.1, 0.2, 0.3, 0.4])).culprit is None


def test_localization_text_html_and_plot(tmp_path):
    loc = gx.locate(B.uses_mix, np.array([0.3, -0.2, 0.9, 0.1]))
    text = str(loc)
    assert "culprit: mix at" in text and f"buggy_ops.py:{line_of('mix')}" in text
    assert "fde2d0" in loc._repr_html_()
    fig = loc.plot()
    assert "culprit: mix" in fig.axes[0].get_title()
    from gradexplorer.display import figure_png

    (tmp_path / "locate.png").write_bytes(figure_png(fig))


def test_locate_bad_input():
    with pytest.raises(TypeError, match="callable"):
        gx.locate(np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match="float"):
        gx.locate(anp.sin, np.arange(3))


# ------------------------------------------------------------------ command line


def run_cli(*args, cwd=HERE):
    return subprocess.run(
        [sys.executable, "-m", "gradexplorer", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def test_cli_right_function_exits_0():
    r = run_cli("check", "buggy_ops:right_function", "--shape", "4")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASSED" in r.stdout


def test_cli_wrong_function_exits_1_and_names_the_culprit(tmp_path):
    png = tmp_path / "heat.png"
    r = run_cli("check", "buggy_ops:uses_mix", "--shape", "4", "--seed", "3", "--png", str(png))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAILED" in r.stdout
    assert re.search(rf"culprit: mix at \S*buggy_ops.py:{line_of('mix')}\b", r.stdout), r.stdout
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_cli_complex_inputs():
    r = run_cli("check", "buggy_ops:uses_square", "--shape", "2", "--complex")
    assert r.returncode == 1 and "culprit: square" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("check", "buggy_ops:missing", "--shape", "3"),
        ("check", "no_such_module:f", "--shape", "3"),
        ("check", "buggy_ops", "--shape", "3"),
        ("check", "buggy_ops:uses_mix", "--shape", "x,y"),
        ("check", "buggy_ops:uses_mix"),
        ("check", "buggy_ops:uses_mix", "--shape", "7"),  # A @ x fails: cannot be evaluated
        ("check", "buggy_ops:mutates_input", "--shape", "3"),  # writes into its input
        ("check", "buggy_ops:uses_mix", "--shape", "4", "--png", "/no/such/folder/h.png"),
        ("frobnicate",),
    ],
)
def test_cli_usage_errors_exit_2_without_traceback(args):
    r = run_cli(*args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and r.stderr.strip()


# ------------------------------------------------------------------ where: sites in notebooks


MIX_DEF = next(i + 1 for i, ln in enumerate(SOURCE) if ln.startswith("def mix"))
MIX_RULE = next(i + 1 for i, ln in enumerate(SOURCE) if ln.startswith("gx.defvjp(mix"))

CELL_2 = """\
@gx.primitive
def twice(x):
    return 2.0 * x
gx.defvjp(twice, lambda ans, x: lambda g: 3.0 * g)
"""
CELL_3 = """\
def model(x):
    h = anp.tanh(x)
    # a comment
    return anp.sum(twice(h) * x)
"""


class _FakeShell:
    """What locate reads of a running IPython: its compiler's file-name map."""

    def __init__(self, mapping):
        self.compile = type("Compiler", (), {"_filename_map": mapping})()


def _run_cells(cells: dict, shell_map: dict | None, monkeypatch) -> dict:
    """Compile cells under IPython-style file names (their text in linecache, as
    IPython keeps it) and run them in one namespace; with ``shell_map``, a fake
    running IPython knows their execution counts."""
    import linecache
    import types

    ns = {"gx": gx, "anp": anp, "np": np}
    for name, code in cells.items():
        lines = code.splitlines(keepends=True)
        monkeypatch.setitem(linecache.cache, name, (len(code), None, lines, name))
        exec(compile(code, name, "exec"), ns)
    if shell_map is not None:
        fake = types.ModuleType("IPython")
        fake.get_ipython = lambda: _FakeShell(shell_map)
        monkeypatch.setitem(sys.modules, "IPython", fake)
    return ns


KERNEL_2, KERNEL_3 = "/tmp/ipykernel_4242/1111.py", "/tmp/ipykernel_4242/2222.py"
INPUT_2, INPUT_3 = "<ipython-input-2-ab>", "<ipython-input-3-cd>"  # IPython's own names
NOTEBOOK_CASES = [
    # (cell file names, the shell's map, where the call is, where the rule is)
    ((KERNEL_2, KERNEL_3), {KERNEL_2: 2, KERNEL_3: 3}, "cell [3], line 4", "cell [2], line 4"),
    ((INPUT_2, INPUT_3), None, "cell [3], line 4", "cell [2], line 4"),
    ((KERNEL_2, KERNEL_3), None, "cell [?], line 4", "cell [?], line 4"),  # no shell to ask
]  # fmt: skip


@pytest.mark.parametrize(("names", "mapping", "call", "rule"), NOTEBOOK_CASES)
def test_notebook_cells_are_named_by_execution_count_with_their_code(
    names, mapping, call, rule, monkeypatch
):
    ns = _run_cells(dict(zip(names, (CELL_2, CELL_3))), mapping, monkeypatch)
    loc = gx.locate(ns["model"], np.array([0.3, -0.2, 0.9]))
    c = loc.culprit
    assert c.name == "twice" and c.source == call, str(loc)
    assert c.code == "return anp.sum(twice(h) * x)"
    assert (c.site.path, c.site.line) == (names[1], 4)
    assert c.rule.where == rule and c.rule.code.startswith("gx.defvjp(twice")
    assert [n.source for n in loc.nodes][0] == call.replace("line 4", "line 2")
    assert f"{call}: return anp.sum(twice(h) * x)" in str(loc)


def test_f_itself_a_primitive_in_a_cell_points_to_its_definition(monkeypatch):
    ns = _run_cells({KERNEL_2: CELL_2}, {KERNEL_2: 7}, monkeypatch)
    c = gx.locate(ns["twice"], np.array([0.3, -0.2])).culprit
    assert c.source == "cell [7], line 2 (definition)" and c.code == "def twice(x):"
    assert c.rule.where == "cell [7], line 4"


@pytest.mark.parametrize(
    ("path", "line", "where"),
    [
        (str(HERE / "buggy_ops.py"), 3, "buggy_ops.py:3"),
        ("/somewhere/else/project/model.py", 11, "project/model.py:11"),
        ("<ipython-input-12-0f>", 1, "cell [12], line 1"),
        ("<string>", 5, "<string>:5"),
    ],
)
def test_site_names(path, line, where):
    from gradexplorer.locate.sites import describe_site

    assert describe_site(path, line).where.endswith(where)


def test_sites_do_not_import_ipython_and_name_real_ipython_cells():
    """In a fresh interpreter: locate leaves IPython alone; under a real
    InteractiveShell, a cell's operation is named by its execution count."""
    script = """
import sys, numpy as np, autograd.numpy as anp, gradexplorer as gx
gx.locate(lambda x: anp.sum(anp.sin(x)), np.ones(2))
print("imported" if "IPython" in sys.modules else "not imported")
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_cell("import numpy as np, autograd.numpy as anp, gradexplorer as gx", store_history=True)
ip.run_cell('''def f(x):
    h = anp.cos(x)
    return anp.sum(h ** 2)''', store_history=True)
ip.run_cell("loc = gx.locate(f, np.ones(3))", store_history=True)
print([(n.source, n.code) for n in ip.user_ns["loc"].nodes])
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()[:2]
    assert first == "not imported"
    assert second == str(
        [
            ("cell [2], line 2", "h = anp.cos(x)"),
            ("cell [2], line 3", "return anp.sum(h ** 2)"),
            ("cell [2], line 3", "return anp.sum(h ** 2)"),
        ]
    )


# ------------------------------------------------------------------ where: libraries' frames


def _fake_site_packages(tmp_path, monkeypatch):
    """A module installed in a ``site-packages`` folder that calls what it is given."""
    pkg = tmp_path / "site-packages" / "gx_fake_lib"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("def call(g, x):\n    return g(x)\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site-packages"))
    import importlib

    return importlib.import_module("gx_fake_lib")


class _Observed:
    """f called from a traitlets observer, as the explorer does."""

    def __call__(self, x):
        import traitlets

        class Holder(traitlets.HasTraits):
            value = traitlets.Any()
            out = traitlets.Any()

            @traitlets.observe("value")
            def _changed(self, change):
                self.out = B.mix(change["new"])

        h = Holder()
        h.value = x
        return h.out


ROUTES = {
    "site-packages": lambda lib: __import__("functools").partial(lib.call, B.mix),
    "stdlib singledispatch": lambda lib: __import__("functools").singledispatch(B.mix),
    "f is the primitive": lambda lib: B.mix,
}


@pytest.mark.parametrize("route", list(ROUTES))
def test_library_frames_are_not_the_users_the_definition_is(route, tmp_path, monkeypatch):
    f = ROUTES[route](_fake_site_packages(tmp_path, monkeypatch))
    c = gx.locate(f, np.array([0.3, -0.2, 0.9, 0.1])).culprit
    assert c is not None and c.name == "mix"
    assert c.source.endswith(f"buggy_ops.py:{MIX_DEF} (definition)"), c.source
    assert c.code == "def mix(x):"
    assert c.rule.line == MIX_RULE and c.rule_elsewhere


def test_a_call_through_traitlets_names_the_users_line():
    c = gx.locate(_Observed(), np.array([0.3, -0.2, 0.9, 0.1])).culprit
    assert c.code == 'self.out = B.mix(change["new"])', c.source
    assert "traitlets" not in c.source and Path(c.site.path).name == "test_locate.py"


def test_library_paths():
    import functools

    import traitlets

    from gradexplorer.backends.base import is_library_path

    assert is_library_path(functools.__file__) and is_library_path(traitlets.__file__)
    assert is_library_path("C:\\env\\Lib\\site-packages\\pkg\\m.py")
    assert is_library_path("/usr/lib/python3/dist-packages/pkg/m.py")
    assert not is_library_path(str(HERE / "buggy_ops.py"))
    assert not is_library_path("/tmp/ipykernel_1/123.py")
    assert not is_library_path(gx.gallery.examples.__file__)  # example user code
    assert is_library_path(sys.modules["gradexplorer.locate.localize"].__file__)


# ------------------------------------------------------------------ where: names


NAMED = [
    # (f, the nodes' names, the boxes drawn)
    (lambda x: anp.dot(B.A, x), ["dot"], ["dot"]),
    (lambda x: B.A @ x, ["matmul"], ["matmul"]),
    (lambda x: x @ B.A, ["matmul"], ["matmul"]),
    (lambda x: x[0], ["getitem"], ["getitem"]),
    (lambda x: anp.array([x[0], x[1]]), ["getitem", "getitem", "array", "array", "array"],
     ["getitem", "getitem", "array"]),
    (lambda x: np.sum(x), ["sum"], ["sum"]),
    (lambda x: anp.stack([x, x]), ["array", "array", "getitem", "getitem", "concatenate"],
     ["stack"]),
    (lambda x: anp.hstack([x, 2 * x]), ["multiply", "atleast_1d", "atleast_1d", "concatenate"],
     ["multiply", "hstack"]),
    (lambda x: -x[1:] ** 2, ["getitem", "power", "negative"], ["getitem", "power", "negative"]),
]  # fmt: skip


@pytest.mark.parametrize(("f", "names", "drawn"), NAMED, ids=lambda v: "")
def test_operations_are_named_as_written_and_all_checked(f, names, drawn):
    from gradexplorer.display.graphlayout import boxes

    loc = gx.locate(f, np.array([0.3, -0.2, 0.9, 0.1]))
    assert [n.name for n in loc.nodes] == names
    assert [b.label for b in boxes(loc)] == drawn
    assert all(n.checked and not n.name.startswith("_") for n in loc.nodes), str(loc)
    assert loc.culprit is None


def test_a_wrong_operation_inside_a_library_call_is_still_the_culprit():
    from gradexplorer.display.graphlayout import boxes

    loc = gx.locate(lambda x: anp.sum(anp.stack([B.mix(x), x])), np.array([0.3, -0.2, 0.9, 0.1]))
    assert loc.culprit.name == "mix"
    assert [b.kind(loc.culprit) for b in boxes(loc)] == ["culprit", "ok", "ok"]


# ------------------------------------------------------------------ where: Python branches


def _branchy_autograd(x):
    return anp.sum(x**2 if x[0] > 0 else -x)


def _two_way_autograd(x):
    if x[1] > x[0]:
        return anp.sum(B.mix(x))
    return anp.sum(anp.sin(x))


def _backend_cases():
    cases = [
        ("autograd", _branchy_autograd, np.array([0.3, -0.2, 0.9, 0.1]), None, "power"),
        ("autograd", _branchy_autograd, np.array([-0.3, -0.2, 0.9, 0.1]), None, "negative"),
        ("autograd", _two_way_autograd, np.array([0.1, 0.3, 0.9, 0.1]), "mix", "mix"),
        ("autograd", _two_way_autograd, np.array([0.3, 0.1, 0.9, 0.1]), None, "sin"),
    ]
    try:
        import torch
        import torch_cases as tc

        t = torch.tensor
        wrong = lambda x: tc.SoftplusWrongBackward.apply(x).sum() if x[1] > x[0] else x.sum()  # noqa: E731
        square = lambda x: (x**2 if x[0] > 0 else -x).sum()  # noqa: E731
        cases += [
            ("torch", square, t([0.3, -0.2]), None, "pow"),
            ("torch", square, t([-0.3, 0.2]), None, "neg"),
            ("torch", wrong, t([0.1, 0.3]), "SoftplusWrongBackward", "SoftplusWrongBackward"),
        ]
    except ImportError:
        pass
    try:
        import jax.numpy as jnp
        import jax_cases as jc

        j = jnp.array
        wrong = lambda x: jnp.sum(jc.softplus_wrong(x)) if x[1] > x[0] else jnp.sum(x)  # noqa: E731
        square = lambda x: jnp.sum(x**2 if x[0] > 0 else -x)  # noqa: E731
        cases += [
            ("jax", square, j([0.3, -0.2]), None, "integer_pow"),
            ("jax", square, j([-0.3, 0.2]), None, "neg"),
            ("jax", wrong, j([0.1, 0.3]), "softplus_wrong", "softplus_wrong"),
        ]
    except ImportError:
        pass
    return cases


@pytest.mark.parametrize(
    ("system", "f", "x", "culprit", "taken"),
    _backend_cases(),
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_python_if_on_an_array_element_follows_the_branch_taken(system, f, x, culprit, taken):
    loc = gx.locate(f, x)
    assert taken in [n.name for n in loc.nodes], str(loc)
    assert (loc.culprit.name if loc.culprit else None) == culprit, str(loc)
    fig = loc.plot()  # the Where view draws it
    assert ("culprit: none" in fig.axes[0].get_title()) == (culprit is None)


# ------------------------------------------------------------------ where: the picture


def _thirty(x):
    h = x
    for _ in range(5):
        h = anp.tanh(B.A @ h) * 0.5 + anp.sin(h)
    return anp.sum(h**2)


PICTURES = {
    "right": (B.right_function, np.array([0.1, 0.2, 0.3, 0.4])),
    "deep culprit": (B.deep_function, np.array([0.3, -0.2, 0.9, 0.1])),
    "f is the culprit": (B.mix, np.array([0.3, -0.2, 0.9, 0.1])),
    "thirty operations": (_thirty, np.array([0.3, -0.2, 0.9, 0.1])),
}


def _texts_fit(fig, min_size=7.5):
    """Every text drawn is at least ``min_size`` points and inside the figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # axis labels and titles find their places when drawn
    renderer = canvas.get_renderer()
    texts = list(fig.texts)
    for a in fig.axes:
        texts += [a.title, *a.texts]
        if a.axison:  # the graph's axes are off: their ticks are not drawn
            texts += [a.xaxis.label, a.yaxis.label, *a.get_xticklabels(), *a.get_yticklabels()]
    W, H = fig.get_size_inches() * fig.dpi
    shown = [t for t in texts if t.get_visible() and t.get_text().strip()]
    assert shown
    for t in shown:
        assert t.get_fontsize() >= min_size, (t.get_text(), t.get_fontsize())
        box = t.get_window_extent(renderer)
        assert box.x0 >= -1 and box.x1 <= W + 1, (t.get_text(), box)
        assert box.y0 >= -1 and box.y1 <= H + 1, (t.get_text(), box)
    return shown


@pytest.mark.parametrize("case", list(PICTURES))
def test_where_picture_fits_a_notebook_and_is_legible(case, tmp_path):
    from matplotlib.figure import Figure

    from gradexplorer.display import figure_png
    from gradexplorer.display.graph import plot_localization

    loc = gx.locate(*PICTURES[case])
    fig = plot_localization(loc)
    assert fig.get_figwidth() <= 8.8
    texts = _texts_fit(fig)
    if loc.culprit is not None:
        shown = "\n".join(t.get_text() for t in texts)
        assert f"culprit: {loc.culprit.name}" in fig.axes[0].get_title()
        assert loc.culprit.source in fig.axes[0].get_title()
        assert loc.culprit.code in shown and loc.culprit.rule.code in shown
    labels = [t.get_text() for t in texts if t.get_bbox_patch() is not None]
    assert len(labels) >= min(len(loc.nodes), 20)  # the boxes are drawn
    # on the explorer's figure: its width kept, taller when needed, the same figure back
    given = Figure(figsize=(8.8, 3.0), layout="constrained")
    assert plot_localization(loc, given) is given
    assert given.get_figwidth() == 8.8 and given.get_figheight() >= 3.0
    _texts_fit(given)
    assert figure_png(given)[:4] == b"\x89PNG"


def test_where_picture_of_a_huge_graph_keeps_the_culprit_and_a_bounded_height():
    from gradexplorer.display.graph import plot_localization

    def loops(x):
        h = B.mix(x)
        for _ in range(40):
            h = anp.sin(h) * 0.9 + h
        return anp.sum(h)

    loc = gx.locate(loops, np.array([0.3, -0.2, 0.9, 0.1]))
    assert len(loc.nodes) > 100
    fig = plot_localization(loc)
    assert fig.get_figheight() <= 14
    shown = [t.get_text() for t in _texts_fit(fig)]
    assert "mix" in shown and any("more operations of this line" in t for t in shown)


def test_locate_traces_every_input_check_grads_checks():
    """locate's inputs default to check_grads': a rule wrong only for a later argument
    (a weight), or for a torch module's parameter, is named right after check_grads
    fails, not "all operations have right derivatives" from tracing x alone."""

    @gx.primitive
    def scale(x, w):
        return x * w

    gx.defvjp(scale, lambda ans, x, w: lambda g: g * w, lambda ans, x, w: lambda g: 2 * g * x)

    def f(x, w):
        return anp.sum(anp.sin(scale(x, w)))

    x, w = np.array([0.3, -0.8]), np.array([1.5, 0.4])
    assert not gx.check_grads(f, x, w).passed
    assert gx.locate(f, x, w).culprit.name == "scale"
    assert gx.locate(f, x, w, wrt=0).culprit is None  # x's rule is right

    torch = pytest.importorskip("torch")

    class BadWeight(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, W):
            ctx.save_for_backward(x, W)
            return x @ W.T

        @staticmethod
        def backward(ctx, g):
            x, W = ctx.saved_tensors
            return g @ W, (g.T @ x) * 1.001

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.W = torch.nn.Parameter(
                torch.randn(3, 3, generator=torch.Generator().manual_seed(0))
            )

        def forward(self, x):
            return torch.tanh(BadWeight.apply(x, self.W)).sum()

    layer, xt = Layer(), torch.linspace(-1.0, 1.0, 6).reshape(2, 3)
    assert not gx.check_grads(layer, xt).passed
    assert gx.locate(layer, xt).culprit.name == "BadWeight"


def test_values_that_change_from_call_to_call_are_no_cut():
    """A batch norm's running statistics (updated in place by every call in train mode)
    and unseeded random numbers differ between locate's re-traces without depending on
    x: their moves are not opposite at x ± εv, and nothing is named."""
    torch = pytest.importorskip("torch")
    x = torch.tensor(np.random.default_rng(0).standard_normal(6))
    bn = torch.nn.BatchNorm1d(3).double().train()
    cases = {
        "batch norm, train mode": lambda t: bn(t.reshape(2, 3)).pow(2).sum(),
        "unseeded noise": lambda t: (t.sin() * torch.randn(6, dtype=t.dtype)).sum(),
        "a random mask": lambda t: (t.sin() * (torch.rand(6) > 0.5).to(t.dtype)).sum(),
    }
    for name, f in cases.items():
        loc = gx.locate(f, x)
        assert not loc.cuts, (name, str(loc))
