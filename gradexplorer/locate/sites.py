"""Where in the user's code an operation was called: a file and line, or a notebook cell.

IPython compiles each cell to a file name of its own (``/tmp/ipykernel_41/2207.py``
under a Jupyter kernel, ``<ipython-input-3-...>`` in older IPython), puts the cell's
text in :mod:`linecache` under that name, and keeps the map from name to execution
count in ``get_ipython().compile._filename_map``. A site in such a file is shown as
``cell [3], line 11``; any other as a short ``path/file.py:11``.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

from ..backends.base import OpRecord

__all__ = ["Site", "describe_site", "site_of", "rule_site_of", "source_of", "notebook_cell"]

#: IPython's own cell names: ``<ipython-input-3-a1b2c3>`` (the count is in the name).
_INPUT_NAME = re.compile(r"^<ipython-input-(\d+)-[0-9a-f]+>$")
#: ipykernel's cell files (``ipykernel_<pid>/<hash>.py``): a cell, count unknown without IPython.
_KERNEL_FILE = re.compile(r"ipykernel_\d+[/\\]\d+\.py$")


@dataclass(frozen=True)
class Site:
    """A line of the user's code.

    ``path`` and ``line`` as Python knows them; ``cell`` the notebook cell's
    execution count (``In [3]``), None outside a notebook (0 for a cell whose
    count is unknown, shown ``cell [?]``); ``code`` the line's text, stripped; ``definition`` marks
    the definition of a function rather than a call (when f itself is the
    operation, nothing of the user's calls it).
    """

    path: str
    line: int
    cell: int | None = None
    code: str = ""
    definition: bool = False

    @property
    def where(self) -> str:
        """``cell [3], line 11`` in a notebook, else ``path/file.py:11`` (short)."""
        if self.cell is not None:
            count = self.cell if self.cell else "?"
            place = f"cell [{count}], line {self.line}"
        else:
            place = f"{short_path(self.path)}:{self.line}"
        return f"{place} (definition)" if self.definition else place

    def __str__(self) -> str:
        return self.where


def short_path(path: str) -> str:
    """A path relative to the working folder when inside it, else its last two parts.

    >>> short_path("/somewhere/else/project/model.py")
    'project/model.py'
    >>> short_path(os.path.join(os.getcwd(), "pkg", "m.py")) == os.path.join("pkg", "m.py")
    True
    """
    if path.startswith("<"):
        return path
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        rel = path
    if not rel.startswith(os.pardir):
        return rel
    parts = os.path.normpath(path).split(os.sep)
    return os.sep.join(parts[-2:])


def notebook_cell(path: str) -> int | None:
    """The execution count of the notebook cell compiled to ``path``.

    Returns
    -------
    int or None
        The count (``3`` for ``In [3]``); 0 for a cell file whose count is not
        known; None for a file that is not a cell. IPython is only asked when
        it is already running (never imported here).

    Examples
    --------
    >>> notebook_cell("<ipython-input-7-0123abcd>"), notebook_cell("model.py")
    (7, None)
    """
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    try:
        shell = get() if get is not None else None
    except Exception:  # a half-initialised shell: ask the file name only
        shell = None
    mapping = getattr(getattr(shell, "compile", None), "_filename_map", None)
    if isinstance(mapping, dict) and path in mapping:
        try:
            return int(mapping[path])
        except (TypeError, ValueError):
            return 0
    match = _INPUT_NAME.match(path)
    if match:
        return int(match.group(1))
    if _KERNEL_FILE.search(path):
        return 0
    return None


def describe_site(path: str, line: int, definition: bool = False) -> Site:
    """The :class:`Site` of ``path:line``, with its notebook cell and its code line.

    Examples
    --------
    >>> import linecache
    >>> linecache.cache["<ipython-input-3-abc>"] = (0, None, ["x = 1\\n", "  y = f(x)  \\n"], "")
    >>> site = describe_site("<ipython-input-3-abc>", 2)
    >>> site.where, site.code
    ('cell [3], line 2', 'y = f(x)')
    >>> del linecache.cache["<ipython-input-3-abc>"]
    """
    code = linecache.getline(path, line).strip()
    return Site(path, int(line), notebook_cell(path), code, definition)


def site_of(rec: OpRecord, backend) -> Site | None:
    """Where the user's code called the operation; if no frame of the user's is
    between (f itself is the operation), where the operation is defined."""
    if rec.frames:
        return describe_site(*rec.frames[0])
    found = getattr(backend, "definition_site", None)
    site = found(rec) if found is not None else None
    if site is None:
        return None
    return describe_site(*site, definition=True)


def rule_site_of(rec: OpRecord, backend, verdict: Any) -> Site | None:
    """Where the user wrote the rule a ``wrong VJP`` / ``wrong JVP`` verdict is
    about, when the backend can tell (None for a library's own rule)."""
    find = getattr(backend, "rule_site", None)
    kind = verdict.rule
    try:
        site = find(rec, kind) if find is not None else None
    except Exception:  # a rule the backend cannot introspect: say nothing
        site = None
    return describe_site(*site) if site is not None else None


def source_of(rec: OpRecord, backend) -> tuple[str, str]:
    """``(where, code)`` of :func:`site_of` (``"<unknown>"`` when there is none)."""
    site = site_of(rec, backend)
    return (site.where, site.code) if site is not None else ("<unknown>", "")
