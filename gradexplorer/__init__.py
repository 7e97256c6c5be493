"""gradexplorer: see, check and debug the derivatives of numpy code.

The core (this package's top level) loads no display library; ``gx.explore``
and ``gx.plot_*`` are loaded on first use.

>>> import gradexplorer as gx
>>> import autograd.numpy as anp
>>> gx.grad(lambda x: anp.sum(x**2))(anp.array([1.0, 2.0]))
array([2., 4.])
"""

from __future__ import annotations

from . import gallery
from .ad import (
    DISCONNECTED,
    ComplexBlocks,
    DisconnectedType,
    Lop,
    Rop,
    cauchy_riemann_residual,
    complex_blocks,
    defjvp,
    defvjp,
    format_as,
    grad,
    grad_not_implemented,
    grad_undefined,
    gradient_function,
    hessian,
    hvp,
    jacobian,
    primitive,
    real_jacobian,
    value_and_grad,
    value_and_gradients_function,
)
from .check import (
    CheckReport,
    Comparison,
    Entry,
    Outcome,
    PrecisionReport,
    TaylorResult,
    Verdict,
    abs_rel_err,
    check_grads,
    check_jvp,
    check_precision,
    check_vjp,
    compute_gradient,
    compute_gradient_error,
    numeric_grad,
    taylor_test,
    testing,
    verify_grad,
)
from .core import tree
from .errors import (
    CompileError,
    ComplexStepError,
    DisconnectedInputError,
    DisconnectedInputWarning,
    GradExplorerError,
    GradientError,
    GradUndefinedError,
    InputMutationError,
    JacobianTooLargeError,
    NonFiniteWarning,
    NotDeterministicError,
    NullTypeGradError,
)
from .fd import FDResult, complex_step_applicability, default_step, numeric_jacobian
from .fd.reasons import Unresolvable
from .locate import ADSweeps, Localization, ad_sweeps, locate

__version__ = "0.1.0"

#: Display names, loaded on first use so that ``import gradexplorer`` loads no
#: matplotlib or ipywidgets.
_LAZY = {
    "explore": "explorer",
    "Explorer": "explorer",
    "plot_jacobian": "display",
    "plot_check": "display",
    "plot_hessian": "display",
    "plot_complex_blocks": "display",
    "plot_step_sweep": "display",
    "plot_localization": "display",
    "plot_precision": "display",
    "plot_landscape": "display",
    "plot_linear_map": "display",
    "plot_ad_sweep": "display",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module 'gradexplorer' has no attribute {name!r}")


__all__ = [
    "grad", "value_and_grad", "value_and_gradients_function", "gradient_function",
    "jacobian", "real_jacobian", "hessian", "hvp", "Lop", "Rop", "format_as",
    "DisconnectedType", "DISCONNECTED", "grad_not_implemented", "grad_undefined",
    "primitive", "defvjp", "defjvp", "complex_blocks", "cauchy_riemann_residual",
    "ComplexBlocks", "gallery", "FDResult", "default_step", "numeric_jacobian",
    "check_grads", "check_vjp", "check_jvp", "check_precision", "PrecisionReport",
    "complex_step_applicability",
    "CheckReport", "Entry", "Outcome", "Verdict", "Comparison", "Unresolvable", "taylor_test",
    "TaylorResult", "compute_gradient", "compute_gradient_error",
    "verify_grad", "numeric_grad", "abs_rel_err", "testing", "locate", "Localization",
    "ad_sweeps", "ADSweeps",
    "GradExplorerError", "GradientError", "DisconnectedInputError",
    "DisconnectedInputWarning", "NullTypeGradError", "GradUndefinedError",
    "JacobianTooLargeError", "NonFiniteWarning", "NotDeterministicError",
    "InputMutationError", "ComplexStepError", "CompileError", "tree", *_LAZY,
]  # fmt: skip
