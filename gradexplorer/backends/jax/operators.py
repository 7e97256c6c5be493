"""gradexplorer's operators on jax functions, through jax's own AD.

``gx.grad``, ``gx.jacobian``, ``gx.hessian``, ``gx.hvp``, ``gx.Lop``, ``gx.Rop``
... on a function of jax arrays come here (``gradexplorer.ad`` keeps the
conventions: ``wrt``, structures, layout, complex blocks, disconnected inputs).
Each is ``jax.vjp`` / ``jax.jacfwd`` / ``jax.hessian`` / ``jax.jvp`` of f, run
under ``jax.jit`` and compiled once per f and call signature
(:mod:`.staging`); f that ``jit`` cannot trace (Python control flow on array
values) runs eagerly. Results are jax arrays on the inputs' device.

Complex inputs: jax's gradient of a real ``L(z)`` is ``dL/dRe z - i dL/dIm z``,
gradexplorer's (and autograd's) convention, returned as it is; torch returns
the conjugate.

>>> import jax.numpy as jnp
>>> from gradexplorer.core.calls import bind_call
>>> call = bind_call(lambda x: jnp.sum(x**2), (jnp.array([1.0, 2.0]),), {}, 0)
>>> value, grads, connected, finite = value_and_grad(call, lambda y, s, e: y, (), None)
>>> float(value), grads[0].tolist(), connected, finite
(5.0, [2.0, 4.0], (True,), True)
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as onp
from jax.extend.core import Literal

from ...core.outputs import check_jacobian_size, output_layout
from ...core.tree import flatten, unflatten
from .staging import NOT_TRACEABLE, as_jax, run

__all__ = [
    "value_and_grad", "jacobian", "hessian", "hvp", "jvp", "hstack", "to_numpy_host", "all_finite",
]  # fmt: skip


# ---------------------------------------------------------------- helpers


def _outputs(y: Any) -> tuple[Any, list, Any]:
    """``(layout, leaves, tree)`` of f's output, its numbers as jax arrays."""
    layout = output_layout(y)
    leaves, tree = flatten(y)
    return layout, [as_jax(v) for v in leaves], tree


def _to_real(spec, x: Any) -> Any:
    if spec.complex:
        return jnp.concatenate([jnp.ravel(jnp.real(x)), jnp.ravel(jnp.imag(x))])
    return jnp.ravel(x)


def _realified(F: Callable, specs: Sequence, box: dict) -> Callable:
    """F of one real vector per leaf, returning one real vector and (aux) the
    output's leaves; the output layout goes to ``box``."""

    def Freal(*vs):
        leaves = [s.from_real(v, np=jnp) for s, v in zip(specs, vs)]
        layout, ys, tree = _outputs(F(*leaves))
        box["layout"], box["tree"] = layout, tree
        return jnp.ravel(layout.realify(unflatten(tree, ys), np=jnp)), ys

    return Freal


def _finite(ys: Sequence) -> Any:
    """One flag: every float output entry is finite (computed in the program, so
    that one boolean crosses to the host, not the outputs)."""
    flags = [jnp.all(jnp.isfinite(y)) for y in ys if jnp.issubdtype(y.dtype, jnp.inexact)]
    return jnp.all(jnp.stack(flags)) if flags else jnp.asarray(True)


def _read(flag: Any) -> bool | None:
    """The flag's value, or None inside another transform (not known yet)."""
    return None if isinstance(flag, jax.core.Tracer) else bool(onp.asarray(flag))


def _connected(pullback: Callable, ct: Any) -> tuple[bool, ...]:
    """Which inputs the output depends on: the pullback's cotangents that the
    output cotangent reaches through float operations (not ``stop_gradient``)."""
    closed = jax.make_jaxpr(pullback)(ct)
    jaxpr = closed.jaxpr
    reached = set(jaxpr.invars)

    def hit(v):
        return not isinstance(v, Literal) and v in reached

    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "stop_gradient" or not any(hit(v) for v in eqn.invars):
            continue
        for out in eqn.outvars:
            if jnp.issubdtype(out.aval.dtype, jnp.inexact):
                reached.add(out)
    return tuple(hit(v) for v in jaxpr.outvars)


def _scalar_fn(F, scalarize, static, extra, slots=None, base=None, box=None):
    """``L(*xs) -> (s, output leaves)``: the real scalar ``scalarize`` makes of
    f's output; ``slots`` places xs among the other leaves ``base`` (all leaves
    when None); the output's structure goes to ``box``."""

    def L(*xs):
        leaves = list(xs) if slots is None else _placed(base, slots, xs)
        _, ys, tree = _outputs(F(*leaves))
        if box is not None:
            box["tree"] = tree
        return jnp.asarray(scalarize(unflatten(tree, ys), static, extra)), ys

    return L


def _placed(base, slots, xs):
    full = list(base)
    for i, x in zip(slots, xs):
        full[i] = x
    return full


class _explained:
    """jax's errors for things the user can change, said in words (a class, not
    ``contextlib.contextmanager``: it is entered on every operator call)."""

    __slots__ = ("what",)

    def __init__(self, what: str):
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        what = self.what
        if kind is not None and issubclass(kind, jax.errors.TracerArrayConversionError):
            raise TypeError(
                f"{what}: f converts a jax array to numpy (np.asarray, np.* functions, "
                "x.tolist(), .item()) while jax differentiates it; jax can only follow "
                "jax.numpy code. Write f with jax.numpy (jnp) throughout."
            ) from None
        if kind is not None and issubclass(kind, NOT_TRACEABLE):
            raise TypeError(
                f"{what}: f turns an array jax is differentiating into a Python value "
                f"(float(x), int(x), x.item(), a shape taken from values: {kind.__name__}); "
                "jax's transforms see no number there. Keep it an array (x[0] rather than "
                "float(x[0])); for a branch on values use jnp.where or jax.lax.cond."
            ) from None


# ---------------------------------------------------------------- reverse mode


def value_and_grad(
    call: Any, scalarize: Callable, static: Any, extra: Any
) -> tuple[Any, list, tuple[bool, ...], bool | None]:
    """f's value, the gradient of ``scalarize(y, static, extra)`` per
    differentiated leaf, whether that scalar depends on each leaf, and whether
    the value is finite (None: not known here).

    ``scalarize`` must return a real scalar; it runs while f is traced (its
    checks see shapes and dtypes). ``static`` (hashable) keys the compiled
    program beside the call; ``extra`` holds the arrays scalarize weighs with.
    """

    def body(F, diff, extra):
        box: dict = {}
        L = _scalar_fn(F, scalarize, static, extra, box=box)
        s, pullback, ys = jax.vjp(L, *diff, has_aux=True)
        ct = jnp.ones_like(s)
        out = (ys, list(pullback(ct)), _finite(ys))
        return out, (box["tree"], _connected(pullback, ct))

    with _explained(f"gx.{static[0]}" if static else "gx.grad"):
        (ys, grads, ok), (tree, connected) = run(call, ("vjp", scalarize, static), body, extra)
    return unflatten(tree, ys), grads, connected, _read(ok)


# ---------------------------------------------------------------- Jacobians


def jacobian(call: Any, mode: str) -> tuple[Any, Any, list, bool | None]:
    """``(layout, value, mats, finite)``: the real Jacobian of the realified f,
    one 2-D ``(layout.real_size, spec.real_size)`` matrix per differentiated
    leaf, and whether f's value is finite (the value itself only when it is
    not, else None).

    ``mode`` "rev" is ``jax.vjp`` and the pullback vmapped over the output's
    basis (``jax.jacrev``); "fwd" is ``jax.jacfwd``; "auto" picks forward mode
    when the inputs are fewer than the outputs, and falls back to reverse mode
    for a ``custom_vjp`` function (no forward rule).
    """
    specs = call.specs

    def body_for(forward_ok: bool) -> Callable:
        def body(F, diff, extra):
            n_in = sum(s.real_size for s in specs)
            box: dict = {}
            Freal = _realified(F, specs, box)
            vs = [_to_real(s, x) for s, x in zip(specs, diff)]
            r, pullback, ys = jax.vjp(Freal, *vs, has_aux=True)
            m = r.size
            check_jacobian_size(m, n_in, jnp.dtype(r.dtype).itemsize)
            if forward_ok and (mode == "fwd" or (mode == "auto" and n_in < m)):
                argnums = tuple(range(len(vs)))
                mats, ys = jax.jacfwd(Freal, argnums=argnums, has_aux=True)(*vs)
            else:
                mats = jax.vmap(pullback)(jnp.eye(m, dtype=r.dtype))
            return (list(mats), _finite(ys)), (box["layout"], box["tree"])

        return body

    def backward_only():
        if mode == "fwd":
            raise NotImplementedError(
                "forward mode cannot run: f calls a jax.custom_vjp function, which has no "
                "forward (JVP) rule. Use mode='rev', or mode='auto', which falls back to "
                "reverse mode."
            )
        return run(call, ("jacobian", "rev"), body_for(False))

    with _explained("gx.jacobian"):
        (mats, ok), (layout, tree) = _forward_or(
            call, lambda: run(call, ("jacobian", mode), body_for(True)), backward_only
        )
    finite = _read(ok)
    # f's value only when it is not finite (to name the entries): not returned, not kept
    return layout, (None if finite is not False else call(*call.values)), mats, finite


#: functions that call a ``custom_vjp`` (no forward rule): forward mode is not tried again
_BACKWARD_ONLY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _forward_or(call: Any, forward: Callable, backward: Callable) -> Any:
    """``forward()``, else (f calls a ``custom_vjp`` function, which jax gives no
    forward rule; under ``jit`` it says so only when the program is built)
    ``backward()``, remembered for f."""
    try:
        known = _BACKWARD_ONLY.get(call.f, False)
    except TypeError:
        known = False
    if not known:
        try:
            return forward()
        except TypeError as exc:
            if "custom_vjp" not in str(exc):
                raise
        with contextlib.suppress(TypeError):
            _BACKWARD_ONLY[call.f] = True
    return backward()


def hessian(call: Any, groups: Sequence, scalarize: Callable, static: Any) -> list:
    """Per group of leaf indices (one selected argument), the blocks ``H[i][j]``
    shaped ``leaf_i.shape + leaf_j.shape`` of the Hessian of the real scalar
    ``scalarize`` makes of f (``jax.hessian``: forward over reverse)."""
    groups = tuple(tuple(g) for g in groups)

    def body(F, diff, extra):
        out = []
        for group in groups:
            L = _scalar_fn(F, scalarize, static, None, group, diff)
            H = jax.hessian(lambda *xs, L=L: L(*xs)[0], argnums=tuple(range(len(group))))
            out.append([list(row) for row in H(*[diff[i] for i in group])])
        return out, None

    with _explained("gx.hessian"):
        blocks, _ = run(call, ("hessian", groups, scalarize, static), body)
    return blocks


def hvp(call: Any, scalarize: Callable, static: Any, tangents: Sequence) -> list:
    """``H v`` per differentiated leaf, forward over reverse (``jax.jvp`` of
    ``jax.grad``), without forming H; reverse over reverse for a ``custom_vjp``
    whose backward pass has no forward rule."""

    def body(F, diff, tangents):
        L = _scalar_fn(F, scalarize, static, None)
        argnums = tuple(range(len(diff)))

        def g(*xs):
            return jax.grad(lambda *a: L(*a)[0], argnums=argnums)(*xs)

        try:
            return list(jax.jvp(g, tuple(diff), tuple(tangents))[1]), None
        except TypeError as exc:
            if "custom_vjp" not in str(exc):
                raise

        def pairing(*xs):
            return sum(jnp.sum(jnp.real(a * t)) for a, t in zip(g(*xs), tangents))

        return list(jax.grad(pairing, argnums=argnums)(*diff)), None

    tangents = [jnp.asarray(t, dtype=jnp.result_type(x)) for t, x in zip(tangents, call.values)]
    with _explained("gx.hvp"):
        out, _ = run(call, ("hvp", scalarize, static), body, tangents)
    return out


def jvp(call: Any, tangents: Sequence) -> tuple[Any, Any, Any]:
    """``(layout, value, t)``: f's value and ``J v`` of the realified f as one
    real vector (``jax.jvp``; for a ``custom_vjp`` function the tangent comes
    from differentiating its backward pass)."""
    specs = call.specs

    def body_for(forward_ok: bool) -> Callable:
        def body(F, diff, tangents):
            box: dict = {}
            Freal = _realified(F, specs, box)
            vs = [_to_real(s, x) for s, x in zip(specs, diff)]
            ts = [_to_real(s, t).astype(v.dtype) for s, t, v in zip(specs, tangents, vs)]
            if forward_ok:
                _, t, ys = jax.jvp(Freal, tuple(vs), tuple(ts), has_aux=True)
            else:
                r, pullback, ys = jax.vjp(Freal, *vs, has_aux=True)

                def pairing(u):  # J t is the gradient of u -> <VJP(u), t>
                    return sum(jnp.sum(g * t) for g, t in zip(pullback(u), ts))

                t = jax.grad(pairing)(jnp.zeros_like(r))
            return (ys, t), (box["layout"], box["tree"])

        return body

    tangents = list(tangents)
    with _explained("gx.Rop"):
        (ys, t), (layout, tree) = _forward_or(
            call,
            lambda: run(call, ("jvp",), body_for(True), tangents),
            lambda: run(call, ("jvp", "backward"), body_for(False), tangents),
        )
    return layout, unflatten(tree, ys), t


# ---------------------------------------------------------------- arrays


def hstack(mats: Sequence) -> Any:
    """2-D matrices side by side (a real Jacobian's column blocks)."""
    return jnp.concatenate(list(mats), axis=1)


def to_numpy_host(x: Any) -> onp.ndarray:
    """A jax array as numpy on the host (for result objects and messages)."""
    return onp.asarray(x)


def all_finite(x: Any) -> bool:
    """Whether an array holds no NaN or Inf (True for a traced one, whose values
    are not known yet)."""
    if isinstance(x, jax.core.Tracer):
        return True
    return bool(jnp.all(jnp.isfinite(x)))
