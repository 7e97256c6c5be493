"""Programs jax compiles in a check, on the accelerator's path, measured on the CPU.

    python bench/jax_compiles.py [--n-fast 100000]

On a GPU every eager jax operation compiles once per shape (~0.1-0.3 s each on an
H200), so the first check of a session costs about (programs x that) on top of
its arithmetic: the H200 runs took 23.5 s for a first fast check at 10^6 and ran
past 45 s in ``check_precision``. Here jax runs on the CPU with the accelerator's
path forced (samples reduced with jax.numpy, ``device_arithmetic=True``), and
``jax_log_compiles`` counts the programs of a first and a second call. The counts
do not depend on the machine; the times are this CPU's.
"""

from __future__ import annotations

import argparse
import logging
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import gradexplorer as gx  # noqa: E402
from gradexplorer.backends.jax import device  # noqa: E402


class _Counter(logging.Handler):
    def __init__(self):
        super().__init__()
        self.count = 0

    def emit(self, record):
        if record.getMessage().startswith("Compiling"):
            self.count += 1


def _forced_accelerator() -> None:
    plain = device.Kit.__init__

    def forced(self, jax_device, device_arithmetic=None):
        plain(self, jax_device, True)

    device.Kit.__init__ = forced


def _layer(n: int, dtype):
    rng = np.random.default_rng(0)
    M = jnp.asarray(rng.standard_normal((n, n)) / np.sqrt(n), dtype=dtype)
    u = jnp.asarray(rng.standard_normal(n), dtype=dtype)
    return (lambda v: jnp.tanh(M @ v)), u


def _wrong_rule(n: int):
    @jax.custom_vjp
    def g(v):
        return jnp.sin(v) * v

    def g_fwd(v):
        return g(v), v

    def g_bwd(v, ct):
        d = jnp.cos(v) * v + jnp.sin(v)
        return (ct * d.at[n // 3].multiply(1.01),)

    g.defvjp(g_fwd, g_bwd)
    return g, jnp.asarray(np.random.default_rng(1).standard_normal(n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-fast", type=int, default=100_000)
    args = parser.parse_args()
    _forced_accelerator()
    counter = _Counter()
    jax.config.update("jax_log_compiles", True)
    for name in ("jax", "jax._src.dispatch", "jax._src.interpreters.pxla"):
        log = logging.getLogger(name)
        log.addHandler(counter)
        log.setLevel(logging.DEBUG)
        log.propagate = False
    f64, u64 = _layer(300, jnp.float64)
    f32, u32 = _layer(300, jnp.float32)
    g, v = _wrong_rule(args.n_fast)
    cases = [
        ("full check, tanh(M @ u), n = 300", lambda: gx.check_grads(f64, u64)),
        ("check_precision, float32 layer, n = 300", lambda: gx.check_precision(f32, u32)),
        (
            f"fast check, n = {args.n_fast:,}, one wrong entry",
            lambda: gx.check_grads(g, v, mode="fast"),
        ),
    ]
    print("| case | call | programs compiled | time (this CPU) | outcome |")
    print("|---|---|---|---|---|")
    for label, run in cases:
        for call in ("first", "second"):
            counter.count = 0
            started = time.perf_counter()
            report = run()
            spent = time.perf_counter() - started
            print(
                f"| {label} | {call} | {counter.count} | {spent:.2f} s | {report.outcome.value} |"
            )


if __name__ == "__main__":
    main()
