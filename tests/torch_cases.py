"""torch functions with custom rules, right and subtly wrong, for the tests.

Lines that call a wrong rule carry ``# CALL:<name>`` (tests find them there).
"""

import torch

F = torch.nn.functional


class ScaleRow(torch.autograd.Function):
    """Identity whose backward scales the cotangent of output entry 0 by 1.001."""

    @staticmethod
    def forward(ctx, y):
        return y.clone()

    @staticmethod
    def backward(ctx, g):
        g = g.clone()
        g.view(-1)[0] *= 1.001
        return g


class Softplus(torch.autograd.Function):
    """softplus with a right backward and a right jvp."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.x = x
        return F.softplus(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.sigmoid(x)

    @staticmethod
    def jvp(ctx, dx):
        return torch.sigmoid(ctx.x) * dx


class SoftplusWrongBackward(Softplus):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.sigmoid(x) * 1.0001  # 1e-4 too big


class SoftplusWrongJvp(Softplus):
    @staticmethod
    def jvp(ctx, dx):
        return torch.sigmoid(-ctx.x) * dx  # sign of x flipped: backward is right


class RandomOrderMatvec(torch.autograd.Function):
    """A @ x whose backward sums rows in a random order each run (as GPU atomics)."""

    @staticmethod
    def forward(ctx, x, A):
        ctx.save_for_backward(A)
        return A @ x

    @staticmethod
    def backward(ctx, g):
        (A,) = ctx.saved_tensors
        terms = A * g[:, None]
        out = torch.zeros(A.shape[1], dtype=g.dtype)
        for i in torch.randperm(A.shape[0]):
            out = out + terms[i]
        return out, None


class HalfForFloat32Tanh(torch.autograd.Function):
    """tanh whose backward, like a mixed-precision kernel, computes in float16
    when given float32 (right in float64, worse than float32 allows in float32)."""

    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        work = torch.float16 if g.dtype == torch.float32 else g.dtype
        return (g.to(work) * (1 - y.to(work) ** 2)).to(g.dtype)


class NaiveLogsumexp(torch.autograd.Function):
    """logsumexp whose backward forms exp(x) / sum(exp(x)) without the max shift:
    right in float64, overflows in float32 for x > 88."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.logsumexp(x, 0)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        e = torch.exp(x)
        return g * e / e.sum()


class StableSigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sigmoid(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.sigmoid(x) * torch.sigmoid(-x)


class OneWrongEntry(torch.autograd.Function):
    """Elementwise sin whose backward is wrong at one flat index only."""

    index = 0

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        d = torch.cos(x)
        d.view(-1)[OneWrongEntry.index] *= 1.01
        return g * d


@torch.library.custom_op("gxtest::cube", mutates_args=())
def cube(x: torch.Tensor) -> torch.Tensor:
    return x**3


def _cube_setup(ctx, inputs, output):
    (ctx.x,) = inputs


def _cube_backward(ctx, g):
    return g * 3 * ctx.x  # should be 3 x**2


cube.register_autograd(_cube_backward, setup_context=_cube_setup)


def uses_wrong_backward(x, W):
    h = torch.tanh(W @ x)
    return SoftplusWrongBackward.apply(h).sum()  # CALL:SoftplusWrongBackward


def uses_wrong_jvp(x):
    return SoftplusWrongJvp.apply(x) * 2.0  # CALL:SoftplusWrongJvp


def uses_custom_op(x):
    return torch.sin(cube(x)).sum()  # CALL:gxtest::cube


class Net(torch.nn.Module):
    def __init__(self, wrong: bool = False):
        super().__init__()
        self.fc1 = torch.nn.Linear(3, 4)
        self.fc2 = torch.nn.Linear(4, 2)
        self.wrong = wrong

    def forward(self, x):
        h = torch.tanh(self.fc1(x))
        if self.wrong:
            h = SoftplusWrongBackward.apply(h)
        return self.fc2(h).square().sum()
