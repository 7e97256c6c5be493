"""How the explorer draws its views: the visible one, in place, sent as little as needed."""

from __future__ import annotations

from ..display import plots as P
from ..display.selection import zoom_heatmap
from .views import SELF_PLACED, VIEWS, draw_note, draw_view
from .worker import Cancelled

__all__ = ["ViewDrawing"]


class ViewDrawing:
    """The drawing half of :class:`~gradexplorer.explorer.Explorer` (its state lives there:
    ``figures``, ``artists``, ``report``, ``_dirty``, ``_notes``, the widgets)."""

    def _visible(self) -> str | None:
        k = self.tabs.selected_index
        return None if k is None else VIEWS[k]

    def _redraw_visible(self, selection_moved: bool = False, limits_changed: bool = False) -> None:
        name = self._visible()
        if self.report is None or name is None:
            return
        if name not in self._dirty:
            if selection_moved and name in ("Jacobian", "Check"):
                self._push(name, self.artists.get(name), fresh=limits_changed)
            return
        try:
            fresh = self._draw(name)
        except Cancelled:
            return
        except Exception as exc:
            self._show_error(exc, f"while drawing the {name} view")
            return
        self._dirty.discard(name)
        sweeps = getattr(self.artists.get(name), "sweeps", None)
        if sweeps is not None:  # the step slider spans this sweep
            self.sweep_step.max = len(sweeps.steps(self.sweep_mode.value)) - 1
        self._push(name, self.artists.get(name), fresh)

    def _push(self, name: str, art, fresh: bool) -> None:
        """Send a view's new picture to the page."""
        fig = self.figures[name]
        # only the cells changed: send them, not a redrawn figure (zoomed maps move limits)
        cells_only = not fresh and not self.zoom.value and not getattr(art, "rescaled", True)
        if not self.live:
            self._view_widgets[name].value = P.figure_png(fig)
        elif cells_only and isinstance(art, P.Heatmap):
            P.blit_heatmap(art)
        elif cells_only and isinstance(art, P.CheckArtists):
            P.blit_check(art)
        else:
            fig.canvas.draw_idle()

    def _draw(self, name: str) -> bool:
        before = self.artists.get(name)
        note = self._notes.get(name)
        if note is not None:
            if before != ("note", note):
                self.artists[name] = draw_note(self.figures[name], note)
                return True
            return False
        self._draw_view(name)
        fresh = self.artists[name] is not before
        if fresh:  # drawn afresh: lay out once, then keep it
            if name not in SELF_PLACED:
                P.freeze_layout(self.figures[name])
        self._mark_selection(name)
        return fresh

    def _draw_view(self, name: str) -> None:
        wrt = self._selected_wrt()
        if isinstance(wrt, tuple):  # the sweep differentiates one input: the entry's own
            wrt = wrt[self.report.cols.locate(self.col.value)[0]]
        entry = (self.row.value, self.report.cols.locate(self.col.value)[2])
        self.artists[name] = draw_view(
            name,
            self.figures[name],
            self.artists.get(name),
            self.report,
            self.f,
            self.args,
            self.argnums,
            entry,
            wrt,
            input_name=self.input_names[0],
            single=self._single,
            sweep=(self.sweep_mode.value, self.sweep_step.value),
        )

    def _heatmaps(self, name: str) -> list:
        art = self.artists.get(name)
        if isinstance(art, P.Heatmap):
            return [art]
        return list(getattr(art, "heatmaps", []))

    def _mark_selection(self, name: str | None = None) -> None:
        """Outline the selected entry (and zoom to it) on the Jacobian and Check maps."""
        if self.report is None:
            return
        i, j = self.row.value, self.col.value
        for view in [name] if name else ["Jacobian", "Check"]:
            if view not in ("Jacobian", "Check"):
                continue
            for h in self._heatmaps(view):
                P.mark_selection(h, i, j)
                zoom_heatmap(h, (i, j) if self.zoom.value else None)
