"""Exception and warning types raised by gradexplorer.

Every error message says what was expected, what was received and what to do.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "GradExplorerError",
    "GradientError",
    "DisconnectedInputError",
    "DisconnectedInputWarning",
    "NullTypeGradError",
    "GradUndefinedError",
    "JacobianTooLargeError",
    "NonFiniteWarning",
    "NotDeterministicError",
    "InputMutationError",
    "ComplexStepError",
    "CompileError",
]


class GradExplorerError(Exception):
    """Base class of every gradexplorer exception."""


class GradientError(GradExplorerError, AssertionError):
    """An analytic gradient disagrees with its finite-difference estimate.

    Raised by :func:`gradexplorer.verify_grad` (with the seed's fields) and by
    :meth:`gradexplorer.CheckReport.raise_if_failed` (with ``report`` set).

    Examples
    --------
    >>> err = GradientError(0, 3, (2, 2), 1.0, 1.5, 0.5, 0.2, 1e-4, 1e-4)
    >>> err.err_pos, err.abs_err
    (3, 0.5)
    """

    def __init__(
        self,
        arg: int | None = None,
        err_pos: int | None = None,
        shape: tuple | None = None,
        val1: float | None = None,
        val2: float | None = None,
        abs_err: float | None = None,
        rel_err: float | None = None,
        abs_tol: float | None = None,
        rel_tol: float | None = None,
        *,
        report: Any = None,
        message: str | None = None,
    ):
        self.arg = arg
        self.err_pos = err_pos
        self.shape = shape
        self.val1 = val1
        self.val2 = val2
        self.abs_err = abs_err
        self.rel_err = rel_err
        self.abs_tol = abs_tol
        self.rel_tol = rel_tol
        self.report = report
        if message is None:
            message = (
                f"gradient mismatch in argument {arg} at flat position {err_pos} "
                f"(shape {shape}): analytic {val1!r} vs numeric {val2!r}; "
                f"abs_err {abs_err:.3g} > abs_tol {abs_tol:.3g} and "
                f"rel_err {rel_err:.3g} > rel_tol {rel_tol:.3g}. Fix the gradient of that "
                "argument, or call gradexplorer.check_grads for every wrong entry."
            )
        super().__init__(message)


class DisconnectedInputError(GradExplorerError, ValueError):
    """The output does not depend on a differentiated input.

    ``parameter`` names it (its name, or ``argument i`` when f has no names).
    """

    def __init__(self, parameter: str, message: str):
        self.parameter = parameter
        super().__init__(message)


class DisconnectedInputWarning(UserWarning):
    """Warned (by default) when the output does not depend on a differentiated input."""


class NullTypeGradError(GradExplorerError, NotImplementedError):
    """A backward pass needed a gradient that is not implemented."""


class GradUndefinedError(NullTypeGradError):
    """A backward pass needed a gradient that is mathematically undefined."""


class JacobianTooLargeError(GradExplorerError, MemoryError):
    """A dense Jacobian would exceed the memory cap."""


class NonFiniteWarning(RuntimeWarning):
    """An output or a derivative holds NaN or Inf entries (named in the message)."""


class NotDeterministicError(GradExplorerError, ValueError):
    """Two calls of f at the same point returned different values."""


class InputMutationError(GradExplorerError, ValueError, TypeError):
    """f changed the array it was given (a TypeError too, as autograd's own
    refusal of item assignment is)."""


class ComplexStepError(GradExplorerError, ValueError):
    """``method="complex_step"`` does not apply to this f: a complex input or
    output, or f is not complex-safe (it drops or bends the imaginary
    perturbation). ``reason`` is the short form that
    :func:`gradexplorer.complex_step_applicability` returns."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason or message


class CompileError(GradExplorerError, RuntimeError):
    """``check_grads(..., compiled=True)``: ``torch.compile`` failed on a function
    that runs eagerly (graph breaks are no failure: a compile error is)."""
