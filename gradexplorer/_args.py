"""Argument handling shared by every operator: validation, ``wrt`` selection,
realification of complex arrays and readable entry labels."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as onp
from autograd.tracer import getval, isbox

#: Largest dense Jacobian (in bytes) an operator builds before refusing.
MEMORY_CAP_BYTES = 2 * 1024**3


def check_callable(f: Any, what: str = "f") -> None:
    """Raise a TypeError unless ``f`` is callable."""
    if not callable(f):
        raise TypeError(
            f"{what} must be a callable (a Python function of numpy arrays); got "
            f"{type(f).__name__} {f!r:.60}. Pass the function itself, e.g. "
            "gx.grad(f) rather than gx.grad(f(x))."
        )


def parameter_names(f: Callable) -> list[str]:
    """Names of f's positional parameters (empty when they cannot be read)."""
    f = getattr(f, "fun", f) if getattr(f, "_is_autograd_primitive", False) else f
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in sig.parameters.values() if p.kind in kinds]


def has_var_positional(f: Callable) -> bool:
    f = getattr(f, "fun", f) if getattr(f, "_is_autograd_primitive", False) else f
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return True
    return any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in sig.parameters.values())


def bind_positional(f: Callable, args: tuple, kwargs: dict) -> tuple[list, dict]:
    """Move keyword arguments that name positional parameters into ``args``.

    So that ``wrt="y"`` works whether y was passed by position or by keyword.
    """
    names = parameter_names(f)
    args = list(args)
    kwargs = dict(kwargs)
    for name in names[len(args) :]:
        if name not in kwargs:
            break
        args.append(kwargs.pop(name))
    return args, kwargs


def resolve_wrt(f: Callable, wrt: Any, nargs: int) -> tuple[tuple[int, ...], bool]:
    """Turn a ``wrt`` selector into argument positions.

    Returns ``(argnums, single)``: ``single`` is True when ``wrt`` was one int
    or one name (the caller then returns one array instead of a tuple).
    ``wrt=None`` selects every positional argument.

    >>> resolve_wrt(lambda x, y: x * y, "y", 2)
    ((1,), True)
    >>> resolve_wrt(lambda x, y: x * y, [0, 1], 2)
    ((0, 1), False)
    """
    if wrt is None:
        return tuple(range(nargs)), False
    single = isinstance(wrt, (int, str, onp.integer)) and not isinstance(wrt, bool)
    selectors = [wrt] if single else list(wrt) if isinstance(wrt, Sequence) else None
    if selectors is None or not selectors:
        raise ValueError(
            f"wrt must be an int, a parameter name, or a non-empty sequence of them; got "
            f"{wrt!r}. Use e.g. wrt=0, wrt='x' or wrt=(0, 1)."
        )
    is_int = [isinstance(s, (int, onp.integer)) and not isinstance(s, bool) for s in selectors]
    is_str = [isinstance(s, str) for s in selectors]
    if not (all(is_int) or all(is_str)):
        raise ValueError(
            f"wrt must be all integers or all parameter names, not a mix; got {wrt!r}. "
            "Write e.g. wrt=(0, 1) or wrt=('x', 'y')."
        )
    names = parameter_names(f)
    argnums = []
    for s in selectors:
        if isinstance(s, str):
            if s not in names:
                raise ValueError(
                    f"wrt names parameter {s!r}, but f's positional parameters are "
                    f"{names}. Use one of those names or an index."
                )
            i = names.index(s)
        else:
            i = int(s)
            if i < 0:
                i += nargs
        if not 0 <= i < nargs:
            raise ValueError(
                f"wrt={s!r} is out of range: f was called with {nargs} positional "
                f"argument(s), so valid indices are 0..{nargs - 1}."
            )
        argnums.append(i)
    return tuple(argnums), single


def param_label(f: Callable, argnum: int) -> str:
    """The name used for argument ``argnum`` in labels (``x``, or ``arg2``)."""
    names = parameter_names(f)
    return names[argnum] if argnum < len(names) else f"arg{argnum}"


def as_differentiable(x: Any, name: str) -> Any:
    """Validate one differentiated input and return it as a float/complex array
    (or a Python float, kept as is so scalar functions stay scalar)."""
    if isbox(x):  # nested differentiation: already validated by the outer operator
        return x
    if isinstance(x, (bool, onp.bool_)):
        raise TypeError(
            f"input {name} is a bool ({x!r}); differentiation needs floats. "
            f"Pass {float(x)!r} instead."
        )
    if isinstance(x, (int, onp.integer)):
        raise TypeError(
            f"input {name} is the integer {x!r}; integers have no derivative. "
            f"Pass a float instead: {float(x)!r}."
        )
    if isinstance(x, (float, complex, onp.floating, onp.complexfloating)):
        return x
    try:
        arr = onp.asarray(x)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(
            f"input {name} must be a float or complex numpy array; got "
            f"{type(x).__name__} that numpy cannot convert ({exc})."
        ) from None
    if arr.dtype.kind in "biu":
        raise TypeError(
            f"input {name} has integer dtype {arr.dtype}; differentiation needs floats. "
            f"Pass {name}.astype(float) instead."
        )
    if arr.dtype.kind not in "fc":
        raise TypeError(
            f"input {name} must be a float or complex array; got dtype {arr.dtype}. "
            "Convert it with numpy.asarray(x, dtype=float)."
        )
    return arr


def is_complex(x: Any) -> bool:
    return onp.iscomplexobj(x)


@dataclass(frozen=True)
class Side:
    """How one array maps to a real vector: shape, complexness and label name."""

    name: str
    shape: tuple[int, ...]
    complex: bool
    dtype: str = "float64"

    @property
    def size(self) -> int:
        return int(onp.prod(self.shape, dtype=int))

    @property
    def real_size(self) -> int:
        return self.size * (2 if self.complex else 1)

    def label(self, k: int) -> str:
        """Label of real coordinate ``k`` (``x[2, 1]``, ``Re z[0]``, ``x``)."""
        part = ""
        if self.complex:
            part = "Re " if k < self.size else "Im "
            k = k % self.size
        if self.shape == ():
            return f"{part}{self.name}"
        idx = onp.unravel_index(k, self.shape)
        return f"{part}{self.name}[{', '.join(str(int(i)) for i in idx)}]"

    def index(self, k: int) -> tuple[int, ...]:
        """Multi-index of real coordinate ``k`` (a 1-tuple for a complex side)."""
        if self.complex:
            return (int(k),)
        return tuple(int(i) for i in onp.unravel_index(k, self.shape))


def side_of(x: Any, name: str) -> Side:
    x = getval(x)
    dtype = onp.asarray(x).dtype if not isinstance(x, (float, complex)) else onp.dtype(type(x))
    return Side(name, tuple(onp.shape(x)), bool(is_complex(x)), str(dtype))


def to_real_vector(x: Any) -> onp.ndarray:
    """Flatten x to a real vector: ``[Re x.ravel(), Im x.ravel()]`` when complex."""
    a = onp.asarray(getval(x))
    if a.dtype.kind == "c":
        return onp.concatenate([a.real.ravel(), a.imag.ravel()])
    return a.ravel()


def from_real_vector(v: Any, side: Side, np=onp) -> Any:
    """Inverse of :func:`to_real_vector` (pass ``np=autograd.numpy`` while tracing)."""
    if side.complex:
        n = side.size
        z = v[:n] + 1j * v[n:]
        return np.reshape(z, side.shape)
    return np.reshape(v, side.shape)


def from_real_batch(V: onp.ndarray, side: Side) -> onp.ndarray:
    """Rows of V (each a realified point) back to a batch ``(k,) + side.shape``."""
    k = V.shape[0]
    if side.complex:
        n = side.size
        Z = (V[:, :n] + 1j * V[:, n:]).astype(side.dtype, copy=False)
        return Z.reshape((k,) + side.shape)
    return V.astype(side.dtype, copy=False).reshape((k,) + side.shape)


def realify_output(y: Any, np=onp) -> Any:
    """Traced version of :func:`to_real_vector` (works on autograd boxes).

    A list/tuple of outputs is realified piece by piece and stacked.
    """
    if isinstance(y, (list, tuple)):
        return np.concatenate([realify_output(yk, np) for yk in y])
    if onp.iscomplexobj(_value(y)):
        return np.concatenate([np.ravel(np.real(y)), np.ravel(np.imag(y))])
    return np.ravel(y)


def output_sides(y: Any) -> list[Side]:
    """Sides of f's output(s): ``y`` for one array, ``y0, y1, ...`` for several."""
    if isinstance(y, (list, tuple)):
        return [side_of(yk, f"y{k}") for k, yk in enumerate(y)]
    return [side_of(y, "y")]


def _value(y: Any) -> Any:
    return getval(y)


def check_jacobian_size(n_out: int, n_in: int, itemsize: int = 8, what: str = "Jacobian") -> None:
    """Refuse to build a dense matrix larger than :data:`MEMORY_CAP_BYTES`."""
    nbytes = int(n_out) * int(n_in) * itemsize
    if nbytes > MEMORY_CAP_BYTES:
        raise _too_large(n_out, n_in, nbytes, what)


def _too_large(n_out: int, n_in: int, nbytes: int, what: str):
    from .errors import JacobianTooLargeError

    return JacobianTooLargeError(
        f"a dense {what} of {n_out} outputs x {n_in} inputs needs {nbytes / 1e9:.1f} GB, "
        f"over the cap of {MEMORY_CAP_BYTES / 1e9:.1f} GB "
        "(gradexplorer._args.MEMORY_CAP_BYTES). Use gx.Lop / gx.Rop for products with "
        "it, or gx.check_grads(..., mode='fast'), which never builds it."
    )


def nonfinite_summary(a: Any, side: Side, limit: int = 5) -> str | None:
    """Name the NaN/Inf entries of ``a`` (None when all are finite)."""
    v = to_real_vector(a)
    bad = onp.flatnonzero(~onp.isfinite(v))
    if bad.size == 0:
        return None
    shown = ", ".join(f"{side.label(k)}={v[k]}" for k in bad[:limit])
    more = f" and {bad.size - limit} more" if bad.size > limit else ""
    return f"{bad.size} non-finite entr{'y' if bad.size == 1 else 'ies'}: {shown}{more}"
