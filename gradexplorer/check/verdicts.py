"""What the checker says of an entry, as types: the verdict, what was compared,
and the reading of its numbers in words.

An entry is *right* (within its allowance), *right at a kink* (f is not
differentiable there and the analytic value is one of its one-sided
derivatives, or between them), *wrong*, *imprecise* (wrong, yet right to
many digits: a rule off in its last digits is not the same failure as a
transposed matrix), *unresolvable* (finite differences cannot pin it down;
the reason is a :class:`~gradexplorer.fd.reasons.Unresolvable`) or at a
*jump* (f is not continuous: no derivative to compare).

>>> Verdict.IMPRECISE.failing, Verdict.RIGHT_AT_KINK.failing, str(Verdict.RIGHT_AT_KINK)
(True, False, 'right at a kink')
>>> Comparison("vjp") is Comparison.VJP, Comparison.JVP == "jvp"
(True, True)
"""

from __future__ import annotations

import enum

import numpy as onp

__all__ = [
    "Verdict", "Comparison", "IMPRECISE_REL", "ratio_reading", "digits_right", "failing_verdict",
    "failing_codes",
]  # fmt: skip


class Verdict(str, enum.Enum):
    """The checker's verdict on one entry."""

    RIGHT = "right"
    RIGHT_AT_KINK = "right at a kink"
    WRONG = "wrong"
    IMPRECISE = "imprecise"
    UNRESOLVABLE = "unresolvable"
    JUMP = "jump"

    def __str__(self) -> str:
        return self.value

    @property
    def failing(self) -> bool:
        """Does this verdict fail the check?"""
        return self in (Verdict.WRONG, Verdict.IMPRECISE)

    @property
    def code(self) -> int:
        """Its index, for matrices of verdicts (``CheckReport.verdicts``)."""
        return _CODES[self]

    @classmethod
    def from_code(cls, code: int) -> Verdict:
        return _ORDER[int(code)]


_ORDER = tuple(Verdict)
_CODES = {v: k for k, v in enumerate(_ORDER)}


class Comparison(str, enum.Enum):
    """What was compared: reverse mode (a VJP row), forward mode (a JVP column),
    a rule with itself (a VJP/JVP not linear in its cotangent/tangent), a
    whole block's Taylor remainder, or the compiled function's reverse mode."""

    VJP = "vjp"
    JVP = "jvp"
    LINEARITY = "linearity"
    TAYLOR = "taylor"
    #: the compiled function's reverse mode (``check_grads(..., compiled=True)``)
    COMPILED = "compiled"

    def __str__(self) -> str:
        return self.value


#: A failing entry right to at least four significant digits is *imprecise*.
IMPRECISE_REL = 1e-4


def digits_right(analytic: float, numeric: float) -> float:
    """Significant digits the analytic value shares with the numeric one.

    >>> round(digits_right(1.0 + 3e-8, 1.0), 1)
    7.5
    """
    scale = max(abs(analytic), abs(numeric))
    if scale == 0 or analytic == numeric:
        return float("inf")
    return float(-onp.log10(abs(analytic - numeric) / scale))


def failing_verdict(analytic: float, numeric: float) -> Verdict:
    """WRONG, or IMPRECISE for a value right to four digits or more."""
    if not (onp.isfinite(analytic) and onp.isfinite(numeric)) or numeric == 0:
        return Verdict.WRONG
    rel = abs(analytic - numeric) / max(abs(analytic), abs(numeric))
    return Verdict.IMPRECISE if rel <= IMPRECISE_REL else Verdict.WRONG


def failing_codes(codes):
    """Where a matrix (or one) of verdict codes fails the check: WRONG or IMPRECISE.

    >>> failing_codes(onp.array([Verdict.RIGHT.code, Verdict.WRONG.code])).tolist()
    [False, True]
    """
    return (codes == Verdict.WRONG.code) | (codes == Verdict.IMPRECISE.code)


def _clean_ratio(ratio: float) -> str | None:
    """A clean multiple such as ``2x`` or ``0.5x`` (None when not clean or ~1)."""
    if not onp.isfinite(ratio) or abs(ratio - 1) < 1e-3:
        return None
    short = float(f"{ratio:.3g}")
    if abs(ratio - short) <= 1e-7 * max(1.0, abs(ratio)):
        return f"{short:g}x"
    return None


def ratio_reading(violation: float, analytic: float, numeric: float) -> str:
    """A failing entry's numbers in words: sign flipped, a clean multiple, zero
    where f moves, nonzero where it does not, or how far off.

    >>> ratio_reading(12.0, 1.5, 1.0)
    'analytic is 1.5x the numeric value'
    >>> ratio_reading(40.0, 1.0 + 3e-8, 1.0)
    'right to 7.5 digits: off by 3e-08 relative (40x the allowed difference)'
    """
    if not onp.isfinite(analytic):
        return f"analytic is {analytic}"
    if numeric != 0 and abs(analytic + numeric) <= 1e-6 * abs(numeric):
        return "sign flipped"
    if analytic == 0 and numeric != 0:
        return "analytic is zero, the function is not"
    if numeric == 0:
        return "analytic is nonzero where the function does not change"
    clean = _clean_ratio(analytic / numeric)
    if clean:
        return f"analytic is {clean} the numeric value"
    rel = abs(analytic - numeric) / abs(numeric)
    # against the whole allowance (FD error, round-off, atol): the FD error alone
    # can be far smaller than what the entry is allowed (1e14x a 1e-30 FD error)
    off = f"off by {rel:.2g} relative ({violation:.3g}x the allowed difference)"
    if failing_verdict(analytic, numeric) is Verdict.IMPRECISE:
        return f"right to {digits_right(analytic, numeric):.1f} digits: {off}"
    return off
