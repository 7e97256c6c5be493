"""The checker: f as a real-vector map, the full and fast checks, the report,
the seed APIs and the pytest helper."""

from . import testing
from .api import check_grads
from .classic import (
    abs_rel_err,
    compute_gradient,
    compute_gradient_error,
    numeric_grad,
    verify_grad,
)
from .handwritten import check_jvp, check_vjp
from .precision import check_precision
from .precision_report import PrecisionReport
from .report import CheckReport, Entry, Outcome
from .taylor import TaylorResult, taylor_test
from .verdicts import Comparison, Verdict

__all__ = [
    "check_grads", "check_vjp", "check_jvp", "check_precision", "PrecisionReport",
    "CheckReport", "Entry", "Outcome", "Verdict", "Comparison", "taylor_test", "TaylorResult",
    "compute_gradient", "compute_gradient_error",
    "verify_grad", "numeric_grad", "abs_rel_err", "testing",
]  # fmt: skip
