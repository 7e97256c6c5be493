"""Why finite differences could not resolve an entry: one code per cause.

The codes live in integer arrays beside the estimates (one per entry), so
they are an :class:`~enum.IntEnum`; each says in words what happened.

>>> Unresolvable(5).text[:32]
'f varies erratically at every sc'
>>> Unresolvable.STAIRCASE.name
'STAIRCASE'
"""

from __future__ import annotations

import enum

__all__ = ["Unresolvable"]


class Unresolvable(enum.IntEnum):
    """The reason code of an entry (``RESOLVED`` when it has an estimate)."""

    RESOLVED = 0
    NOT_FINITE_AT_POINT = 1
    NOT_FINITE_NEARBY = 2
    NEVER_SETTLED = 3
    TOO_UNEVEN = 4
    ERRATIC = 5
    STAIRCASE = 6
    KINK = 7
    JUMP = 8
    OUTSIDE_DOMAIN = 9

    @property
    def text(self) -> str:
        """The reason in words, for reports."""
        return _TEXT[self]


_TEXT = {
    Unresolvable.RESOLVED: "",
    Unresolvable.NOT_FINITE_AT_POINT: "f is not finite at the point",
    Unresolvable.NOT_FINITE_NEARBY: "f is not finite (overflow or NaN) within the smallest step",
    Unresolvable.NEVER_SETTLED: (
        "finite differences never settled: a kink or jump within the step, an oscillation "
        "faster than the step, or f's own noise"
    ),
    Unresolvable.TOO_UNEVEN: "f is too uneven here for finite differences to pin this entry down",
    Unresolvable.ERRATIC: (
        "f varies erratically at every scale probed (an oscillation far faster than any "
        "step, or noise comparable to f itself): no finite difference resolves it"
    ),
    Unresolvable.STAIRCASE: (
        "f moves in quanta (a rounding staircase: a large intermediate, or a lower-precision "
        "accumulator, rounds its output), too coarse for any step that keeps f smooth"
    ),
    Unresolvable.KINK: (
        "f is not differentiable here: its one-sided derivatives differ (a kink or a tie)"
    ),
    Unresolvable.JUMP: "f jumps here (not continuous): it has no derivative",
    Unresolvable.OUTSIDE_DOMAIN: (
        "f raises or is undefined within the step (the point is at the edge of f's domain)"
    ),
}
