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
