"""What check_grads(..., compiled=...) costs on a small torch function, one run.

    python bench/compiled.py

Each configuration runs in a fresh Python process (dynamo's in-memory caches
would otherwise make every run after the first free): the eager check alone,
then with ``compiled="aot_eager"``, then ``compiled=True`` (inductor) with its
on-disk cache as it is and with an empty one (``TORCHINDUCTOR_CACHE_DIR`` in a
new folder: what a fresh CI machine pays). Prints a table of wall times: the
whole check, and the compile-and-first-passes share (``report.compiled.seconds``).
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import table  # noqa: E402

ROOT = Path(__file__).parents[1]

RUN = """
import json, time, torch
import gradexplorer as gx
torch.manual_seed(0)
W1 = torch.randn(16, 8, dtype=torch.float64)
W2 = torch.randn(4, 16, dtype=torch.float64)
def mlp(x):
    return W2 @ torch.tanh(W1 @ x)
x = torch.linspace(-1, 1, 8, dtype=torch.float64)
t0 = time.perf_counter()
r = gx.check_grads(mlp, x, compiled={compiled!r})
total = time.perf_counter() - t0
c = r.compiled
print(json.dumps(dict(total=total, passed=r.passed, compile=c.seconds if c else 0.0,
                      backend=c.backend if c else "eager")))
"""


def _run(compiled, env=None) -> dict:
    code = RUN.format(compiled=compiled)
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as empty:
        for label, compiled, env in [
            ("eager only", False, None),
            ('compiled="aot_eager"', "aot_eager", None),
            ("compiled=True, inductor cache warm", True, None),
            ("compiled=True, inductor cache empty", True, {"TORCHINDUCTOR_CACHE_DIR": empty}),
        ]:
            r = _run(compiled, env)
            rows.append(
                (label, r["backend"], f"{r['total']:.1f} s", f"{r['compile']:.1f} s", r["passed"])
            )
    print("check_grads of a 4 x 8 two-layer tanh network (torch, float64), fresh process each")
    heads = ("configuration", "backend", "whole check", "compile + first passes", "passed")
    print(table(rows, heads))


if __name__ == "__main__":
    main()
