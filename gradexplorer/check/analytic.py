"""The AD Jacobian alone, as the real matrix a full check judges (no finite differences).

The explorer draws it first, while the check that needs finite differences
is still running.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as onp

from ..backends import opened
from .problem import build_problem
from .rules import reverse_rows, vjp_rule

__all__ = ["analytic_matrix"]


def analytic_matrix(
    f: Callable, *args: Any, wrt: Any = 0, backend: Any = None, precision: Any = None, **kwargs
) -> onp.ndarray:
    """The real 2-D Jacobian of f (rows: real outputs; columns: real inputs), laid out
    as :func:`gradexplorer.check_grads`'s ``report.analytic``.

    >>> import autograd.numpy as anp
    >>> analytic_matrix(lambda x: x**2, anp.array([1.0, 3.0]))
    array([[2., 0.],
           [0., 6.]])
    """
    with opened(f, args, kwargs, wrt, backend=backend, precision=precision) as (system, prep):
        p = build_problem(prep.f, prep.args, prep.kwargs, prep.wrt, backend=system)
        if p.m == 0 or p.n == 0:
            return onp.zeros((p.m, p.n))
        tr = p.backend.vjp(p.F, p.vs)
        y = onp.asarray(p.backend.to_numpy(tr.value))
        return reverse_rows(vjp_rule(tr, p.backend, y.dtype), p.m).real
