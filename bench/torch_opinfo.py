"""gradexplorer beside torch.autograd.gradcheck over torch's own operator database.

    python bench/torch_opinfo.py                     # the first sample of every op
    python bench/torch_opinfo.py --samples all       # every sample (slow: hours)
    python bench/torch_opinfo.py --ops digamma,triangular_solve --json out.json

For every OpInfo in ``op_db`` that takes float64 gradients on the CPU, each sample
is composed as torch's own gradient tests compose it (the tensors that require
grad become the checked arguments; the op runs through its ``gradcheck_wrapper``
and the sample's ``output_process_fn_grad``), then checked by
``torch.autograd.gradcheck`` (with the op's own ``fast_mode``, ``nondet_tol`` and
forward-mode setting) and by ``gx.check_grads`` (defaults). Every disagreement is
printed with gradexplorer's reading of it; the ones confirmed by hand carry their
explanation (``CONFIRMED``). Needs torch and expecttest (``pip install -e
".[dev]"``).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

#: Disagreements checked by hand: what torch's rule does, and how we confirmed it.
CONFIRMED = {
    "nn.functional.hardsigmoid": (
        "torch defect: the float64 backward multiplies by a float32 1/6 (right to 7.5 "
        "digits, 3e-8 relative) — confirmed by 1/6 - float32(1/6)"
    ),
    "digamma": (
        "torch defect: digamma's derivative, torch's trigamma (polygamma(1, x)), is "
        "accurate to only ~1e-10 relative at moderate arguments (3.6e-10 at x = 2.05) — "
        "confirmed against mpmath's polygamma(1, x) at 40 digits"
    ),
}


def ops(names: set | None):
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    for op in op_db:
        if names is not None and op.name not in names:
            continue
        if not op.supports_autograd or torch.float64 not in op.supported_backward_dtypes("cpu"):
            continue
        yield op


def composed(op, sample):
    """``(fn, args)``: the sample as torch's gradient tests compose it."""
    import torch

    def wanted(x):
        return isinstance(x, torch.Tensor) and x.requires_grad

    def is_list(x):
        return isinstance(x, (list, tuple)) and x and all(isinstance(t, torch.Tensor) for t in x)

    parts = [sample.input, *sample.args, *sample.kwargs.values()]
    args = tuple(
        x for p in parts for x in (p if is_list(p) else (p,)) if wanted(x)
    )  # fmt: skip

    def rebuild(inputs, part, k):
        if is_list(part):
            out = []
            for x in part:
                if wanted(x):
                    out.append(inputs[k])
                    k += 1
                else:
                    out.append(x)
            return out, k
        if wanted(part):
            return inputs[k], k + 1
        return part, k

    def fn(*inputs):
        k = 0
        first, k = rebuild(inputs, sample.input, k)
        pos = [first]
        for a in sample.args:
            v, k = rebuild(inputs, a, k)
            pos.append(v)
        kw = {}
        for name, a in sample.kwargs.items():
            kw[name], k = rebuild(inputs, a, k)
        out = op.gradcheck_wrapper(op.get_op(), *pos, **kw)
        return sample.output_process_fn_grad(out) if sample.output_process_fn_grad else out

    fn.__name__ = op.name.replace(".", "_")
    return fn, tuple(a.detach().clone() for a in args)


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def run_gradcheck(op, fn, args) -> tuple[bool | None, str]:
    import torch

    inputs = tuple(a.clone().requires_grad_(True) for a in args)
    try:
        ok = torch.autograd.gradcheck(
            fn, inputs, check_batched_grad=False, check_grad_dtypes=True,
            nondet_tol=op.gradcheck_nondet_tol, fast_mode=op.gradcheck_fast_mode,
            check_forward_ad=op.supports_forward_ad, check_undefined_grad=False,
        )  # fmt: skip
        return bool(ok), ""
    except _Timeout:
        raise
    except Exception as exc:
        text = str(exc).strip().splitlines()
        return False, (text[0] if text else type(exc).__name__)[:160]


def run_gx(fn, args):
    import gradexplorer as gx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return gx.check_grads(fn, *args, rng=0), ""
        except _Timeout:
            raise
        except Exception as exc:
            return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"


def reading(report) -> str:
    if report is None:
        return ""
    if report.mismatches:
        e = report.mismatches[0]
        more = f" (+{report.wrong_count - 1} more)" if report.wrong_count > 1 else ""
        return f"{e.label}: {e.reading}{more}"
    if report.inconclusive:
        return report.inconclusive
    bits = []
    if report.kinks:
        bits.append(f"{len(report.kinks)} entries at kinks")
    if report.not_checked:
        bits.append("not judged: " + ", ".join(lb for lb, _ in report.not_checked[:3]))
    return "; ".join(bits)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", choices=("first", "all"), default="first")
    parser.add_argument("--ops", default="", help="comma-separated op names (default: all)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per sample")
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    import torch

    torch.set_default_dtype(torch.float64)
    names = set(args.ops.split(",")) if args.ops else None
    rows, counts = [], {}
    signal.signal(signal.SIGALRM, _alarm)
    t_start = time.perf_counter()
    for op in ops(names):
        samples = op.sample_inputs("cpu", torch.float64, requires_grad=True)
        for k, sample in enumerate(samples):
            if args.samples == "first" and k:
                break
            fn, inputs = composed(op, sample)
            if not inputs:
                continue
            signal.alarm(int(args.timeout))
            try:
                t0 = time.perf_counter()
                gc_ok, gc_why = run_gradcheck(op, fn, inputs)
                t_gc = time.perf_counter() - t0
                t0 = time.perf_counter()
                report, gx_err = run_gx(fn, inputs)
                t_gx = time.perf_counter() - t0
            except _Timeout:
                gc_ok, gc_why, report, gx_err, t_gc, t_gx = None, "timeout", None, "timeout", 0, 0
            finally:
                signal.alarm(0)
            gx_out = "error" if report is None else str(report.outcome)
            gc_out = "timeout" if gc_ok is None else ("PASSED" if gc_ok else "FAILED")
            key = f"{gc_out} / {gx_out}"
            counts[key] = counts.get(key, 0) + 1
            row = {
                "op": op.name, "sample": k, "gradcheck": gc_out, "gx": gx_out,
                "gradcheck_says": gc_why, "gx_says": gx_err or reading(report),
                "confirmed": CONFIRMED.get(op.name, ""), "t_gradcheck": round(t_gc, 3),
                "t_gx": round(t_gx, 3),
            }  # fmt: skip
            rows.append(row)
            if gc_out != gx_out:
                print(f"{op.name}[{k}]: gradcheck {gc_out}, gx {gx_out}")
                if gc_why:
                    print(f"    gradcheck: {gc_why}")
                print(f"    gx: {row['gx_says']}")
                if row["confirmed"]:
                    print(f"    confirmed: {row['confirmed']}")
            sys.stdout.flush()
    elapsed = time.perf_counter() - t_start
    print(f"\n{len(rows)} samples of {len({r['op'] for r in rows})} ops in {elapsed:.0f} s")
    for key, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"  gradcheck / gx = {key}: {n}")
    if args.json:
        Path(args.json).write_text(json.dumps({"counts": counts, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
