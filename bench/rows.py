"""A Jacobian's rows on autograd: a block at a time through the graph against one
backward pass per row (the anchor), in one run.

    python bench/rows.py

``VJPTrace.backward_rows`` (gradexplorer/backends/autograd/batched.py) against the
same trace's ``backward`` called once per row, on unit cotangents, alternating, and
the largest difference between the two. Target: no case slower than the anchor by
more than ~1.05x from 48 rows on (fewer rows always go one by one).
"""

import sys
from pathlib import Path

import autograd.numpy as anp
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _util import best_time, table  # noqa: E402

from gradexplorer.backends.autograd.batched import _row_by_row  # noqa: E402
from gradexplorer.backends.autograd.tracing import trace_vjp  # noqa: E402

rng = np.random.default_rng(0)


def _mlp(n, depth=4):
    Ws = [rng.standard_normal((n, n)) / np.sqrt(n) for _ in range(depth)]

    def f(x):
        for W in Ws:
            x = anp.tanh(W @ x)
        return x

    return f


def _elementwise(n):
    return lambda x: anp.exp(anp.sin(x)) * x + x / (2.0 + x**2)


def _indexing(n):
    return lambda x: anp.concatenate([x[1:], x[:1]]) * 2.0 - anp.exp(x[::-1])


B = rng.standard_normal((1024, 1024)) / 32
CASES = {
    "tanh(B @ x), 1024 -> 1024 (the explorer's)": (lambda x: anp.tanh(B @ x), 1024),
    "4-layer tanh MLP, 256": (_mlp(256), 256),
    "4-layer tanh MLP, 48": (_mlp(48), 48),
    "elementwise, 1000": (_elementwise(1000), 1000),
    "elementwise, 48": (_elementwise(48), 48),
    "indexing (row by row), 256": (_indexing(256), 256),
}


def _times(tr, units) -> tuple[float, float]:
    """Best seconds for one pass per row and for the rows together, alternating."""
    one, together = float("inf"), float("inf")
    for _ in range(2):
        one = min(one, best_time(lambda: _row_by_row(tr, units), repeat=3))
        together = min(together, best_time(lambda: tr.backward_rows(units), repeat=3))
    return one, together


def main() -> None:
    rows = []
    for name, (f, n) in CASES.items():
        tr = trace_vjp(f, [rng.standard_normal(n)])
        m = np.size(tr.value)
        units = np.eye(m).reshape((m,) + np.shape(tr.value))
        together, one_by_one = tr.backward_rows(units)[0], _row_by_row(tr, units)[0]
        diff = np.max(np.abs(together - one_by_one)) / np.max(np.abs(one_by_one))
        t_one, t_together = _times(tr, units)
        rows.append(
            (
                name,
                f"{t_one * 1e3:.2f} ms",
                f"{t_together * 1e3:.2f} ms",
                f"{t_one / t_together:.2f}x",
                f"{diff:.1e}",
            )
        )
    headers = ["case", "one pass per row", "rows together", "speed-up", "max diff / max |J|"]
    print(table(rows, headers))


if __name__ == "__main__":
    main()
