"""A user's session in a real JupyterLab and Notebook 7, in headless Chromium (Playwright).

A 1366x900 window with the file browser open. The tour (notebooks/00_tour.ipynb) and
tests/notebooks/browser_examples.ipynb (a wrong gradient, a complex function, a 256 x 256
Jacobian, a function that raises for some inputs, the gallery menu, a 1024 x 1024
Jacobian) are run; every tab of every explorer is clicked with the mouse and must show a
non-blank view inside the visible output area; the selected entry is outlined in magenta;
a hover shows an entry's numbers; a click selects without scrolling or focusing; the
wheel zooms (a pooled map comes back at full resolution); the exception is shown and
recovered from; the gallery goes through several examples (cell values fit their cells);
the examples notebook is reloaded, re-run and clicked through again; saved, reopened
without a kernel, autosaved, reopened again and converted to HTML that is opened offline.
Keypress-to-painted-frame latency and the hover's are measured in the page and written to
bench/browser_latency.{md,json}. Notebook 7 runs the tour with the slider moved by mouse.

Every wait is on state (see tests/browser_util.py). Problems that do not stop the
session are collected and reported together at the end; screenshots of every view, and
of every failure, go to tests/artifacts/browser_*.png. Debian's chromium is required (no
browser downloads here): skipped without it, a failure under CI=true.
"""

from __future__ import annotations

import contextlib
import json
import platform
import re
import time
from datetime import datetime, timezone
from pathlib import Path

from browser_util import (
    ARTIFACTS,
    AUTOSAVE_S,
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    VIEWPORT,
    Findings,
    S,
    Session,
    jupyterlab,
    median,
    need_chromium,
)

TOUR = ROOT / "notebooks" / "00_tour.ipynb"
EXAMPLES = ROOT / "tests" / "notebooks" / "browser_examples.ipynb"
COURSE = ROOT / "notebooks" / "01_autodiff_basics.ipynb"
# explorers of browser_examples.ipynb, in notebook order
BUGGY, COMPLEX, BIG, RAISES, GALLERY, HUGE = range(6)
NAMES = ["buggy", "complex", "big", "raises", "gallery", "huge"]
#: cube_holomorphic: 6 x 6 real maps, whose cell values overflowed their cells
GALLERY_EXAMPLES = ["softmax", "rosenbrock", "cube_holomorphic", "logdet"]
#: The speed targets (ms, keypress to the painted frame; the hover to its frame).
TARGETS = {
    "3x3 Jacobian": 50,
    "3x3 Check": 50,
    "256x256 Jacobian": 60,
    "256x256 Check": 150,
    "1024x1024 Jacobian": 250,
    "hover": 16,
}
#: The anchor row: a plain ipywidgets slider whose kernel callback sets a label.
ANCHOR = "anchor: ipywidgets round trip"
BENCH = ROOT / "bench" / "browser_latency"
# console errors that mean a widget or a script broke (network noise is not one)
WIDGET_ERROR = re.compile(
    r"Error setting state|Error displaying widget|[Uu]ncaught|TypeError|Cannot send"
)
# ipykernel's word for a widget message it threw away (a control or a picture that then
# never answers): JupyterLab addressed it to a kernel subshell that is gone
KERNEL_DROPPED = re.compile(r"Cannot handle (comm_\w+) \S+: (.+)")


def test_a_users_session_in_jupyterlab(tmp_path):
    need_chromium()
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in [*ARTIFACTS.glob("browser_*.png"), ARTIFACTS / "browser_session.log"]:
        old.unlink(missing_ok=True)
    findings = Findings()
    latency: dict[str, list] = {}
    timings: dict[str, float] = {}
    start = time.monotonic()
    with jupyterlab(tmp_path, [TOUR, EXAMPLES, COURSE]) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            s = Session(page, url, findings)
            _tour(s, latency, timings)
            timings["tour"] = time.monotonic() - start
            _examples(s, latency, timings)
            timings["examples"] = time.monotonic() - start - timings["tour"]
            t = time.monotonic()
            _reload(s, timings)
            timings["reload"] = time.monotonic() - t
            t = time.monotonic()
            _reopen_saved(s, tmp_path / "root")
            timings["reopen"] = time.monotonic() - t
            t = time.monotonic()
            _autosaved_and_reopened(s, tmp_path / "root")
            _offline_html(s, browser, tmp_path / "root")
            timings["autosave, html"] = time.monotonic() - t
            t = time.monotonic()
            _course(s)
            timings["course"] = time.monotonic() - t
        finally:
            if latency:
                _write_latency(latency, findings)
            if findings.failures:  # shown with a hard failure too (captured stdout)
                print("\nfound before stopping:\n" + findings.summary())
            browser.close()
    timings["total"] = time.monotonic() - start
    widget_errors = [e for e in s.console_errors if WIDGET_ERROR.search(e)]
    s.soft(
        not widget_errors,
        "errors in the browser console from widgets/scripts",
        "; ".join(sorted(set(widget_errors))[:5]),
    )
    dropped = KERNEL_DROPPED.findall((tmp_path / "jupyterlab.log").read_text(errors="replace"))
    s.soft(
        not dropped,
        "the kernel dropped widget messages from the page (their widgets stop answering)",
        f"{len(dropped)} messages, e.g. {sorted(set(dropped))[:3]}",
    )
    print("\nbrowser session:", {k: round(v, 1) for k, v in timings.items()})
    for note in findings.notes:
        print("note:", note)
    assert not findings.failures, (
        "what a user would see go wrong (screenshots in tests/artifacts/):\n" + findings.summary()
    )


# ---------------------------------------------------------------------- the tour


def _tour(s: Session, latency: dict, timings: dict) -> None:
    with s.step("open the tour with the file browser open"):
        s.open_first("00_tour.ipynb")
        assert s.file_browser_open(), "the file browser is not open"
    with s.step("run all cells of the tour"):
        timings["tour run all"] = s.run_all(expected_explorers=2)
    s.shot("tour_page")
    mode = s.js("() => __gxt.kernel().commsOverSubshells")
    s.soft(
        mode == "disabled",
        "JupyterLab sends widget messages over kernel subshells (the package's setting "
        "did not apply)",
        f"commsOverSubshells = {mode!r}",
    )
    for k, where in enumerate(["tour/explorer", "tour/buggy"]):
        s.check_contract(k, where)
        with s.step(f"{where}: first picture"):
            s.reveal(k)
            s.settle(k)
        s.check_all_views(k, where, f"tour_{k}")
    _verdict(s, 1, "FAILED", "tour/buggy")
    _click_a_cell(s, 0, "tour/explorer")
    _hover(s, 0, "tour/explorer", latency)
    _step_the_graph(s, 0, "tour/explorer")
    for view in ("Jacobian", "Check"):
        with s.step(f"latency of the 3x3 explorer's {view} view"):
            s.select_tab(0, view, "tour/explorer")
            s.settle(0)
            _all_done(s)
            latency[f"3x3 {view}"] = s.latency(0, "x[0]", f"tour/explorer/{view}")
    for problem in s.page_problems():
        s.soft(False, "a user sees an error or warning in the notebook", f"tour: {problem}")


def _all_done(s: Session, timeout: float = 300) -> None:
    """Every explorer idle with no view left to compute in the background, the kernel quiet
    for a second: a latency is measured on an explorer, not on its neighbours' work."""
    s.wait(
        """() => __gxt.explorers().every(r => { const e = r.querySelector(
            '.gx-status [data-state]'); return e && e.dataset.state === 'idle' &&
            e.dataset.todo === '0'; }) && __gxt.kernelQuiet(1000)""",
        timeout=timeout,
        what="every explorer done (idle, every view computed), the kernel quiet",
    )


def _verdict(s: Session, k: int, word: str, where: str) -> None:
    """The badge says ``word`` (PASSED / FAILED / STALE), within a few seconds: the
    badge and the error box are widgets of their own, each updated by its own message."""
    says = """([k, word]) => { const b = __gxt.text(__gxt.explorer(k), '.gx-badge');
        return b === null ? __gxt.explorer(k).textContent.includes(word) : b.startsWith(word); }"""
    with contextlib.suppress(Exception):
        s.page.wait_for_function(says, arg=[k, word], timeout=10 * S)
    badge = s.js("(k) => __gxt.text(__gxt.explorer(k), '.gx-badge')", k)
    if badge is None:  # no contract badge yet: the explorer's text
        text = s.js("(k) => __gxt.explorer(k).textContent", k)
        s.soft(word in text, f"badge does not say {word}", where)
    else:
        s.soft(badge.startswith(word), f"badge does not say {word}", f"{where} ({badge!r})")


def _click_a_cell(s: Session, k: int, where: str) -> None:
    """Click another cell of the Jacobian heatmap: the magenta outline follows, the page
    does not scroll and nothing takes the focus (a click on ipympl's canvas scrolled the
    page ~35 px and drew a focus frame)."""
    with s.step(f"{where}: click a Jacobian cell"):
        s.select_tab(k, "Jacobian", where)
        s.settle(k)
        before = s.js("(k) => __gxt.magenta(__gxt.viewElement(__gxt.explorer(k)))", k)
        if not before["count"]:
            return  # reported by check_view already
        box = s.js("(k) => __gxt.rect(__gxt.viewElement(__gxt.explorer(k)))", k)
        scrolled = s.js("() => __gxt.scroller().scrollTop")
        # the entry (0, 0) is outlined; the middle of the figure is another cell
        s.page.mouse.click(box["left"] + box["width"] / 2, box["top"] + box["height"] / 2)
        s.wait(
            "([k, x, y]) => { const m = __gxt.magenta(__gxt.viewElement(__gxt.explorer(k)));"
            " return m.count > 0 && Math.hypot(m.x - x, m.y - y) > 5; }",
            [k, before["x"], before["y"]],
            timeout=60,
            what="the magenta outline to move to the clicked cell",
        )
        s.settle(k)  # a new selection redraws without a new generation
        after = s.js(
            """() => ({top: __gxt.scroller().scrollTop, focus: __gxt.describe(
                document.activeElement), inPane: Boolean(document.activeElement &&
                document.activeElement.closest('.gx-pane'))})"""
        )
        s.soft(
            abs(after["top"] - scrolled) <= 1,
            "a click on a cell scrolls the page",
            f"{where} ({after['top'] - scrolled:+.0f} px)",
        )
        s.soft(not after["inPane"], "a click on a cell takes the focus", f"{where}: {after}")
    s.shot(f"{where.replace('/', '_')}_clicked_cell")


def _hover(s: Session, k: int, where: str, latency: dict) -> None:
    """The pointer over cells: the tooltip names the entry and gives its analytic,
    numeric, FD error and violation at once, within a frame."""
    with s.step(f"{where}: hover over the Jacobian's cells"):
        s.select_tab(k, "Jacobian", where)
        s.settle(k)
        times = []
        for n, (fx, fy) in enumerate([(0.3, 0.3), (0.5, 0.5), (0.6, 0.35), (0.4, 0.6)] * 2):
            tip = s.hover(k, fx, fy)
            times.append((tip["ms"], tip["ms"]))
            if n == 0:
                text = tip["text"]
                for word in ("/", "analytic", "numeric", "FD error", "violation"):
                    s.soft(word in text, f"the hover tooltip lacks {word!r}", f"{where}: {text!r}")
        s.shot(f"{where.replace('/', '_')}_hover")
        s.page.mouse.move(5, 5)
    latency.setdefault("hover", []).extend(times[1:])


def _step_the_graph(s: Session, k: int, where: str) -> None:
    """A teaching view driven as a student would: the Graph tab's sweep one step on."""
    with s.step(f"{where}: step the Graph view's sweep"):
        s.select_tab(k, "Graph", where)
        s.settle(k)
        before = s.js("(k) => __gxt.hashView(__gxt.explorer(k))", k)
        s.press_slider(k, "AD step", "ArrowRight")  # one operation on
        s.wait(
            "([k, before]) => __gxt.hashView(__gxt.explorer(k)) !== before",
            [k, before],
            timeout=60,
            what="the Graph view to show the next step",
        )
        s.settle(k)
    s.shot(f"{where.replace('/', '_')}_graph_stepped")
    s.select_tab(k, "Jacobian", where)


# ---------------------------------------------------------------------- the examples


def _examples(s: Session, latency: dict, timings: dict) -> None:
    with s.step("open browser_examples.ipynb from the file browser"):
        s.open_from_file_browser("browser_examples.ipynb")
    with s.step("run all cells of browser_examples.ipynb"):
        timings["examples run all"] = s.run_all(expected_explorers=len(NAMES))
    s.shot("examples_page")
    for k, name in enumerate(NAMES):
        where = f"examples/{name}"
        s.check_contract(k, where)
        with s.step(f"{where}: first picture"):
            s.reveal(k)
            s.settle(k, timeout=240)
        only = ("Jacobian", "Check") if k == HUGE else ()
        s.check_all_views(k, where, f"examples_{k}_{name}", only=only)
    _verdict(s, BUGGY, "FAILED", "examples/buggy")
    _verdict(s, COMPLEX, "PASSED", "examples/complex")
    _verdict(s, BIG, "PASSED", "examples/big")
    for view in ("Jacobian", "Check"):
        with s.step(f"latency of the 256x256 explorer's {view} view"):
            s.select_tab(BIG, view, "examples/big")
            s.settle(BIG)
            _all_done(s)
            latency[f"256x256 {view}"] = s.latency(BIG, "scale", f"examples/big/{view}")
    _zoom(s, BIG, "examples/big", pooled=False)
    with s.step("latency of the 1024x1024 explorer's Jacobian view"):
        s.select_tab(HUGE, "Jacobian", "examples/huge")
        s.settle(HUGE, timeout=240)
        _all_done(s)
        latency["1024x1024 Jacobian"] = s.latency(
            HUGE, "scale", "examples/huge/Jacobian", until="first"
        )
    _zoom(s, HUGE, "examples/huge", pooled=True)
    with s.step("latency of the anchor: a plain ipywidgets slider and label"):
        _all_done(s)
        latency[ANCHOR] = s.anchor_latency()
    _exception_and_recovery(s)
    _gallery(s)
    for problem in s.page_problems():
        s.soft(False, "a user sees an error or warning in the notebook", f"examples: {problem}")


MODEL_NOT_FOUND = "Error displaying widget: model not found"
#: Page reloads a user might try when jupyterlab-manager's restore race hides an explorer.
RESTORE_RACE_RELOADS = 3


def _models_missing_from(notebook: Path) -> list[str]:
    """The widget models a saved notebook's outputs need (the displayed ones and all
    they refer to) that its saved widget state lacks."""
    nb = json.loads(notebook.read_text())
    saved = nb["metadata"].get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    state = saved.get("state", {})
    needed = [
        out["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
        for cell in nb["cells"]
        for out in cell.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in out.get("data", {})
    ]
    seen, missing = set(), []
    while needed:
        model = needed.pop()
        if model in seen:
            continue
        seen.add(model)
        if model not in state:
            missing.append(model)
            continue
        needed += re.findall(r"IPY_MODEL_([0-9a-f]{32})", json.dumps(state[model]["state"]))
    return missing


def _used_without_a_kernel(s: Session) -> None:
    """A click and a wheel on every explorer's map once its kernel is shut down: the
    panes have nowhere to send them, and say nothing in the console (they said "Cannot
    send" there)."""
    before = len(s.console_errors)
    for k in range(s.js("() => __gxt.explorers().length")):
        if s.js("(k) => __gxt.viewElement(__gxt.explorer(k))?.tagName !== 'CANVAS'", k):
            continue
        # scrolled there without reveal(), which marks a cell's output "not scrolled" (an
        # edit: the notebook would ask to be saved on closing)
        s.js("(k) => __gxt.viewElement(__gxt.explorer(k)).scrollIntoView({block: 'center'})", k)
        box = s.js("(k) => __gxt.rect(__gxt.viewElement(__gxt.explorer(k)))", k)
        x = box["left"] + box["width"] / 2
        y = min(box["top"] + box["height"] / 2, VIEWPORT["height"] - 40)
        s.page.mouse.click(x, y)
        s.page.mouse.wheel(0, -120)
    s.page.wait_for_timeout(1500)  # a zoomed map asks for its tile after a pause
    dirty = s.js("() => __gxt.panel().context.model.dirty")
    s.log(f"used without a kernel; the notebook dirty: {dirty}")
    errors = [e for e in s.console_errors[before:] if WIDGET_ERROR.search(e)]
    s.soft(
        not errors,
        "errors in the console from explorers used after their kernel shut down",
        "; ".join(errors[:3]),
    )


def _saved_explorers_shown(s: Session, name: str) -> int:
    """Wait until each saved explorer is on the page or its output says the widget
    manager did not find its model; returns how many said so."""
    s.wait(
        """([n, text]) => __gxt.explorers().length + [...document.querySelectorAll(
              '.jp-OutputArea-output')].filter(o => o.textContent.includes(text)).length === n""",
        [len(NAMES), MODEL_NOT_FOUND],
        timeout=60,
        what=f"the {len(NAMES)} saved explorers of {name} to be on the page",
        state="() => __gxt.explorers().length + ' explorers'",
    )
    return len(NAMES) - s.js("() => __gxt.explorers().length")


def _reopen_saved(s: Session, root: Path) -> None:
    """A saved lecture opened again: its explorers show their last pictures (the
    widgets' state saved with the notebook), not "Error displaying widget"."""
    name = "browser_examples.ipynb"
    with s.step(f"save {name}, shut its kernel down and close it"):
        # as a user reaches for Save once the explorers are done: every explorer idle with
        # no view left to compute in the background (data-todo), then the kernel quiet for
        # three seconds (the panes send their pictures, the saved-pictures outputs are
        # rewritten a second after the last)
        s.wait(
            """() => __gxt.explorers().every(r => { const e = r.querySelector(
                '.gx-status [data-state]'); return e && e.dataset.state === 'idle' &&
                e.dataset.todo === '0'; }) && __gxt.kernelQuiet(3000)""",
            timeout=300,
            what="every explorer idle with every view computed, the kernel quiet",
            state="""() => __gxt.explorers().map(r => { const e = r.querySelector(
                '.gx-status [data-state]'); return e ? {...e.dataset} : null; })""",
        )
        s.js(
            """async () => { const p = __gxt.panel(); await __gxt.save();
                await p.sessionContext.shutdown(); }"""
        )
        _used_without_a_kernel(s)
        s.js("() => __gxt.panel().close()")
        s.wait(
            "(name) => !document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)') ||"
            " !(__gxt.panel() && __gxt.panel().context.path.endsWith(name))",
            name,
            timeout=60,
            what=f"{name} to close",
            state="""() => { const p = __gxt.panel(), d = document.querySelector('.jp-Dialog');
                return {path: p && p.context.path, dirty: p && p.context.model.dirty,
                        dialog: d && d.textContent.slice(0, 300)}; }""",
        )
    overwrites = s.js("() => __gxt.overwrites")
    if overwrites:
        s.findings.notes.append(f"{name}: the save raced JupyterLab's autosave ('File Changed')")
    missing = _models_missing_from(root / name)
    s.soft(not missing, "the saved notebook lacks widget models its outputs need", str(missing))
    with s.step(f"open the saved {name} again (a fresh kernel, no cell run)"):
        s.open_from_file_browser(name)
        not_found = _saved_explorers_shown(s, name)
    for attempt in range(1, RESTORE_RACE_RELOADS + 1):
        if not not_found or missing:
            break
        # Every model is in the file (checked above), yet the widget manager said "not
        # found": jupyterlab-manager's race on opening. A second restore, started by the
        # kernel's "connected", loads from the kernel only and marks the manager restored
        # while the first is still waiting on the kernel's comm info before it creates the
        # notebook's models; a view rendered then says "not found" for good. It comes with
        # load (twice in a row once, two suites beside each other); a user reloads.
        s.findings.notes.append(
            f"reopened {name}: {not_found} explorer(s) hit jupyterlab-manager's restore "
            f"race (model saved, reported not found); page reload {attempt}"
        )
        with s.step(f"reload the reopened {name} ({attempt})"):
            s.reload(name)
            not_found = _saved_explorers_shown(s, name)
    s.soft(not not_found, "a saved notebook reopened says a widget model was not found", name)
    s.shot("reopened_page")
    for k, example in enumerate(NAMES):
        where = f"reopened/{example}"
        s.reveal(k)
        problem = s.try_settle(k, what=f"explorer {k}'s saved picture to show")
        s.soft(
            problem is None,
            "a saved notebook reopened shows a blank explorer",
            f"{where}: {(problem or '')[:200]}",
        )
        if problem is None and k == BUGGY:
            _verdict(s, k, "FAILED", where)  # the saved badge, as it was
            s.shot(f"reopened_{example}")
            # every view, from the numbers saved in the widget state (no kernel behind)
            s.check_all_views(k, where, f"reopened_{example}")
    for problem in s.page_problems():
        s.soft(False, "a saved notebook reopened shows an error", f"reopened: {problem}")


SNAPSHOTS = """() => [...(__gxt.panelNode() || document).querySelectorAll('.gx-snapshot')]
    .map(s => ({visible: s.checkVisibility(), figures: [...s.querySelectorAll('figure')].map(f => ({
        view: f.dataset.view, img: Boolean(f.querySelector('img')),
        loaded: Boolean(f.querySelector('img') && f.querySelector('img').naturalWidth > 0),
        note: (f.querySelector('.gx-snap-note') || {}).textContent || ''}))}))"""


def _check_snapshots(s: Session, where: str) -> None:
    """Every explorer's saved pictures are on the page: each view a picture that loaded,
    or the words of a note; and no widget error is visible."""
    s.wait(
        f"() => {{ const v = ({SNAPSHOTS})(); return v.length === {len(NAMES)} &&"
        " v.every(x => x.visible && x.figures.every(f => !f.img || f.loaded)); }",
        timeout=60,
        what=f"{len(NAMES)} saved-pictures outputs, visible, their pictures loaded",
        state=f"() => JSON.stringify(({SNAPSHOTS})()).slice(0, 600)",
    )
    for k, snap in enumerate(s.js(SNAPSHOTS)):
        missing = [f["view"] for f in snap["figures"] if not f["img"] and "not drawn" in f["note"]]
        s.soft(
            not missing,
            "a saved notebook lacks a view's last picture",
            f"{where}/{NAMES[k]}: {missing}",
        )
    visible = s.js(
        """() => [...document.querySelectorAll('.jp-OutputArea-output')]
            .filter(o => o.checkVisibility() && o.innerText.includes('model not found')).length"""
    )
    s.soft(not visible, "'model not found' is shown beside the saved pictures", where)


def _autosaved_and_reopened(s: Session, root: Path) -> None:
    """The reopened notebook autosaved (JupyterLab saves the state of connected widgets
    only: the explorers' state is gone from the file), closed, and opened again: every
    explorer's saved pictures are still shown (its own output), and nothing says "model
    not found"."""
    name = "browser_examples.ipynb"
    path = root / name
    with s.step(f"edit the reopened {name} and wait for an autosave"):
        before = path.stat().st_mtime
        # edited again while no autosave comes: a save in flight when the edit lands marks
        # the notebook clean on its return (the edit then waits for the next one)
        for _edit in range(5):
            s.js(
                """() => { const p = __gxt.panel();
                    p.content.widgets[0].model.setMetadata('gx_edited', Date.now()); }"""
            )
            deadline = time.monotonic() + 4 * AUTOSAVE_S
            while path.stat().st_mtime == before and time.monotonic() < deadline:
                time.sleep(0.2)
            if path.stat().st_mtime != before:
                break
        assert path.stat().st_mtime != before, "no autosave came"
        s.wait("() => !__gxt.panel().context.model.dirty", timeout=60, what="the save")
    saved = json.loads(path.read_text())
    state = (
        saved["metadata"].get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    )
    s.findings.notes.append(
        f"autosaved reopened notebook: {len(state.get('state', {}))} widget models in the file"
    )
    with s.step(f"close {name} and open it again"):
        s.js(
            "async () => { const p = __gxt.panel(); await p.sessionContext.shutdown(); p.close(); }"
        )
        s.wait(
            "(name) => !(__gxt.panel() && __gxt.panel().context.path.endsWith(name))",
            name,
            timeout=60,
            what=f"{name} to close",
        )
        s.open_from_file_browser(name)
    _check_snapshots(s, "autosaved")
    s.js("() => { const sc = __gxt.scroller(); sc.scrollTop = 0; }")
    first = s.js(
        "() => { const x = document.querySelector('.gx-snapshot'); x.scrollIntoView(); return 1; }"
    )
    del first
    s.shot("autosaved_reopened")


def _offline_html(s: Session, browser, root: Path) -> None:
    """``jupyter nbconvert --to html`` of the saved notebook, opened with no network:
    each explorer's saved pictures show (nothing comes from a CDN)."""
    import subprocess
    import sys

    name = "browser_examples.ipynb"
    with s.step("nbconvert the saved notebook to HTML"):
        done = subprocess.run(
            [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(root / name)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-2000:]
    html = root / name.replace(".ipynb", ".html")
    context = browser.new_context(viewport=VIEWPORT, offline=True)
    try:
        page = context.new_page()
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        offline = Session(page, s.url, s.findings, prefix="browser_html")  # before goto
        page.goto(html.as_uri())
        _check_snapshots(offline, "nbconvert html, offline")
        page.evaluate("() => document.querySelector('.gx-snapshot').scrollIntoView()")
        offline.shot("offline")
        fetched = [u for u in requests if not u.startswith(("file:", "data:", "blob:"))]
        s.findings.notes.append(f"offline HTML asked the network for {len(fetched)} URLs (refused)")
    finally:
        context.close()


def _course(s: Session) -> None:
    """The autodiff course runs top to bottom in JupyterLab; its explorer's Graph steps."""
    with s.step("open 01_autodiff_basics.ipynb from the file browser"):
        s.open_from_file_browser("01_autodiff_basics.ipynb")
    with s.step("run all cells of the course"):
        s.run_all(expected_explorers=1)
    s.shot("course_page", full_page=True)
    for problem in s.page_problems():
        s.soft(False, "a user sees an error or warning in the notebook", f"course: {problem}")
    with s.step("course/explorer: first picture"):
        s.reveal(0)
        s.settle(0)
    _step_the_graph(s, 0, "course/explorer")


def _zoom(s: Session, k: int, where: str, pooled: bool) -> None:
    """The wheel zooms into a large map around the pointer; a pooled map's window comes
    back at full resolution (the hover then names single entries); a double click resets."""
    with s.step(f"{where}: zoom with the wheel"):
        s.select_tab(k, "Jacobian", where)
        s.settle(k, timeout=240)
        full = s.js("(k) => __gxt.paneOf(k).dataset.window", k)
        box = s.js("(k) => __gxt.rect(__gxt.viewElement(__gxt.explorer(k)))", k)
        x, y = box["left"] + box["width"] * 0.4, box["top"] + box["height"] * 0.45
        s.page.mouse.move(x, y)
        for _ in range(12 if pooled else 8):
            s.page.mouse.wheel(0, -120)
        s.wait(
            "([k, full]) => __gxt.paneOf(k).dataset.window !== full",
            [k, full],
            timeout=30,
            what="the window to narrow on the wheel",
        )
        if pooled:
            s.wait(
                "(k) => Boolean(__gxt.paneOf(k).dataset.tile)",
                k,
                timeout=60,
                what="the zoomed window at full resolution (a tile from the kernel)",
            )
        s.page.mouse.move(x + 3, y + 3)
        tip = s.hover(k, 0.4, 0.45)
        s.soft(
            "block around" not in tip["text"],
            "a zoomed pooled map still shows blocks, not entries",
            f"{where}: {tip['text']!r}",
        )
        s.shot(f"{where.replace('/', '_')}_zoomed")
        s.page.mouse.dblclick(x, y)
        s.wait(
            "([k, full]) => __gxt.paneOf(k).dataset.window === full",
            [k, full],
            timeout=30,
            what="a double click to show the whole map again",
        )
        s.page.mouse.move(5, 5)
    if not pooled:
        _zoom_to_entry(s, k, where, full)


def _zoom_to_entry(s: Session, k: int, where: str, full: str) -> None:
    """ "zoom to entry" on a 256 x 256 map shows the 17 x 17 entries around the selected
    one (it narrowed a 2x2-pooled picture: blocks, no values); unticked, the whole map."""
    tick = """(k) => [...__gxt.explorer(k).querySelectorAll('.widget-checkbox')]
        .find(c => c.textContent.includes('zoom to entry')).querySelector('input')"""
    with s.step(f"{where}: zoom to entry"):
        s.page.evaluate_handle(tick, k).as_element().click()
        s.wait(
            """(k) => { const [r0, r1, c0, c1] = __gxt.paneOf(k).dataset.window.split(',')
                .map(Number); return r1 - r0 === 17 && c1 - c0 === 17; }""",
            k,
            timeout=30,
            what="the 17 x 17 cells around the selected entry",
            state="(k) => __gxt.paneOf(k).dataset.window",
        )
        s.reveal(k)
        tip = s.hover(k, 0.5, 0.5)
        s.soft(
            "block around" not in tip["text"],
            "zoom to entry shows pooled blocks, not entries",
            f"{where}: {tip['text']!r}",
        )
        s.shot(f"{where.replace('/', '_')}_zoom_to_entry")
        s.page.mouse.move(5, 5)
        s.page.evaluate_handle(tick, k).as_element().click()
        s.wait(
            "([k, full]) => __gxt.paneOf(k).dataset.window === full",
            [k, full],
            timeout=30,
            what="the whole map again once 'zoom to entry' is unticked",
        )


def _exception_and_recovery(s: Session) -> None:
    k, where = RAISES, "examples/raises"
    with s.step(f"{where}: move x[0] past 2 (f raises)"):
        s.settle(k)
        since = s.generation(k)
        _, value = s.press_slider(k, "x[0]", "End")
        s.wait(
            """(k) => { const r = __gxt.explorer(k);
                const e = r.querySelector('.gx-error');
                return (e || r).textContent.includes('x[0] too big'); }""",
            k,
            timeout=120,
            what="the error 'x[0] too big' to be shown",
        )
        if since is not None:
            s.settle(k, since=since)
    s.reveal(k)
    s.shot("examples_raises_error")
    error = s.js("(k) => __gxt.visibleText(__gxt.explorer(k), '.gx-error')", k)
    s.soft(error is not None and "too big" in error, "no visible .gx-error with the message", where)
    s.soft(
        bool(error) and value.replace("−", "-").rstrip("0").rstrip(".") in error.replace("−", "-"),
        "the error box does not name the point",
        f"{where} (x[0] = {value}; error {error!r})",
    )
    _verdict(s, k, "STALE", where)
    with s.step(f"{where}: move x[0] back (recovery)"):
        since = s.generation(k)
        s.press_slider(k, "x[0]", "Home")
        s.wait(
            """(k) => { const r = __gxt.explorer(k);
                const e = r.querySelector('.gx-error');
                const text = e ? __gxt.visibleText(r, '.gx-error') : r.textContent;
                return !text.includes('too big'); }""",
            k,
            timeout=120,
            what="the error box to go away",
        )
        s.settle(k, since=since)
    _verdict(s, k, "PASSED", f"{where} after recovery")
    s.check_all_views(
        k, f"{where} (recovered)", "examples_raises_recovered", only=("Jacobian", "Check")
    )


def _gallery(s: Session) -> None:
    k = GALLERY
    for name in GALLERY_EXAMPLES:
        where = f"gallery/{name}"
        with s.step(f"{where}: choose it in the example menu"):
            s.reveal(k, "sliders")
            since = s.generation(k)
            menu = s.page.evaluate_handle(
                """(k) => [...__gxt.explorer(k).querySelectorAll('.widget-dropdown')]
                    .find(d => d.querySelector('label').textContent.trim() === 'example')
                    .querySelector('select')""",
                k,
            ).as_element()
            menu.select_option(label=name)
            s.settle(k, since=since, what=f"{where} to load and draw")
        s.check_contract(k, where)
        s.check_all_views(k, where, f"gallery_{name}")
        cells = s.cell_values.get(f"{where}/Jacobian", {})
        s.soft(
            cells.get("measured", 0) > 0,
            "a small Jacobian shows no values in its cells",
            f"{where} ({cells})",
        )


# ---------------------------------------------------------------------- reload


def _reload(s: Session, timings: dict) -> None:
    """Reload the page, re-run, and click every tab: the issue's "tabs ignore clicks
    after a page reload". Also audits how long the tab bars keep moving."""
    with s.step("reload browser_examples.ipynb and run all again"):
        s.reload("browser_examples.ipynb")
        s.js("() => __gxt.startAudit()")
        timings["reload run all"] = s.run_all(expected_explorers=len(NAMES))
        run_done = s.js("() => __gxt.run.at")
        moved_before = None
        if s.contract_seen:
            s.wait(
                "() => __gxt.explorers().every(r => (__gxt.status(r) || {}).state === 'idle')",
                timeout=180,
                what="every explorer to be idle after the reload",
            )
            # JupyterLab lays a cell out only near the screen (content-visibility): one
            # whose output changed off screen keeps its old height until it is scrolled to,
            # and the cells below it move then (one run in four of a soak: 326 px, 0.3 s
            # after "idle"); and reveal() lets a scrolled output grow. Both are the
            # notebook's and the test's, not the explorers': every explorer's cell is laid
            # out once, as it now is, before the audit's clock starts
            for k in range(s.count()):
                s.reveal(k)
            s.js("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
            idle_at = s.js("() => performance.now()")
            moved_before = s.js("() => __gxt.audit.moves")
        blank = {}
        for k in range(s.count()):
            s.reveal(k)
            problem = s.try_settle(k, what=f"explorer {k} to show its first picture")
            if problem:
                s.shot(f"FAIL_reload_blank_{NAMES[k]}")
                blank[k] = problem
        audit = s.js("() => { const a = __gxt.audit; a.stop = true; return a; }")
    for k, problem in blank.items():
        s.soft(False, "explorer never drawn after reload + Run All", f"{NAMES[k]}: {problem}")
    moved = (audit["last"] - run_done) / 1000 if audit["last"] else None
    s.findings.notes.append(
        f"after reload + Run All: tab bars moved {audit['moves']} times "
        f"({moved_before} before the cells were laid out), the last "
        f"{moved if moved is None else round(moved, 1)} s after Run All finished, "
        f"largest jump {audit['maxJump']} px; first moves (ms, explorer, y0, y1): "
        f"{audit['log'][:8]}"
    )
    if s.contract_seen and audit["last"]:
        s.soft(
            audit["last"] <= idle_at,
            "tab bars still moving after every explorer said idle (clicks land elsewhere)",
            f"reload ({(audit['last'] - idle_at) / 1000:.2f} s later; the last moves (ms from "
            f"Run All, explorer, y0, y1, its view): "
            f"{[m for m in audit['tail'] if m[0] >= idle_at - audit['t0'] - 100]})",
        )
    s.shot("reload_page")
    for k in (GALLERY, RAISES):  # the lowest explorers, as in the issue
        if k in blank:
            continue
        where = f"reload/{NAMES[k]}"
        s.check_all_views(k, where, f"reload_{k}_{NAMES[k]}")
    for problem in s.page_problems():
        s.soft(False, "a user sees an error or warning in the notebook", f"reload: {problem}")


# ---------------------------------------------------------------------- latency table


def _write_latency(latency: dict, findings: Findings) -> None:
    rows = []
    for case, samples in latency.items():
        first = [v[0] for v in samples if v is not None]
        got = [v[1] for v in samples if v is not None]
        rows.append(
            {
                "case": case,
                "first_median_ms": None if not first else round(median(first)),
                "median_ms": None if not got else round(median(got)),
                "min_ms": None if not got else round(min(got)),
                "max_ms": None if not got else round(max(got)),
                "samples_ms": [None if v is None else [round(t) for t in v] for v in samples],
            }
        )
    meta = {
        "measured": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {platform.system()}, python {platform.python_version()}",
        "browser": "Debian chromium, headless, 1366x900, file browser open",
        "done_signal": ".gx-status idle"
        if findings.failures.get("no .gx-status [data-state][data-generation]") is None
        else "kernel idle and quiet (no .gx-status yet)",
    }
    BENCH.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = [
        "# Explorer latency in the browser",
        "",
        "From a slider keypress (ArrowRight / ArrowLeft on the focused handle) to the first "
        "and to the last repaint of any canvas of that explorer, measured in the page: every "
        "animation frame after a draw hashes the explorer's canvases; done when the explorer "
        "is idle and nothing changed for 30 frames (the 1024 x 1024 Jacobian: its first "
        "picture, the check going on behind it). The views are drawn in the page from the "
        "kernel's numbers (anywidget). The hover row: from the mousemove to the animation "
        "frame that shows the tooltip. The anchor row: a plain ipywidgets slider whose "
        "kernel callback sets a label, keypress to the frame that shows the label (a "
        "widget's round trip through the kernel on this page, nothing drawn); \"above the "
        "anchor\" is a row's last-repaint median less the anchor's. Medians of 7; written "
        "by `tests/test_browser.py`.",
        "",
        f"Measured {meta['measured']} on {meta['machine']} ({meta['browser']}); "
        f"done signal: {meta['done_signal']}.",
        "",
        "| view | first repaint, median (ms) | last repaint, median (ms) | min (ms) | max (ms) "
        "| above the anchor (ms) | target (ms) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    anchor = next((r["median_ms"] for r in rows if r["case"] == ANCHOR), None)
    for r in rows:
        above = (
            ""
            if anchor is None or r["median_ms"] is None or r["case"] in (ANCHOR, "hover")
            else r["median_ms"] - anchor
        )
        lines.append(
            f"| {r['case']} | {r['first_median_ms']} | {r['median_ms']} | {r['min_ms']} "
            f"| {r['max_ms']} | {above} | {TARGETS.get(r['case'], '')} |"
        )
    BENCH.with_suffix(".md").write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------------- Notebook 7


def test_the_tour_in_notebook7(tmp_path):
    """The tour in Notebook 7: every tab of both explorers, a slider moved with the mouse
    (its arrow keys move the cell focus, even on a slider), a cell clicked, a hover; then
    the examples: zoom, a gallery switch, an f that raises (by mouse), page reload + Run
    All + tab clicks, save + reopen without running a cell."""
    need_chromium()
    from playwright.sync_api import sync_playwright

    findings = Findings()
    with (
        jupyterlab(tmp_path, [TOUR, EXAMPLES], app="notebook") as url,
        sync_playwright() as p,
    ):
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            s = Session(page, url, findings, prefix="nb7", app="notebook")
            with s.step("open the tour in Notebook 7"):
                s.open_first("00_tour.ipynb")
            with s.step("run all cells of the tour"):
                s.run_all(expected_explorers=2)
            for k, where in enumerate(["nb7/explorer", "nb7/buggy"]):
                s.check_contract(k, where)
                with s.step(f"{where}: first picture"):
                    s.reveal(k)
                    s.settle(k)
                s.check_all_views(k, where, f"tour_{k}")
            _verdict(s, 1, "FAILED", "nb7/buggy")
            with s.step("nb7/explorer: move x[0] with the mouse"):
                s.select_tab(0, "Jacobian", "nb7/explorer")
                s.settle(0)
                since = s.generation(0)
                before = s.js("(k) => __gxt.hashView(__gxt.explorer(k))", 0)
                s.drag_slider(0, "x[0]", 60)
                s.settle(0, since=since)
                after = s.js("(k) => __gxt.hashView(__gxt.explorer(k))", 0)
                s.soft(before != after, "the picture did not change with the slider", "nb7")
            _click_a_cell(s, 0, "nb7/explorer")
            _hover(s, 0, "nb7/explorer", {})
            for problem in s.page_problems():
                s.soft(False, "a user sees an error or warning in the notebook", f"nb7: {problem}")
            _notebook7_examples(s)
        finally:
            browser.close()
    # Notebook 7 logs this while it starts, before any cell runs, with or without the
    # package's settings (seen with every settings file removed): not the explorer's
    known = "Cannot read properties of undefined (reading 'schema')"
    widget_errors = [e for e in s.console_errors if WIDGET_ERROR.search(e) and known not in e]
    s.soft(not widget_errors, "errors in the browser console", "; ".join(widget_errors[:5]))
    assert not findings.failures, "in Notebook 7:\n" + findings.summary()


def _notebook7_examples(s: Session) -> None:
    name = "browser_examples.ipynb"
    with s.step(f"nb7: open and run {name}"):
        s.open_first(name)
        s.run_all(expected_explorers=len(NAMES))
    for k in (BUGGY, BIG, RAISES, GALLERY):
        with s.step(f"nb7/{NAMES[k]}: first picture"):
            s.reveal(k)
            s.settle(k, timeout=240)
    _zoom(s, BIG, "nb7/big", pooled=False)
    menu = s.page.evaluate_handle(
        """(k) => [...__gxt.explorer(k).querySelectorAll('.widget-dropdown')]
            .find(d => d.querySelector('label').textContent.trim() === 'example')
            .querySelector('select')""",
        GALLERY,
    ).as_element()
    with s.step("nb7/gallery: choose cube_holomorphic"):
        s.reveal(GALLERY, "sliders")
        since = s.generation(GALLERY)
        menu.select_option(label="cube_holomorphic")
        s.settle(GALLERY, since=since)
    s.check_all_views(GALLERY, "nb7/gallery", "nb7_gallery", only=("Jacobian", "Check", "Complex"))
    with s.step("nb7/raises: drag x[0] past 2 (f raises), then back"):
        s.settle(RAISES)
        s.drag_slider(RAISES, "x[0]", 400)
        s.wait(
            "(k) => __gxt.visibleText(__gxt.explorer(k), '.gx-error').includes('too big')",
            RAISES,
            timeout=120,
            what="the error to be shown",
        )
        _verdict(s, RAISES, "STALE", "nb7/raises")
        s.drag_slider(RAISES, "x[0]", -400)
        s.wait(
            "(k) => !__gxt.visibleText(__gxt.explorer(k), '.gx-error').includes('too big')",
            RAISES,
            timeout=120,
            what="the error to go away",
        )
    with s.step(f"nb7: reload {name} and run all again"):
        s.reload(name)
        s.run_all(expected_explorers=len(NAMES))
        s.reveal(BUGGY)
        s.settle(BUGGY, timeout=240)
    s.check_all_views(BUGGY, "nb7/reload/buggy", "nb7_reload_buggy")
    with s.step(f"nb7: save {name}, shut its kernel down, open it again"):
        try:
            s.wait(
                """() => __gxt.explorers().every(r => { const e = r.querySelector(
                    '.gx-status [data-state]'); return e && e.dataset.state === 'idle' &&
                    e.dataset.todo === '0'; }) && __gxt.kernelQuiet(3000)""",
                timeout=120,
                what="every explorer idle with every view computed, the kernel quiet",
                state="""() => [__gxt.explorers().map(r => { const e = r.querySelector(
                    '.gx-status [data-state]'); return e ? e.dataset.state + '/' +
                    e.dataset.todo : null; }).join(' '), Math.round(performance.now() -
                    __gxt.lastMsg)]""",
            )
        except AssertionError as exc:  # saved as it is: what the reopened page shows
            s.findings.notes.append(f"nb7: saved before the explorers were done: {exc}")
        s.js(
            """async () => { const p = __gxt.panel(); await __gxt.save();
                await p.sessionContext.shutdown(); }"""
        )
        s.open_first(name)
        _saved_explorers_shown(s, name)
        # the complex one: Notebook 7 shows the first explorer's long output in a box
        # scrolled on its own, its tabs inside it
        s.reveal(COMPLEX)
        s.settle(COMPLEX, what="the saved explorer's picture")
    _verdict(s, BUGGY, "FAILED", "nb7/reopened/buggy")
    s.check_all_views(COMPLEX, "nb7/reopened/complex", "nb7_reopened_complex")
