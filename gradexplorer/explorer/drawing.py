"""How the explorer sends its views: the visible one at once, the others when idle.

A view's frame (numbers or a picture) is computed from the published report and sent
to its pane; only what changed goes on the wire. A view computed from a report that a
newer one replaced meanwhile is dropped (the newer one marks it to do again).
"""

from __future__ import annotations

from typing import Any

from . import maps
from .html import status_html
from .registry import VIEW_NAMES, VIEWS, Frame, view
from .worker import Cancelled, cancellable

__all__ = ["ViewDrawing"]


class ViewDrawing:
    """The drawing half of :class:`~gradexplorer.explorer.Explorer` (its state lives there:
    ``panes``, ``report``, ``_dirty``, ``_notes``, ``published``, the widgets)."""

    def _visible(self) -> str | None:
        k = self.tabs.selected_index
        return None if k is None else VIEW_NAMES[k]

    def _redraw_visible(self) -> None:
        name = self._visible()
        if self.report is not None and name is not None and name in self._dirty:
            self._draw(name)

    def _draw(self, name: str) -> bool:
        """Compute view ``name`` and send it; False when dropped or failed.

        One thread computes a view at a time (the idle worker and a tab click may both
        want it); the view's lock is let go before the explorer's lock is taken for the
        sending, never held under it the other way round.
        """
        with self._view_locks[name]:
            if name not in self._dirty:  # the other thread has just sent it
                return True
            published = self.published
            note = self._notes.get(name)
            try:
                frame = Frame({"kind": "note", "text": note}) if note else view(name).compute(self)
            except Cancelled:
                return False
            except Exception as exc:
                self._show_error(exc, f"while drawing the {name} view")
                frame = Frame({"kind": "note", "text": f"This view could not be drawn here: {exc}"})
        with self._lock:
            if published != self.published or self._closed:
                return False
            self.panes[name].show(frame.spec, frame.slots, frame.png, frame.labels)
            self._dirty.discard(name)
            if frame.png:
                self.snapshot.keep(name, None, frame.png)
            elif frame.spec.get("kind") == "note":
                self.snapshot.keep_note(name, frame.spec["text"])
        return True

    def fill_one(self) -> bool:
        """Send one view that is out of date (the worker calls this when idle); True
        while more remain. Their numbers make the saved notebook show every view."""
        if self.report is None or self._closed or self.stale:
            return False
        todo = [v.name for v in VIEWS if v.name in self._dirty]
        if todo:
            worker = self._worker
            if worker is not None:  # a change arriving stops it at its next evaluation of f
                self.view_f = cancellable(self.f, lambda: not worker.pending())
            self._draw(todo[0])
        # counted again after the drawing: a tab click may have drawn one meanwhile
        left = sum(v.name in self._dirty for v in VIEWS)
        with self._lock:
            if not self._closed and 'data-state="busy"' not in self.status.value:
                self.status.value = status_html("idle", self.generation, todo=left)
        return left > 0

    def fill_views(self) -> None:
        """Send every view that is out of date (what the idle worker does, at once)."""
        while self.fill_one():
            pass

    @property
    def fn(self) -> Any:
        """f as the views call it (stopped by a newer change in the background)."""
        return self.view_f or self.f

    # ------------------------------------------------------------ the selected entry

    def _selection_moved(self) -> None:
        """The outline moves on the maps; the views that follow the entry are redone."""
        for name in ("Jacobian", "Check"):
            pane = self.panes[name]
            if pane.spec.get("kind") == "maps" and name not in self._dirty:
                pane.show(self.decorate(pane.spec))
        for v in VIEWS:
            if v.follows_selection:
                self._dirty.add(v.name)
        self._redraw_visible()

    def decorate(self, spec: dict) -> dict:
        """A map spec with the selected entry (and the window around it when zoomed)."""
        i, j = int(self.row.value), int(self.col.value)
        zoom = bool(self.zoom.value)
        return dict(
            spec,
            selection=[i, j],
            zoom=[i, j, 8] if zoom else None,
            zoomKey=f"{i},{j}" if zoom else None,
        )

    def map_key(self, shape: tuple | None = None) -> str:
        """Names the matrices on the page: a zoomed window asks for its tile by it."""
        m, n = shape or self.report.shape
        return f"{id(self.f)}:{self.published}:{m}x{n}"

    def labels(self) -> dict:
        """The report's labels by path (computed once per function and shape)."""
        key = (id(self.f), self.report.shape, str(self._selected_wrt()))
        if self._labels_cache[0] != key:
            self._labels_cache = (key, maps.report_labels(self.report))
        return self._labels_cache[1]

    def entry_in_input(self) -> tuple:
        """The selected entry as (output row, index into its own input)."""
        return (self.row.value, self.report.cols.locate(self.col.value)[2])

    def entry_wrt(self) -> Any:
        """The input the selected entry belongs to (the step sweep differentiates one)."""
        wrt = self._selected_wrt()
        if isinstance(wrt, tuple):
            wrt = wrt[self.report.cols.locate(self.col.value)[0]]
        return wrt

    def sweeps_shown(self, sweeps: Any) -> None:
        """The Graph's step slider spans the sweep shown."""
        if sweeps is not None:
            self.sweep_step.max = len(sweeps.steps(self.sweep_mode.value)) - 1

    def _send_tile(self, pane: Any, content: dict) -> None:
        """The page zoomed into a pooled map: send that window at full resolution."""
        if self.report is None or pane.view not in ("Jacobian", "Check"):
            return
        key = self.map_key()
        if content.get("key") != key or self.report.analytic is None:
            return
        r0, r1, c0, c1 = (int(content[k]) for k in ("r0", "r1", "c0", "c1"))
        pane.tile = maps.tile(self.report, maps.ENTRY_SLOTS, r0, r1, c0, c1, key)
