"""Every view's last picture, in an output of its own below the explorer.

Widget state alone does not keep a saved notebook's pictures: JupyterLab saves the
state of widgets whose kernel is connected only, so a notebook reopened without
running it loses every explorer at its first autosave; and ``nbconvert --to html``
needs the widget manager from a CDN to show any widget. So the explorer also writes
an ordinary HTML output (a ``display_id`` it updates): the page's own picture of each
map view (sent by the pane once its frames stop), the kernel's PNG of each picture
view, the text of each note. Its CSS shows it only where no live explorer stands
above it (a saved notebook whose widgets are gone, an nbconvert page), and there it
hides the widget's own output ("Loading widget…", "model not found") in its favour.
"""

from __future__ import annotations

import base64
import html
import threading
import weakref
from typing import Any

__all__ = ["Snapshot", "SNAPSHOT_CSS"]

#: Seconds after the last new picture, and without a change of the controls, before the
#: output is rewritten: it holds every view's picture (1.3 MB for a 256 x 256 map), and,
#: sent while the user moves a slider, competed with the next frames for the kernel's
#: IOPub thread, the server and the page.
SETTLE = 1.0

SNAPSHOT_CSS = """<style>
.gx-snapshot { display: none; font: 13px sans-serif; color: #222; }
.jp-OutputArea-child:not(:has(.gx-explorer)) + .jp-OutputArea-child .gx-snapshot { display: block; }
.jp-OutputArea-child:has(+ .jp-OutputArea-child .gx-snapshot):not(:has(.gx-explorer))
  { display: none; }
.gx-snapshot .gx-snap-head { font-style: italic; color: #555; margin: 4px 0 8px; }
.gx-snapshot figure { margin: 0 0 14px; }
.gx-snapshot figcaption { font-weight: bold; margin: 4px 0; }
.gx-snapshot img { max-width: 100%; display: block; }
.gx-snapshot .gx-snap-note { color: #444; max-width: 760px; }
</style>"""


class Snapshot:
    """The explorer's saved-pictures output: ``keep`` a view's picture, ``display`` it
    under the explorer (inside IPython), rewritten a second after pictures stop.

    >>> class Ex:
    ...     views = ["Jacobian", "Where"]
    >>> s = Snapshot(Ex())
    >>> s.keep("Where", None, b"\\x89PNG")
    >>> s.keep_note("Jacobian", "why not")
    >>> text = s.html()
    >>> "data:image/png;base64,iVBORw==" in text, "why not" in text
    (True, True)
    """

    def __init__(self, explorer: Any):
        self._explorer = weakref.ref(explorer)
        self.items: dict[str, tuple[str, Any]] = {}
        self.badge_text = ""
        self.handle: Any = None
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._generation: Any = None  # the explorer's, when the rewrite was scheduled

    def keep(self, view: str, key: Any, png: bytes) -> None:
        """Keep ``png`` as view ``view``'s last picture."""
        if png:
            self.items[view] = ("png", png)
            self._soon()

    def keep_note(self, view: str, text: str) -> None:
        self.items[view] = ("note", text)
        self._soon()

    def badge(self, report: Any) -> None:
        self.badge_text = (
            f"{report.status} ({report.shape[0]} x {report.shape[1]}, {report.method})"
        )

    def display(self) -> None:
        from IPython.display import HTML, display

        self.handle = display(HTML(self.html()), display_id=True)

    def _soon(self) -> None:
        if self.handle is None:
            return
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._generation = getattr(self._explorer(), "generation", None)
            self._timer = threading.Timer(SETTLE, self.update)
            self._timer.daemon = True
            self._timer.start()

    def update(self) -> None:
        """Rewrite the output with the pictures kept so far (later, if the controls have
        changed meanwhile: the user is still moving them)."""
        ex = self._explorer()
        if self.handle is None or ex is None or getattr(ex, "_closed", False):
            return
        if getattr(ex, "generation", None) != self._generation:
            self._soon()
            return
        from IPython.display import HTML

        self.handle.update(HTML(self.html()))

    def cancel(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()

    def html(self) -> str:
        ex = self._explorer()
        views = list(getattr(ex, "views", self.items))
        parts = [
            SNAPSHOT_CSS,
            '<div class="gx-snapshot">',
            '<div class="gx-snap-head">The explorer as it was last shown, every view (saved '
            "pictures: run the cell to explore again).",
            f" {html.escape(self.badge_text)}" if self.badge_text else "",
            "</div>",
        ]
        for view in views:
            kind, payload = self.items.get(view, ("none", None))
            name = html.escape(view)
            parts.append(f'<figure data-view="{name}"><figcaption>{name}</figcaption>')
            if kind == "png":
                data = base64.b64encode(payload).decode("ascii")
                parts.append(f'<img alt="{html.escape(view)}" src="data:image/png;base64,{data}">')
            elif kind == "note":
                parts.append(f'<div class="gx-snap-note">{html.escape(payload)}</div>')
            else:
                parts.append(
                    '<div class="gx-snap-note">not drawn before the notebook was saved</div>'
                )
            parts.append("</figure>")
        parts.append("</div>")
        return "".join(parts)
