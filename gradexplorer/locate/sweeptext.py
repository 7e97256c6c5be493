"""How one step of an AD sweep is written: numbers, names and local derivatives.

Pure text, shared by :mod:`gradexplorer.locate.sweeps` (which writes each
step's chain-rule product) and the picture of the graph. The three AD systems
name the same operation differently (``mul`` / ``multiply``, ``integer_pow`` /
``power``); :func:`canonical` brings them to one name, so the expression of a
node (``v1 * v2``) and its local derivative written out (``cos(0.5)``) read
the same for autograd, torch and jax.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable
from typing import Any

import numpy as onp

__all__ = [
    "num", "arr", "matrix", "dotted", "barred", "canonical", "expression", "symbolic",
    "exponent",
]  # fmt: skip

#: One name per operation whatever the AD system calls it.
_ALIASES = {
    "mul": "multiply",
    "div": "divide",
    "true_divide": "divide",
    "truediv": "divide",
    "sub": "subtract",
    "pow": "power",
    "integer_pow": "power",
    "neg": "negative",
    "dot_general": "matmul",
    "dot": "matmul",
    "mm": "matmul",
    "mv": "matmul",
    "rsqrt": "rsqrt",
}
_INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "matmul": "@"}


def num(v: float) -> str:
    """A number with three significant digits, written as a float.

    >>> num(0.8775825618903728), num(1), num(-0.0), num(12345.0)
    ('0.878', '1.0', '0.0', '1.23e+04')
    """
    v = float(v)
    if v == 0:
        return "0.0"
    s = f"{v:.3g}"
    return s if any(c in s for c in ".en") else s + ".0"


def arr(a: Any) -> str:
    """A value as written in a step: a number, ``[a, b]`` or ``[[a, b], [c, d]]``.

    >>> arr(0.5), arr([1.0, 0.0]), arr([[1.0, 2.0], [3.0, 4.0]])
    ('0.5', '[1.0, 0.0]', '[[1.0, 2.0], [3.0, 4.0]]')
    """
    a = onp.asarray(a, dtype=float)
    if a.ndim == 0:
        return num(a)
    if a.ndim == 1:
        return "[" + ", ".join(num(v) for v in a) + "]"
    return "[" + ", ".join(arr(row) for row in a) + "]"


def matrix(J: onp.ndarray) -> str:
    """A local Jacobian (``out.size × in.size``) as written in a product: a
    number, ``diag(a, b)`` for an elementwise operation, ``[a, b]`` for one
    row or column, else the rows.

    >>> matrix(onp.array([[2.0]])), matrix(onp.diag([1.0, 0.5])), matrix(onp.eye(1, 2))
    ('2.0', 'diag(1.0, 0.5)', '[1.0, 0.0]')
    """
    J = onp.atleast_2d(onp.asarray(J, dtype=float))
    if J.size == 1:
        return num(J[0, 0])
    if J.shape[0] == J.shape[1] and not onp.any(J - onp.diag(onp.diag(J))):
        return "diag(" + ", ".join(num(v) for v in onp.diag(J)) + ")"
    if 1 in J.shape:
        return arr(J.ravel())
    return arr(J)


def _mark(name: str, mark: str) -> str:
    # the combining mark sits on the first letter: ẋ, v̇3, ȳ; composed where Unicode
    # has the letter (ẋ, ȳ), so that a name typed with it compares equal
    return unicodedata.normalize("NFC", name[:1] + mark + name[1:]) if name else name


def dotted(name: str) -> str:
    """The tangent's name: ``ẋ``, ``v̇3``."""
    return _mark(name, "\u0307")


def barred(name: str) -> str:
    """The adjoint's name: ``x̄``, ``v̄3``."""
    return _mark(name, "\u0304")


def canonical(name: str) -> str:
    """One name for the operation whatever the AD system calls it.

    >>> canonical("mul"), canonical("integer_pow"), canonical("sin")
    ('multiply', 'power', 'sin')
    """
    return _ALIASES.get(name, name)


def exponent(rec: Any) -> float | None:
    """The constant exponent of a ``power`` record (autograd and torch keep it
    in the arguments, jax in the equation's parameters), or None."""
    params = getattr(rec.fun, "params", None)
    if isinstance(params, dict) and "y" in params:
        return float(params["y"])
    if len(rec.args) > 1 and 1 not in rec.argnums and onp.ndim(rec.args[1]) == 0:
        try:
            return float(rec.args[1])
        except (TypeError, ValueError):
            return None
    return None


def _const(value: Any) -> str:
    """A constant argument in an expression: its number, else ``C`` (an array)."""
    if onp.ndim(value) == 0:
        try:
            return num(float(value))
        except (TypeError, ValueError):
            return str(value)
    return "C"


def _power(c: float) -> str:
    """An exponent as written: ``2`` rather than ``2.0``."""
    return str(int(c)) if float(c).is_integer() else num(c)


def _index(i: Any) -> str:
    if isinstance(i, slice):
        parts = ["" if p is None else str(p) for p in (i.start, i.stop, i.step)]
        return ":".join(parts[:2] if i.step is None else parts)
    if isinstance(i, tuple):
        return ", ".join(_index(k) for k in i)
    return str(i)


def expression(rec: Any, names: dict[int, str]) -> str:
    """How the operation reads with its arguments' names: ``v1 * x``, ``sin(v2)``,
    ``x[0]``, ``v3 ** 2``. ``names`` maps argument positions to node names
    (the traced ones); the others are constants."""
    op = canonical(rec.name)

    def arg(k: int) -> str:
        return names[k] if k in names else _const(rec.args[k]) if k < len(rec.args) else "?"

    if op == "getitem" and len(rec.args) == 2:
        return f"{arg(0)}[{_index(rec.args[1])}]"
    params = getattr(rec.fun, "params", None)
    if op == "slice" and isinstance(params, dict) and params.get("strides") is None:
        # jax's x[0] is a slice (then a squeeze): written as the slice it is
        spans = zip(params.get("start_indices", ()), params.get("limit_indices", ()))
        return f"{arg(0)}[{', '.join(f'{a}:{b}' for a, b in spans)}]"
    if op == "power":
        c = exponent(rec)
        return f"{arg(0)} ** {_power(c) if c is not None else arg(1)}"
    if op == "negative":
        return f"-{arg(0)}"
    if op in _INFIX and len(rec.args) >= 2:
        return f"{arg(0)} {_INFIX[op]} {arg(1)}"
    shown = [arg(k) for k in range(len(rec.args)) if k in names or onp.ndim(rec.args[k]) == 0]
    return f"{op}({', '.join(shown or [arg(k) for k in names])})"


# the local derivative of a scalar operation, written with its argument's value:
# name -> function(u, other args' values, exponent) -> (text, value)
_Rule = Callable[[float, list, Any], tuple[str, float]]
_UNARY: dict[str, _Rule] = {
    "sin": lambda u, o, c: (f"cos({num(u)})", math.cos(u)),
    "cos": lambda u, o, c: (f"-sin({num(u)})", -math.sin(u)),
    "tan": lambda u, o, c: (f"1/cos²({num(u)})", 1 / math.cos(u) ** 2),
    "exp": lambda u, o, c: (f"exp({num(u)})", math.exp(u)),
    "log": lambda u, o, c: (f"1/{num(u)}", 1 / u if u else math.inf),
    "tanh": lambda u, o, c: (f"1 - tanh²({num(u)})", 1 - math.tanh(u) ** 2),
    "sinh": lambda u, o, c: (f"cosh({num(u)})", math.cosh(u)),
    "cosh": lambda u, o, c: (f"sinh({num(u)})", math.sinh(u)),
    "sqrt": lambda u, o, c: (
        f"1/(2·sqrt({num(u)}))",
        0.5 / math.sqrt(u) if u > 0 else math.inf,
    ),
    "negative": lambda u, o, c: ("-1", -1.0),
    "square": lambda u, o, c: (f"2·{num(u)}", 2 * u),
    "power": lambda u, o, c: (
        (f"2·{num(u)}", 2 * u)
        if c == 2
        else (f"{_power(c)}·{num(u)}^{_power(c - 1)}", c * u ** (c - 1) if u or c > 1 else math.inf)
    ),
}


def symbolic(rec: Any, slot: int, values: list, local: float) -> str:
    """The local derivative ``∂v/∂(argument slot)`` of a scalar operation written
    with numbers (``cos(0.5)``, ``2·0.5``, the other factor of a product), when
    its form is known and agrees with the AD system's own value ``local``;
    else ``local`` itself.

    ``values`` holds the operation's arguments as floats (None where not a
    scalar).

    >>> class Rec: name, fun, args, argnums = "sin", None, (0.5,), (0,)
    >>> symbolic(Rec, 0, [0.5], 0.8775825618903728)
    'cos(0.5)'
    """
    op = canonical(rec.name)
    u = values[slot] if slot < len(values) else None
    text, value = None, None
    try:
        if op in _UNARY and u is not None and slot == 0:
            text, value = _UNARY[op](u, values, exponent(rec) if op == "power" else None)
        elif op == "multiply" and len(values) == 2 and values[1 - slot] is not None:
            text, value = num(values[1 - slot]), values[1 - slot]
        elif op == "divide" and len(values) == 2 and None not in values:
            a, b = values
            text, value = (
                (f"1/{num(b)}", 1 / b) if slot == 0 else (f"-{num(a)}/{num(b)}²", -a / b**2)
            )
    except (ArithmeticError, ValueError, TypeError):
        text = None
    if text is not None and value is not None and math.isclose(value, local, rel_tol=1e-9):
        return text
    return num(local)
