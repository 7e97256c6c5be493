"""How the explorer computes: the AD Jacobian first, then the check, the newest change only.

Runs in the explorer's worker thread when live (drawing under the explorer's lock)
and in the caller's thread otherwise.
"""

from __future__ import annotations

import time

import numpy as onp

from ..check.api import check_grads
from ..check.progress import on_analytic
from ..display import plots as P
from ..display.checkpreview import preview_analytic
from ..fd.steps import default_step
from .html import badge_html, status_html, worst_html
from .views import VIEWS
from .worker import Cancelled, cancellable

__all__ = ["Computing"]

#: A check that took longer than this (seconds) gets its view's AD Jacobian shown first;
#: a shorter one is shown as one picture (an early frame costs ~10-20 ms to send and paint).
SLOW_CHECK = 0.05


class Computing:
    """The computing half of :class:`~gradexplorer.explorer.Explorer` (its state lives
    there: ``f``, ``generation``, ``report``, ``_worker``, ``_lock``, the widgets)."""

    def _settings(self) -> dict:
        return dict(
            wrt=self._selected_wrt(),
            method=self.method.value,
            rtol=self.rtol.value,
            step=None if self.auto_step.value else self.step.value,
        )

    def _compute(self, request) -> None:
        generation, args, settings = request
        f = cancellable(self.f, lambda: self._is_current(generation))
        self._shown_first = None
        first = self._jacobian_first()
        showing = 0.0  # seconds spent drawing that early Jacobian, inside the check's time

        def show_first(A) -> None:  # the check's own AD Jacobian, before its FD
            nonlocal showing
            began = time.perf_counter()
            with self._lock:
                if self._is_current(generation) and self._shown_first is None:
                    try:
                        self._show_jacobian(first, A)
                    except Exception as exc:  # a drawing error is not f's: the check goes on
                        self._show_error(exc, f"while drawing the {first} view")
            showing += time.perf_counter() - began

        try:
            started = time.perf_counter()
            with on_analytic(show_first if first else None):
                report = check_grads(
                    f,
                    *args,
                    mode="full",
                    precision="native",  # the dtype control chose the precision
                    **settings,
                )
            # the check's own time: counting the early picture's would keep a fast check
            # "slow" once it had been, and every move would send two pictures
            self._check_seconds = time.perf_counter() - started - showing
        except Cancelled:
            return
        except Exception as exc:
            with self._lock:
                if self._is_current(generation):
                    self._fail(exc, "", args)
                    self._withdraw_first()
                    self.status.value = status_html("idle", generation)
            return
        with self._lock:
            if not self._is_current(generation):
                return
            self._publish(report, args)
            self.status.value = status_html("idle", generation)

    def _jacobian_first(self) -> str | None:
        """The view to give the AD Jacobian before the check, if any: live, with maps
        that only need new values, on the Jacobian tab, or on the Check tab when the
        check takes long enough to be waited for."""
        view = self._visible()
        art = self.artists.get(view)
        if self._worker is None or self.stale:
            return None
        if view == "Jacobian" and isinstance(art, P.Heatmap):
            return view
        slow = self._check_seconds > SLOW_CHECK
        if view == "Check" and slow and isinstance(art, P.CheckArtists) and art.mode == "full":
            return view
        return None

    def _show_jacobian(self, view: str, A) -> None:
        art = self.artists[view]
        if view == "Check":
            if preview_analytic(art, A):
                self._shown_first = (view, A)
        elif P.update_heatmap(art, A):
            self._push(view, art, fresh=False)
            self._shown_first = (view, A)

    def _withdraw_first(self) -> None:
        """The check failed: the Jacobian shown first goes back to the last good point's."""
        if self._shown_first is not None and self.report is not None:
            self._dirty.add(self._shown_first[0])
            self._redraw_visible()

    def _publish(self, report, args) -> None:
        self.report, self.args = report, args
        self.error.value = ""
        self._set_stale(False)
        m, n = report.shape
        with self.hold_trait_notifications():
            self.row.max, self.col.max = max(m - 1, 0), max(n - 1, 0)
        selected = (self.row.value, self.col.value)
        self._select_worst()
        self._show_step()
        self.badge.value = badge_html(report)
        self.worst.value = worst_html(report)
        self._show_entry()
        self._dirty = set(VIEWS)
        first = getattr(self, "_shown_first", None)
        if (
            first is not None
            and first[0] == "Jacobian"
            and selected == (self.row.value, self.col.value)
            and onp.array_equal(first[1], report.analytic)
        ):
            self._dirty.discard("Jacobian")  # already on the page, drawn before the check
        self._redraw_visible()

    def _select_worst(self) -> None:
        """A failing check selects its worst entry, unless a wrong one is selected."""
        r = self.report
        if not r.mismatches:
            return
        wrong = {(e.row, e.col) for e in r.mismatches}
        if (self.row.value, self.col.value) not in wrong:
            worst = r.mismatches[0]
            with self.hold_trait_notifications():
                self.row.value, self.col.value = worst.row, worst.col

    def _show_step(self) -> None:
        if not self.auto_step.value:
            self.step_note.value = ""
            return
        x = onp.concatenate([onp.ravel(onp.asarray(a, dtype=complex).real) for a in self._leaves()])
        h = float(onp.median(default_step(x, self.method.value))) if x.size else 0.0
        self.step_note.value = (
            '<span style="color:#555;white-space:nowrap" '
            f'title="median of the per-coordinate steps">auto: h ≈ {h:.2g}</span>'
        )

    def _leaves(self) -> list:
        leaves = []
        for slot in self.argnums:
            a = self.args[slot] if slot < len(self.args) else None
            try:
                leaves.append(onp.asarray(self.system.to_numpy(a)))
            except Exception:
                continue
        return leaves
