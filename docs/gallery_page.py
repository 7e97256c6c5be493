"""Write the gallery page: one section per example of :mod:`gradexplorer.gallery`.

Run by ``conf.py`` at every build, so the page lists exactly the examples the package
has; each section's code cell is executed by myst-nb like any other page.
"""

from __future__ import annotations

from pathlib import Path

HEAD = """---
file_format: mystnb
kernelspec:
  name: python3
  display_name: Python 3
---

# Gallery

The example functions of `gradexplorer.gallery`, each with a Jacobian derived by hand
(never by AD) that the tests compare every operator against. Each heatmap is the
Jacobian `gx.check_grads` computed by AD at the example's point (rows are outputs,
columns inputs; several inputs side by side, separated by lines; complex functions in
the real layout, rows `[Re y; Im y]` and columns `[Re x; Im x]`), with the check's verdict
and its largest difference from the hand-derived Jacobian. Open any of them live with
`gx.explore()` and its gallery menu.

```{code-cell} ipython3
:tags: [remove-cell]

%matplotlib inline
import gradexplorer as gx
import numpy as np


def show(name):
    ex = gx.gallery.get(name)
    args = ex.args()
    report = gx.check_grads(ex.f, *args, wrt=ex.wrt)
    hand = [np.asarray(j) for j in ex.jacobian(*args)]
    if ex.complex:
        hand2d = np.concatenate([j.reshape(j.shape[0], -1) for j in hand], axis=1)
    else:
        rows = report.analytic.shape[0]
        hand2d = np.concatenate([j.reshape(rows, -1) for j in hand], axis=1)
    gap = float(np.max(np.abs(hand2d - report.analytic)))
    print(f"check_grads: {report.outcome.name}, "
          f"{report.analytic.shape[0]} x {report.analytic.shape[1]}; "
          f"largest |AD - by hand|: {gap:.1e}")
    h = gx.plot_jacobian(report.analytic, row_label=report.row_label,
                         col_label=report.cols.label, col_blocks=report.column_blocks,
                         title=f"{name}: AD Jacobian", xlabel="input", ylabel="output")
    return h.ax.figure
```
"""


def write(path: Path) -> None:
    import gradexplorer as gx

    parts = [HEAD]
    for name in gx.gallery.names():
        ex = gx.gallery.get(name)
        parts.append(
            f"\n## `{name}`\n\n{ex.description}\n\n```{{code-cell}} ipython3\nshow({name!r})\n```\n"
        )
    text = "".join(parts)
    if not path.exists() or path.read_text() != text:  # unchanged: no rebuild of the page
        path.write_text(text)


if __name__ == "__main__":
    write(Path(__file__).with_name("gallery.md"))
