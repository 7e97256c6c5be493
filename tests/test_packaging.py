"""Packaging contracts: light imports, one dependency list, README and CI agree, the README's
links lead somewhere."""

import json
import re
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_import_loads_no_display_library_nor_torch_nor_jax():
    code = (
        "import sys, numpy as np, gradexplorer as gx; gx.grad; "
        "gx.check_grads(np.sin, np.ones(2)); gx.locate(np.sin, np.ones(2)); "
        "bad = [m for m in ('matplotlib', 'ipywidgets', 'ipympl', 'torch', 'jax') "
        "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def _norm(req: str) -> str:
    name = re.split(r"[<>=!\[ ;]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")
    # conda-forge's names for torch and build
    return {"pytorch": "torch", "python-build": "build"}.get(name, name)


def test_environment_yml_matches_pyproject():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pip = {_norm(r) for r in meta["dependencies"]}
    for extra in meta["optional-dependencies"].values():
        pip |= {_norm(r) for r in extra if not r.startswith("gradexplorer")}
    pip = {"distributed" if p == "dask" else p for p in pip} | {"dask"}  # dask[distributed]
    env = set()
    for line in (ROOT / "environment.yml").read_text().splitlines():
        m = re.match(r"\s*-\s+([A-Za-z0-9_.-]+)", line)
        if m and m.group(1) != "conda-forge":
            env.add(_norm(m.group(1)))
    env.discard("python")
    assert pip == env, pip ^ env


def readme_commands():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```[a-z]*\n(.*?)```", text, re.S).group(1)
    return [ln for ln in block.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def test_readme_opens_with_two_commands_and_ci_runs_the_second():
    cmds = readme_commands()
    assert len(cmds) == 2, cmds
    assert "jupyter lab" in cmds[0] and "notebooks/00_tour.ipynb" in cmds[0]
    assert "pytest" in cmds[1] and ".venv" in cmds[1]
    assert cmds[1] in (ROOT / ".ci" / "run").read_text()


def test_readme_builds_the_docs_as_ci_does():
    text = (ROOT / "README.md").read_text()
    (cmd,) = re.findall(r"`([^`]*-m sphinx[^`]*)`", text)
    assert cmd.endswith("docs docs/_build/html") and " -W " in cmd, cmd
    assert cmd in (ROOT / ".ci" / "run").read_text()
    assert "docs/_build/" in (ROOT / ".gitignore").read_text().splitlines()


def test_readme_links_and_pictures_are_in_the_repository():
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#]+)\)", text)
    local = [t for t in targets if not re.match(r"[a-z]+:", t)]
    assert local, "the README links nothing of its own"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, missing


def test_display_names_load_lazily_from_the_package():
    code = (
        "import sys, gradexplorer as gx; assert 'matplotlib' not in sys.modules; "
        "names = [gx.explore, gx.plot_jacobian, gx.plot_check, gx.plot_hessian, "
        "gx.plot_complex_blocks, gx.plot_step_sweep]; assert all(callable(n) for n in names); "
        "assert 'matplotlib' in sys.modules"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_results_render_without_a_kernel():
    import autograd.numpy as anp
    import numpy as np

    import gradexplorer as gx

    results = [
        gx.check_grads(anp.sin, np.ones(3)),
        gx.numeric_jacobian(np.sin, np.ones(3)),
        gx.complex_blocks(lambda z: z**2, np.array([1j, 2.0])),
        gx.locate(lambda x: anp.sum(anp.sin(x)), np.ones(2)),
    ]
    for r in results:
        assert r._repr_png_()[:4] == b"\x89PNG", type(r).__name__
        assert r._repr_html_()


def test_the_package_ships_its_jupyterlab_settings():
    import tomllib

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data = meta["tool"]["setuptools"]["data-files"]
    (files,) = [v for k, v in data.items() if k == "share/jupyter/lab/settings/overrides.d"]
    setting = json.loads((ROOT / files[0]).read_text())
    assert setting["@jupyter-widgets/jupyterlab-manager:plugin"]["saveState"] is True
    # widget messages on the main shell: JupyterLab 4.6's shared comm subshells can leave
    # a new widget addressing a deleted subshell, whose messages the kernel then drops
    kernels = setting["@jupyterlab/apputils-extension:kernels-settings"]
    assert kernels["commsOverSubshells"] == "disabled"
    assert "gradexplorer*" in meta["tool"]["setuptools"]["packages"]["find"]["include"]
