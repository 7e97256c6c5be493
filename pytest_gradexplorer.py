"""gradexplorer's pytest plugin: derivative checks in test suites.

Installed with gradexplorer (entry point ``pytest11: gradexplorer``; turn it
off with ``-p no:gradexplorer``). It gives

- the fixture ``gx_check(f, *args, **options)``: :func:`gradexplorer.check_grads`
  that fails the test, as :func:`gradexplorer.testing.assert_grads` does, when
  the derivatives are wrong or could not be verified (``allow_inconclusive=True``
  lets an inconclusive check pass); it returns the report otherwise;
- the marker ``@pytest.mark.gradcheck(**options)``: default options of
  ``gx_check`` for a test, class or module (``rtol=1e-6``, ``mode="full"``...);
- ``--gx-results=DIR``: every failed check's report (JSON) and heatmaps (PNG)
  under DIR, and one page, ``DIR/index.html``, showing them all;
- a terminal summary naming the worst entries of each failed check.

It works under pytest-xdist: workers write each failed check's files; the
records travel to the controller in the test reports' ``user_properties``, and
the controller writes the page once.

This module sits outside the ``gradexplorer`` package on purpose: pytest
imports every installed plugin at start-up, and importing gradexplorer loads
numpy and autograd. Here only pytest and the standard library are imported;
gradexplorer is imported when a test uses ``gx_check`` or when there is
something to write.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

#: The name of the records in ``user_properties`` (and in JUnit XML).
PROPERTY = "gradexplorer"
MARKER = "gradcheck"
#: Options of ``gx_check`` beyond check_grads' own keywords.
_OWN_OPTIONS = ("allow_inconclusive",)
_STATE = pytest.StashKey[dict]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradexplorer", "gradient checks (gradexplorer)")
    group.addoption(
        "--gx-results",
        metavar="DIR",
        default=None,
        help="write each failed gx_check's report (JSON) and heatmaps (PNG) under DIR, "
        "with a summary page DIR/index.html (DIR is created if missing)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(**options): options of the gx_check fixture in this test, class or "
        "module: check_grads' keywords (rtol=1e-6, mode='full', order=2, ...) and "
        "allow_inconclusive=True",
    )
    results = _results_dir(config)
    config.stash[_STATE] = {"results": results, "records": {}, "tests": {}, "index": None}
    config.pluginmanager.register(_Collector(config.stash[_STATE]), "gradexplorer-collector")
    if results is not None and not _is_worker(config):
        from gradexplorer.results import clear_previous

        clear_previous(results)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: workers write where the controller resolved DIR to."""
    results = node.config.stash[_STATE]["results"]
    if results is not None:
        node.workerinput["gx_results"] = str(results)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _results_dir(config: pytest.Config) -> Path | None:
    if _is_worker(config) and "gx_results" in config.workerinput:
        return Path(config.workerinput["gx_results"])
    value = config.getoption("gx_results")
    if value is None:
        return None
    if not value.strip():
        raise pytest.UsageError(
            "--gx-results needs a folder path, like --gx-results=gx-results; got an empty value"
        )
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = config.invocation_params.dir / path
    if path.exists() and not path.is_dir():
        raise pytest.UsageError(
            f"--gx-results must name a folder, but {path} is a file: "
            "give a folder path (it is created when missing)"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise pytest.UsageError(
            f"--gx-results: cannot create the folder {path}: {exc.strerror or exc}; "
            "give a folder you can write to"
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise pytest.UsageError(
            f"--gx-results: the folder {path} is not writable; give a folder you can write to"
        )
    return path


# ---------------------------------------------------------------- the fixture


@pytest.fixture
def gx_check(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``gx_check(f, *args, **options)``: check f's derivatives at args; fail
    the test with the report when they are wrong (or unverified), else return
    the report. Options are :func:`gradexplorer.check_grads`' keywords and
    ``allow_inconclusive``; a ``gradcheck`` marker sets their defaults.

    Example (in a test module)::

        def test_my_loss(gx_check):
            gx_check(my_loss, params, data, wrt=0)
    """
    defaults = _marker_options(request.node)
    state = request.config.stash[_STATE]
    checks = 0

    def check(f: Callable, *args: Any, **options: Any) -> Any:
        __tracebackhide__ = True  # the failure points at the test's own line
        nonlocal checks
        from gradexplorer.check.api import check_grads
        from gradexplorer.errors import GradientError

        merged = {**defaults, **options}
        allow = merged.pop("allow_inconclusive", False)
        report = check_grads(f, *args, **merged)
        try:
            return report.raise_if_failed(inconclusive_ok=allow)
        except GradientError:
            checks += 1
            where = _record(request.node, report, checks, state["results"])
        raise GradientError(report=report, message=f"{report}\n  {where}")

    return check


def _marker_options(item: pytest.Item) -> dict:
    """The gradcheck markers' options, the closest (the test's own) winning."""
    markers = list(item.iter_markers(MARKER))
    if not markers:
        return {}
    allowed = _allowed_options()
    options: dict = {}
    for mark in reversed(markers):  # farthest first: module, class, then the test
        if mark.args:
            pytest.fail(
                f"@pytest.mark.{MARKER} takes keyword options only, like "
                f"@pytest.mark.{MARKER}(rtol=1e-6); got positional {mark.args!r}",
                pytrace=False,
            )
        unknown = sorted(set(mark.kwargs) - set(allowed))
        if unknown:
            pytest.fail(
                f"@pytest.mark.{MARKER}: unknown option {', '.join(map(repr, unknown))}; "
                f"expected some of {', '.join(allowed)}",
                pytrace=False,
            )
        options.update(mark.kwargs)
    return options


def _allowed_options() -> tuple[str, ...]:
    import inspect

    from gradexplorer.check.api import check_grads

    params = inspect.signature(check_grads).parameters.values()
    own = tuple(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)
    return own + _OWN_OPTIONS


def pytest_runtest_setup(item: pytest.Item) -> None:
    own = any(m.name == MARKER for m in getattr(item, "own_markers", ()))
    if own and "gx_check" not in getattr(item, "fixturenames", ()):
        pytest.fail(
            f"@pytest.mark.{MARKER} sets the options of the gx_check fixture, but "
            f"{item.name} does not use it: add gx_check to its arguments and call "
            "gx_check(f, *args)",
            pytrace=False,
        )


def _record(item: pytest.Item, report: Any, number: int, results: Path | None) -> str:
    """Keep a failed check's record on the test (and its files under results);
    a line for the failure message saying where they are."""
    from gradexplorer.results import check_record, write_check

    record = check_record(report, item.nodeid, number)
    where = "(pytest --gx-results=DIR writes its JSON report and heatmaps under DIR)"
    if results is not None:
        try:
            record = write_check(report, record, results)
        except OSError as exc:  # the check's own failure must still be reported
            record["note"] = f"could not write its files: {exc}"
            where = f"(its files could not be written under {results}: {exc})"
        else:
            where = f"report and heatmaps: {results / record['folder']}"
    item.user_properties.append((PROPERTY, json.dumps(record)))
    return where


# ---------------------------------------------------------------- collecting, writing


class _Collector:
    """Gathers the records from every test report, in the process that prints
    the session (the controller under xdist, whose reports come from workers)."""

    def __init__(self, state: dict) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        found = [v for k, v in report.user_properties if k == PROPERTY]
        if not found:
            return
        for text in found:
            record = json.loads(text)
            # a record rides on every later report of its test: keep one
            self.state["records"][(record["nodeid"], record["number"])] = record
        if report.when == "call":
            xfail = hasattr(report, "wasxfail")
            outcome = {"skipped": "xfailed", "passed": "xpassed"} if xfail else {}
            self.state["tests"][report.nodeid] = outcome.get(report.outcome, report.outcome)
        elif report.failed:
            self.state["tests"][report.nodeid] = f"error in {report.when}"


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    state = config.stash.get(_STATE, None)
    if state is None or state["results"] is None or _is_worker(config):
        return
    from gradexplorer.results import write_summary

    state["index"] = write_summary(
        state["records"].values(), state["results"], tests=state["tests"], version=_version()
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gradexplorer")
    except PackageNotFoundError:
        import gradexplorer

        return gradexplorer.__version__


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or _is_worker(config):
        return
    records, index = state["records"], state["index"]
    if not records:
        if index is not None:
            terminalreporter.write_line(f"gradexplorer: no failed derivative checks ({index})")
        return
    from gradexplorer.results import terminal_lines

    n = len(records)
    terminalreporter.write_sep("=", f"gradexplorer: {n} failed derivative check{'s' * (n != 1)}")
    for line in terminal_lines(records.values(), index):
        terminalreporter.write_line(line)
