"""jax functions with custom rules, right and subtly wrong, for the tests.

Lines that call a wrong rule carry ``# CALL:<name>`` (tests find them there).
"""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def scale_row(y):
    return y


def _scale_row_fwd(y):
    return y, None


def _scale_row_bwd(_, g):
    g = jnp.asarray(g)
    return (g.reshape(-1).at[0].multiply(1.001).reshape(g.shape),)


scale_row.defvjp(_scale_row_fwd, _scale_row_bwd)


@jax.custom_vjp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


def _softplus_fwd(x):
    return softplus(x), x


def _softplus_bwd(x, g):
    return (g * jax.nn.sigmoid(x),)


softplus.defvjp(_softplus_fwd, _softplus_bwd)


@jax.custom_vjp
def softplus_wrong(x):
    return jnp.logaddexp(x, 0.0)


def _softplus_wrong_bwd(x, g):
    return (g * jax.nn.sigmoid(x) * 1.0001,)  # 1e-4 too big


softplus_wrong.defvjp(lambda x: (softplus_wrong(x), x), _softplus_wrong_bwd)


@jax.custom_jvp
def tanh_wrong_jvp(x):
    return jnp.tanh(x)


@tanh_wrong_jvp.defjvp
def _tanh_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    y = jnp.tanh(x)
    return y, (1 + y**2) * dx  # should be 1 - y**2


@jax.jit
def layer(W, x):
    return W @ x


def uses_wrong_vjp(x, W):
    return jnp.sum(jnp.tanh(layer(W, softplus_wrong(x))))  # CALL:softplus_wrong


def uses_wrong_jvp(x):
    return 2.0 * tanh_wrong_jvp(x)  # CALL:tanh_wrong_jvp


def mlp(params, x):
    h = jnp.tanh(params["W1"] @ x + params["b1"])
    return jnp.sum((params["W2"] @ h) ** 2)
