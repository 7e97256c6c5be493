"""Running an operator's jax program under ``jax.jit``, compiled once and reused.

gradexplorer's operators build a small program for each call (``jax.jacrev`` of
f with the selected arguments as its inputs, say). Compiling it on every call
would cost far more than running it, so :func:`run` keeps the compiled program
per f and per *call signature*: the operator and its options, the shapes and
dtypes of every array argument, the values of every other argument (Python
numbers, strings, flags: they are static, as ``static_argnums`` would make
them), and the objects f reads from its closure and its globals (a method's
or a callable object's attributes too). Arrays among
the other arguments are inputs of the program, never baked into it.

f with Python control flow on array values (``if x[0] > 0``), boolean masks or
other value-dependent shapes cannot be traced by ``jit``; such a call runs
eagerly (jax's transforms work there), and the signature remembers it. As with
``jax.jit`` itself, a numpy array f reads from outside its arguments and changes
in place (or a dict attribute changed inside) is not seen: pass it as an argument.

>>> import jax.numpy as jnp
>>> out, info = run(_call(lambda x: jnp.sin(x) * 2), ("demo",), lambda F, d, e: ([F(*d)], "ok"))
>>> out[0].tolist(), info
([0.0, 1.682...], 'ok')
"""

from __future__ import annotations

import functools
import inspect
import types
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as onp

from ...core.tree import flatten, unflatten

__all__ = ["run", "as_jax", "NOT_TRACEABLE", "is_traced"]

#: What ``jit`` raises on f that needs concrete values (eager jax runs such f).
NOT_TRACEABLE = (
    jax.errors.ConcretizationTypeError,
    jax.errors.NonConcreteBooleanIndexError,
    jax.errors.TracerArrayConversionError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerBoolConversionError,
)

#: Compiled programs kept per f (least recently used dropped first).
PER_FUNCTION = 16


@dataclass
class _Entry:
    fn: Callable | None  # the jitted program, or None: run eagerly
    info: Any = None  # what the body said about its outputs while it was traced
    pins: tuple = ()  # f's closure / global objects: held so that their ids stay theirs


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Hole:
    """Where the i-th differentiated leaf goes in f's arguments."""

    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = i


def is_traced(x: Any) -> bool:
    return isinstance(x, jax.core.Tracer)


def as_jax(x: Any) -> Any:
    """Numbers and numpy arrays as jax arrays (on jax's default device); jax
    arrays and tracers as they are."""
    if isinstance(x, (jax.Array, jax.core.Tracer)):
        return x
    return jnp.asarray(x)


def _is_dynamic(x: Any) -> bool:
    if isinstance(x, (jax.Array, jax.core.Tracer)):
        return True
    return isinstance(x, onp.ndarray) and x.dtype.kind in "biufc"


class _Skeleton:
    """f's arguments with their arrays taken out: the tree and what each leaf is.
    Part of every cache key, so its hash (of nested tree definitions) is taken once."""

    __slots__ = ("tree", "key", "hash")

    def __init__(self, tree: Any, key: tuple, hashed: bool = True):
        self.tree, self.key = tree, key
        self.hash = hash((tree, key)) if hashed else 0

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, _Skeleton)
            and self.hash == other.hash
            and (self.tree, self.key) == (other.tree, other.key)
        )


def _split(call) -> tuple[tuple, list, bool]:
    """``(static key, dynamic arrays, hashable)`` of f's arguments, the
    differentiated leaves left as holes."""
    args, kwargs = call.rebuild_plain([_Hole(i) for i in range(len(call.values))])
    leaves, tree = flatten((args, kwargs))
    key, dynamic = [], []
    for leaf in leaves:
        if isinstance(leaf, _Hole):
            key.append(("hole", leaf.i))
        elif _is_dynamic(leaf):
            key.append(("array",))
            dynamic.append(leaf)
        else:
            sub, subtree = jax.tree_util.tree_flatten(leaf)
            if len(sub) == 1 and sub[0] is leaf:
                key.append(("static", leaf))
            else:  # a registered pytree (a flax / equinox object): open it
                kinds = tuple("array" if _is_dynamic(s) else ("static", s) for s in sub)
                key.append(("pytree", subtree, kinds))
                dynamic.extend(s for s in sub if _is_dynamic(s))
    try:
        return _Skeleton(tree, tuple(key)), dynamic, True
    except TypeError:  # an unhashable static argument
        return _Skeleton(tree, tuple(key), hashed=False), dynamic, False


def _rebuild(f_ref: Callable, skeleton: _Skeleton) -> Callable:
    """``make(dynamic) -> F(*diff_leaves)``: f of its differentiated leaves."""
    tree, key = skeleton.tree, skeleton.key

    def make(dynamic):
        def F(*diff):
            it = iter(dynamic)
            leaves = []
            for k in key:
                if k[0] == "hole":
                    leaves.append(diff[k[1]])
                elif k[0] == "array":
                    leaves.append(next(it))
                elif k[0] == "static":
                    leaves.append(k[1])
                else:
                    sub = [next(it) if s == "array" else s[1] for s in k[2]]
                    leaves.append(jax.tree_util.tree_unflatten(k[1], sub))
            args, kwargs = unflatten(tree, leaves)
            return f_ref()(*args, **kwargs)

        return F

    return make


def _target(f: Callable) -> Any:
    """The object the cache is kept on (a bound method's function)."""
    return getattr(f, "__func__", f)


def _fingerprint(f: Callable) -> tuple:
    """The objects f reads from outside its arguments: its closure cells, the
    globals its code names, a partial's arguments, a bound method's instance and
    a callable object's attributes (``self.W = new`` is a new program; a change
    inside an attribute, ``self.params["W"] = new``, is not seen, as with jit)."""
    if type(f) is types.FunctionType and "__wrapped__" not in f.__dict__:
        return _reads(f, [])  # the common case, without the general search
    objs: list = []
    target = f
    for _ in range(8):
        if isinstance(target, functools.partial):
            objs.extend(target.args)
            objs.extend(target.keywords.values())
            target = target.func
        elif hasattr(target, "__self__") and hasattr(target, "__func__"):
            objs.append(target.__self__)
            objs.extend(_attributes(target.__self__))
            target = target.__func__
        elif not isinstance(target, types.FunctionType) and hasattr(target, "__dict__"):
            objs.extend(_attributes(target))  # a callable object: its __call__ reads them
            call = next(
                (vars(c)["__call__"] for c in type(target).__mro__ if "__call__" in vars(c)), None
            )
            if not isinstance(call, types.FunctionType) or hasattr(target, "__wrapped__"):
                break
            objs.extend(_reads(call, []))
            break
        else:
            break
    target = inspect.unwrap(target) if callable(target) else target
    return _reads(target, objs)


def _attributes(obj: Any) -> tuple:
    """An object's own attributes (its ``__dict__``'s values), for their identities."""
    try:
        return tuple(vars(obj).values())
    except TypeError:  # no __dict__ (slots)
        return ()


def _reads(target: Any, objs: list) -> tuple:
    """``objs`` and the objects a function reads: its closure cells, the globals
    its code names."""
    code = getattr(target, "__code__", None)
    for cell in getattr(target, "__closure__", None) or ():
        try:
            objs.append(cell.cell_contents)
        except ValueError:  # an empty cell
            objs.append(None)
    if code is not None:
        glob = getattr(target, "__globals__", {})
        objs.extend(glob[n] for n in code.co_names if n in glob)
    return tuple(objs)


def _signature(values: list) -> tuple:
    return tuple((tuple(v.shape), v.dtype, bool(getattr(v, "weak_type", False))) for v in values)


def _entries(f: Callable) -> OrderedDict | None:
    target = _target(f)
    try:
        got = _CACHE.get(target)
        if got is None:
            got = _CACHE[target] = OrderedDict()
    except TypeError:  # not weakly referenceable: nothing is kept
        return None
    return got


def run(call: Any, key: tuple, body: Callable, extra: Any = ()) -> tuple[Any, Any]:
    """Run ``body(F, diff, extra) -> (outputs, info)`` on this call, jitted.

    Parameters
    ----------
    call : gradexplorer.core.calls.Call
        f bound to its arguments; ``call.values`` are the differentiated leaves.
    key : tuple
        Everything static the body depends on besides the call (the operator,
        its options), hashable.
    body : callable
        ``body(F, diff, extra)``: ``F(*diff)`` is f of its differentiated leaves;
        returns the arrays to hand back (a pytree of lists / tuples) and ``info``,
        any Python value it learnt while tracing (an output layout, say).
    extra : pytree of arrays
        Further inputs of the program (cotangents, tangents).

    Returns
    -------
    outputs, info
    """
    diff = [as_jax(v) for v in call.values]
    if type(extra) is tuple and not extra:  # (no comparison: extra may be an array)
        extra_leaves, extra_tree = [], None
    else:
        extra_leaves, extra_tree = flatten(extra)
        extra_leaves = [as_jax(v) for v in extra_leaves]
    skeleton, dynamic, hashable = _split_kept(call)

    def eager() -> Any:
        F = _rebuild(_ref(call.f), skeleton)(dynamic)
        return body(F, diff, _extra(extra_tree, extra_leaves))

    entries = _entries(call.f) if hashable else None
    if entries is None:
        return eager()
    pins = _fingerprint(call.f)
    shortcut = _shortcut(call, key, extra_leaves)
    kept = None if shortcut is None else call.memo.get(shortcut, _dead)()
    if kept is not None and _same(kept.pins, pins):
        return kept.fn(diff, dynamic, extra_leaves), kept.info
    full = (key, skeleton, tuple(id(p) for p in pins), _signature(diff + dynamic + extra_leaves))
    entry = entries.get(full)
    if entry is not None and _same(entry.pins, pins):
        entries.move_to_end(full)
        if entry.fn is None:
            return eager()
        if shortcut is not None:
            call.memo[shortcut] = weakref.ref(entry)  # the cache's limit still holds
        return entry.fn(diff, dynamic, extra_leaves), entry.info
    entry = _Entry(None, None, pins)
    make = _rebuild(_ref(call.f), skeleton)

    def program(diff, dynamic, extra_leaves):
        out, entry.info = body(make(dynamic), diff, _extra(extra_tree, extra_leaves))
        return out

    jitted = jax.jit(program)
    try:
        out = jitted(diff, dynamic, extra_leaves)
        entry.fn = jitted
    except NOT_TRACEABLE:  # value-dependent Python: jax's transforms run it eagerly
        out, entry.info = eager()
    entries[full] = entry
    while len(entries) > PER_FUNCTION:
        entries.popitem(last=False)
    return out, entry.info


def _extra(tree: Any, leaves: list) -> Any:
    """The body's further inputs rebuilt (``()`` where there were none)."""
    return () if tree is None else unflatten(tree, leaves)


def _same(held: tuple, pins: tuple) -> bool:
    """The very objects f read when its program was built (identity, not equality)."""
    return len(held) == len(pins) and all(a is b for a, b in zip(held, pins))


def _shortcut(call: Any, key: tuple, extra_leaves: list) -> tuple | None:
    """Where a kept binding's memo holds the program last run for this operator
    (weakly: the program cache's limit per f decides what stays alive). The
    binding fixes f, ``wrt`` and the arrays' shapes and dtypes; where the skeleton
    holds no value either (every leaf not differentiated is a dynamic array, not a
    numpy scalar or a pytree's static field baked into the program), the program is
    found without the full key. f's pins are still compared (and jit itself tells a
    weakly typed input from a strong one)."""
    if call.memo is None or not call.memo.get(_SPLIT):
        return None
    return ("jax program", key, _signature(extra_leaves) if extra_leaves else ())


def _dead() -> None:
    return None


#: the key of :func:`_split_kept`'s plan in a call's memo
_SPLIT = "jax staging: skeleton and free arguments"


def _split_kept(call) -> tuple[tuple, list, bool]:
    """:func:`_split`, read from the call's memo where its binding was kept: there
    every leaf of every argument is an array, so the skeleton is the binding's and
    the dynamic arrays are the leaves of the arguments not differentiated (where
    the first call found every one of them dynamic)."""
    memo = call.memo
    plan = None if memo is None else memo.get(_SPLIT)
    if plan:
        skeleton, free = plan
        return skeleton, _arrays_of(call.args, free), True
    split = _split(call)
    if memo is not None and plan is None:
        skeleton, dynamic, hashable = split
        chosen = {sel.slot for sel in call.selected}
        free = tuple(i for i in range(len(call.args)) if i not in chosen)
        arrays = _arrays_of(call.args, free)
        same = len(dynamic) == len(arrays) and all(a is b for a, b in zip(dynamic, arrays))
        memo[_SPLIT] = (skeleton, free) if hashable and same else False
    return split


def _arrays_of(args: list, free: tuple) -> list:
    """The leaves of the arguments at ``free`` (an array is its own leaf)."""
    out: list = []
    for i in free:
        a = args[i]
        if a is None or isinstance(a, (list, tuple, dict)):
            out.extend(flatten(a)[0])
        else:
            out.append(a)
    return out


def _ref(f: Callable) -> Callable:
    """A weak reference to f where it allows one (so that a kept program does not
    keep f alive), else f itself."""
    try:
        return weakref.WeakMethod(f) if inspect.ismethod(f) else weakref.ref(f)
    except TypeError:
        return lambda: f


def _call(f: Callable, *args: Any):
    """A bound call of f differentiating its first argument (for the doctest)."""
    from ...core.calls import bind_call

    return bind_call(f, args or (jnp.array([0.0, 1.0]),), {}, 0)
