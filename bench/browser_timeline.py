"""Where a slider keypress's time goes in the browser, stage by stage.

``tests/test_browser.py`` measures keypress to painted frame; this script splits that time
for one explorer and for the anchor (a plain ipywidgets slider whose kernel callback sets
a label) in the same JupyterLab page:

- key -> kernel: the keydown in the page to the slider's change reaching its comm in the
  kernel (``comm``'s ``handle_msg``);
- kernel -> published: to the kernel's last send of the frame (the view's ``spec``; the
  anchor's label) in ``Session.send``, from whichever thread;
- published -> page: to the page receiving that message (JupyterLab's kernel connection:
  the kernel's IOPub thread, the Jupyter server and the WebSocket);
- page -> painted: to the start of the frame that shows the change.

Kernel and page read the same clock (the epoch in ms). Medians over the presses::

    python bench/browser_timeline.py                 # the 3x3 explorer, Jacobian view
    python bench/browser_timeline.py --size 256 --view Check --presses 9
    python bench/browser_timeline.py --size 1024     # pooled; its first picture

Needs Debian's chromium and Playwright (the ``dev`` extra), as the browser test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FRAME_MS = 16.7
sys.path.insert(0, str(ROOT / "tests"))

RECORDER = """\
import json, threading, time
from comm.base_comm import BaseComm
_log = open({log!r}, "a")

def _write(**event):
    _log.write(json.dumps(event) + "\\n")
    _log.flush()

_handle = BaseComm.handle_msg
def _handle_msg(self, msg):
    _write(t=time.time() * 1000, kind="recv", comm=self.comm_id)
    return _handle(self, msg)
BaseComm.handle_msg = _handle_msg

_session = get_ipython().kernel.session
_send = _session.send
def _sent(stream, msg_or_type, content=None, *args, **kwargs):
    data = content.get("data") if isinstance(content, dict) else None
    if isinstance(data, dict) and data.get("method") == "update":
        _write(t=time.time() * 1000, kind="send", comm=content.get("comm_id"),
               keys=sorted(data.get("state") or {{}}))
    return _send(stream, msg_or_type, content, *args, **kwargs)
_session.send = _sent
json.dump({{"pane": explorer.panes[{view!r}].comm.comm_id,
           "slider": explorer.{slider}.comm.comm_id,
           "anchor": anchor_slider.comm.comm_id, "label": anchor_label.comm.comm_id}},
          open({meta!r}, "w"))
"""

EXPLORERS = {
    3: (
        "W = np.array([[1.0, -2.0, 0.5], [0.3, 0.8, -1.2], [2.0, 0.1, 0.4]])\n"
        "explorer = gx.explore(lambda x: anp.tanh(W @ x) * x, np.array([0.5, -0.3, 0.8]))\n",
        "point_sliders[0]",
        "x[0]",
    ),
    256: (
        "rng = np.random.default_rng(0)\n"
        "A = rng.standard_normal((256, 256)) / 16\n"
        "explorer = gx.explore(lambda x: anp.tanh(A @ x), rng.standard_normal(256))\n",
        "scale",
        "scale",
    ),
    1024: (  # as the browser test's notebook has it: pooled in the kernel
        "B = np.random.default_rng(1).standard_normal((1024, 1024)) / 32\n"
        "explorer = gx.explore(lambda x: anp.tanh(B @ x), "
        "np.random.default_rng(2).standard_normal(1024))\n",
        "scale",
        "scale",
    ),
}


def anchor_cell() -> str:
    """The anchor's cell, as the browser test's notebook has it."""
    nb = json.loads((ROOT / "tests" / "notebooks" / "browser_examples.ipynb").read_text())
    sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    return next(src for src in sources if "gx-anchor" in src)


def notebook(path: Path, size: int, view: str, log: Path, meta: Path) -> str:
    """Write the notebook (explorer, anchor, recorder); return the slider's label."""
    code, slider, label = EXPLORERS[size]
    cells = [
        "import autograd.numpy as anp\nimport numpy as np\nimport gradexplorer as gx\n"
        + code
        + "explorer",
        anchor_cell(),
        RECORDER.format(log=str(log), meta=str(meta), view=view, slider=slider),
    ]
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": c,
            }
            for c in cells
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))
    return label


def _within(events, t0, t1, comm, key=None, kind=None):
    return [
        e
        for e in events
        if t0 <= e["t"] < t1
        and e.get("comm") == comm
        and (key is None or key in e.get("keys", ()))
        and (kind is None or e.get("kind") == kind)
    ]


def stages(presses, kernel, page, slider, comm, key):
    """Per press: (key->kernel, kernel->published, published->page, page->painted). The
    message timed is the last of ``comm``'s ``key`` updates to reach the page before the
    painted frame (the Jacobian view paints its first frame; the hover's numbers follow)."""
    rows = []
    for n, (t_key, t_paint) in enumerate(presses):
        t_next = presses[n + 1][0] if n + 1 < len(presses) else float("inf")
        if t_paint is None:
            continue
        recv = _within(kernel, t_key, t_next, slider, kind="recv")
        sent = _within(kernel, t_key, t_next, comm, key, kind="send")
        # a message that came after the frame began can still be drawn in that frame
        got = _within(page, t_key, t_paint + FRAME_MS, comm, key)
        if not recv or not got or len(sent) < len(got):
            continue
        published = sent[len(got) - 1]["t"]
        arrived = got[-1]["t"]
        rows.append(
            (recv[0]["t"] - t_key, published - recv[0]["t"], arrived - published, t_paint - arrived)
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, choices=sorted(EXPLORERS), default=3)
    ap.add_argument("--view", choices=["Jacobian", "Check"], default="Jacobian")
    ap.add_argument("--presses", type=int, default=7)
    args = ap.parse_args()

    from browser_util import (
        CHROMIUM,
        CHROMIUM_ARGS,
        VIEWPORT,
        Findings,
        Session,
        jupyterlab,
        need_chromium,
    )
    from playwright.sync_api import sync_playwright

    need_chromium()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        log, meta, nb = tmp / "kernel.jsonl", tmp / "ids.json", tmp / "timeline.ipynb"
        log.touch()
        label = notebook(nb, args.size, args.view, log, meta)
        with jupyterlab(tmp / "server", [nb]) as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport=VIEWPORT)
            s = Session(page, url, Findings(), prefix="timeline")
            s.open_first(nb.name)
            s.run_all(expected_explorers=1)
            s.reveal(0)
            s.select_tab(0, args.view, "timeline")
            s.settle(0)
            page.wait_for_timeout(2500)  # the views nobody looks at are filled when idle
            origin = s.js("() => performance.timeOrigin")
            ids = json.loads(meta.read_text())
            s.js("() => { __gxt.commLog.length = 0; }")
            explorer, anchor = [], []
            for _ in range(args.presses):
                s.latency(0, label, "timeline", presses=1)
                lat = s.js("() => __gxt.lat")
                explorer.append(
                    (origin + lat["tKey"], lat["lastChange"] and origin + lat["lastChange"])
                )
            for _ in range(args.presses):
                s.anchor_latency(presses=1)
                a = s.js("() => __gxt.anchor")
                anchor.append((origin + a["tKey"], a["change"] and origin + a["change"]))
            page_log = [
                {"t": origin + m["t"], "comm": None, "keys": m["keys"], "short": m["comm"]}
                for m in s.js("() => __gxt.commLog")
                if m["dir"] == "recv" and m["method"] == "update"
            ]
            browser.close()
        kernel = [json.loads(line) for line in log.read_text().splitlines()]
    for m in page_log:  # the page's log keeps 8 characters of each comm id
        m["comm"] = next((c for c in ids.values() if c.startswith(m["short"])), None)
    rows = {
        f"{args.size}x{args.size} {args.view}": stages(
            explorer, kernel, page_log, ids["slider"], ids["pane"], "spec"
        ),
        "anchor: ipywidgets round trip": stages(
            anchor, kernel, page_log, ids["anchor"], ids["label"], "value"
        ),
    }
    names = ("key -> kernel", "kernel -> published", "published -> page", "page -> painted")
    print(f"medians in ms over {args.presses} presses (n = presses whose stages were all seen)")
    print(f"| case | n | {' | '.join(names)} | total |")
    print("|---|---:|" + "---:|" * (len(names) + 1))
    for case, got in rows.items():
        if not got:
            print(f"| {case} | 0 |" + " |" * (len(names) + 1))
            continue
        cols = [statistics.median(r[i] for r in got) for i in range(len(names))]
        total = statistics.median(sum(r) for r in got)
        print(
            f"| {case} | {len(got)} | " + " | ".join(f"{c:.0f}" for c in cols) + f" | {total:.0f} |"
        )


if __name__ == "__main__":
    main()
