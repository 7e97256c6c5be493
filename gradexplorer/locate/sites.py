"""Where in the user's code an operation was called: a file and line, or a notebook cell."""

from __future__ import annotations

import linecache
import os

from ..backends.base import OpRecord

__all__ = ["describe_site", "source_of"]


def _notebook_cell(path: str) -> int | None:
    """The execution count of a notebook cell's code file (IPython names them)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    ip = get_ipython()
    mapping = getattr(getattr(ip, "compile", None), "_filename_map", None)
    if mapping and path in mapping:
        return int(mapping[path])
    return None


def describe_site(path: str, line: int) -> tuple[str, str]:
    """``(where, code)``: ``path:line`` (relative when shorter) or ``cell [N], line L``."""
    code = linecache.getline(path, line).strip()
    cell = _notebook_cell(path)
    if cell is not None:
        return f"cell [{cell}], line {line}", code
    try:
        shown = os.path.relpath(path)
    except ValueError:
        shown = path
    if shown.startswith(".."):
        shown = path
    return f"{shown}:{line}", code


def source_of(rec: OpRecord, backend) -> tuple[str, str]:
    """Where the user's code called the operation, and that line's text."""
    if rec.frames:
        return describe_site(*rec.frames[0])
    site = backend.definition_site(rec)  # f itself is the primitive: its definition
    if site is None:
        return "<unknown>", ""
    where, code = describe_site(*site)
    return f"{where} (definition)", code
