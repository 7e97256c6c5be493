"""A function of real or complex arrays as a map between flat real vectors, for drawing.

Complex sides are split as :func:`gradexplorer.real_jacobian` orders them: the
Re parts of the flattened array, then its Im parts. :func:`coordinate_pair`
resolves the two coordinates a plane view draws, and says what was expected
when they do not fit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as onp

from ..backends import get_backend

__all__ = ["real_map", "coordinate_name", "coordinate_pair"]


def real_map(f: Callable, x: Any, who: str = "real_map") -> tuple:
    """``(F, xr, x, layout)``: F(w) = f at the realified input w, realified and flat.

    ``layout`` is ``(x.shape, x complex?, f(x).size, f(x) complex?)``.

    >>> F, xr, x, layout = real_map(lambda z: z**2, 1.0 + 2.0j)
    >>> xr, F(xr), layout
    (array([1., 2.]), array([-3.,  4.]), ((), True, 1, True))
    """
    if not callable(f):
        raise TypeError(f"{who} takes a function f first; got {type(f).__name__}.")
    # f is evaluated on its own kind of array (a torch tensor on its device, a jax
    # array); the drawing works on numpy copies
    system = get_backend(None, [x])
    arr = onp.asarray(system.to_numpy(x))
    if arr.dtype.kind not in "biufc" or arr.size == 0:
        raise ValueError(
            f"{who} needs x as a non-empty array of numbers; got {arr.dtype} with shape "
            f"{arr.shape}. Pass the point as floats or complex numbers."
        )
    cin = arr.dtype.kind == "c"
    arr = arr.astype(complex if cin else float)
    xr = onp.concatenate([arr.real.ravel(), arr.imag.ravel()]) if cin else arr.ravel()
    if not onp.all(onp.isfinite(xr)):
        raise ValueError(f"{who} needs a finite point x; got {arr!r}.")
    n = arr.size

    def to_x(w):
        return (w[:n] + 1j * w[n:] if cin else w).reshape(arr.shape)

    def native(a):
        return system.to_array(a, like=x)

    y = f(native(arr))
    if isinstance(y, (list, tuple, dict)) or onp.asarray(y).dtype.kind not in "biufc":
        raise TypeError(
            f"{who} draws a map returning one array; f returned {type(y).__name__}. Return "
            "one array (anp.concatenate the pieces), or wrap f to pick one output."
        )
    y = system.to_numpy(y)
    cout = onp.iscomplexobj(y)

    def F(w):
        out = onp.asarray(system.to_numpy(f(native(to_x(w)))))
        return onp.concatenate([out.real.ravel(), out.imag.ravel()]) if cout else out.ravel()

    layout = (arr.shape, cin, onp.size(y), cout)
    return F, xr, native(arr), layout


def coordinate_name(k: int, shape: tuple, cplx: bool, letter: str) -> str:
    """The k-th realified coordinate's name.

    >>> coordinate_name(1, (2,), False, "x"), coordinate_name(5, (2, 2), True, "z")
    ('x[1]', 'Im z[0, 1]')
    """
    size = int(onp.prod(shape))
    part, k = ("Im ", k - size) if cplx and k >= size else ("Re " if cplx else "", k)
    index = ", ".join(map(str, onp.unravel_index(k, shape))) if shape else ""
    return f"{part}{letter}{f'[{index}]' if shape else ''}"


def coordinate_pair(sel: Any, size: int, cplx: bool, side: str, who: str) -> tuple[int, int]:
    """Resolve ``coords`` (side "input") or ``outputs`` (side "output") to two indices.

    None is (0, 1) for a real side and the (Re, Im) parts of entry 0 for a
    complex one; an int picks the (Re, Im) parts of that complex entry.

    >>> coordinate_pair(None, 3, True, "input", ""), coordinate_pair(1, 3, True, "input", "")
    ((0, 3), (1, 4))
    """
    real_size = 2 * size if cplx else size
    param = "coords" if side == "input" else "outputs"
    if real_size < 2:
        advice = (
            "For a scalar f use plot_landscape(f, x)."
            if side == "output"
            else "Pass a point with two entries, or a complex one (its Re/Im plane)."
        )
        raise ValueError(
            f"{who} needs two real {side} coordinates to draw a plane; f's {side} has "
            f"{real_size}. {advice}"
        )
    if sel is None:
        sel = 0 if cplx else (0, 1)
    if isinstance(sel, (int, onp.integer)) and cplx:
        sel = (int(sel), int(sel) + size)
    pair = tuple(onp.ravel(sel)) if onp.ndim(sel) else ()
    ok = len(pair) == 2 and all(isinstance(k, (int, onp.integer)) for k in pair)
    if not ok or pair[0] == pair[1] or not all(0 <= k < real_size for k in pair):
        kind = "complex " if cplx else ""
        entry = f" (Re parts first, then Im), or one entry in range({size})" if cplx else ""
        raise ValueError(
            f"{who}: {param} must be two different indices in range({real_size}), the "
            f"{real_size} real coordinates of the flattened {kind}{side}{entry}; got {sel!r}. "
            f"Pass e.g. {param}=(0, 1)."
        )
    return int(pair[0]), int(pair[1])
