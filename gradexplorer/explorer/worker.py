"""One background computation at a time, the newest request only.

A slider moved while the check is running cancels it: the request carries a
generation number, the function under check raises :class:`Cancelled` at its
next evaluation once a newer generation exists, and the worker then starts on
the newest request. Requests are never queued behind each other.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from ..backends import owns_callable

__all__ = ["Cancelled", "Worker", "cancellable", "hand_over", "in_kernel"]


class Cancelled(BaseException):
    """A newer request superseded this computation (a BaseException: library code that
    catches ``Exception`` lets it through)."""


def cancellable(f: Callable, is_current: Callable[[], bool]) -> Callable:
    """f, raising :class:`Cancelled` instead of evaluating once ``is_current()`` is False.

    Modules and other callables that the backends recognise by type (an
    ``nn.Module``) are returned unwrapped: they are cancelled between stages only.

    >>> g = cancellable(lambda x: 2 * x, lambda: True)
    >>> g(3), g.__name__
    (6, '<lambda>')
    """
    if not callable(f) or owns_callable(f):
        return f

    @functools.wraps(f)
    def guarded(*args, **kwargs):
        if not is_current():
            raise Cancelled
        return f(*args, **kwargs)

    return guarded


class Worker:
    """A daemon thread running ``run(request)`` for the newest submitted request, and,
    once no request came for ``idle_after`` seconds, ``idle()`` until it returns False
    (work that may wait: the views nobody looks at yet, for the saved pictures)."""

    def __init__(
        self,
        run: Callable[[Any], None],
        idle: Callable[[], bool] | None = None,
        idle_after: float = 1.0,
    ):
        self._run = run
        self._idle = idle
        self.idle_after = idle_after
        self._idle_wanted = False
        self._pending: Any = None
        self._has_pending = False
        self._busy = False
        self._stopped = False
        self._cv = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="gradexplorer", daemon=True)
        self._thread.start()

    def submit(self, request: Any) -> None:
        """Replace any pending request by this one and wake the thread."""
        with self._cv:
            self._pending, self._has_pending = request, True
            self._cv.notify_all()

    def pending(self) -> bool:
        """Is a request waiting (idle work stops at its next evaluation of f)?"""
        return self._has_pending or self._stopped

    def wait(self, timeout: float | None = None) -> bool:
        """Block until nothing is pending or running; False on timeout."""
        with self._cv:
            return self._cv.wait_for(lambda: not (self._has_pending or self._busy), timeout)

    def stop(self) -> None:
        with self._cv:
            self._stopped = True
            self._cv.notify_all()

    def _loop(self) -> None:
        while True:
            with self._cv:
                timeout = self.idle_after if (self._idle_wanted and self._idle) else None
                woke = self._cv.wait_for(lambda: self._has_pending or self._stopped, timeout)
                if self._stopped:
                    return
                idle = not woke
                if not idle:
                    request, self._pending, self._has_pending = self._pending, None, False
                    self._busy = True
            try:
                if idle:
                    self._idle_wanted = bool(self._idle())
                else:
                    self._run(request)
                    self._idle_wanted = True
            except Cancelled:
                self._idle_wanted = True
            except Exception:  # the thread must outlive a bug in one request: say it
                traceback.print_exc()
            finally:
                with self._cv:
                    self._busy = False
                    self._cv.notify_all()


def in_kernel() -> bool:
    """Inside a Jupyter kernel (where a background thread keeps the page responsive).

    >>> in_kernel()
    False
    """
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return getattr(shell, "kernel", None) is not None


def hand_over(timeout: float = 0.05) -> None:
    """Wait until the kernel's IOPub thread has sent what this thread published so far.

    A frame published from the worker leaves the kernel only when the IOPub thread gets
    the GIL; a check going on in the worker kept it from it for 5-9 ms a burst (the
    interpreter's switch interval), measured in JupyterLab. Waiting here releases the
    GIL until an event queued behind the frame has run, so the frame is on its way
    before the computing goes on. Outside a kernel, or with an IOPub thread that
    cannot take events, it is a millisecond's pause.

    >>> hand_over()  # outside a kernel: nothing to wait for
    """
    iopub = _iopub_thread()
    if iopub is None:
        time.sleep(0.001)
        return
    sent = threading.Event()
    iopub.schedule(sent.set)
    sent.wait(timeout)


def _iopub_thread() -> Any:
    """The kernel's IOPub thread, if this runs in a kernel that has one."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    iopub = getattr(getattr(shell, "kernel", None), "iopub_thread", None)
    alive = getattr(getattr(iopub, "thread", None), "is_alive", None)
    if not callable(getattr(iopub, "schedule", None)) or alive is None or not alive():
        return None
    return iopub
