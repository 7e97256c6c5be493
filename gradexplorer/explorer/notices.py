"""How the explorer tells the user what happened: the selected entry's numbers, an
error naming the point where it happened, and pictures marked stale after it."""

from __future__ import annotations

from .html import entry_html, error_html, point_text, stale_badge_html

__all__ = ["Notices"]


class Notices:
    """The telling half of :class:`~gradexplorer.explorer.Explorer` (its state lives there:
    ``report``, ``args``, ``argnums``, ``input_names``, the widgets)."""

    def _show_entry(self) -> None:
        r = self.report
        if r is not None and r.analytic is not None:
            i, j = min(self.row.value, r.shape[0] - 1), min(self.col.value, r.shape[1] - 1)
            self.entry_info.value = entry_html(r, i, j)

    def _show_error(self, exc: BaseException, where: str = "") -> None:
        self.error.value = error_html(exc, where)

    def _fail(self, exc: BaseException, where: str, args: tuple | None = None) -> None:
        """Show the error, naming the point; keep the last pictures, dimmed and marked."""
        point = point_text(self.input_names, [args[s] for s in self.argnums]) if args else ""
        # the badge first: the page gets the messages in order, so wherever the error
        # shows, the badge already says STALE (never a PASSED beside an error)
        if self.report is not None:
            self._set_stale(True)
            self.badge.value = stale_badge_html(point_text(self.input_names, self._last_point()))
        else:
            self.badge.value = stale_badge_html("")
        self.error.value = error_html(exc, where or (f"at {point}" if point else ""))

    def _last_point(self) -> list:
        return [self.args[s] for s in self.argnums] if getattr(self, "args", None) else []

    def _set_stale(self, stale: bool) -> None:
        self.stale = stale
        if stale:
            self.tabs.add_class("gx-stale")
        else:
            self.tabs.remove_class("gx-stale")
