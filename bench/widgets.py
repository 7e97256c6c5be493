"""The explorer's kernel side: what a frame costs to make and to send, and memory; one run.

    python bench/widgets.py

The page draws the views from numbers (``gradexplorer/explorer/static/pane.js``); the
kernel's part of a move is the check and the frame: the matrices pooled to at most
256 cells a side and cast to float32 (comm buffers). Measured here, headless:

1. The frame of a 256x256 and of a 1024x1024 Jacobian view (pool + float32), and of
   a 256x256 Check view (five matrices), in ms and in bytes sent.
2. A selection moved: the bytes sent (the spec only, no numbers).
3. 100 control changes through the Explorer on a 256-input function (the check
   recomputed each time): ms per change, figures created (target 0) and memory
   growth (target < 5 MB).

The browser's side (keypress to painted frame, hover) is ``tests/test_browser.py``'s
``bench/browser_latency.md``.
"""

import gc
import json
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import autograd.numpy as anp  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from _util import best_time, table  # noqa: E402

import gradexplorer as gx  # noqa: E402
from gradexplorer.explorer import maps  # noqa: E402


def current_rss_mb() -> float:
    gc.collect()
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize() / 1e6


def figures():
    gc.collect()
    return sum(isinstance(o, Figure) for o in gc.get_objects())


def frame_bytes(spec: dict, slots: dict) -> int:
    return len(json.dumps(spec)) + sum(len(v) for v in slots.values())


def sent_bytes(pane, action) -> int:
    """Bytes of the traits one action sends to the page (buffers + JSON)."""
    from ipywidgets.widgets.widget import _remove_buffers

    sent = []
    real = pane.send_state

    def spy(key=None):
        keys = [key] if isinstance(key, str) else list(key or [])
        state, _, buffers = _remove_buffers(pane.get_state(keys))
        sent.append(len(json.dumps(state)) + sum(len(memoryview(b)) for b in buffers))
        return real(key)

    pane.send_state = spy
    action()
    pane.send_state = real
    return sum(sent)


def main():
    rng = np.random.default_rng(0)
    rows = []
    for n in (256, 1024):
        A = rng.standard_normal((n, n))
        ms = best_time(lambda A=A: maps.jacobian_frame(A, None, "k")) * 1e3
        spec, slots = maps.jacobian_frame(A, None, "k")
        rows.append(
            (
                f"Jacobian frame, {n}x{n} (pooled to <= 256 a side)",
                f"{ms:.1f} ms",
                f"{frame_bytes(spec, slots) / 1e3:.0f} KB",
            )
        )
    W = rng.standard_normal((256, 256)) / 16
    f = lambda x: anp.tanh(W @ x)  # noqa: E731
    report = gx.check_grads(f, rng.standard_normal(256), mode="full")
    ms = best_time(lambda: maps.check_frame(report, "k")) * 1e3
    spec, slots = maps.check_frame(report, "k")
    rows.append(
        (
            "Check frame, 256x256 (five matrices)",
            f"{ms:.1f} ms",
            f"{frame_bytes(spec, slots) / 1e3:.0f} KB",
        )
    )

    ex = gx.explore(f, rng.standard_normal(256))
    ex.fill_views()
    pane = ex.panes["Jacobian"]
    moved = sent_bytes(pane, lambda: setattr(ex.row, "value", 7))
    rows.append(
        ("a selection moved, 256x256 Jacobian view", "", f"{moved} B (the spec, no numbers)")
    )
    changed = sent_bytes(pane, lambda: setattr(ex.scale, "value", 1.01))
    rows.append(("a control moved, 256x256 Jacobian view", "", f"{changed / 1e3:.0f} KB"))
    for k in range(10):  # warm up caches before measuring growth
        ex.scale.value = 1.0 + 0.01 * k
    n_before = figures()
    rss0 = current_rss_mb()
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    t_all = []
    for k in range(100):
        t0 = time.perf_counter()
        ex.seed.value = k + 1 if k % 2 else ex.seed.value  # re-sample the point...
        ex.scale.value = 1.0 if k % 2 else 1.01  # ...or move a control
        t_all.append(time.perf_counter() - t0)
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    grown = sum(s.size_diff for s in snap1.compare_to(snap0, "filename")) / 1e6
    tracemalloc.stop()
    rss1 = current_rss_mb()
    n_after = figures()
    ex.close()
    rows += [
        (
            "explorer control change incl. the check of 256x256",
            f"{np.median(t_all) * 1e3:.0f} ms",
            "",
        ),
        ("figures created by 100 control changes", str(n_after - n_before), "target 0"),
        ("Python heap growth over 100 changes (tracemalloc)", f"{grown:.2f} MB", "target < 5 MB"),
        ("resident memory growth over 100 changes", f"{rss1 - rss0:.1f} MB", "target < 5 MB"),
    ]
    print(table(rows, ("measure", "time", "bytes / note")))


if __name__ == "__main__":
    main()
