"""Command line: ``python -m gradexplorer check MODULE:FUNCTION --shape 3,4``
(``python -m gradexplorer --version`` prints the version).

Checks the function's derivatives at a standard normal point (seeded), prints
the report and, when a derivative is wrong, the operation and line that made
it. Exit status: 0 right, 1 wrong, 2 usage error or a function that cannot be
imported or evaluated (a message, no traceback) — so it can gate CI.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence

import numpy as onp

EXIT_OK, EXIT_WRONG, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors exit 2 with a short message, as argparse does
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python -m gradexplorer",
        description="Check the derivatives of numpy code written with autograd.",
    )
    p.add_argument(
        "--version", action="version", version=f"gradexplorer {version()}", help="print the version"
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    c = sub.add_parser("check", help="check a function's gradient at a random point")
    c.add_argument("target", help="MODULE:FUNCTION (a dotted module or a path/to/file.py)")
    c.add_argument(
        "--shape",
        action="append",
        required=True,
        type=_shape,
        help="shape of one input, e.g. 3,4 (repeat for several inputs; '' = scalar)",
    )
    c.add_argument("--complex", action="store_true", help="complex inputs (Re + i Im)")
    c.add_argument("--seed", type=int, default=0, help="random seed of the point (default 0)")
    c.add_argument("--png", help="also write the error heatmap to this PNG file")
    c.add_argument("--mode", choices=["auto", "full", "fast"], default="auto")
    return p


def version() -> str:
    """The installed distribution's version (the package's own when run from a
    source tree that was never installed); tests/test_build.py checks it."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("gradexplorer")
    except PackageNotFoundError:
        from . import __version__

        return __version__


def _shape(text: str) -> tuple[int, ...]:
    text = text.strip().strip("()")
    if not text:
        return ()
    try:
        dims = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"shape must be integers separated by commas, like 3,4; got {text!r}"
        ) from None
    if any(d < 0 for d in dims):
        raise argparse.ArgumentTypeError(f"shape dimensions must be >= 0; got {text!r}")
    return dims


def load_function(target: str):
    """Import ``module:function`` (a dotted module or a .py path)."""
    module_name, sep, func_name = target.rpartition(":")
    if not sep or not module_name or not func_name:
        raise ValueError(f"target must look like package.module:function; got {target!r}")
    if module_name.endswith(".py") or os.sep in module_name:
        path = os.path.abspath(module_name)
        if not os.path.exists(path):
            raise ImportError(f"no such file: {module_name}")
        spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        module = importlib.import_module(module_name)
    try:
        fn = getattr(module, func_name)
    except AttributeError:
        raise ImportError(f"module {module_name!r} has no attribute {func_name!r}") from None
    if not callable(fn):
        raise ImportError(f"{target} is a {type(fn).__name__}, not a function")
    return fn


def _point(shapes, complex_, seed):
    rng = onp.random.default_rng(seed)
    out = []
    for s in shapes:
        x = rng.standard_normal(s)
        if complex_:
            x = x + 1j * rng.standard_normal(s)
        out.append(x if s else x[()])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .check.api import check_grads
    from .locate.localize import locate

    try:
        f = load_function(args.target)
    except Exception as exc:
        print(f"error: cannot import {args.target}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.png:
        problem = _unwritable(args.png)
        if problem:
            print(f"error: cannot write the PNG to {args.png}: {problem}", file=sys.stderr)
            return EXIT_USAGE
    point = _point(args.shape, args.complex, args.seed)
    try:
        f(*[onp.array(p, copy=True) for p in point])  # on copies: the check sees a mutation
    except Exception as exc:
        shapes = ", ".join(str(s) for s in args.shape)
        print(
            f"error: {args.target} failed on inputs of shape {shapes}: {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        report = check_grads(f, *point, mode=args.mode, rng=args.seed)
    except Exception as exc:
        print(f"error: cannot check {args.target}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(report)
    if args.png:
        _write_png(report, args.png)
    if report.passed:
        return EXIT_OK
    try:
        loc = locate(f, *point, wrt=tuple(range(len(point))), rng=args.seed)
    except Exception as exc:
        print(f"(could not trace the operations: {type(exc).__name__}: {exc})")
        return EXIT_WRONG
    if loc.culprit is not None:
        c = loc.culprit
        print(f"culprit: {c.name} at {c.source} ({c.verdict})")
    else:
        print("culprit: none found (every traced operation's own derivative is right)")
    return EXIT_WRONG


def _unwritable(path: str) -> str | None:
    """Why a file cannot be written at path (None when it can)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"the folder {folder} does not exist"
    if os.path.isdir(path):
        return "it is a folder"
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        return "permission denied"
    return None


def _write_png(report, path: str) -> None:
    try:
        png = report._repr_png_()
    except ImportError:
        print("(no PNG: matplotlib is not installed; pip install 'gradexplorer[widgets]')")
        return
    if png:
        try:
            with open(path, "wb") as fh:
                fh.write(png)
        except OSError as exc:
            print(f"(could not write the heatmap to {path}: {exc.strerror})")
            return
        print(f"heatmap written to {path}")


if __name__ == "__main__":
    sys.exit(main())
