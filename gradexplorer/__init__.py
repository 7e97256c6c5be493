"""gradexplorer: see, check and debug the derivatives of numpy code.

The core (this package's top level) loads no display library; ``gx.explore``
and ``gx.plot_*`` are loaded on first use.

>>> import gradexplorer as gx
>>> import autograd.numpy as anp
>>> gx.grad(lambda x: anp.sum(x**2))(anp.array([1.0, 2.0]))
array([2., 4.])
"""

from __future__ import annotations

from autograd.extend import defjvp, defvjp, primitive

from . import gallery, testing, tree
from .ad import (
    DISCONNECTED,
    DisconnectedType,
    grad,
    gradient_function,
    value_and_grad,
    value_and_gradients_function,
)
from .check import check_grads
from .classic import (
    abs_rel_err,
    compute_gradient,
    compute_gradient_error,
    numeric_grad,
    verify_grad,
)
from .complex import ComplexBlocks, cauchy_riemann_residual, complex_blocks
from .errors import (
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
from .fd import FDResult, default_step, numeric_jacobian
from .jacobians import hessian, hvp, jacobian, real_jacobian
from .locate import Localization, locate
from .nullgrad import grad_not_implemented, grad_undefined
from .products import Lop, Rop, format_as
from .report import CheckReport, Entry

__version__ = "0.1.0"

_LAZY = {
    "explore": "widgets",
    "Explorer": "widgets",
    "plot_jacobian": "plot",
    "plot_check": "plot",
    "plot_hessian": "plot",
    "plot_complex_blocks": "plot",
    "plot_step_sweep": "plot",
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
    "check_grads", "CheckReport", "Entry", "compute_gradient", "compute_gradient_error",
    "verify_grad", "numeric_grad", "abs_rel_err", "testing", "locate", "Localization",
    "GradExplorerError", "GradientError", "DisconnectedInputError",
    "DisconnectedInputWarning", "NullTypeGradError", "GradUndefinedError",
    "JacobianTooLargeError", "NonFiniteWarning", "NotDeterministicError",
    "InputMutationError", "tree", *_LAZY,
]  # fmt: skip
