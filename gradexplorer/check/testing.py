"""Assertions for users' own test suites.

>>> import autograd.numpy as anp
>>> assert_grads(lambda x: anp.exp(x), anp.ones(3)).passed
True
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

from .api import check_grads
from .report import CheckReport, Outcome

__all__ = ["assert_grads"]


def assert_grads(
    f: Callable, *args: Any, allow_inconclusive: bool = False, **kwargs: Any
) -> CheckReport:
    """Fail with the check report's text when f's derivatives are wrong — or
    could not be verified (an INCONCLUSIVE check), unless ``allow_inconclusive``.

    Takes :func:`gradexplorer.check_grads`' arguments. On failure the
    AssertionError message is the report and, when matplotlib is installed,
    the path of a PNG error heatmap; otherwise the report is returned.
    """
    report = check_grads(f, *args, **kwargs)
    if report.passed or (allow_inconclusive and report.outcome is Outcome.INCONCLUSIVE):
        return report
    message = str(report)
    path = _save_heatmap(report)
    if path:
        message += f"\n  error heatmap: {path}"
    raise AssertionError(message)


def _save_heatmap(report: CheckReport) -> str | None:
    try:
        png = report._repr_png_()
    except ImportError:
        return None
    if not png:
        return None
    fd, path = tempfile.mkstemp(prefix="gradexplorer-check-", suffix=".png")
    with os.fdopen(fd, "wb") as fh:
        fh.write(png)
    return path
