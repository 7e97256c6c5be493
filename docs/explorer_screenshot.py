"""Take ``docs/explorer.png``: the live explorer in JupyterLab, on the tour's model.

    python docs/explorer_screenshot.py

Runs the tour in a real JupyterLab driven by Debian's Chromium (the browser tests'
helpers), selects the failing explorer's Check tab and photographs that explorer. Run it
again when the explorer's look changes.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser_util import CHROMIUM, CHROMIUM_ARGS, Findings, Session, jupyterlab  # noqa: E402


def main() -> None:
    from playwright.sync_api import sync_playwright

    tour = ROOT / "notebooks" / "00_tour.ipynb"
    with jupyterlab(Path(tempfile.mkdtemp()), [tour]) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            # tall enough for the whole explorer: an element taller than the window is
            # photographed with the page's fixed bars over it
            page = browser.new_page(viewport={"width": 1366, "height": 2000})
            s = Session(page, url, Findings())
            s.open_first(tour.name)
            s.run_all(expected_explorers=2)
            buggy = 1  # the tour's second explorer: the model whose VJP is wrong
            s.reveal(buggy)
            s.settle(buggy)
            s.select_tab(buggy, "Check", "tour/buggy")
            s.settle(buggy)
            explorer = page.locator(".gx-explorer").nth(buggy)
            explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
            time.sleep(1)  # the scroll's repaint
            explorer.screenshot(path=str(ROOT / "docs" / "explorer.png"))
        finally:
            browser.close()


if __name__ == "__main__":
    main()
