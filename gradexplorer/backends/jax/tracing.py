"""Reverse and forward mode through jax, for the checkers.

Forward mode stops at a ``custom_vjp`` function (jax gives it no JVP); with
``fallback`` the tangent then comes from differentiating the backward pass
(the VJP is linear in its cotangent, so J·t is the gradient of
``u -> <VJP(u), t>``), and the custom rules are named.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["VJPTrace", "trace_vjp", "trace_jvp"]


class VJPTrace:
    """A recorded forward pass: its value and a reusable backward pass."""

    def __init__(self, F: Callable, leaves: Sequence):
        self.leaves = list(leaves)
        self.value, self._pullback = jax.vjp(F, *self.leaves)
        self._stackable = True

    def backward(self, g: Any) -> list:
        g = jnp.asarray(g, dtype=jnp.result_type(self.value))
        return list(self._pullback(g))

    def backward_rows(self, G: Any) -> list:
        """The cotangents of a stack of output cotangents (rows of G), one
        array per leaf with the rows leading: the pullback mapped over the stack
        (``jax.vmap``, as ``jax.jacrev`` does: one pass, not one per row). A
        pullback that cannot be mapped (a custom rule with Python control flow
        on values) runs once per row, as before."""
        G = jnp.asarray(G, dtype=jnp.result_type(self.value))
        if self._stackable:
            try:
                return list(jax.vmap(self._pullback)(G))
            except Exception:  # not mappable: row by row (its own errors raise there)
                self._stackable = False
        rows = [self._pullback(g) for g in G]
        return [jnp.stack([r[k] for r in rows]) for k in range(len(self.leaves))]

    @property
    def connected(self) -> tuple[bool, ...]:
        return tuple(True for _ in self.leaves)  # jax gives zeros; it does not say


def trace_vjp(F: Callable, leaves: Sequence) -> VJPTrace:
    return VJPTrace(F, leaves)


def _like(t: Any, x: Any) -> Any:
    return jnp.asarray(t, dtype=jnp.result_type(x))


def _custom_vjp_names(F: Callable, leaves: Sequence) -> list[str]:
    from .recording import custom_rule_names

    try:
        return custom_rule_names(F, leaves, "custom_vjp_call") or ["a custom_vjp function"]
    except Exception:
        return ["a custom_vjp function"]


def _via_backward(F, leaves, tangents):
    value, pullback = jax.vjp(F, *leaves)

    def pairing(u):
        return sum(jnp.sum(jnp.real(g * t)) for g, t in zip(pullback(u), tangents))

    return value, jax.grad(pairing)(jnp.zeros_like(value))


def trace_jvp(
    F: Callable, leaves: Sequence, tangents: Sequence, *, fallback: bool = False
) -> tuple[Any, Any, list[str]]:
    """``(F(*leaves), J @ tangents, custom rules without a forward rule)``."""
    tangents = [_like(t, x) for t, x in zip(tangents, leaves)]
    try:
        value, tangent = jax.jvp(F, tuple(leaves), tuple(tangents))
        return value, tangent, []
    except TypeError as exc:
        if "custom_vjp" not in str(exc):
            raise
    names = _custom_vjp_names(F, leaves)
    if not fallback:
        raise NotImplementedError(
            f"forward mode cannot run: {', '.join(names)} is a custom_vjp function (no JVP rule)"
        )
    try:
        value, tangent = _via_backward(F, leaves, tangents)
    except Exception as exc:
        raise NotImplementedError(
            f"{', '.join(names)} has no JVP rule and its backward pass cannot be "
            f"differentiated to derive one ({type(exc).__name__})"
        ) from None
    return value, tangent, names
