"""What a check was asked to do, shared by every stage."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as onp

__all__ = [
    "Options", "DEFAULT_MAX_NAMED", "choose_mode", "AUTO_FAST_ENTRIES", "AUTO_FAST_INPUTS",
    "compile_backend",
]  # fmt: skip

#: Wrong entries a fast check names by default (it counts all it finds).
DEFAULT_MAX_NAMED = 32
#: Above this many dense entries (or inputs), mode="auto" switches to the fast check.
AUTO_FAST_ENTRIES = 1_000_000
AUTO_FAST_INPUTS = 1_000


@dataclass(frozen=True)
class Options:
    """The options of one check, validated by :func:`~gradexplorer.check_grads`.

    >>> Options("richardson", None, None, onp.random.default_rng(0)).max_named
    32
    """

    method: str
    atol: float | None
    rtol: float | None
    gen: onp.random.Generator
    order: int = 1
    #: how the reverse-mode rule is named in notes ("VJP", "VJP rule")
    rule_name: str = "VJP"
    #: wrong entries named in a fast check (all of them are counted)
    max_named: int = DEFAULT_MAX_NAMED
    #: why this mode runs (``mode="auto"``'s choice)
    mode_reason: str = ""


def choose_mode(mode: str, n: int, m: int) -> tuple[str, str]:
    """The mode to run and, for ``"auto"``, why.

    >>> choose_mode("auto", 3, 2)[0], choose_mode("auto", 5000, 1)[1][:30]
    ('full', 'auto chose fast mode: 5,000 in')
    """
    if mode != "auto":
        return mode, ""
    if n > AUTO_FAST_INPUTS:
        return "fast", (
            f"auto chose fast mode: {n:,} inputs (> {AUTO_FAST_INPUTS:,}) would take "
            f"{n:,} finite-difference columns; mode='full' judges every entry"
        )
    if n * m > AUTO_FAST_ENTRIES:
        return "fast", (
            f"auto chose fast mode: {m:,} x {n:,} entries (> {AUTO_FAST_ENTRIES:,}); "
            "mode='full' judges every entry"
        )
    return "full", f"auto chose full mode: {m:,} x {n:,} entries, every one judged"


def compile_backend(compiled: object) -> tuple[bool, str | None]:
    """``compiled=`` as (compare?, torch.compile backend or None for inductor with
    an aot_eager fallback).

    >>> compile_backend(False), compile_backend(True), compile_backend("aot_eager")
    ((False, None), (True, None), (True, 'aot_eager'))
    """
    if compiled is False or compiled is None:
        return False, None
    if compiled is True:
        return True, None
    if isinstance(compiled, str) and compiled:
        return True, compiled
    raise TypeError(
        f"compiled must be True (torch.compile with inductor, falling back to aot_eager "
        f"where inductor fails), False, or a torch.compile backend name such as "
        f"'aot_eager'; got {compiled!r:.40}."
    )
