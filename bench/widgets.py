"""Explorer redraw speed and memory, headless (Agg), one run.

    python bench/widgets.py

1. A control change on a 256x256 Jacobian view: the in-place redraw
   (set_data / set_norm + a full Agg draw), excluding the derivative
   computation. Target <= 50 ms.
2. The PNG of that update as a live canvas sends it (the changed pixels only):
   the explorer's encoder against PIL's at compression level 1 (the anchor).
3. A small Check view's move: four 3x3 maps' cells and 36 new values drawn,
   the explorer's stamped cells (``CellImage``, ``CellValue``) against
   matplotlib's ``imshow`` and ``Text`` (the anchor).
4. 100 control changes through the Explorer on a 256-input function (check
   recomputed each time): figures created (target 0) and memory growth
   (target < 5 MB).
"""

import gc
import io
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
from PIL import Image  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from _util import best_time, table  # noqa: E402

import gradexplorer as gx  # noqa: E402
from gradexplorer.display import plots as P  # noqa: E402
from gradexplorer.explorer.png import encode_png  # noqa: E402


def current_rss_mb() -> float:
    gc.collect()
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize() / 1e6


def figures():
    gc.collect()
    return sum(isinstance(o, Figure) for o in gc.get_objects())


def small_check_move_ms(stamped: bool, rng) -> float:
    """Milliseconds to draw four 3x3 maps' cells and their values after a move."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = Figure(figsize=(8.6, 6.6))
    FigureCanvasAgg(fig)
    maps = []
    for ax in fig.subplots(2, 2).ravel():
        if stamped:
            h = P.plot_jacobian(rng.standard_normal((3, 3)), ax)
            maps.append((h, h.image, h.texts))
        else:
            image = ax.imshow(rng.standard_normal((3, 3)), interpolation="nearest", cmap="RdBu_r")
            texts = [
                ax.text(j, i, "", ha="center", va="center", fontsize=8)
                for i in range(3)
                for j in range(3)
            ]
            maps.append((None, image, texts))
    fig.canvas.draw()

    def move():
        for h, image, texts in maps:
            M = rng.standard_normal((3, 3))
            if h is not None:
                P.update_heatmap(h, M)
            else:
                image.set_data(M)
                for t, v in zip(texts, M.ravel()):
                    t.set_text(f"{v:.3g}")
            for artist in [image, *texts]:
                image.axes.draw_artist(artist)

    return best_time(move) * 1e3


def main():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((256, 256))
    # a slider step changes a Jacobian a little: the colour scale still fits
    small = [base * (1 + 0.01 * k) + 0.01 * rng.standard_normal((256, 256)) for k in range(30)]
    # a big jump needs a new scale: the colourbar is redrawn with the figure
    big = [base * 3.0**k for k in range(30)]
    fig = Figure(figsize=(6, 4.5), layout="constrained")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    h = P.plot_jacobian(base, fig.add_subplot())
    P.freeze_layout(fig)  # as the explorer does after drawing a view afresh
    fig.canvas.draw()

    def redraw(M):  # what the explorer does after a control change
        t0 = time.perf_counter()
        P.update_heatmap(h, M)
        if h.rescaled:
            fig.canvas.draw()
        else:
            P.blit_heatmap(h)
        return time.perf_counter() - t0, h.rescaled

    small_runs = [redraw(M) for M in small]
    times = [t for t, _ in small_runs]
    blitted = sum(not r for _, r in small_runs)
    big_runs = [redraw(M) for M in big]
    full = [t for t, r in big_runs if r]
    redraw_ms = np.median(times) * 1e3

    before = np.asarray(fig.canvas.buffer_rgba()).view(np.uint32).squeeze(2).copy()
    redraw(small[0])
    after = np.asarray(fig.canvas.buffer_rgba()).view(np.uint32).squeeze(2)
    diff = np.where(after != before, after, 0).view(np.uint8).reshape(*after.shape, 4)
    ours_ms = best_time(lambda: encode_png(diff, level=1)) * 1e3
    pil_ms = best_time(lambda: Image.fromarray(diff).save(io.BytesIO(), "png", compress_level=1))
    pil_ms *= 1e3

    stamped_ms = small_check_move_ms(True, rng)
    matplotlib_ms = small_check_move_ms(False, rng)

    W = rng.standard_normal((256, 256)) / 16
    f = lambda x: anp.tanh(W @ x)  # noqa: E731
    ex = gx.explore(f, rng.standard_normal(256))
    for k in range(len(ex.views)):
        ex.tabs.selected_index = k
    ex.tabs.selected_index = 0
    for k in range(20):  # warm up caches (fonts, text layout) before measuring growth
        ex.rtol.value = 1e-8 if k % 2 else 1e-7
    n_before = figures()
    gc.collect()
    rss0 = current_rss_mb()
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    t_all = []
    for k in range(100):
        t0 = time.perf_counter()
        ex.seed.value = k + 1 if k % 2 else ex.seed.value  # re-sample the point...
        ex.rtol.value = 1e-8 if k % 2 else 1e-7  # ...or move a control
        t_all.append(time.perf_counter() - t0)
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    grown = sum(s.size_diff for s in snap1.compare_to(snap0, "filename")) / 1e6
    tracemalloc.stop()
    rss1 = current_rss_mb()
    n_after = figures()
    ex.close()
    rows = [
        (
            f"redraw of a 256x256 Jacobian view, small change ({blitted}/30 blitted)",
            f"{redraw_ms:.1f} ms",
            "<= 50 ms",
        ),
        (
            "redraw when the colour scale must change (full Agg draw)",
            f"{np.median(full) * 1e3:.1f} ms",
            "",
        ),
        (
            f"PNG of that update's changed pixels ({diff.shape[1]}x{diff.shape[0]})",
            f"{ours_ms:.1f} ms (PIL level 1: {pil_ms:.1f} ms, ratio {ours_ms / pil_ms:.2f})",
            "",
        ),
        (
            "3x3 Check view's move: four maps' cells and 36 new values",
            f"{stamped_ms:.1f} ms (imshow + Text: {matplotlib_ms:.1f} ms, "
            f"ratio {stamped_ms / matplotlib_ms:.2f})",
            "",
        ),
        ("explorer control change incl. check of 256x256", f"{np.median(t_all) * 1e3:.0f} ms", ""),
        ("figures created by 100 control changes", str(n_after - n_before), "0"),
        ("Python heap growth over 100 changes (tracemalloc)", f"{grown:.2f} MB", "< 5 MB"),
        ("resident memory growth over 100 changes", f"{rss1 - rss0:.1f} MB", "< 5 MB"),
    ]
    print(table(rows, ("measure", "value", "target")))


if __name__ == "__main__":
    main()
