"""Verdicts on the same derivative rules: gradexplorer against autograd's, torch's
and jax's gradient checkers, one run.

    python bench/reliability.py            # table (torch / jax rows when installed)
    python bench/reliability.py --json out.json

The cases are the test corpora (``tests/hard_corpus.py``: right-but-hard and
subtly wrong derivatives with their wrong entries derived by hand;
``tests/corpus.py``; the gallery). Every checker sees the *same* rules: torch's
``gradcheck`` and jax's ``check_grads`` get the function as a custom
``torch.autograd.Function`` / ``jax.custom_vjp`` whose forward is f (numpy) and
whose backward is f's autograd VJP, so each checker judges exactly the rules
gradexplorer judges. Complex cases are left to autograd and gradexplorer (the
three libraries' complex conventions differ); cases needing ``reseed`` give the
others f with the seed fixed inside (their best case).

Counted per checker: false alarms (a right derivative reported wrong, or an
error), misses (a wrong one reported right), and, for checkers that name
entries, exact localization (the entries named equal the hand-derived set).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).parent))

import gradexplorer as gx  # noqa: E402
from gradexplorer.core.tree import flatten, unflatten  # noqa: E402


def cases():
    from corpus import CASES as OLD
    from hard_corpus import RIGHT, WRONG

    out = []
    for c in RIGHT:
        out.append(("right", c.name, c.f, c.args, set(), c.order, dict(c.kw)))
    for ex in gx.gallery.EXAMPLES.values():
        out.append(("right", "gallery:" + ex.name, ex.f, ex.args(), set(), 1, {"wrt": ex.wrt}))
    for c in WRONG:
        exact = set() if c.weak_order2 else set(c.expected)
        out.append(("wrong", c.name, c.f, c.args, exact, c.order, dict(c.kw)))
    for c in OLD:
        out.append(("wrong", "corpus:" + c.name, c.f, c.args, set(c.expected), c.order, dict(c.kw)))
    return out


def _complex(args) -> bool:
    return any(np.iscomplexobj(leaf) for leaf in flatten(list(args))[0])


def _selected(args, kw):
    """Positions of the arguments a checker differentiates (floats only)."""
    wrt = kw.get("wrt")
    if wrt is None:
        return [i for i, a in enumerate(args) if _all_float(a)]
    return list(wrt) if isinstance(wrt, (list, tuple)) else [wrt]


def _all_float(a) -> bool:
    leaves = flatten(a)[0]
    return bool(leaves) and all(np.asarray(v).dtype.kind == "f" for v in leaves)


_OPTIONS = {"wrt", "reseed", "rtol", "atol", "mode", "method", "step", "rng"}


def _seeded(f, kw):
    """f with its own keyword arguments bound, and the seed fixed inside when the
    case needs ``reseed`` (the other checkers have no such option)."""
    import functools

    f_kw = {k: v for k, v in kw.items() if k not in _OPTIONS}
    if f_kw:
        f = functools.partial(f, **f_kw)
    seed = kw.get("reseed")
    if seed is None:
        return f

    def g(*a, **k):
        np.random.seed(seed)  # noqa: NPY002 - the global generator is the point
        return f(*a, **k)

    return g


# ---------------------------------------------------------------- the checkers


def run_gx(f, args, order, kw, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # every wrong entry named (fast mode names the 32 worst by default, and counts
        # the rest): localization is judged on all of them
        r = gx.check_grads(f, *args, order=order, mode=mode, rng=0, max_named=10_000, **kw)
    return (not r.passed), {(e.row, e.col) for e in r.mismatches}


def run_autograd(f, args, order, kw):
    from autograd.test_util import check_grads

    f = _seeded(f, kw)
    sel = _selected(args, kw)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_grads(
                f, argnum=tuple(sel) if len(sel) > 1 else sel[0], modes=["rev"], order=order
            )(*args)
    except AssertionError:
        return True, None
    return False, None


class _Flat:
    """f of the selected arguments' float leaves, flattened: forward on numpy,
    backward through f's autograd VJP (the rules under test)."""

    def __init__(self, f, args, kw):
        import autograd.numpy as anp
        from autograd import make_vjp

        self.f, self.args, self.kw = _seeded(f, kw), list(args), kw
        self.sel = _selected(args, kw)
        self.trees = [flatten(args[i]) for i in self.sel]
        self.make_vjp, self.anp = make_vjp, anp

    def unflat(self, leaves):
        a, it = list(self.args), iter(leaves)
        for i, (ls, tree) in zip(self.sel, self.trees):
            a[i] = unflatten(tree, [next(it) for _ in ls])
        return a

    def leaves(self):
        return [np.asarray(v, dtype=float) for ls, _ in self.trees for v in ls]

    def forward(self, leaves):
        y = self.f(*self.unflat(leaves))
        ys = flatten(y)[0]
        return np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in ys])

    def vjp(self, leaves, g):
        anp = self.anp

        def flat_out(*ls):
            ys = flatten(self.f(*self.unflat(list(ls))))[0]
            return anp.concatenate([anp.ravel(v) for v in ys])

        vjp_fn, _ = self.make_vjp(flat_out, argnum=tuple(range(len(leaves))))(*leaves)
        return [np.asarray(c, dtype=float) for c in vjp_fn(np.asarray(g, dtype=float))]


def run_torch(f, args, order, kw):
    import torch

    flat = _Flat(f, args, kw)
    leaves0 = flat.leaves()
    shapes = [v.shape for v in leaves0]

    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *ts):
            ctx.save_for_backward(*ts)
            return torch.from_numpy(
                flat.forward([t.detach().numpy().reshape(s) for t, s in zip(ts, shapes)])
            )

        @staticmethod
        def backward(ctx, g):
            ts = ctx.saved_tensors
            cots = flat.vjp([t.detach().numpy().reshape(s) for t, s in zip(ts, shapes)], g.numpy())
            return tuple(
                torch.from_numpy(np.ascontiguousarray(c).reshape(t.shape)) for c, t in zip(cots, ts)
            )

    inputs = tuple(torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in leaves0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ok = torch.autograd.gradcheck(Fn.apply, inputs, raise_exception=False)
            if ok and order == 2:
                ok = torch.autograd.gradgradcheck(Fn.apply, inputs, raise_exception=False)
    except Exception:
        return True, None  # an error counts as a failing verdict
    return (not ok), None


def run_jax(f, args, order, kw):
    import jax
    import jax.numpy as jnp
    from jax.test_util import check_grads

    jax.config.update("jax_enable_x64", True)
    flat = _Flat(f, args, kw)
    leaves0 = flat.leaves()
    m = flat.forward(leaves0).size

    @jax.custom_vjp
    def fn(*ls):
        return jax.pure_callback(
            lambda *a: flat.forward([np.asarray(v) for v in a]),
            jax.ShapeDtypeStruct((m,), jnp.float64),
            *ls,
        )

    def fwd(*ls):
        return fn(*ls), ls

    def bwd(ls, g):
        outs = tuple(jax.ShapeDtypeStruct(v.shape, jnp.float64) for v in leaves0)
        return jax.pure_callback(
            lambda g_, *a: tuple(flat.vjp([np.asarray(v) for v in a], np.asarray(g_))), outs, g, *ls
        )

    fn.defvjp(fwd, bwd)
    try:
        check_grads(fn, tuple(jnp.asarray(v) for v in leaves0), order=1, modes=["rev"])
    except AssertionError:
        return True, None
    except Exception:
        return True, None
    return False, None


# ---------------------------------------------------------------- the table


def main(json_path: str | None = None) -> int:
    checkers = [
        ("gradexplorer full", lambda c: run_gx(c[2], c[3], c[5], c[6], "full"), True),
        ("gradexplorer fast", lambda c: run_gx(c[2], c[3], c[5], c[6], "fast"), True),
        ("autograd check_grads", lambda c: run_autograd(c[2], c[3], c[5], c[6]), False),
    ]
    try:
        import torch  # noqa: F401

        checkers.append(("torch gradcheck", lambda c: run_torch(c[2], c[3], c[5], c[6]), False))
    except ImportError:
        pass
    try:
        import jax  # noqa: F401

        checkers.append(("jax check_grads", lambda c: run_jax(c[2], c[3], c[5], c[6]), False))
    except ImportError:
        pass
    all_cases = cases()
    rows, result = [], {}
    for name, run, names_entries in checkers:
        t0 = time.perf_counter()
        false_alarms, misses, exact, n_right, n_wrong, n_exact = [], [], 0, 0, 0, 0
        for c in all_cases:
            kind, cname, f, args, expected, order, kw = c
            if not name.startswith("gradexplorer") and (_complex(args) or not _selected(args, kw)):
                continue
            if name.startswith("jax") and order == 2:
                continue  # a jax.custom_vjp over a callback has no second derivative
            try:
                failed, named = run(c)
            except Exception:
                failed, named = True, None
            if kind == "right":
                n_right += 1
                if failed:
                    false_alarms.append(cname)
            else:
                n_wrong += 1
                if not failed:
                    misses.append(cname)
                elif names_entries and expected:
                    n_exact += 1
                    exact += named == expected
        dt = time.perf_counter() - t0
        rows.append(
            (
                name,
                f"{len(false_alarms)} / {n_right}",
                f"{len(misses)} / {n_wrong}",
                f"{exact} / {n_exact}" if names_entries else "names no entry",
                f"{dt:.1f} s",
            )
        )
        result[name] = {
            "false_alarms": false_alarms,
            "misses": misses,
            "exact": exact,
            "exact_of": n_exact,
            "seconds": dt,
            "right": n_right,
            "wrong": n_wrong,
        }
    from _util import table

    print(table(rows, ("checker", "false alarms", "misses", "exact wrong entries named", "time")))
    for name, r in result.items():
        if r["false_alarms"] or r["misses"]:
            print(f"\n{name}:")
            if r["false_alarms"]:
                print("  false alarms:", ", ".join(r["false_alarms"]))
            if r["misses"]:
                print("  misses:", ", ".join(r["misses"]))
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    sys.exit(main(ap.parse_args().json))
