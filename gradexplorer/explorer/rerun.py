"""Running a notebook cell again closes the explorers its last run made.

Jupyter replaces a cell's output when the cell runs again, but IPython's output
history (``Out``, ``_``) keeps the old explorer alive: its figures, widgets and
background thread stay in the kernel, and after a page reload the page asks
every one of its canvases for a new picture (seconds of kernel time). So an
explorer made while a cell runs is filed under that cell, and the next run of
the same cell closes what the previous run filed.
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["running_cell", "file_under_cell"]

#: cell id -> (the run that made them, weak references to the explorers it made)
_MADE: dict[str, tuple[str, list[weakref.ref]]] = {}


def running_cell() -> tuple[str, str] | None:
    """The notebook cell running now and the id of this run (the execute request's
    message id); None outside a Jupyter kernel or for a front end that sends no
    cell id.

    >>> running_cell() is None  # a plain Python session
    True
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    kernel = getattr(get_ipython(), "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    if get_parent is None:
        return None
    try:
        request = get_parent("shell") or {}
    except Exception:  # an older or foreign kernel: nothing to file under
        return None
    cell = (request.get("metadata") or {}).get("cellId")
    run = (request.get("header") or {}).get("msg_id")
    return (str(cell), str(run)) if cell and run else None


def file_under_cell(explorer: Any, cell: tuple[str, str] | None = None) -> list[Any]:
    """File ``explorer`` under the running cell (``cell``: the cell and run, for
    tests); close the explorers a previous run of that cell made. Returns those.

    >>> class Toy:
    ...     def close(self):
    ...         print("closed")
    >>> first, again = Toy(), Toy()
    >>> file_under_cell(first, ("cell-1", "run-1"))
    []
    >>> len(file_under_cell(again, ("cell-1", "run-2")))
    closed
    1
    """
    cell = running_cell() if cell is None else cell
    if cell is None:
        return []
    cell_id, run = cell
    last_run, refs = _MADE.get(cell_id, (None, []))
    closed = []
    if last_run != run:
        for ref in refs:
            old = ref()
            if old is not None and old is not explorer:
                old.close()
                closed.append(old)
        refs = []
    refs.append(weakref.ref(explorer))
    _MADE[cell_id] = (run, refs)
    return closed
