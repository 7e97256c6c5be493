"""The pytest plugin (pytest_gradexplorer.py): gx_check, the gradcheck marker,
--gx-results and the terminal summary, alone and under pytest-xdist.

Checks with a planted wrong derivative come from the gallery: its functions
with a hand-written VJP built from the gallery's hand-derived Jacobian, one
entry off by 0.5. One pytest run (in a subprocess) of those tests is shared by
the tests of its files, page and terminal summary; the xdist run is compared
with it.
"""

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest
import tomllib

import gradexplorer as gx

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ["-p", "pytest_gradexplorer", "-p", "no:cacheprovider"]

#: The helper module the generated tests import (and this file runs itself).
PLANTED = '''
import numpy as np
import gradexplorer as gx


def planted(name, i, j):
    """Gallery function `name` with a VJP whose Jacobian entry (i, j) is off by 0.5."""
    ex = gx.gallery.get(name)

    def f(x):
        return ex.f(x)

    f.__name__ = f"{name}_planted"
    f = gx.primitive(f)

    def vjp(ans, x):
        J = np.reshape(ex.jacobian(x)[0], (np.size(ans), np.size(x))).copy()
        J[i, j] += 0.5
        return lambda g: (np.ravel(g) @ J).reshape(np.shape(x))

    gx.defvjp(f, vjp)
    return f, ex.args()
'''
#: Gallery functions of one real input, and the entry planted wrong in each.
CASES = [("sin", 2, 3), ("softmax", 0, 4), ("row_mean", 1, 6), ("logsumexp", 0, 2)]

TESTS = f"""
import pytest
import gradexplorer as gx
from planted import planted

CASES = {CASES!r}


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_right(gx_check, name):
    ex = gx.gallery.get(name)
    assert gx_check(ex.f, *ex.args()).passed


@pytest.mark.parametrize(("name", "i", "j"), CASES)
def test_planted(gx_check, name, i, j):
    f, args = planted(name, i, j)
    gx_check(f, *args)


@pytest.mark.gradcheck(mode="fast")
def test_marker_sets_the_mode(gx_check):
    f, args = planted("row_mean", 2, 0)
    gx_check(f, *args)


@pytest.mark.gradcheck(mode="fast")
def test_call_options_beat_the_marker(gx_check):
    f, args = planted("sin", 0, 1)
    gx_check(f, *args, mode="full")


def test_expected_failure_is_recorded(gx_check):
    f, args = planted("cumsum", 4, 0)
    with pytest.raises(AssertionError, match="FAILED"):
        gx_check(f, *args)
"""


@pytest.fixture(autouse=True)
def _plugin_by_name_only(monkeypatch):
    """Inline pytester runs load the plugin by -p, never also by its entry point."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("PYTHONPATH", _env()["PYTHONPATH"])


def _planted():
    space: dict = {}
    exec(PLANTED, space)
    return space["planted"]


def _env() -> dict:
    """The worktree's gradexplorer and plugin, loaded by -p (never twice: an
    installed entry point would register the module a second time)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess:
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "planted.py").write_text(PLANTED)
    (folder / "test_grads.py").write_text(TESTS)
    return subprocess.run(
        [sys.executable, "-m", "pytest", *PLUGIN, "-q", "-rN", *args],
        cwd=folder,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plain")
    out = _run(folder, "--gx-results=results")
    return out, folder / "results"


def _files(results: Path) -> set[str]:
    return {p.relative_to(results).as_posix() for p in results.rglob("*") if p.is_file()}


def _expected_reports():
    """nodeid -> the report of the planted check, computed here, not by the plugin."""
    planted = _planted()
    out = {}
    for name, i, j in CASES:
        f, args = planted(name, i, j)
        out[f"test_grads.py::test_planted[{name}-{i}-{j}]"] = gx.check_grads(f, *args)
    return out


EXPECTED = {}


def expected():
    if not EXPECTED:
        EXPECTED.update(_expected_reports())
    return EXPECTED


# ---------------------------------------------------------------- one plain run


def test_right_checks_pass_and_planted_ones_fail(run):
    out, _ = run
    assert out.returncode == 1, out.stdout + out.stderr
    n_right = len(CASES) + 1  # + the expected failure inside pytest.raises
    n_wrong = len(CASES) + 2
    assert f"{n_wrong} failed, {n_right} passed" in out.stdout, out.stdout


def test_every_failed_check_has_its_json_and_pictures(run):
    _, results = run
    summary = json.loads((results / "summary.json").read_text())
    records = {r["nodeid"]: r for r in summary["checks"]}
    assert len(records) == len(CASES) + 3
    for nodeid, report in expected().items():
        r = records[nodeid]
        assert set(r["files"]) == {"report", "jacobian", "diff", "violation"}
        for path in r["files"].values():
            assert (results / path).stat().st_size > 0
        on_disk = json.loads((results / r["files"]["report"]).read_text())
        worst = on_disk["mismatches"][0]
        assert worst["label"] == report.mismatches[0].label
        _, i, j = nodeid.rstrip("]").split("[")[1].split("-")
        assert (worst["row"], worst["col"]) == (int(i), int(j))  # the planted entry
        assert on_disk["outcome"] == "failed" and on_disk["wrong_count"] == 1


def test_pictures_are_pngs_of_the_checks_size(run):
    _, results = run
    for path in results.rglob("*.png"):
        head = path.read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n", path
        width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
        assert width >= 300 and height >= 250, (path, width, height)


def test_marker_options_and_call_options(run):
    _, results = run
    records = {r["nodeid"]: r for r in json.loads((results / "summary.json").read_text())["checks"]}
    fast = records["test_grads.py::test_marker_sets_the_mode"]
    assert set(fast["files"]) == {"report", "located"}
    assert json.loads((results / fast["files"]["report"]).read_text())["mode"] == "fast"
    full = records["test_grads.py::test_call_options_beat_the_marker"]
    assert json.loads((results / full["files"]["report"]).read_text())["mode"] == "full"


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.img, self.href, self.tags = [], [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        if tag == "img":
            self.img.append(a["src"])
        elif tag == "a" and "href" in a:
            self.href.append(a["href"])
        elif tag == "link":
            self.href.append(a.get("href", ""))


def test_html_summary_links_and_shows_every_png(run):
    _, results = run
    page = _Links()
    page.feed((results / "index.html").read_text())
    pngs = {p for p in _files(results) if p.endswith(".png")}
    assert pngs and set(page.img) == pngs and len(page.img) == len(pngs)
    assert pngs | {p for p in _files(results) if p.endswith(".json") and "/" in p} <= set(page.href)
    external = [u for u in page.img + page.href if "//" in u or u.startswith("/")]
    assert not external and "script" not in page.tags and "link" not in page.tags


def test_html_summary_says_which_test_expected_the_failure(run):
    _, results = run
    text = (results / "index.html").read_text()
    sections = {s.split("</code>")[0].split("<code>")[1]: s for s in text.split("<section")[1:]}
    assert (
        "test outcome: <b>passed</b>"
        in sections["test_grads.py::test_expected_failure_is_recorded"]
    )
    assert "test outcome: <b>failed</b>" in sections["test_grads.py::test_marker_sets_the_mode"]


def test_terminal_summary_shows_the_worst_entry(run):
    out, results = run
    lines = out.stdout.splitlines()
    assert f"gradexplorer: {len(CASES) + 3} failed derivative checks" in out.stdout
    records = {r["nodeid"]: r for r in json.loads((results / "summary.json").read_text())["checks"]}
    for nodeid, report in expected().items():
        at = lines.index(f"{nodeid}  (check 1)")
        assert lines[at + 1].strip() == records[nodeid]["headline"]
        # the report's own line for its worst entry; its FD error estimate varies run to run
        assert lines[at + 2].strip() == records[nodeid]["entries"][0]["text"].strip()
        assert lines[at + 2].strip().startswith(_numbers(report.mismatches[0]))
    assert f"reports and heatmaps: {results / 'index.html'}" in out.stdout


def test_failure_message_is_the_report_and_says_where_its_files_are(run):
    out, results = run
    assert "check_grads(sin_planted) FAILED" in out.stdout
    assert f"report and heatmaps: {results}" in out.stdout


# ---------------------------------------------------------------- xdist, reruns


def test_xdist_run_gives_the_same_files(run, tmp_path):
    pytest.importorskip("xdist", reason="pytest-xdist is in the dev extra")
    plain_out, plain = run
    out = _run(tmp_path, "-p", "xdist.plugin", "-n", "2", "--gx-results=results")
    assert out.returncode == 1, out.stdout + out.stderr
    results = tmp_path / "results"
    assert _files(results) == _files(plain)

    def checks(folder):
        return [
            (r["nodeid"], r["status"], [e["label"] for e in r["entries"]])
            for r in json.loads((folder / "summary.json").read_text())["checks"]
        ]

    assert checks(results) == checks(plain)
    # the controller printed the summary once (workers print nothing)
    assert out.stdout.count("failed derivative checks") == 1
    for nodeid in expected():
        assert f"{nodeid}  (check 1)" in out.stdout


def test_a_second_run_clears_the_first_runs_files_only(pytester):
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(planted=PLANTED)
    pytester.makepyfile(
        test_a="from planted import planted\n"
        "def test_a(gx_check):\n"
        "    f, args = planted('sin', 0, 1)\n"
        "    gx_check(f, *args)\n"
    )
    results = pytester.path / "out"
    results.mkdir()
    (results / "mine.txt").write_text("not the plugin's")
    pytester.runpytest(*PLUGIN, f"--gx-results={results}").assert_outcomes(failed=1)
    first = {p.split("/")[0] for p in _files(results) if "/" in p}
    assert len(first) == 1
    (pytester.path / "test_a.py").unlink()
    pytester.makepyfile(test_b="def test_b():\n    pass\n")
    pytester.runpytest(*PLUGIN, f"--gx-results={results}").assert_outcomes(passed=1)
    assert _files(results) == {"mine.txt", "index.html", "summary.json"}
    assert "no failed derivative checks" in (results / "index.html").read_text()


# ---------------------------------------------------------------- quiet when unused


def test_plugin_import_loads_no_numeric_or_display_library():
    code = (
        "import sys, pytest_gradexplorer; "
        "print([m for m in ('numpy', 'gradexplorer', 'autograd', 'matplotlib', 'torch', 'jax') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env())
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_run_that_does_not_use_it_imports_no_gradexplorer(pytester):
    pytester.makepyfile(
        "import sys\n"
        "def test_plain():\n"
        "    assert 'gradexplorer' not in sys.modules and 'numpy' not in sys.modules\n"
    )
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(passed=1)
    assert "gradexplorer:" not in result.stdout.str()  # no summary section


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "--gx-results needs a folder path"),
        ("afile.txt", "is a file: give a folder path"),
        ("afile.txt/sub", "cannot create the folder"),
    ],
)
def test_bad_results_folder_is_a_usage_error(pytester, value, message):
    pytester.makefile(".txt", afile="x")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*PLUGIN, f"--gx-results={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


@pytest.mark.parametrize(
    ("marker", "uses_fixture", "message"),
    [
        ("gradcheck(1e-6)", True, "takes keyword options only"),
        ("gradcheck(rtool=1e-6)", True, "unknown option 'rtool'; expected some of wrt, order"),
        ("gradcheck(rtol=1e-6)", False, "does not use it: add gx_check to its arguments"),
    ],
)
def test_bad_marker_fails_the_test_with_a_clear_message(pytester, marker, uses_fixture, message):
    arg = "gx_check" if uses_fixture else ""
    pytester.makepyfile(
        f"import numpy as np, pytest\n@pytest.mark.{marker}\ndef test_x({arg}):\n    pass\n"
    )
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(errors=1)  # in the test's setup
    assert message in result.stdout.str()


def test_module_marker_leaves_tests_without_the_fixture_alone(pytester):
    pytester.makepyfile(
        "import pytest\n"
        "pytestmark = pytest.mark.gradcheck(rtol=1e-6)\n"
        "def test_plain():\n"
        "    pass\n"
    )
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=1)


def test_without_results_folder_the_message_says_how_to_get_files(pytester):
    pytester.makepyfile(planted=PLANTED)
    pytester.makepyfile(
        "from planted import planted\n"
        "def test_a(gx_check):\n"
        "    f, args = planted('softmax', 1, 1)\n"
        "    gx_check(f, *args)\n"
    )
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "pytest --gx-results=DIR writes its JSON report and heatmaps" in text
    report = gx.check_grads(*_one("softmax", 1, 1))
    assert _numbers(report.mismatches[0]) in text
    assert not list(pytester.path.rglob("*.png"))


def _numbers(entry) -> str:
    """An entry's line up to its FD error (which changes from run to run)."""
    return str(entry).split("FD ±")[0].strip()


def _one(name, i, j):
    f, args = _planted()(name, i, j)
    return (f, *args)


# ---------------------------------------------------------------- packaging, browser


def test_entry_point_is_declared():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["pytest11"] == {"gradexplorer": "pytest_gradexplorer"}
    assert "pytest_gradexplorer" in meta["tool"]["setuptools"]["py-modules"]


def test_installed_entry_point_loads_the_plugin(pytester):
    eps = [e for e in entry_points(group="pytest11") if e.name == "gradexplorer"]
    if not eps:
        pytest.skip("gradexplorer is installed without its pytest11 entry point: pip install -e .")
    assert eps[0].value == "pytest_gradexplorer"
    env = {k: v for k, v in _env().items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--help"],
        cwd=pytester.path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert "--gx-results=DIR" in out.stdout, out.stdout[-2000:] + out.stderr


def test_summary_page_images_load_in_chromium(run):
    from browser_util import CHROMIUM, CHROMIUM_ARGS, need_chromium

    need_chromium()
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    _, results = run
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            requests = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto((results / "index.html").as_uri())
            page.wait_for_load_state("load")
            images = page.evaluate(
                "[...document.images].map(i => [i.getAttribute('src'), i.complete, "
                "i.naturalWidth, i.getBoundingClientRect().width])"
            )
            overflow = page.evaluate("document.documentElement.scrollWidth")
        finally:
            browser.close()
    pngs = {p for p in _files(results) if p.endswith(".png")}
    assert {src for src, *_ in images} == pngs
    for src, complete, natural, shown in images:
        assert complete and natural > 0 and shown > 200, (src, natural, shown)
    assert overflow <= 1366  # nothing wider than the window: no sideways scrolling
    assert all(u.startswith("file://") for u in requests), requests


def test_planted_helper_really_plants_one_wrong_entry():
    """The premise of the tests above, checked against the gallery's Jacobian."""
    for name, i, j in CASES:
        f, args = _planted()(name, i, j)
        report = gx.check_grads(f, *args)
        assert [(e.row, e.col) for e in report.mismatches] == [(i, j)]
        ex = gx.gallery.get(name)
        J = np.reshape(ex.jacobian(*args)[0], report.shape)
        np.testing.assert_allclose(report.analytic[i, j] - J[i, j], 0.5)
