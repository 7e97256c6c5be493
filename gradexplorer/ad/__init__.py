"""The autograd-backed operators: grad, jacobians, products, null gradients, complex blocks."""

from .complex import ComplexBlocks, cauchy_riemann_residual, complex_blocks
from .jacobians import hessian, hvp, jacobian, real_jacobian
from .nullgrad import grad_not_implemented, grad_undefined
from .operators import (
    DISCONNECTED,
    DisconnectedType,
    defjvp,
    defvjp,
    grad,
    gradient_function,
    primitive,
    value_and_grad,
    value_and_gradients_function,
)
from .products import Lop, Rop, format_as

__all__ = [
    "grad", "value_and_grad", "value_and_gradients_function", "gradient_function",
    "jacobian", "real_jacobian", "hessian", "hvp", "Lop", "Rop", "format_as",
    "DisconnectedType", "DISCONNECTED", "grad_not_implemented", "grad_undefined",
    "primitive", "defvjp", "defjvp", "ComplexBlocks", "complex_blocks",
    "cauchy_riemann_residual",
]  # fmt: skip
