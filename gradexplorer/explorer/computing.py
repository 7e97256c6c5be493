"""How the explorer computes: the AD Jacobian first, then the check, the newest change only.

Runs in the explorer's worker thread inside a kernel (sending under the explorer's
lock) and in the caller's thread otherwise. The check is ``check_grads`` with the
checker's own defaults (tolerances included): the explorer and ``check_grads`` give
one verdict for one f at one point; a looser tolerance is the user's visible choice.
"""

from __future__ import annotations

import time

import numpy as onp

from ..check.api import check_grads
from ..check.progress import on_analytic, on_checkpoint
from ..fd.steps import default_step
from . import maps
from .html import badge_html, status_html, worst_html
from .points import precision_for
from .registry import VIEW_NAMES
from .worker import Cancelled, cancellable, hand_over

__all__ = ["Computing", "SLOW_CHECK"]

#: A check that took longer than this (seconds) gets the Check view's AD Jacobian shown
#: first; a shorter one is shown as one picture.
SLOW_CHECK = 0.05


class Computing:
    """The computing half of :class:`~gradexplorer.explorer.Explorer` (its state lives
    there: ``f``, ``generation``, ``report``, ``_worker``, ``_lock``, the widgets)."""

    def _settings(self) -> dict:
        method = self.method.value
        reason = getattr(self.method, "complex_step_reason", None)
        if method == "complex_step" and reason:
            # chosen where it cannot apply: check with the default instead and say so
            # (a note, not an error: the point is fine)
            method = "richardson"
        return dict(
            wrt=self._selected_wrt(),
            method=method,
            rtol=self.rtol.value if self.own_rtol.value else None,
            step=None if self.auto_step.value else self.step.value,
            precision=precision_for(self.dtype.value),
        )

    def _method_note(self) -> str:
        reason = getattr(self.method, "complex_step_reason", None)
        if self.method.value == "complex_step" and reason:
            return (
                f"The complex step does not apply to this f ({reason}): "
                "checked with richardson finite differences instead."
            )
        return ""

    def _compute(self, request) -> None:
        generation, args, settings = request
        if self._worker is not None:
            # the change's echo and "busy" leave the kernel before the check takes the GIL
            hand_over()
        f = cancellable(self.f, lambda: self._is_current(generation))
        first = self._jacobian_first()
        showing = 0.0  # seconds spent sending that early Jacobian, inside the check's time

        def show_first(A) -> None:  # the check's own AD Jacobian, before its FD
            nonlocal showing
            began = time.perf_counter()
            with self._lock:
                if self._is_current(generation):
                    try:
                        self._show_first(first, A)
                    except Exception as exc:  # a drawing error is not f's: the check goes on
                        self._show_error(exc, f"while drawing the {first} view")
            showing += time.perf_counter() - began

        try:
            started = time.perf_counter()
            with (
                on_analytic(show_first if first else None),
                on_checkpoint(lambda: self._stop_unless_current(generation)),
            ):
                report = check_grads(f, *args, mode="full", **settings)
            self._check_seconds = time.perf_counter() - started - showing
        except Cancelled:
            return
        except Exception as exc:
            with self._lock:
                if self._is_current(generation):
                    self._fail(exc, "", args)
                    self._withdraw_first(first)
                    self.status.value = status_html("idle", generation)
            return
        with self._lock:
            if not self._is_current(generation):
                return
            self.view_f = f
            self._publish(report, args)
            todo = len(self._dirty) if self._worker is not None else 0
            self.status.value = status_html("idle", generation, todo=todo)

    def _stop_unless_current(self, generation: int) -> None:
        """Between a check's backward passes: a newer change stops it there."""
        if not self._is_current(generation):
            raise Cancelled

    def _jacobian_first(self) -> str | None:
        """The view to give the AD Jacobian before the check, if any: in the background,
        on the Jacobian tab, or on the Check tab when checks take long enough to wait for."""
        if self._worker is None or self.stale or self.report is None:
            return None
        view = self._visible()
        if view == "Jacobian":
            return view
        shown = self.panes["Check"].spec
        if (
            view == "Check"
            and self._check_seconds > SLOW_CHECK
            and len(shown.get("panels", ())) == 4
        ):
            return view
        return None

    def _show_first(self, view: str, A) -> None:
        key = self.map_key(A.shape)
        pane = self.panes[view]
        if view == "Jacobian":
            spec, slots = maps.jacobian_frame(A, None, key)
        else:
            spec, slots = maps.check_frame(None, key, early=A, last=pane.spec)
        labels = self.labels() if self.report is not None and self.report.shape == A.shape else None
        pane.show(self.decorate(spec), slots, labels=labels)
        hand_over()  # on its way before the check goes on

    def _withdraw_first(self, view: str | None) -> None:
        """The check failed: the Jacobian shown first goes back to the last good point's."""
        if view is not None and self.report is not None:
            self._dirty.add(view)
            self._redraw_visible()

    def _publish(self, report, args) -> None:
        self.report, self.args = report, args
        self.published += 1
        self._dirty = set(VIEW_NAMES)
        m, n = report.shape
        with self.hold_trait_notifications():
            self.row.max, self.col.max = max(m - 1, 0), max(n - 1, 0)
        self._select_worst()
        # the picture first: the words below it are a few small messages more
        self._redraw_visible()
        if self._worker is not None:
            hand_over()
        self.error.value = ""
        self.note.value = self._method_note()
        self._set_stale(False)
        self.badge.value = badge_html(report)
        self._show_step()
        self.worst.value = worst_html(report)
        self._show_entry()
        self.snapshot.badge(report)

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
        """With the auto step, the step slider shows the step in use (the median of the
        per-coordinate steps), not a value it no longer means."""
        if not self.auto_step.value:
            self.step_note.value = ""
            return
        x = onp.concatenate([onp.ravel(onp.asarray(a, dtype=complex).real) for a in self._leaves()])
        h = float(onp.median(default_step(x, self.method.value))) if x.size else 0.0
        if h > 0:
            self._loading = True  # the slider follows the step: no refresh
            try:
                self.step.value = float(onp.clip(h, 10.0**self.step.min, 10.0**self.step.max))
            finally:
                self._loading = False
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
