"""Trust, round three: where f is uneven at the point, table-driven.

Every case says, derived by hand from the function as written (never from
running the checker), what a trustworthy checker must say: the outcome
(passed / failed / inconclusive), the entries right at a kink, and the wrong
entries with their verdict (wrong, or imprecise: right to many digits). Each
case runs over ten seeds; the verdict must not depend on the seed.

Classes: kinks and ties (a backward pass follows the branch its forward
took: right at a kink), the same with rules that are wrong there; rounding
staircases; oscillation faster than the step; a forward rule torch silently
lacks; vacuous passes (generators reseeded, erratic f inconclusive); fast
mode that must count rather than truncate; wrong against imprecise; the
analytic side's own round-off; torch outputs without a gradient, sparse and
zero tensors, a point on the edge of f's domain.

Layout: rows are the output flattened, columns the checked input flattened.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import autograd.numpy as anp
import numpy as np
import torch

import gradexplorer as gx

PASSED, FAILED, INCONCLUSIVE = gx.Outcome.PASSED, gx.Outcome.FAILED, gx.Outcome.INCONCLUSIVE


@dataclass
class TrustCase:
    name: str
    kind: str  # the class of unevenness (for the table in the README)
    f: object
    args: tuple
    outcome: gx.Outcome
    kinks: set = field(default_factory=set)  # entries RIGHT_AT_KINK
    wrong: set = field(default_factory=set)  # entries failing (WRONG or IMPRECISE)
    imprecise: set = field(default_factory=set)  # of those, the IMPRECISE ones
    kw: dict = field(default_factory=dict)  # check_grads options
    note: str = ""  # a phrase a note must contain
    #: every wrong entry counted (named: the worst ``max_named`` of ``wrong``)
    wrong_count: int | None = None
    not_checked: set = field(default_factory=set)  # output labels listed, never judged
    warns: type | None = None  # a warning the check must give


def _prim(fun, vjp, jvp=None):
    p = gx.primitive(fun)
    gx.defvjp(p, vjp)
    if jvp is not None:
        gx.defjvp(p, jvp)
    return p


CASES: list[TrustCase] = []
add = CASES.append

# ---------------------------------------------------------------- kinks and ties (autograd)

# max over the rows of a 2x2 pool, x[0] = x[1]: the row-0 max has right derivatives
# (1 along x[0], 1 along x[1]: whichever rises wins) and left derivatives 0; autograd
# splits the gradient between tied entries (0.5, 0.5): between them
add(
    TrustCase(
        "maxpool_tie_autograd",
        "tie",
        lambda x: anp.max(anp.reshape(x, (2, 2)), axis=1),
        (np.array([1.0, 1.0, 0.5, 2.0]),),
        PASSED,
        kinks={(0, 0), (0, 1)},
    )
)
# sort of [0.3, 0.3, 1.0]: y0 = min, y1 = max of the tied pair. Along x[0]: min's right
# derivative 0, left 1; max's right 1, left 0 (the same along x[1]). autograd's sort
# follows a stable argsort (identity): J = I, each entry one of its one-sided values
add(
    TrustCase(
        "sort_tie_of_two",
        "tie",
        lambda x: anp.sort(x),
        (np.array([0.3, 0.3, 1.0]),),
        PASSED,
        kinks={(0, 0), (0, 1), (1, 0), (1, 1)},
    )
)
# three equal values: y0 = min and y2 = max have one-sided derivatives that differ along
# every coordinate (6 kink entries); the median y1 has right = left = 0 along every
# coordinate, yet is not differentiable (its directional derivative is the median of
# the direction's components): autograd's row e_1 is the branch where x[1] is the
# median, found along directions entering that branch
add(
    TrustCase(
        "sort_tie_of_three_median",
        "tie",
        lambda x: anp.sort(x),
        (np.array([0.3, 0.3, 0.3]),),
        PASSED,
        kinks={(0, 0), (0, 1), (0, 2), (1, 1), (2, 0), (2, 1), (2, 2)},
    )
)
# clip at its lower bound (x[0] = -1) and its upper bound (x[2] = 1): one-sided 1 and 0
add(
    TrustCase(
        "clip_at_both_bounds",
        "kink",
        lambda x: anp.clip(x, -1.0, 1.0),
        (np.array([-1.0, 0.3, 1.0]),),
        PASSED,
        kinks={(0, 0), (2, 2)},
    )
)
# relu of a pre-activation that rounds to -2.8e-17 (0.3 - 0.1 - 0.2): mathematically
# at the kink; analytic 0 (negative), the left derivative; right derivatives 1, -1, -1
add(
    TrustCase(
        "relu_preactivation_minus_2.8e-17",
        "kink",
        lambda x: anp.maximum(x[0] - x[1] - x[2], 0.0),
        (np.array([0.3, 0.1, 0.2]),),
        PASSED,
        kinks={(0, 0), (0, 1), (0, 2)},
    )
)
# abs at exactly 0: right 1, left -1; autograd's sign(0) = 0 is between them
add(
    TrustCase(
        "abs_at_zero",
        "kink",
        lambda x: anp.abs(x) * 2.0,
        (np.array([0.0, -0.7]),),
        PASSED,
        kinks={(0, 0)},
    )
)
# leaky relu at 0: right 1, left 0.1, analytic 0.1 (the where's false branch)
add(
    TrustCase(
        "leaky_relu_at_zero",
        "kink",
        lambda x: anp.where(x > 0, x, 0.1 * x),
        (np.array([0.0, 1.5]),),
        PASSED,
        kinks={(0, 0)},
    )
)
# the max of each row of a 2x3 matrix, each row with a tie: [1, 2, 2] and [3, 0, 3]
add(
    TrustCase(
        "row_max_ties",
        "tie",
        lambda x: anp.max(anp.reshape(x, (2, 3)), axis=1),
        (np.array([1.0, 2.0, 2.0, 3.0, 0.0, 3.0]),),
        PASSED,
        kinks={(0, 1), (0, 2), (1, 3), (1, 5)},
    )
)

# ---------------------------------------------------------------- wrong at a kink

# a relu whose rule says 1.5 at exactly 0: outside [0, 1] (its one-sided values)
_relu_15 = _prim(
    lambda x: np.maximum(x, 0.0),
    lambda ans, x: lambda g: g * np.where(x > 0, 1.0, np.where(x == 0, 1.5, 0.0)),
)
add(
    TrustCase(
        "relu_rule_1.5_at_zero",
        "wrong at a kink",
        lambda x: _relu_15(x) + 0.0,
        (np.array([0.0, 0.8, -0.4]),),
        FAILED,
        wrong={(0, 0)},
    )
)


# min and max of a tied pair, with a rule that gives min the gradient (1, 1) and max
# (0, 0): each entry alone lies between its one-sided values, but neither row is a
# branch (rows (1,0) or (0,1)) nor a mix of branches: every kink entry is wrong
def _pair_vjp(ans, x):
    return lambda g: anp.array([g[0], g[0]])


_minmax_bad = _prim(lambda x: np.array([np.min(x), np.max(x)]), _pair_vjp)
add(
    TrustCase(
        "min_max_rule_mixes_branches",
        "wrong at a kink",
        lambda x: _minmax_bad(x) * 1.0,
        (np.array([0.4, 0.4]),),
        FAILED,
        wrong={(0, 0), (0, 1), (1, 0), (1, 1)},
    )
)
# a 10% wrong abs rule at a smooth point next to a tie elsewhere in the row: the tie's
# entries (autograd's 0.5 split) are right at the kink, the abs entry wrong
_abs_11 = _prim(lambda x: np.abs(x), lambda ans, x: lambda g: 1.1 * g * np.sign(x))
add(
    TrustCase(
        "wrong_abs_beside_a_tie",
        "wrong at a kink",
        lambda x: anp.maximum(x[0], x[1]) + _abs_11(x[2]),
        (np.array([0.5, 0.5, -0.8]),),
        FAILED,
        kinks={(0, 0), (0, 1)},
        wrong={(0, 2)},
    )
)

# ---------------------------------------------------------------- rounding staircases

# (1e10 + sin x) - 1e10 moves in quanta of ulp(1e10) = 1.9e-6: steps that shrink onto
# one stair see a flat f; the steps must span many stairs
add(
    TrustCase(
        "staircase_1e10",
        "staircase",
        lambda x: (1e10 + anp.sin(x)) - 1e10,
        (np.array([0.3, 1.2, -0.5]),),
        PASSED,
        note="quanta",
    )
)


# a float32 accumulator inside a float64 function: the sum rounds to float32's grid
def _f32_sum(x):
    acc = np.float32(0.0)
    for v in x**2:
        acc = np.float32(acc + np.float32(v))
    return np.float64(acc)


_sum32 = _prim(_f32_sum, lambda ans, x: lambda g: g * 2.0 * x)
add(
    TrustCase(
        "float32_accumulator",
        "staircase",
        lambda x: _sum32(x) * 1.0,
        (np.linspace(0.5, 2.0, 6),),
        PASSED,
    )
)
# the same accumulator with a rule off by 2x in one entry: still caught there
_sum32_bad = _prim(_f32_sum, lambda ans, x: lambda g: g * 2.0 * x * np.array([1, 1, 2.0, 1, 1, 1]))
add(
    TrustCase(
        "float32_accumulator_rule_2x",
        "staircase",
        lambda x: _sum32_bad(x) * 1.0,
        (np.linspace(0.5, 2.0, 6),),
        FAILED,
        wrong={(0, 2)},
    )
)


# float32 inside a float64 function, near zeros of sin(3x): x rounds to float32's stairs
# (~1.2e-7 wide, far narrower than the step), and the finest noise probe can sit on one
# stair. Read as f's calm, it made the steps shrink onto the stair: slope 0 +- 0.01 for
# 3, a right rule failed at every check. Stairs this narrow are rounding, not f's shape
def _f32_sin3(x):
    return np.sin(3.0 * x.astype(np.float32)).astype(np.float64)


_X_NEAR_ZEROS = np.array([-1.0474191995284436, np.pi / 3 + 3e-4, 2 * np.pi / 3 - 7e-4, 0.52])
_sin3_32 = _prim(_f32_sin3, lambda ans, x: lambda g: g * 3.0 * np.cos(3.0 * x))
add(
    TrustCase(
        "float32_input_rounding_near_zeros",
        "staircase",
        lambda x: _sin3_32(x) * 1.0,
        (_X_NEAR_ZEROS,),
        PASSED,
    )
)
_sin3_32_bad = _prim(
    _f32_sin3, lambda ans, x: lambda g: g * 3.0 * np.cos(3.0 * x) * np.array([1, 1, 1.01, 1])
)
add(
    TrustCase(
        "float32_input_rounding_near_zeros_rule_1pct",
        "staircase",
        lambda x: _sin3_32_bad(x) * 1.0,
        (_X_NEAR_ZEROS,),
        FAILED,
        wrong={(2, 2)},
    )
)
# a small difference of large terms: (1e8 x + sin x) - 1e8 x rounds on ulp(1e8 x)
add(
    TrustCase(
        "cancellation_1e8",
        "staircase",
        lambda x: (1e8 * x + anp.sin(x)) - 1e8 * x,
        (np.array([0.3, 1.7]),),
        PASSED,
    )
)


# a row that is 0 in exact arithmetic, computed as a difference of the same large sum in
# two orders: it moves in quanta of ulp(sum(t)) ~ 3.6e-12, a few of them across the FD
# step, and its derivative is 0. A rule that says 1 along every input claims a slope that
# would cross ~10^4 quanta within the step: the samples refute it (it was taken for a
# coarse staircase and left unresolved). Along x[0..2] the computed row steps by one
# quantum just left of x, the same at both of the jump test's steps: a jump of the
# computed f, with no derivative to compare
def _reversed_sums(x):
    t = np.cumsum(x) * 1e3
    return np.stack([np.sum(t) - np.sum(t[::-1]), np.sum(np.sin(x))])


def _reversed_sums_rule(off):
    return lambda ans, x: lambda g: off * g[0] * np.ones(x.size) + g[1] * np.cos(x)


_X_SUMS = np.linspace(0.3, 2.0, 7)
add(
    TrustCase(
        "reversed_sums_difference",
        "staircase",
        _prim(_reversed_sums, _reversed_sums_rule(0.0)),
        (_X_SUMS,),
        PASSED,
    )
)
add(
    TrustCase(
        "reversed_sums_difference_rule_off_by_one",
        "staircase",
        _prim(_reversed_sums, _reversed_sums_rule(1.0)),
        (_X_SUMS,),
        FAILED,
        wrong={(0, j) for j in range(3, 7)},
    )
)

# (1e10 x + sin x) - 1e10 x at x ~ 1968: quanta of ulp(2e13) = 2^-8 on a derivative of
# cos x = 0.086, and sin's period (6.3) is shorter than the base step (7.7). The right rule
# passes inside a wide FD error (0.27: no step resolves 0.086 to its own size); off by 1 it
# is wrong. (Steps grown to 60 and more, across ten periods, made every difference ~0 and
# agree with itself: a sharp, wrong -0.0019 that failed the right rule; and the Taylor test
# read a first order there, from steps beyond sin's period where f stays bounded and h·Jv
# grows.)
_X_CANCEL = np.array([1968.1218266168323])
add(
    TrustCase(
        "cancellation_1e10_beside_its_period",
        "staircase",
        lambda x: (1e10 * x + anp.sin(x)) - 1e10 * x,
        (_X_CANCEL,),
        PASSED,
    )
)
# rules off by 1 and by 0.1. Off by 0.1 on stairs of 0.004 and a derivative of 0.086: the
# base step, 1.2 periods of sin wide, left residuals of ~0.3 that passed for rounding (under
# 1000 of f's "ulps", its stairs), an FD error of 0.27 the wrong rule passed inside
for _off, _name in ((1.0, "1"), (0.1, "a_tenth")):
    _cancel_off = _prim(
        lambda x: (1e10 * x + np.sin(x)) - 1e10 * x,
        lambda ans, x, off=_off: lambda g: g * (np.cos(x) + off),
    )
    add(
        TrustCase(
            f"cancellation_1e10_rule_off_by_{_name}",
            "staircase",
            lambda x, rule=_cancel_off: rule(x) * 1.0,
            (_X_CANCEL,),
            FAILED,
            wrong={(0, 0)},
        )
    )
# at 1e12, x ~ 1745: quanta of 0.25 on a derivative of -0.083, and f exactly flat over the
# jump test's close steps. Flat there bounds |f'| by a quantum over the step (~150), not by
# an ulp of f, which failed the right rule as "nonzero where f does not change"
add(
    TrustCase(
        "cancellation_1e12_flat_over_a_close_step",
        "staircase",
        lambda x: (1e12 * x + anp.sin(x)) - 1e12 * x,
        (np.array([1745.0715947026183, 505.601363078114]),),
        PASSED,
    )
)

# round(x, 3): a staircase of the *input*, stairs 1e-3 wide (a decimal grid: no
# power-of-two quantum to see), narrower than the Richardson step (~4e-3 |x|), so the
# stencil sees the slope across stairs (~1). f is constant at each point here (the
# nearest jumps are 2-5e-4 away), so its derivative there is 0, as the rule says (the
# noise probes cross stairs of y[0] and y[2]: f is uneven finer than the step there, and
# the steps shrink onto the stair)
_X_DECIMAL = np.array([2.685009210157367, 0.3112, -1.0773])
_round3 = _prim(lambda x: np.round(x * 1000.0) / 1000.0, lambda ans, x: lambda g: 0.0 * g)
add(
    TrustCase(
        "round_3_decimals",
        "staircase",
        lambda x: _round3(x) * 1.0,
        (_X_DECIMAL,),
        PASSED,
        note="uneven on scales finer than the step",
    )
)
# and at a tie of the rounding (1.2345e3 rounds half to even, f jumps there): no
# derivative to compare, in reverse mode or in forward mode (whose tangents come from the
# same rule here; a [fwd] entry was reported at the jump)
add(
    TrustCase(
        "round_3_decimals_at_a_tie",
        "staircase",
        lambda x: _round3(x) * 1.0,
        (np.array([2.685009210157367, 1.2345]),),
        PASSED,
        note="a tie or a jump",
    )
)
# the same staircase with a rule of one half: the derivative at each point is 0 and the
# slope across the stairs 1, so it is wrong at every entry either way; since 2026-11-29
# it is judged against the slope across 64 stairs (f moves within reach of x: a stair)
_round3_ste = _prim(lambda x: np.round(x * 1000.0) / 1000.0, lambda ans, x: lambda g: 0.5 * g)
add(
    TrustCase(
        "round_3_decimals_rule_half",
        "staircase",
        lambda x: _round3_ste(x) * 1.0,
        (_X_DECIMAL,),
        FAILED,
        wrong={(0, 0), (1, 1), (2, 2)},
        note="measured again over a wider step",
    )
)

# ---------------------------------------------------------------- oscillation

# x + 1e-10 sin(1e7 x): the wiggle's period (6e-7) is far below the first step; its
# derivative (1e-3 cos) is resolved only by steps well under the period
add(
    TrustCase(
        "fast_oscillation",
        "oscillation",
        lambda x: x + 1e-10 * anp.sin(1e7 * x),
        (np.array([0.3, 1.2]),),
        PASSED,
    )
)
# a rule that leaves the wiggle out (derivative 1): 4.8e-4 and 4.1e-4 off
_no_wiggle = _prim(
    lambda x: x + 1e-10 * np.sin(1e7 * x), lambda ans, x: lambda g: g * np.ones_like(x)
)
add(
    TrustCase(
        "fast_oscillation_rule_ignores_it",
        "oscillation",
        lambda x: _no_wiggle(x) * 1.0,
        (np.array([0.3, 1.2]),),
        FAILED,
        wrong={(0, 0), (1, 1)},
    )
)

# ---------------------------------------------------------------- wrong against imprecise

# a rule right to 7.5 digits (a float32 1/6 inside a float64 backward, as torch's
# hardsigmoid had): imprecise, not wrong
_sixth32 = float(np.float32(1.0 / 6.0))
_hs = _prim(
    lambda x: np.clip(x / 6.0 + 0.5, 0.0, 1.0),
    lambda ans, x: lambda g: g * np.where(np.abs(x) < 3.0, _sixth32, 0.0),
)
add(
    TrustCase(
        "hardsigmoid_float32_sixth",
        "imprecise",
        lambda x: _hs(x) * 1.0,
        (np.array([-1.0, 0.5, 2.0]),),
        FAILED,
        wrong={(0, 0), (1, 1), (2, 2)},
        imprecise={(0, 0), (1, 1), (2, 2)},
    )
)
# a transposed matrix: wrong (off-diagonal entries of a nonsymmetric W)
_W = np.array([[1.0, 2.0], [-0.5, 3.0]])
_mat_t = _prim(lambda x: _W @ x, lambda ans, x: lambda g: _W @ g)
add(
    TrustCase(
        "transposed_matrix",
        "imprecise",
        lambda x: _mat_t(x) * 1.0,
        (np.array([0.4, -1.3]),),
        FAILED,
        wrong={(0, 1), (1, 0)},
    )
)
# a derivative right to 1e-11 relative (a series cut too early): imprecise
_rel11 = _prim(lambda x: np.exp(x), lambda ans, x: lambda g: g * np.exp(x) * (1 + 1e-11))
add(
    TrustCase(
        "exp_rule_off_by_1e-11",
        "imprecise",
        lambda x: _rel11(x) * 1.0,
        (np.array([0.2, 1.1]),),
        FAILED,
        wrong={(0, 0), (1, 1)},
        imprecise={(0, 0), (1, 1)},
    )
)

# ---------------------------------------------------------------- inconclusive, never vacuous


# f with noise of 1e-2 drawn from a generator seeded by the input's own bytes (a Monte
# Carlo objective keyed to its point): deterministic, yet erratic at every scale;
# nothing can be resolved, so nothing is verified, and the check says so
def _keyed_noise(x):
    seed = int.from_bytes(np.asarray(x, dtype=float).tobytes()[-8:], "little") % 2**32
    return 1e-2 * np.random.default_rng(seed).standard_normal(np.shape(x))


_noisy = _prim(lambda x: np.sin(x) + _keyed_noise(x), lambda ans, x: lambda g: g * np.cos(x))
add(
    TrustCase(
        "erratic_everywhere",
        "inconclusive",
        lambda x: _noisy(x) * 1.0,
        (np.array([0.3, 0.9, 1.4]),),
        INCONCLUSIVE,
    )
)
# f is NaN in one output: half the Jacobian unverifiable
add(
    TrustCase(
        "nan_output_row",
        "inconclusive",
        lambda x: anp.log(x),
        (np.array([1.0, -1.0]),),
        INCONCLUSIVE,
        warns=gx.NonFiniteWarning,
    )
)

# ---------------------------------------------------------------- fast mode counts all


# 1,200 inputs, every entry's rule 2x: auto picks fast mode (more than 1,000 inputs),
# group testing outgrows its budget, and the full check it falls back on finds them all
_double = _prim(lambda x: np.sin(x), lambda ans, x: lambda g: 2.0 * g * np.cos(x))
add(
    TrustCase(
        "fast_mode_1200_wrong",
        "fast mode",
        lambda x: _double(x) * 1.0,
        (np.linspace(0.1, 1.3, 1200),),
        FAILED,
        wrong={(i, i) for i in range(1200)},
        wrong_count=1200,
    )
)
# 100 inputs in fast mode with 60 wrong entries, max_named=10: names 10, counts 60
_sixty = _prim(
    lambda x: np.sin(x),
    lambda ans, x: lambda g: g * np.cos(x) * np.where(np.arange(x.size) < 60, 1.5, 1.0),
)
add(
    TrustCase(
        "fast_mode_names_10_of_60",
        "fast mode",
        lambda x: _sixty(x) * 1.0,
        (np.linspace(0.1, 1.3, 100),),
        FAILED,
        wrong={(i, i) for i in range(60)},
        wrong_count=60,
        kw={"mode": "fast", "max_named": 10},
    )
)

# ---------------------------------------------------------------- torch


class _SumOfSquares(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x**2).sum(dim=-1)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g[..., None]


# a torch.library op with a right backward and no forward rule: torch drops its
# tangent in forward mode without a word; the check names the missing rule and takes
# the tangent from the backward (no wrong JVP entries)
@torch.library.custom_op("gxtrust::scaled_sin", mutates_args=())
def _scaled_sin(x: torch.Tensor) -> torch.Tensor:
    return 3.0 * torch.sin(x)


@_scaled_sin.register_fake
def _(x):
    return torch.empty_like(x)


def _ss_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _ss_backward(ctx, g):
    (x,) = ctx.saved_tensors
    return 3.0 * g * torch.cos(x)


_scaled_sin.register_autograd(_ss_backward, setup_context=_ss_setup)
add(
    TrustCase(
        "torch_library_op_without_forward_rule",
        "forward rule",
        lambda x: _scaled_sin(x) + x,
        (torch.linspace(-1.0, 1.0, 5, dtype=torch.float64),),
        PASSED,
        note="gxtrust::scaled_sin",
    )
)


# a dropout model with reseed=0: every evaluation draws the same mask, so the model is
# checked, and a transposed weight block in its custom backward is found
class _LinearT(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, W):
        ctx.save_for_backward(x, W)
        return W @ x

    @staticmethod
    def backward(ctx, g):
        x, W = ctx.saved_tensors
        return W.T @ g, torch.outer(x, g)  # the weight gradient transposed


_Wd = torch.tensor([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6], [0.7, 0.2, 0.1]], dtype=torch.float64)
_xd = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)


def _dropout_wrong() -> set:
    """Row i kept by the mask (the one torch draws after manual_seed(0)): the true
    dy_i/dW[j, k] is x_k where j == i, the rule's x_j where k == i (columns 3j + k);
    they differ off the diagonal j == k == i (x has no zero)."""
    torch.manual_seed(0)
    kept = torch.nn.functional.dropout(torch.ones(3, dtype=torch.float64), 0.3, True) != 0
    return {
        (i, 3 * j + k)
        for i in range(3)
        if kept[i]
        for j in range(3)
        for k in range(3)
        if (j == i) != (k == i)
    }


add(
    TrustCase(
        "dropout_reseeded_transposed_block",
        "vacuous pass",
        lambda W: torch.nn.functional.dropout(_LinearT.apply(_xd, W), 0.3, True),
        (_Wd.clone(),),
        FAILED,
        wrong=_dropout_wrong(),
        kw={"reseed": 0},
    )
)
add(
    TrustCase(
        "dropout_reseeded_right",
        "vacuous pass",
        lambda W: torch.nn.functional.dropout(torch.tanh(W @ _xd), 0.3, True),
        (_Wd.clone(),),
        PASSED,
        kw={"reseed": 0},
    )
)
# native_layer_norm's mean and rstd: torch marks them non-differentiable; listed, not
# judged (they were 'analytic is zero, the function is not')
add(
    TrustCase(
        "torch_layer_norm_stats_not_judged",
        "torch",
        lambda x: torch.native_layer_norm(
            x, (4,), torch.ones(4, dtype=torch.float64), torch.zeros(4, dtype=torch.float64), 1e-5
        ),
        (torch.tensor([[0.3, -1.2, 0.8, 2.0], [1.0, 0.5, -0.4, 0.1]], dtype=torch.float64),),
        PASSED,
        not_checked={"y1", "y2"},
    )
)
# a sparse output is checked as its dense values
add(
    TrustCase(
        "torch_sparse_output",
        "torch",
        lambda x: (torch.sin(x) * 2).to_sparse(),
        (torch.tensor([0.3, -0.2, 1.1], dtype=torch.float64),),
        PASSED,
    )
)
# sgn's backward is a ZeroTensor: materialized, not a crash
add(
    TrustCase(
        "torch_sgn_zero_tensor",
        "torch",
        torch.sgn,
        (torch.tensor([0.3, -0.2, 1.1], dtype=torch.float64),),
        PASSED,
    )
)


# a probability at 1: f raises just above; one-sided differences from below
def _bernoulli_var(p):
    if (p < 0).any() or (p > 1).any():
        raise ValueError("p must be in [0, 1]")
    return p * (1 - p)


add(
    TrustCase(
        "domain_edge_probability_one",
        "torch",
        _bernoulli_var,
        (torch.tensor([0.3, 1.0, 0.0], dtype=torch.float64),),
        PASSED,
        note="edge of f's domain",
    )
)
# eigenvalues of a symmetric matrix through eigvals (complex): their Im parts are 0,
# the analytic ones round-off of ~1e-16: not wrong
_S = torch.tensor([[2.0, 0.3, -0.1], [0.3, 1.0, 0.4], [-0.1, 0.4, -0.5]], dtype=torch.float64)
add(
    TrustCase(
        "torch_eigvals_imaginary_round_off",
        "round-off",
        lambda a: torch.view_as_real(torch.linalg.eigvals(a)),
        (_S.clone(),),
        PASSED,
    )
)
# a nearly singular solve (condition ~4e6): the answer ~3e6, its derivative in A
# ~1e13, both computed with round-off far above eps: right, not wrong
_A_sing = np.array([[1.0, 1.0], [1.0, 1.0 + 1e-6]])
add(
    TrustCase(
        "nearly_singular_solve",
        "round-off",
        lambda A, b: anp.linalg.solve(A, b),
        (_A_sing.copy(), np.array([1.0, 4.0])),
        PASSED,
    )
)


# torch.triangular_solve with upper=True reads only A's upper triangle (f does not change
# with the lower one: those columns of the Jacobian are 0), yet its forward-mode rule
# gives the tangent of a full solve, -A^-1 dA X: nonzero for A[j, k] below the diagonal
# at rows i <= j (A^-1 is upper triangular). Reverse mode is right. Columns: 3j + k.
_At = torch.tensor([[3.5, -0.4, 0.9], [0.0, 2.8, 0.3], [0.0, 0.0, 3.1]], dtype=torch.float64)
_bt = torch.tensor([[0.6], [-1.2], [0.4]], dtype=torch.float64)
add(
    TrustCase(
        "torch_triangular_solve_forward_rule",
        "torch defect",
        lambda A: torch.triangular_solve(_bt, A, upper=True).solution,
        (_At.clone(),),
        FAILED,
        wrong={(i, 3 * j + k) for j, k in ((1, 0), (2, 0), (2, 1)) for i in range(j + 1)},
    )
)
