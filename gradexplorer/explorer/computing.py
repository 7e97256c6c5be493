"""How the explorer computes: the AD Jacobian first, then the check, the newest change only.

Runs in the explorer's worker thread when live (drawing under the explorer's lock)
and in the caller's thread otherwise.
"""

from __future__ import annotations

import numpy as onp

from ..check.analytic import analytic_matrix
from ..check.api import check_grads
from ..display import plots as P
from ..fd.steps import default_step
from .html import badge_html, status_html, worst_html
from .views import VIEWS
from .worker import Cancelled, cancellable

__all__ = ["Computing"]


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
        try:
            if self._jacobian_first():
                A = analytic_matrix(f, *args, wrt=settings["wrt"], precision="native")
                with self._lock:
                    if self._is_current(generation):
                        self._show_jacobian(A)
            report = check_grads(
                f,
                *args,
                mode="full",
                precision="native",  # the dtype control chose the precision
                **settings,
            )
        except Cancelled:
            return
        except Exception as exc:
            with self._lock:
                if self._is_current(generation):
                    self._fail(exc, "", args)
                    self.status.value = status_html("idle", generation)
            return
        with self._lock:
            if not self._is_current(generation):
                return
            self._publish(report, args)
            self.status.value = status_html("idle", generation)

    def _jacobian_first(self) -> bool:
        """Worth drawing the AD Jacobian before the check: live, on the Jacobian tab,
        with a heatmap that only needs new values."""
        art = self.artists.get("Jacobian")
        return (
            self._worker is not None
            and self._visible() == "Jacobian"
            and isinstance(art, P.Heatmap)
            and not self.stale
        )

    def _show_jacobian(self, A) -> None:
        art = self.artists["Jacobian"]
        if P.update_heatmap(art, A):
            self._push("Jacobian", art, fresh=False)
            self._shown_first = A

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
            and selected == (self.row.value, self.col.value)
            and onp.array_equal(first, report.analytic)
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
