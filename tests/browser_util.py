"""Driving gradexplorer's explorers in a real JupyterLab with Playwright (Debian's chromium).

Used by ``tests/test_browser.py``. Every wait is on state — the notebook's kernel, the
explorer's status element (``.gx-status [data-state][data-generation]``), the DOM, or
canvas pixels sampled each animation frame — never on a fixed time. The in-page side is
``tests/browser_helpers.js`` (``window.__gxt``).

The explorer's contract (``gx-explorer`` root, ``.gx-status``, ``.gx-badge``,
``.gx-error``, a fixed tab set, a magenta outline on the selected entry) is checked where
it applies; until it is implemented the waits fall back on "kernel idle and quiet" so that
the rest of the session still runs, and each missing piece is reported once.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("GX_ARTIFACTS", ROOT / "tests" / "artifacts"))
HELPERS = Path(__file__).with_name("browser_helpers.js")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
VIEWPORT = {"width": 1366, "height": 900}
#: The tabs every explorer shows, whatever the function (the explorer's contract).
FIXED_TABS = ["Jacobian", "Check", "Complex", "Hessian", "Step sweep", "Where"]
#: Views whose figure outlines the selected Jacobian entry in magenta.
OUTLINED = ("Jacobian", "Check")
#: Kernel silence that stands in for the explorer's "idle" until .gx-status exists (ms).
QUIET_MS = 600
#: Kernel silence after which an idle explorer's blank view will not be drawn any more (ms).
STUCK_MS = 15_000
#: Animation frames without any change before a view counts as settled.
STABLE_FRAMES = 12

S = 1000  # Playwright timeouts are in milliseconds


def need_chromium() -> None:
    """Skip without Debian's chromium; fail under CI=true (CI must install it)."""
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI") == "true":
            pytest.fail(
                f"CI=true but {CHROMIUM} is missing: .ci/run must install Debian's "
                "chromium (apt-get install -y chromium)."
            )
        pytest.skip(
            f"{CHROMIUM} not found: install Debian's chromium "
            "(apt-get install -y chromium) to run the real-browser test."
        )


# ---------------------------------------------------------------------- JupyterLab server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: Seconds between JupyterLab's autosaves in the tests (its default is 120): the saved
#: notebook must still show its pictures after an autosave rewrote it.
AUTOSAVE_S = 4


@contextlib.contextmanager
def jupyterlab(tmp: Path, notebooks: list[Path], app: str = "lab"):
    """A JupyterLab (or, ``app="notebook"``, Notebook 7) server on a fresh root holding
    ``notebooks``; yields its URL.

    Started in its own process group, so that stopping it also stops its kernels.
    """
    root = tmp / "root"
    root.mkdir(parents=True)
    for nb in notebooks:
        shutil.copy(nb, root / nb.name)
    # the package's own JupyterLab setting (saveState: widgets saved with the notebook),
    # as a non-editable install puts it in sys.prefix/share/jupyter/lab/settings
    overrides = tmp / "app_settings" / "overrides.d"
    overrides.mkdir(parents=True)
    shutil.copy(ROOT / "jupyter-config" / "gradexplorer.json", overrides / "gradexplorer.json")
    settings = tmp / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    if app == "lab":  # Notebook 7 has no news plugin (its page fails on a setting for it)
        (settings / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False})
        )
    docmanager = tmp / "settings" / "@jupyterlab" / "docmanager-extension"
    docmanager.mkdir(parents=True)
    (docmanager / "plugin.jupyterlab-settings").write_text(
        json.dumps({"autosave": True, "autosaveInterval": AUTOSAVE_S})
    )
    env = dict(
        os.environ,
        JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        PYDEVD_DISABLE_FILE_VALIDATION="1",
        # One BLAS thread in the kernels: on this 2-core machine, shared by several test
        # suites, BLAS's two threads waiting on each other made a 1024 x 1024 AD Jacobian
        # (~0.14 s alone) take 1.5-6 s; with one, 0.35 s under the same load
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
    )
    port = _free_port()
    log_path = tmp / "jupyterlab.log"
    log = open(log_path, "w")
    klass = "LabApp" if app == "lab" else "JupyterNotebookApp"
    args = [
        sys.executable,
        "-m",
        "jupyter",
        app,
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.token=",
        "--ServerApp.password=",
        f"--ServerApp.root_dir={root}",
        f"--{klass}.app_settings_dir={overrides.parent}",
        f"--LabServerApp.app_settings_dir={overrides.parent}",
        f"--{klass}.expose_app_in_browser=True",
    ]
    if app == "lab":
        args.append("--LabApp.news_url=None")
    if os.geteuid() == 0:
        args.append("--allow-root")
    server = subprocess.Popen(
        args, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:  # poll the server's own status endpoint until it answers
            try:
                urllib.request.urlopen(f"{url}/api/status", timeout=2)
                break
            except Exception:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"jupyter {app} did not start:\n" + log_path.read_text()[-4000:])
                time.sleep(0.25)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
        # kernels left in the group (the server normally stops them itself)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.pid, signal.SIGKILL)
        log.close()


# ---------------------------------------------------------------------- a user's session


@dataclass
class Findings:
    """Soft failures (grouped by kind, with where they happened) and notes."""

    failures: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def fail(self, kind: str, where: str) -> None:
        self.failures.setdefault(kind, []).append(where)

    def summary(self) -> str:
        lines = []
        for kind, where in self.failures.items():
            shown = ", ".join(where[:8]) + (f", … ({len(where)} in all)" if len(where) > 8 else "")
            lines.append(f"- {kind}: {shown}")
        return "\n".join(lines)


class Session:
    """One browser page on the JupyterLab server, as a user works in it."""

    def __init__(
        self, page, url: str, findings: Findings, prefix: str = "browser", app: str = "lab"
    ):
        self.app = app
        self.t0 = time.monotonic()
        self.page = page
        self.url = url
        self.findings = findings
        self.prefix = prefix
        self.shots: list[Path] = []
        self.contract_seen = False
        self.tab_set: list[str] | None = None
        self.console_errors: list[str] = []
        #: what each checked view wrote in its cells (``__gxt.cellValues``), by "where/title"
        self.cell_values: dict[str, dict] = {}
        page.on("console", self._on_console)
        page.on("pageerror", lambda exc: self._on_console(_PageError(f"Uncaught {exc}")))
        page.add_init_script(path=str(HELPERS))
        page.on("dialog", lambda d: d.accept())  # the "leave page?" prompt on reload

    # -------------------------------------------------------------- reporting

    def log(self, message: str) -> None:
        """Progress, with the seconds since the session began: printed (shown with -s or
        on failure) and appended to tests/artifacts/browser_session.log."""
        line = f"[{time.monotonic() - self.t0:6.1f} s] {message}"
        print(line, flush=True)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        with open(ARTIFACTS / "browser_session.log", "a") as fh:
            fh.write(line + "\n")

    def _on_console(self, msg) -> None:
        if msg.type == "error":
            self.console_errors.append(msg.text[:300])
            self.log(f"console error: {msg.text[:300]}")

    def shot(self, name: str, full_page: bool = False) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{self.prefix}_{name}.png"
        try:
            self.page.screenshot(path=str(path), full_page=full_page)
        except Exception as exc:  # a screenshot must never hide the real failure
            print(f"screenshot {path.name} failed: {exc}")
        self.shots.append(path)
        return path

    @contextlib.contextmanager
    def step(self, name: str):
        """A hard step: on any exception, a screenshot and a message naming the step."""
        try:
            yield
        except Exception as exc:
            path = self.shot(f"FAIL_{_slug(name)}")
            raise AssertionError(f"{name}: {exc}\n(screenshot: {path})") from exc

    def soft(self, ok: bool, kind: str, where: str, shot: str | None = None) -> bool:
        if not ok:
            self.findings.fail(kind, where)
            if shot:
                self.shot(f"FAIL_{_slug(shot)}")
        return ok

    def js(self, expression: str, arg=None):
        return self.page.evaluate(expression, arg)

    def wait(self, predicate: str, arg=None, timeout: float = 120, what: str = "", state: str = ""):
        """Wait (polled every animation frame) until ``predicate(arg)`` is truthy."""
        try:
            return self.page.wait_for_function(predicate, arg=arg, timeout=timeout * S)
        except Exception as exc:
            detail = ""
            if state:
                with contextlib.suppress(Exception):
                    detail = f"; state: {self.js(state, arg)}"
            raise AssertionError(f"waited {timeout:.0f} s for {what or predicate}{detail}") from exc

    # -------------------------------------------------------------- notebook

    def wait_notebook(self, name: str) -> None:
        """The notebook ``name`` is current, loaded, and its kernel idle and connected."""
        self.wait(
            """(name) => {
                const T = window.__gxt, p = T && T.panel();
                return p && p.context.path.endsWith(name) && p.context.isReady &&
                    p.sessionContext.isReady && T.kernelIdle() && T.hookKernel();
            }""",
            name,
            timeout=120,
            what=f"{name} to open with an idle kernel",
            state="""() => { const p = window.__gxt && __gxt.panel();
                return p ? {path: p.context.path, kernel: __gxt.kernel() && __gxt.kernel().status}
                         : 'no notebook panel'; }""",
        )

    def file_browser_open(self) -> bool:
        return self.js(
            "() => { const f = document.querySelector('#filebrowser');"
            " return Boolean(f && f.offsetWidth > 100 && f.checkVisibility()); }"
        )

    def ensure_file_browser(self) -> None:
        if not self.file_browser_open():
            self.js("() => window.jupyterapp.commands.execute('filebrowser:activate')")
        self.wait(
            "() => { const f = document.querySelector('#filebrowser');"
            " return f && f.offsetWidth > 100 && f.checkVisibility(); }",
            timeout=30,
            what="the file browser to be open in the left sidebar",
        )

    def open_first(self, name: str) -> None:
        where = "lab/tree" if self.app == "lab" else "notebooks"
        self.page.goto(f"{self.url}/{where}/{name}")
        self.wait_notebook(name)
        if self.app == "lab":
            self.ensure_file_browser()

    def open_from_file_browser(self, name: str) -> None:
        """Double-click the notebook in the file browser, as a user opens it."""
        item = self.page.locator(".jp-DirListing-item", has_text=name).first
        item.dblclick(timeout=30 * S)
        self.wait_notebook(name)

    def reload(self, name: str) -> None:
        self.page.reload()
        self.wait_notebook(name)
        if self.app == "lab":
            self.ensure_file_browser()

    def run_all(self, expected_explorers: int) -> float:
        """Run ▸ Run All Cells (JupyterLab's command); wait until every code cell ran and
        every explorer is on the page. Returns the seconds it took."""
        start = time.monotonic()
        self.page.keyboard.press("Escape")
        self.js("() => __gxt.runAll()")
        self.wait(
            "() => __gxt.run && __gxt.run.done",
            timeout=300,
            what="Run All Cells to finish",
            state="() => ({kernel: __gxt.kernel() && __gxt.kernel().status, "
            "unexecuted: __gxt.unexecuted()})",
        )
        run = self.js("() => __gxt.run")
        assert run.get("ok"), f"Run All Cells failed: {run}; on the page: {self.page_problems()}"
        missing = self.js("() => __gxt.unexecuted()")
        assert not missing, f"Run All Cells left code cells {missing} unexecuted"
        self.wait(
            """(n) => { const ex = __gxt.explorers();
                return ex.length === n && ex.every(e => __gxt.tabs(e).length > 0); }""",
            expected_explorers,
            timeout=120,
            what=f"{expected_explorers} explorers with their tabs",
            state="() => __gxt.explorers().length + ' explorers'",
        )
        return time.monotonic() - start

    def page_problems(self) -> list[str]:
        """What a user would see as broken: widget errors, tracebacks, warnings."""
        return self.js(
            """() => {
              const p = __gxt.panelNode(); const out = [];
              for (const o of p.querySelectorAll('.jp-OutputArea-output')) {
                const t = o.textContent || '';  // innerText is empty in cells off screen
                if (t.includes('Error displaying widget')) out.push('Error displaying widget');
                if (t.includes('Traceback')) out.push('Traceback: ' + t.slice(0, 300));
                if (o.dataset.mimeType === 'application/vnd.jupyter.stderr')
                  out.push('stderr: ' + t.slice(0, 300));
              }
              for (const d of document.querySelectorAll('.jp-Dialog'))
                out.push('dialog: ' + d.innerText.slice(0, 200));
              return out;
            }"""
        )

    # -------------------------------------------------------------- explorers

    def count(self) -> int:
        return self.js("() => __gxt.explorers().length")

    def contract_status(self, k: int):
        return self.js("(k) => __gxt.statusOf(k)", k)

    def check_contract(self, k: int, where: str) -> None:
        """The explorer's contract, as far as its static parts go."""
        info = self.js(
            """(k) => { const r = __gxt.explorer(k);
                return {root: r.classList.contains('gx-explorer'), status: __gxt.status(r),
                        badge: __gxt.text(r, '.gx-badge'), tabs: __gxt.tabTitles(k)}; }""",
            k,
        )
        self.contract_seen |= info["root"]
        self.soft(info["root"], "no element with class gx-explorer (explorer root)", where)
        self.soft(info["status"] is not None, "no .gx-status [data-state][data-generation]", where)
        self.soft(info["badge"] is not None, "no .gx-badge", where)
        tabs = info["tabs"]
        self.soft(
            [t for t in tabs if t in FIXED_TABS] == FIXED_TABS,
            f"tabs do not include the fixed set {FIXED_TABS}",
            f"{where} has {tabs}",
        )
        if self.tab_set is None:
            self.tab_set = tabs
        self.soft(tabs == self.tab_set, "tab set differs between explorers", f"{where}: {tabs}")

    def reveal(self, k: int, what: str = "tabs") -> None:
        """Scroll explorer ``k`` into view (its tab bar near the top, or its sliders)."""
        self.js(
            """([k, what]) => {
                const root = __gxt.explorer(k);
                const cell = root.closest('.jp-Cell');
                // Notebook 7 reopens a long output scrolled inside a box of its own: show
                // it whole, as a user clicking the output's left edge does
                const p = __gxt.panel(), w = p && p.content.widgets.find(c => c.node === cell);
                if (w && w.model.type === 'code' && w.model.getMetadata('scrolled') !== false) {
                    w.model.setMetadata('scrolled', false);
                    w.outputsScrolled = false;
                }
                const boxes = '.jp-OutputArea-child, .jp-Cell-outputWrapper, .jp-Cell-outputArea';
                if (cell) for (const o of cell.querySelectorAll(boxes)) o.style.maxHeight = 'none';
                if (cell) cell.scrollIntoView({block: 'start'});
            }""",
            [k, what],
        )
        # the cell's insides get a layout once it is on screen (content-visibility)
        self.wait(
            "(k) => { const b = __gxt.tabBar(__gxt.explorer(k)); return b.checkVisibility(); }",
            k,
            timeout=30,
            what=f"explorer {k}'s tab bar to be laid out",
        )
        self.js(
            """([k, what]) => {
                const root = __gxt.explorer(k), sc = __gxt.scroller();
                const el = what === 'sliders'
                    ? (root.querySelector('.widget-slider') || __gxt.tabBar(root))
                    : __gxt.tabBar(root);
                const top = sc.getBoundingClientRect().top;
                const want = what === 'sliders' ? sc.clientHeight / 3 : 140;
                sc.scrollTop += el.getBoundingClientRect().top - top - want;
            }""",
            [k, what],
        )

    def settle(
        self,
        k: int,
        since: int | None = None,
        timeout: float = 120,
        what: str = "",
        frames: int = STABLE_FRAMES,
    ):
        """Wait until explorer ``k`` is done: its status idle (with a generation past
        ``since``), else the kernel idle and quiet; then its view drawn (non-blank) and
        nothing about it changing for STABLE_FRAMES animation frames."""
        self.js("(k) => __gxt.resetStable(k)", k)
        # done, or hopeless: idle, the kernel silent for STUCK_MS and the view still blank
        # (nothing can draw it any more; no need to wait out the timeout)
        done = self.wait(
            """([k, since, quiet, frames, stuck]) => {
                const T = __gxt, root = T.explorer(k);
                const stable = T.stableFor(k, frames);  // called every frame: counts frames
                const s = T.status(root);
                const idle = s ? s.state === 'idle' && (since === null || s.generation > since)
                               : T.kernelQuiet(quiet);
                const blank = T.blank(T.viewElement(root));
                if (idle && stable && !blank) return 'settled';
                return idle && blank && T.kernelQuiet(stuck) ? 'stuck' : false;
            }""",
            [k, since, QUIET_MS, frames, STUCK_MS],
            timeout=timeout,
            what=what or f"explorer {k} to settle (idle, view drawn and unchanging)",
            state="""([k, since]) => { const T = __gxt, r = T.explorer(k), v = T.viewElement(r);
                return {status: T.status(r), kernelIdle: T.kernelIdle(),
                        msSinceKernelMsg: Math.round(performance.now() - T.lastMsg),
                        tab: T.currentTab(k), view: v ? T.rect(v) : null,
                        bitmap: v ? [v.width, v.height] : null, blank: T.blank(v),
                        laidOut: v ? v.checkVisibility() : null,
                        stableFrames: (T.stable[k] || {}).frames}; }""",
        ).json_value()
        if done == "stuck":
            state = self.js(
                """(k) => { const T = __gxt, r = T.explorer(k), v = T.viewElement(r);
                    return {status: T.status(r), tab: T.currentTab(k),
                            bitmap: v ? [v.width, v.height] : null,
                            canvas: v ? T.canvasState(v) : null}; }""",
                k,
            )
            raise AssertionError(
                f"{what or f'explorer {k}'}: its view stays blank — the explorer is idle and "
                f"the kernel has been silent for {STUCK_MS / 1000:.0f} s; state: {state}"
            )

    def try_settle(self, k: int, timeout: float = 60, what: str = "") -> str | None:
        """settle(), returning what went wrong instead of raising (None: settled)."""
        try:
            self.settle(k, timeout=timeout, what=what)
            return None
        except AssertionError as exc:
            return str(exc)

    def generation(self, k: int):
        s = self.contract_status(k)
        return None if s is None else s["generation"]

    def select_tab(self, k: int, title: str, where: str) -> dict | None:
        """Click tab ``title`` of explorer ``k`` with the mouse, at its middle, once the
        explorer has settled; check what is under the pointer first and that the click
        selected the tab. A click lost to a layout shift is retried (and noted)."""
        self.reveal(k)
        for _attempt in range(3):
            self.settle(k, what=f"explorer {k} to settle before clicking {title!r}", frames=6)
            if self.js("(k) => __gxt.currentTab(k)", k) == title:
                return None
            hit = self.js("([k, t]) => __gxt.tabHit(k, t)", [k, title])
            assert hit is not None, f"{where}: no tab {title!r} (tabs: {self.tab_titles(k)})"
            if not hit["inWindow"]:
                self.reveal(k)
                continue
            if not hit["onTab"]:
                self.shot(f"FAIL_covered_{_slug(where)}_{_slug(title)}")
                raise AssertionError(
                    f"{where}: tab {title!r} is covered: at its middle "
                    f"({hit['x']:.0f}, {hit['y']:.0f}) is {hit['hit']}"
                )
            self.page.mouse.click(hit["x"], hit["y"])
            try:
                self.page.wait_for_function(
                    "([k, t]) => __gxt.currentTab(k) === t", arg=[k, title], timeout=10 * S
                )
                self._shown_at_once(k, title, where)
                return hit
            except Exception:
                after = self.js("([k, t]) => __gxt.tabHit(k, t)", [k, title])
                down = self.js("() => __gxt.lastDown")
                if after and after["rect"] != hit["rect"]:
                    self.findings.notes.append(
                        f"{where}: click on {title!r} lost to a layout shift (tab moved "
                        f"{hit['rect']['top']} -> {after['rect']['top']}); retried"
                    )
                    continue
                self.shot(f"FAIL_click_{_slug(where)}_{_slug(title)}")
                trace = self.js(
                    """(k) => { const T = __gxt, t0 = T.lastDown ? T.lastDown.t : 0;
                        return {up: T.lastUp, bars: T.explorer(k).querySelectorAll('.lm-TabBar')
                        .length, log: T.tabLog.filter(e => e.t >= t0 - 1),
                        lumino: T.tabBarState(k), comms: T.commLog.filter(e => e.t >= t0 - 3000)
                        .map(e => JSON.stringify(e))}; }""",
                    k,
                )
                self.log(
                    f"{where}: the click on {title!r} failed; pointerdown listeners on the "
                    f"tab and its ancestors: {self._pointerdown_listeners(k, title)}; widget "
                    "messages from 3 s before it: " + "\n".join(trace["comms"])
                )
                raise AssertionError(
                    f"{where}: clicking tab {title!r} at ({hit['x']:.0f}, {hit['y']:.0f}) "
                    f"did not select it; under the pointer before: {hit['hit']}; "
                    f"pointerdown went to {down}; pointerup to {trace['up']}; tab bars in "
                    f"the explorer: {trace['bars']}; tabs made current or not since the "
                    f"pointerdown: {trace['log']}; lumino's tab bar and its model: "
                    f"{trace['lumino']}"
                ) from None
        raise AssertionError(f"{where}: could not click tab {title!r} in 3 attempts")

    def _pointerdown_listeners(self, k: int, title: str) -> list[str]:
        """Every pointerdown listener from tab ``title``'s label up to the window, as
        the browser's debugger sees them (which element, capture or not, where)."""
        try:
            cdp = self.page.context.new_cdp_session(self.page)
            chain = cdp.send(
                "Runtime.evaluate",
                {
                    "expression": f"""(() => {{ const t = __gxt.tabs(__gxt.explorer({k}))
                        .find(t => t.textContent.trim() === {title!r});
                        const out = []; for (let e = t; e; e = e.parentElement) out.push(e);
                        out.push(document, window); return out; }})()"""
                },
            )["result"]["objectId"]
            props = cdp.send("Runtime.getProperties", {"objectId": chain, "ownProperties": True})
            found = []
            for prop in props["result"]:
                if not prop["name"].isdigit():
                    continue
                obj = prop["value"]["objectId"]
                what = prop["value"].get("description", "?")[:60]
                for ls in cdp.send("DOMDebugger.getEventListeners", {"objectId": obj})["listeners"]:
                    if ls["type"] == "pointerdown":
                        found.append(
                            f"{prop['name']}:{what} capture={ls['useCapture']} "
                            f"script={ls['scriptId']}:{ls['lineNumber']}:{ls['columnNumber']}"
                        )
            cdp.detach()
            return found
        except Exception as exc:  # a diagnostic must not hide the failure it describes
            return [f"(could not read them: {exc})"]

    def tab_titles(self, k: int) -> list[str]:
        return self.js("(k) => __gxt.tabTitles(k)", k)

    def _shown_at_once(self, k: int, title: str, where: str) -> None:
        """A tab just chosen shows its picture, or says it is drawing, within a second
        (the first visit of the Check tab was blank for ~1.4 s)."""
        try:
            self.page.wait_for_function(
                "(k) => __gxt.showing(__gxt.viewElement(__gxt.explorer(k)))", arg=k, timeout=S
            )
        except Exception:
            self.soft(
                False,
                "a view stays blank for over a second after its tab is chosen (no 'drawing…')",
                f"{where}/{title}",
                shot=f"{where}_{title}_blank",
            )

    def check_view(self, k: int, title: str, where: str, shot: str) -> None:
        """Show view ``title`` and check it as a user would look at it."""
        with self.step(f"{where}: view {title!r}"):
            hit = self.select_tab(k, title, where)
            self.settle(k, what=f"{where}: view {title!r} to be drawn (non-blank) and settle")
        if hit is not None:  # where the tab is now, against where it was clicked
            now = self.js("([k, t]) => __gxt.tabHit(k, t)", [k, title])
            moved = now["docTop"] - hit["docTop"]
            self.soft(
                abs(moved) <= 2,
                "the tab bar moves when a tab is selected (the next click lands elsewhere)",
                f"{where}/{title} ({moved:+.0f} px)",
            )
        geo = self.js("(k) => __gxt.viewGeometry(k)", k)
        view, b = geo["view"], geo["bounds"]
        assert view is not None, f"{where}/{title}: no figure (canvas or img) in the view"
        inside = view["left"] >= b["left"] - 1 and view["right"] <= b["right"] + 1
        self.soft(
            inside,
            "view cut off horizontally (wider than the visible output area)",
            f"{where}/{title} (view x {view['left']:.0f}..{view['right']:.0f}, "
            f"visible {b['left']:.0f}..{b['right']:.0f})",
        )
        self.soft(
            geo["overflow"] <= 1,
            "explorer wider than its box (horizontal overflow)",
            f"{where}/{title} (+{geo['overflow']}px)",
        )
        cells = self.js("(k) => __gxt.cellValues(__gxt.viewElement(__gxt.explorer(k)))", k)
        self.cell_values[f"{where}/{title}"] = cells
        self.soft(
            cells["overflow"] == 0,
            "cell values overflow their cells",
            f"{where}/{title} ({cells['overflow']} of {cells['measured']} values, "
            f"e.g. {cells['examples']})",
        )
        if title in OUTLINED:
            m = self.js("(k) => __gxt.magenta(__gxt.viewElement(__gxt.explorer(k)))", k)
            self.soft(
                m["count"] >= 8,
                "selected entry not outlined in magenta #ff00ff",
                f"{where}/{title} ({m['count']} magenta px)",
            )
        self.shot(shot)
        self.log(f"{where}/{title}: ok")

    def check_all_views(
        self, k: int, where: str, prefix: str, only: tuple[str, ...] = ()
    ) -> list[str]:
        titles = [t for t in self.tab_titles(k) if not only or t in only]
        for title in titles:
            self.check_view(k, title, where, f"{prefix}_{_slug(title)}")
        return titles

    # -------------------------------------------------------------- sliders

    def focus_slider(self, k: int, label: str) -> str:
        """Focus the handle of explorer ``k``'s slider ``label``; return its readout."""
        self.reveal(k, "sliders")
        found = self.js(
            """([k, label]) => {
                const root = __gxt.explorer(k);
                const s = [...root.querySelectorAll('.widget-slider')].find(
                    s => s.querySelector('.widget-label').textContent.trim() === label);
                if (!s) return null;
                s.querySelector('.noUi-handle').focus();
                return s.querySelector('.widget-readout').textContent.trim();
            }""",
            [k, label],
        )
        assert found is not None, f"explorer {k} has no slider {label!r}"
        return found

    def readout(self, k: int, label: str) -> str:
        return self.js(
            """([k, label]) => [...__gxt.explorer(k).querySelectorAll('.widget-slider')]
                .find(s => s.querySelector('.widget-label').textContent.trim() === label)
                .querySelector('.widget-readout').textContent.trim()""",
            [k, label],
        )

    def press_slider(self, k: int, label: str, key: str) -> tuple[str, str]:
        """Press ``key`` on slider ``label``; wait until its readout changed."""
        before = self.focus_slider(k, label)
        self.page.keyboard.press(key)
        self.wait(
            """([k, label, before]) => [...__gxt.explorer(k).querySelectorAll('.widget-slider')]
                .find(s => s.querySelector('.widget-label').textContent.trim() === label)
                .querySelector('.widget-readout').textContent.trim() !== before""",
            [k, label, before],
            timeout=30,
            what=f"slider {label!r} to move on {key}",
        )
        return before, self.readout(k, label)

    def drag_slider(self, k: int, label: str, dx: float) -> tuple[str, str]:
        """Move slider ``label`` with the mouse: press its handle, drag ``dx`` pixels,
        release (Notebook 7's arrow keys move the cell focus, even on a slider)."""
        before = self.focus_slider(k, label)
        box = self.js(
            """([k, label]) => __gxt.rect([...__gxt.explorer(k).querySelectorAll('.widget-slider')]
                .find(s => s.querySelector('.widget-label').textContent.trim() === label)
                .querySelector('.noUi-handle'))""",
            [k, label],
        )
        x, y = box["left"] + box["width"] / 2, box["top"] + box["height"] / 2
        self.page.mouse.move(x, y)
        self.page.mouse.down()
        for step in range(1, 6):
            self.page.mouse.move(x + dx * step / 5, y)
        self.page.mouse.up()
        self.wait(
            """([k, label, before]) => [...__gxt.explorer(k).querySelectorAll('.widget-slider')]
                .find(s => s.querySelector('.widget-label').textContent.trim() === label)
                .querySelector('.widget-readout').textContent.trim() !== before""",
            [k, label, before],
            timeout=30,
            what=f"slider {label!r} to move when dragged",
        )
        return before, self.readout(k, label)

    def hover(self, k: int, fx: float, fy: float) -> dict:
        """Move the pointer to (fx, fy) of the visible map (fractions of its first
        panel's box) and wait for the tooltip; returns its text and the page's time from
        the mousemove to the frame that shows it (ms)."""
        spot = self.js(
            """([k, fx, fy]) => { const p = __gxt.paneOf(k), c = p.querySelector('canvas');
                const b = c.getBoundingClientRect(), w = p.dataset.window;
                delete p.dataset.hoverMs;
                return {x: b.left + b.width * fx, y: b.top + b.height * fy, window: w}; }""",
            [k, fx, fy],
        )
        self.page.mouse.move(spot["x"] - 3, spot["y"] - 3)
        self.page.mouse.move(spot["x"], spot["y"])
        self.wait(
            """(k) => { const p = __gxt.paneOf(k), t = p.querySelector('.gx-tip');
                return p.dataset.hoverMs !== undefined && t.style.display === 'block'; }""",
            k,
            timeout=10,
            what="the hover tooltip",
        )
        return self.js(
            """(k) => { const p = __gxt.paneOf(k);
                return {text: p.querySelector('.gx-tip').textContent,
                        ms: Number(p.dataset.hoverMs), entry: p.dataset.hoverEntry}; }""",
            k,
        )

    def anchor_latency(self, presses: int = 7) -> list[tuple | None]:
        """Keypress on the plain ipywidgets slider of ``.gx-anchor`` to the frame that shows
        the label the kernel set from it (ms, as a pair like :meth:`latency`'s): what any
        widget's round trip through the kernel costs on this page, the anchor of the
        explorer's figures."""
        handle = ".gx-anchor .noUi-handle"
        self.page.locator(handle).scroll_into_view_if_needed()
        times: list[tuple | None] = []
        for i in range(presses):
            self.js(f"() => document.querySelector({handle!r}).focus()")
            self.js("() => __gxt.startAnchor()")
            self.page.keyboard.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
            self.wait(
                "() => __gxt.anchor.change !== null",
                timeout=30,
                what="the anchor's label to follow its slider",
            )
            got = self.js("() => { const A = __gxt.anchor; A.stop = true; return A; }")
            times.append((got["change"] - got["tKey"],) * 2)
            self.page.wait_for_timeout(200)  # the kernel quiet before the next press
        self.log(f"anchor: keypress to the label's frame {[round(t[0]) for t in times]} ms")
        return times

    def latency(
        self, k: int, label: str, where: str, presses: int = 7, until: str = "idle"
    ) -> list[tuple | None]:
        """Keypress on slider ``label`` to the first and to the last repaint of any of the
        explorer's canvases (ms, a pair), measured in the page, once per press (ArrowRight /
        ArrowLeft)."""
        times: list[tuple | None] = []
        breakdown: list[tuple] = []  # key to the pane's last frame arriving; its drawing (ms)
        for i in range(presses):
            since = self.generation(k)
            self.focus_slider(k, label)
            self.js("(k) => __gxt.startLatency(k)", k)
            before = self.readout(k, label)
            self.page.keyboard.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
            self.wait(
                """([k, label, before]) => __gxt.lat.tKey !== null &&
                    [...__gxt.explorer(k).querySelectorAll('.widget-slider')]
                    .find(s => s.querySelector('.widget-label').textContent.trim() === label)
                    .querySelector('.widget-readout').textContent.trim() !== before""",
                [k, label, before],
                timeout=30,
                what=f"slider {label!r} to move",
            )
            # done: the explorer idle for this change, and no canvas changed for 30 frames
            # (or, if nothing changed at all, for 180 frames: the view is stuck); with
            # until="first", the first picture is what is timed (a 1024 x 1024 check runs
            # on for seconds after its Jacobian, and the next key cancels it)
            self.wait(
                """([k, since, quiet, first]) => {
                    const T = __gxt, L = T.lat, s = T.statusOf(k);
                    const done = s ? s.state === 'idle' && (since === null || s.generation > since)
                                   : T.kernelQuiet(quiet);
                    const idle = first || done;
                    const stuck = first ? 900 : 180;
                    return idle && L.stableFrames >= 30 &&
                        (L.changes > 0 || L.stableFrames > stuck);
                }""",
                [k, since, QUIET_MS, until == "first"],
                timeout=180,
                what=f"the explorer to finish redrawing after a keypress on {label!r}",
                state="() => { const L = __gxt.lat; return {changes: L.changes, "
                "stableFrames: L.stableFrames, kernelIdle: __gxt.kernelIdle()}; }",
            )
            lat = self.js("() => { const L = __gxt.lat; L.stop = true; return L; }")
            pane = self.js(
                "(k) => { const p = __gxt.paneOf(k); return p ? {...p.dataset} : {}; }", k
            )
            if pane.get("changedAt") and lat["tKey"] is not None:
                breakdown.append(
                    (
                        round(float(pane["changedAt"]) - lat["tKey"]),
                        float(pane.get("drawMs", "nan")),
                    )
                )
            times.append(
                None
                if not lat["changes"]
                else (lat["firstChange"] - lat["tKey"], lat["lastChange"] - lat["tKey"])
            )
            self.soft(
                bool(lat["changes"]),
                "no repaint after a slider keypress (the picture is stuck)",
                f"{where} keypress {i + 1} ({before} -> {self.readout(k, label)})",
                shot=f"stuck_{where}_{i + 1}" if not lat["changes"] else None,
            )
        self.log(
            f"{where}: latency (first, last repaint) "
            f"{[None if t is None else tuple(round(v) for v in t) for t in times]} ms "
            f"(the measurement's own slowest frame: {lat['hashMs']:.0f} ms); key to the "
            f"pane's last frame, its drawing: {breakdown}"
        )
        return times


@dataclass
class _PageError:
    text: str
    type: str = "error"


def median(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return statistics.median(got) if got else None


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")[:60]
