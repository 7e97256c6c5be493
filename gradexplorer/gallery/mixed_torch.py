"""Torch functions that compute in a narrow format inside float64 code, each with a
custom backward that can be planted wrong at one entry (importing this module imports
torch). Tests, ``bench/mixed_precision.py`` and ``bench/cast_stairs.py`` check them.

>>> import torch
>>> x = torch.ones(3, 6, dtype=torch.float64)
>>> scaled_layer(0.0)(x, torch.ones(4, dtype=torch.float64)).dtype
torch.float64
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

__all__ = ["sin3", "scaled_layer", "gelu_layer", "planted_exp", "square_beside_stairs", "with_rule"]


def _weights(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


def sin3(off: float = 0.0, dtype: torch.dtype = torch.float16, at: int = 5) -> Callable:
    """``sin(3x)`` on x read in ``dtype`` (then float32 arithmetic), whose backward
    computes in ``dtype`` too, off by ``off`` (relative) at flat entry ``at``."""

    class Sin3(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.sin(3 * x.to(dtype).float()).double()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            d = (3 * torch.cos(3 * x.to(dtype).float())).to(dtype).clone()
            d.view(-1)[at] *= 1 + off
            return (g.to(dtype) * d).double()

    return Sin3.apply


def scaled_layer(off: float) -> Callable:
    """``f(x, w) = tanh(x.half() @ W.half()).double() · w`` (x of 6 columns, w of 4):
    x's derivatives compute partly in float16, w's exactly in float64, whose rule is
    off by ``off`` (relative) at ``w[2]``."""
    W = _weights(5, 6, 4)

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, h, w):
            ctx.save_for_backward(h, w)
            return h * w

        @staticmethod
        def backward(ctx, g):
            h, w = ctx.saved_tensors
            gw = (g * h).clone()
            gw[..., 2] *= 1 + off
            return g * w, gw

    return lambda x, w: Scale.apply(torch.tanh(x.half() @ W.half()).double(), w)


def gelu_layer(off: float, dtype: torch.dtype = torch.float16) -> Callable:
    """``gelu(x @ W)`` for x of shape (4, 8), computed and returned in ``dtype`` (as
    float64), whose backward, in ``dtype`` too, is off by ``off`` (relative) at
    ``x[0, 5]``."""
    W = _weights(99, 8, 5)

    class GeluLayer(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return F.gelu(x.to(dtype) @ W.to(dtype)).double()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            narrow = x.to(dtype).detach().requires_grad_()
            with torch.enable_grad():
                (d,) = torch.autograd.grad(F.gelu(narrow @ W.to(dtype)), narrow, g.to(dtype))
            d = d.clone()
            d[0, 5] *= 1 + off
            return d.double()

    return GeluLayer.apply


def planted_exp(scale: float = 1.0, at: int = 1) -> Callable:
    """``exp`` in float64 whose backward multiplies the gradient of element ``at`` by
    ``scale`` (1: right). Fed a float16-rounded intermediate, ``planted_exp(2.0)(
    torch.tanh(x @ W).half().double())``, it is a wrong rule on a staircase in x."""

    class PlantedExp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, h):
            y = torch.exp(h)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            d = (g * y).clone()
            d.view(-1)[at] *= scale
            return d

    return PlantedExp.apply


def square_beside_stairs(
    off: float = 0.0,
    *,
    height: float = 2.0,
    slope: float = 0.6,
    square: torch.dtype = torch.float64,
    model: torch.dtype = torch.float64,
) -> Callable:
    """``x² + height·f16(100 + slope·x)``, summed: float16's stairs ``ulp(100) / slope``
    wide (0.1 at the defaults, ``height / 16`` tall) beside x², whose rule is x²'s
    times ``1 + off``. ``square``: the dtype x² is computed in (float32: a float32 term
    read through float64 inputs, whose stairs are far narrower than float16's);
    ``model``: the dtype the whole sum is computed in, cast to float64 at the end.

    >>> x = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    >>> f = square_beside_stairs(0.1)
    >>> f(x).backward(); [round(v, 4) for v in x.grad.tolist()]
    [2.3, -1.0]
    """
    rule = with_rule(
        lambda z: (z.to(square) ** 2).to(z.dtype),
        lambda z, g: (g.to(square) * 2 * (1 + off) * z.to(square)).to(z.dtype),
    )

    def f(x):
        x = x.to(model)
        return (rule(x) + height * (100 + slope * x).half().to(model)).sum().double()

    return f


def with_rule(forward: Callable, backward: Callable) -> Callable:
    """``forward(x)`` with the backward ``backward(x, g)`` in its place: a rule to plant
    wrong (``with_rule(torch.sin, lambda x, g: g * torch.cos(x) * 1.03)``).

    >>> f = with_rule(torch.sin, lambda x, g: 2 * g)
    >>> x = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    >>> f(x).sum().backward(); x.grad.tolist()
    [2.0, 2.0]
    """

    class Rule(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return forward(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return backward(x, g)

    return Rule.apply
