"""Directional derivatives by finite differences, with error estimates that
are honest: adaptive steps, measured noise, and "unresolvable" when the
numbers cannot be trusted.

For each direction the chosen scheme (:mod:`gradexplorer.schemes`) is
evaluated at a base step. An entry whose samples are consistent with a
smooth function and whose truncation error does not dominate its noise is
settled at once. Otherwise the step shrinks (8x per level) until two
consistent levels agree; an entry dominated by noise and known only poorly
tries larger steps. Entries that never settle get an infinite error and a
reason: they are *unresolvable*, neither right nor wrong.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as onp

from .levels import BALANCE, DEEP_SHRINK, Directional, StepLevels, resolution_floor
from .noise import NoiseModel
from .reasons import Unresolvable
from .sampling import exact_steps

__all__ = [
    "Directional", "directional_derivatives", "exact_steps", "REASONS", "resolution_floor",
    "Unresolvable", "DEEP_SHRINK",
]  # fmt: skip

#: Why an entry is unresolvable, in words, by code (see :class:`Unresolvable`).
REASONS = {int(code): code.text for code in Unresolvable}


def directional_derivatives(
    evaluate: Callable[[onp.ndarray], onp.ndarray],
    x0: onp.ndarray,
    y0: onp.ndarray,
    noise: NoiseModel | onp.ndarray,
    steps: onp.ndarray,
    *,
    columns: onp.ndarray | None = None,
    vectors: onp.ndarray | None = None,
    method: str = "richardson",
    adapt: bool = True,
    max_shrink: int = 5,
    max_grow: int = 2,
    chunk: int | None = None,
    spacing: onp.ndarray | None = None,
    balance: float | None = None,
    coord_eps: onp.ndarray | None = None,
    grow_to: onp.ndarray | None = None,
    out_eps: onp.ndarray | float | None = None,
) -> Directional:
    """Estimate ``J @ d`` for each direction, with per-entry error estimates.

    Parameters
    ----------
    evaluate : callable
        Points ``(p, N)`` to values ``(p, m)``.
    x0, y0 : ndarray
        The point and f's value there.
    noise : NoiseModel or ndarray
        f's noise per output (:func:`gradexplorer.noise.probe_noise`), or a
        plain standard deviation per output.
    steps : ndarray
        Base step per direction (already exact for coordinate directions).
    columns : int ndarray, optional
        Coordinate directions ``e_j`` (Jacobian columns).
    vectors : ndarray, optional
        Arbitrary directions ``(k, N)`` instead.
    method : str
        A key of :data:`gradexplorer.schemes.SCHEMES`.
    adapt : bool
        Shrink/grow steps until estimates settle (Richardson only).
    spacing : ndarray, optional
        Per-coordinate ulps: coordinate steps stay exact as they shrink or grow.
    balance : float, optional
        How far truncation may exceed noise in a settled entry (default
        :data:`BALANCE`); ``inf`` settles any consistent estimate at once,
        honest but not as sharp (for tests that only steer a search).
    grow_to : ndarray, optional
        Per direction, the largest step worth trying where an entry is known
        only to its noise (a step made tiny by a tiny coordinate, in an array
        whose other elements show f's real scale).
    coord_eps : ndarray, optional
        The precision of each input coordinate: an entry's noise floor is the
        rounding of the lower of its output's and its direction's precision
        (a float32 input judged in float32 beside a float64 one).
    out_eps : float or ndarray, optional
        The precision of each output: given, a coarse grid the stencil's samples
        lie on (a rounding staircase) raises that output's rounding floor.

    Where the samples show f not differentiable at the point (right and left
    derivatives that differ, :func:`~gradexplorer.fd.schemes.one_sided`), the
    entry's reason is :attr:`Unresolvable.KINK`: its estimate is the two
    sides' mean, its error half their gap (so the interval holds both), and
    ``right``, ``left`` give them.
    """
    run = StepLevels(
        evaluate, x0, y0, noise, steps, columns=columns, vectors=vectors, method=method,
        adapt=adapt, max_shrink=max_shrink, chunk=chunk, spacing=spacing,
        coord_eps=coord_eps, out_eps=out_eps,
    )  # fmt: skip
    run.first_level(BALANCE if balance is None else balance)
    if not run.adaptive:
        return run.unrefined()
    run.shrink()
    # an estimate that only steers a search (balance=inf) is not refined further
    run.grow(grow_to, 0 if onp.isinf(run.balance) else max_grow + 1)
    return run.finished()
