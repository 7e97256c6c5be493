"""The distributions: ``python -m build`` makes an sdist and, from it, a wheel;
each installs into a fresh venv and works there (import, a gallery check, the
command line's --version, the pytest plugin's entry point).

No network: the build runs without isolation (setuptools and build are in the
dev extra) and the installs take --no-deps; the fresh venvs see this venv's
packages (numpy, autograd) through a path file, after their own site-packages,
so gradexplorer itself comes from the distribution under test.
"""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
META = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
#: What a build needs of the source tree (the rest is caches, venvs, build output).
SKIP = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".ruff_cache",
    ".pytest_cache", ".hypothesis", "artifacts", ".cache", "*.tmp",
)  # fmt: skip

SMOKE = """
import json, sys
from importlib.metadata import entry_points, metadata
import gradexplorer as gx
ex = gx.gallery.get("softmax")
report = gx.check_grads(ex.f, *ex.args())
import pytest_gradexplorer
plugin = [e.value for e in entry_points(group="pytest11") if e.name == "gradexplorer"]
print(json.dumps({
    "file": gx.__file__, "plugin_file": pytest_gradexplorer.__file__,
    "passed": report.passed, "plugin": plugin,
    "license": metadata("gradexplorer")["License-Expression"],
}))
"""


def _run(*cmd, cwd, env=None, timeout=300) -> str:
    out = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert out.returncode == 0, f"{cmd} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    pytest.importorskip("build", reason="build is in the dev extra")
    pytest.importorskip("setuptools", reason="setuptools is in the dev extra")
    tmp = tmp_path_factory.mktemp("build")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=SKIP)
    # without isolation: the build backend comes from this venv, not from the network
    _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", tmp / "dist", src, cwd=tmp)
    sdists = list((tmp / "dist").glob("*.tar.gz"))
    wheels = list((tmp / "dist").glob("*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, list((tmp / "dist").iterdir())
    return sdists[0], wheels[0]


def _fresh_venv(where: Path) -> Path:
    """A venv without pip that also sees this venv's packages, after its own."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", where], check=True)
    python = where / "bin" / "python"
    own = _run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=where)
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    Path(own.strip(), "zz_test_env.pth").write_text("\n".join(sorted(ours)) + "\n")
    return python


def _clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_distribution_installs_and_works(dists, tmp_path, kind):
    dist = dists[1] if kind == "wheel" else dists[0]
    python = _fresh_venv(tmp_path / "venv")
    env = _clean_env()
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps"]
    # an sdist is built where it is installed: its backend is this venv's setuptools
    _run(*pip, "--no-index", "--no-build-isolation", dist, cwd=tmp_path, env=env)
    smoke = json.loads(_run(python, "-c", SMOKE, cwd=tmp_path, env=env).splitlines()[-1])
    site = str(tmp_path / "venv")
    assert smoke["file"].startswith(site), smoke  # the distribution's, not the source tree's
    assert smoke["plugin_file"].startswith(site), smoke
    assert smoke["passed"] is True
    assert smoke["plugin"] == ["pytest_gradexplorer"]
    assert smoke["license"] == META["license"] == "MIT"
    version = _run(python, "-m", "gradexplorer", "--version", cwd=tmp_path, env=env)
    assert version.strip() == f"gradexplorer {META['version']}"


def test_distributions_hold_the_license_plugin_and_page_assets(dists):
    sdist, wheel = dists
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        dist_info = next(n.split("/")[0] for n in names if ".dist-info/" in n)
        metadata = z.read(f"{dist_info}/METADATA").decode()
    assert "pytest_gradexplorer.py" in names
    assert f"{dist_info}/licenses/LICENSE" in names
    assert "License-Expression: MIT" in metadata
    assert {"gradexplorer/explorer/static/pane.js"} <= names
    with tarfile.open(sdist) as t:
        top = t.getnames()[0].split("/")[0]
        in_sdist = {n.removeprefix(top + "/") for n in t.getnames()}
    assert {"LICENSE", "pyproject.toml", "pytest_gradexplorer.py", "README.md"} <= in_sdist


def test_version_is_the_distributions():
    from gradexplorer.__main__ import version

    assert version() == META["version"]
    out = subprocess.run(
        [sys.executable, "-m", "gradexplorer", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.strip() == f"gradexplorer {META['version']}"
