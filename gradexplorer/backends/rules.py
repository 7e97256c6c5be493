"""Hand-written derivative rules as a backend: no AD system, just your rule.

``check_vjp(f, f_vjp, *args)`` and ``check_jvp(f, f_jvp, *args)`` check a rule
written by hand for a plain numpy function, as jax's ``check_vjp`` and Julia's
``test_rrule`` do. The checkers ask this backend for VJPs and JVPs exactly as
they ask autograd, torch or jax; it answers by calling the rule.

Rules follow jax's conventions:

- ``f_vjp(*args) -> (y, pullback)``; ``pullback(y_bar)`` returns one cotangent
  per positional argument (a tuple; a single argument may return it bare),
  each shaped like its argument (nested structures included).
- ``f_jvp(primals, tangents) -> (y, y_dot)``, ``primals`` and ``tangents``
  tuples of the positional arguments (zeros for the ones not differentiated).
- Complex values: a cotangent pairs with a tangent as ``Re(x_bar · dx)``
  (jax's and autograd's convention: the gradient of a real function of z is
  ``∂f/∂x - i ∂f/∂y``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as onp

from ..core.guards import reseeded
from ..core.tree import Leaf, flatten, float_kind, map_leaves, unflatten
from .base import Capabilities, Prepared

__all__ = ["RuleBackend"]


def _values(specs: Sequence[Leaf], leaves: Sequence) -> list:
    out = []
    for s, w in zip(specs, leaves):
        v = s.from_real(onp.asarray(w, dtype=s.real_dtype))
        if s.pytype is not None:
            v = s.pytype(v)
        elif s.shape == ():
            v = onp.asarray(v, dtype=s.dtype)[()]
        out.append(v)
    return out


def _realify_cotangent(spec: Leaf, ct: Any, label: str) -> onp.ndarray:
    a = onp.asarray(ct)
    if a.shape != spec.shape:
        raise ValueError(
            f"the rule's cotangent for {label} has shape {a.shape}; the argument has shape "
            f"{spec.shape}. A cotangent is shaped like its argument."
        )
    if spec.complex:
        a = a.astype(complex)
        return onp.concatenate([a.real.ravel(), -a.imag.ravel()])
    if onp.iscomplexobj(a) and onp.any(a.imag):
        raise TypeError(
            f"the rule's cotangent for the real input {label} is complex; a real input's "
            "cotangent must be real (take the real part of what flows back to it)."
        )
    return onp.asarray(a.real if onp.iscomplexobj(a) else a, dtype=float).ravel()


class _RuleTrace:
    """One call of the VJP rule: the value and its pullback, reusable."""

    def __init__(self, value, pullback, call, layout, y, nargs):
        self.value, self._pullback = value, pullback
        self._call, self._layout, self._y, self._nargs = call, layout, y, nargs
        self.connected = tuple(True for _ in call.specs)

    def backward(self, g: Any) -> list:
        g = onp.asarray(g, dtype=float)
        ct_leaves, k = [], 0
        for leaf, spec in zip(flatten(self._y)[0], self._layout.specs):
            if spec is None:
                ct_leaves.append(onp.zeros_like(onp.asarray(leaf), dtype=float))
                continue
            n = spec.size
            if spec.complex:
                ct = (g[k : k + n] - 1j * g[k + n : k + 2 * n]).reshape(spec.shape)
                k += 2 * n
            else:
                ct = g[k : k + n].reshape(spec.shape)
                k += n
            ct_leaves.append(ct if spec.shape else ct[()])
        cts = self._pullback(unflatten(self._layout.tree, ct_leaves))
        if not isinstance(cts, tuple):
            if self._nargs != 1:
                raise TypeError(
                    f"the pullback returned a {type(cts).__name__}; f takes {self._nargs} "
                    "positional arguments, so it must return a tuple with one cotangent per "
                    "argument (in order), as jax's vjp does."
                )
            cts = (cts,)
        if len(cts) != self._nargs:
            raise TypeError(
                f"the pullback returned {len(cts)} cotangents; f takes {self._nargs} positional "
                "arguments: return one per argument, in order (zeros for the ones that do "
                "not matter)."
            )
        out = []
        for sel in self._call.selected:
            if isinstance(sel.slot, str):
                raise TypeError(
                    f"wrt names the keyword argument {sel.slot!r}; a pullback returns "
                    "cotangents of positional arguments only. Pass it positionally."
                )
            leaves, tree = flatten(cts[sel.slot])
            if tree != sel.tree and not (sel.tree.is_leaf and len(leaves) == 1):
                raise TypeError(
                    f"the cotangent for {sel.name} is {tree.describe()}; the argument is "
                    f"{sel.tree.describe()}. A cotangent has its argument's structure."
                )
            for ct, spec in zip(leaves, sel.specs):
                if spec is not None:
                    out.append(_realify_cotangent(spec, ct, spec.name))
        return out


def _callable_as(rule: Callable, name: str, expected: str, args: Sequence, kwargs: dict) -> None:
    """A TypeError naming the calling convention when ``rule`` cannot take these
    arguments (a rule written for another convention), before it runs."""
    import inspect

    try:
        sig = inspect.signature(rule)
    except (TypeError, ValueError):  # a builtin or C function: let the call speak
        return
    try:
        sig.bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(
            f"{name} is called as {expected} (jax's convention), with f's "
            f"{len(args)} positional argument(s) here; yours has the signature "
            f"{name}{sig} and cannot take them ({exc}). A VJP rule is "
            "f_vjp = lambda x: (f(x), lambda g: (g * df(x),)); a JVP rule is "
            "f_jvp = lambda primals, tangents: (f(*primals), df(*primals) * tangents[0])."
        ) from None


class RuleBackend:
    """The seam's reverse and forward mode, answered by hand-written rules."""

    name = "rules"
    np = onp
    capabilities = Capabilities(numpy_arrays=True)
    #: the backend whose arrays the rules take (torch, jax), or None for numpy
    arrays: Any = None

    def __init__(
        self,
        vjp_rule: Callable | None = None,
        jvp_rule: Callable | None = None,
        arrays: Any = None,
    ):
        self.vjp_rule, self.jvp_rule = vjp_rule, jvp_rule
        if arrays is not None:
            # rules written on a framework's arrays (torch tensors, jax arrays): they
            # get and return its arrays, on the inputs' device; f is evaluated there
            self.arrays = arrays
            self.np = arrays.np
            self.capabilities = Capabilities(devices=arrays.capabilities.devices)
            for name in ("owns", "to_array", "to_numpy", "float_kind", "device_kit"):
                setattr(self, name, getattr(arrays, name))

    def _framework(self, value: Any, like: Any) -> Any:
        """A numpy leaf as the rule's arrays, on ``like``'s device (numpy rules: as is)."""
        return value if self.arrays is None else self.arrays.to_array(value, like=like)

    def _zeros_like(self, x: Any) -> Any:
        """A zero tangent for a float leaf held constant: the rule's own arrays, on
        the leaf's device (numpy's zeros refuse a CUDA tensor)."""
        if self.arrays is None or not self.arrays.owns(x):
            return onp.zeros_like(x)
        return self.arrays.np.zeros_like(x)

    def _host(self, tree: Any) -> Any:
        """The leaves of what a rule returned, as numpy."""
        return tree if self.arrays is None else map_leaves(self.arrays.to_numpy, tree)

    # ------------------------------------------------------------ arrays

    @staticmethod
    def owns(x: Any) -> bool:
        return False

    @staticmethod
    def to_array(a: Any, like: Any = None) -> Any:
        return a

    @staticmethod
    def to_numpy(x: Any) -> Any:
        return x

    @staticmethod
    def value(x: Any) -> Any:
        return x

    @staticmethod
    def is_traced(x: Any) -> bool:
        return False

    @staticmethod
    def container(kind, children, keys, cls) -> Any:
        return None

    float_kind = staticmethod(float_kind)

    @staticmethod
    def prepare(f, args, kwargs, wrt, precision) -> Prepared:
        return Prepared(f, tuple(args), dict(kwargs), wrt)

    @staticmethod
    def session(precision: Any = None):
        return contextlib.nullcontext()

    # ------------------------------------------------------------ derivatives

    def _point(self, F, leaves):
        call = F.call
        values = _values(call.specs, [self.to_numpy(w) for w in leaves])
        values = [self._framework(v, like) for v, like in zip(values, call.values)]
        args, kwargs = call.rebuild_plain(values)
        reseeded(F.reseed)
        return call, args, kwargs

    def vjp(self, F: Callable, leaves: Sequence) -> Any:
        """The VJP rule at the leaves (``F`` carries the call and output layout).
        With only a JVP rule, its Jacobian, built column by column, answers."""
        if self.vjp_rule is None:
            return self._vjp_from_columns(F, leaves)
        call, args, kwargs = self._point(F, leaves)
        _callable_as(self.vjp_rule, "f_vjp", "f_vjp(*args) -> (y, pullback)", args, kwargs)
        got = self.vjp_rule(*args, **kwargs)
        if not (isinstance(got, tuple) and len(got) == 2 and callable(got[1])):
            raise TypeError(
                "f_vjp must return (y, pullback), pullback a function of the output's "
                f"cotangent (as jax.vjp returns); it returned {type(got).__name__}."
            )
        y, pullback = got
        y = self._host(y)
        F.layout.check(y, " in the rule's output")
        value = onp.asarray(F.layout.realify(y), dtype=float)
        if self.arrays is not None:
            pullback = self._pullback_on_arrays(pullback, args)
        return _RuleTrace(value, pullback, call, F.layout, y, len(args))

    def _pullback_on_arrays(self, pullback: Callable, args: Sequence) -> Callable:
        """The rule's pullback fed the framework's arrays (on the device of f's
        first array argument), its cotangents returned as numpy."""
        like = next((a for leaf in args for a in flatten(leaf)[0] if self.owns(a)), None)

        def run(ct):
            return self._host(pullback(map_leaves(lambda c: self._framework(c, like), ct)))

        return run

    def jvp(self, F: Callable, leaves: Sequence, tangents: Sequence, fallback: bool = False):
        """``(value, J·t, [])`` from the JVP rule."""
        if self.jvp_rule is None:
            raise NotImplementedError("no JVP rule was given (gx.check_jvp checks one)")
        call, args, kwargs = self._point(F, leaves)
        tangent_leaves = _values(
            call.specs, [onp.asarray(self.to_numpy(t), float) for t in tangents]
        )
        tangent_leaves = [self._framework(t, like) for t, like in zip(tangent_leaves, call.values)]
        targs = _tangent_args(call, args, tangent_leaves, self._zeros_like)
        _callable_as(
            self.jvp_rule,
            "f_jvp",
            "f_jvp(primals, tangents) -> (y, y_dot), primals and tangents tuples",
            (tuple(args), tuple(targs)),
            kwargs,
        )
        got = self.jvp_rule(tuple(args), tuple(targs), **kwargs)
        if not (isinstance(got, tuple) and len(got) == 2):
            raise TypeError(
                "f_jvp must return (y, y_dot), as a jax custom_jvp rule does; it returned "
                f"{type(got).__name__}."
            )
        y, y_dot = self._host(got[0]), self._host(got[1])
        F.layout.check(y, " in the rule's output")
        F.layout.check(y_dot, " in the rule's tangent")
        value = onp.asarray(F.layout.realify(y), dtype=float)
        return value, onp.asarray(F.layout.realify(y_dot)), []

    def _vjp_from_columns(self, F, leaves):
        sizes = [onp.size(self.to_numpy(v)) for v in leaves]
        n = sum(sizes)
        columns, value = [], None
        for j in range(n):
            basis = onp.zeros(n)
            basis[j] = 1.0
            split, start = [], 0
            for s in sizes:
                split.append(basis[start : start + s])
                start += s
            value, col, _ = self.jvp(F, leaves, split)
            columns.append(onp.asarray(col, dtype=complex))
        J = onp.array(columns).T if columns else onp.zeros((0, 0))
        if onp.any(J.imag):
            raise TypeError(
                "the JVP rule gave a complex tangent for a real output; a real output's "
                "tangent must be real."
            )
        return _ColumnsTrace(onp.asarray(value, dtype=float), J.real, sizes)

    # ------------------------------------------------------------ locate: not for rules

    def record(self, F, leaves):
        raise NotImplementedError("locate traces an AD system; a hand-written rule has no trace")

    op_vjp = op_jvp = op_eval = op_function = record

    @staticmethod
    def definition_site(rec) -> None:
        return None


class _ColumnsTrace:
    def __init__(self, value, J, sizes):
        self.value, self._J, self._sizes = value, J, sizes
        self.connected = tuple(True for _ in sizes)

    def backward(self, g):
        flat = onp.asarray(g, dtype=float) @ self._J
        out, start = [], 0
        for s in self._sizes:
            out.append(flat[start : start + s])
            start += s
        return out


def _tangent_args(call, args, tangent_leaves, zeros_like=onp.zeros_like) -> list:
    """Tangents shaped like every positional argument: the given ones for the
    differentiated leaves, zeros (``zeros_like``: on the leaf's own device) for
    other float leaves, None elsewhere."""

    def zero(x):
        return zeros_like(x) if float_kind(x) in ("real", "complex") else None

    targs = [unflatten(flatten(a)[1], [zero(x) for x in flatten(a)[0]]) for a in args]
    it = iter(tangent_leaves)
    for sel in call.selected:
        if isinstance(sel.slot, str):
            raise TypeError(
                f"wrt names the keyword argument {sel.slot!r}; JVP rules take tangents of "
                "positional arguments only. Pass it positionally."
            )
        leaves = [next(it) if s is not None else zero(v) for v, s in zip(sel.values, sel.specs)]
        targs[sel.slot] = unflatten(sel.tree, leaves)
    return targs
