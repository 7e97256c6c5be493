"""Finite differences: noise, stencils, adaptive directional derivatives, the FD Jacobian."""

from .applicability import complex_step_applicability
from .jacobian import FDResult, numeric_jacobian
from .realmap import RealMap
from .steps import METHODS, default_step

__all__ = [
    "FDResult", "numeric_jacobian", "default_step", "METHODS", "RealMap",
    "complex_step_applicability",
]  # fmt: skip
