"""The classic gradient-checking APIs, faithful to their reference documents.

``compute_gradient`` (TensorFlow), ``verify_grad``, ``numeric_grad`` and
``abs_rel_err`` (Theano), in numpy + autograd. For entry-level diagnosis use
:func:`gradexplorer.check_grads`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as onp

from ..ad.jacobians import real_jacobian
from ..ad.operators import grad
from ..backends import autograd as _autograd
from ..core.calls import check_callable, select_argument
from ..core.outputs import output_layout
from ..errors import GradientError
from ..fd.jacobian import numeric_jacobian
from .problem import as_rng

_np = _autograd.np  # the classic APIs are autograd's (the seeds' semantics)

__all__ = [
    "compute_gradient",
    "compute_gradient_error",
    "verify_grad",
    "numeric_grad",
    "abs_rel_err",
]


def as_differentiable(x: Any, name: str) -> Any:
    """x validated as a float or complex array (a clear TypeError otherwise)."""
    select_argument(lambda v: v, x, 0, constants_ok=False, name=name)
    return x


_TYPE_EPS = {"float64": 1e-7, "float32": 3e-4, "float16": 1e-1}
_TYPE_TOL = {"float64": 1e-4, "float32": 1e-2, "float16": 5e-2}


def _valid_shape(s: Any) -> tuple:
    """x_shape as a tuple of non-negative ints, or a clear error."""
    if isinstance(s, (int, onp.integer)) and not isinstance(s, bool):
        s = (int(s),)
    if not isinstance(s, (tuple, list)) or not all(
        isinstance(d, (int, onp.integer)) and not isinstance(d, bool) and d >= 0 for d in s
    ):
        raise ValueError(
            f"x_shape must be a tuple of non-negative ints (one input) or a list of such tuples "
            f"(several inputs); got {s!r:.60}. For example x_shape=(3, 4) or [(3,), (2, 2)]."
        )
    return tuple(int(d) for d in s)


def _is_shape(s: Any) -> bool:
    return isinstance(s, tuple) or (
        isinstance(s, (list, onp.ndarray)) and all(isinstance(d, (int, onp.integer)) for d in s)
    )


def compute_gradient(
    f: Callable,
    x_shape: Any,
    x_init_value: Any = None,
    delta: float = 1e-3,
    *,
    y_shape: Any = None,
    extra_kwargs: dict | None = None,
    rng: Any = None,
):
    """Theoretical and numerical Jacobians in TensorFlow's layout.

    Each is 2-D with ``x_size`` rows and ``y_size`` columns (the transpose of
    gradexplorer's math layout). A complex side doubles its dimension in
    blocks: ``J[:m, :n] = dRe y/dRe x``, ``J[:m, n:] = dIm y/dRe x``,
    ``J[m:, :n] = dRe y/dIm x``, ``J[m:, n:] = dIm y/dIm x``. The numerical
    Jacobian uses central differences with step ``delta``.

    Parameters
    ----------
    f : callable
        ``f(x)`` or, when ``x_shape`` is a list of shapes, ``f(x1, x2, ...)``.
    x_shape : tuple or list of tuples
    x_init_value : array or list of arrays, optional
        The point; None draws standard normal values from ``rng``.
    delta : float
    y_shape : tuple, optional
        Checked against f's output (ValueError when it differs).
    extra_kwargs : dict, optional
        Keyword arguments held fixed.
    rng : Generator, RandomState or int, optional

    Returns
    -------
    (theoretical, numerical), or a list of such pairs for a list of shapes.

    Examples
    --------
    >>> import autograd.numpy as anp
    >>> t, n = compute_gradient(lambda x: anp.sum(x * x, axis=1), (2, 3), rng=0)
    >>> t.shape, bool(abs(t - n).max() < 1e-6)
    ((6, 2), True)
    """
    check_callable(f)
    several = (
        isinstance(x_shape, list)
        and all(_is_shape(s) for s in x_shape)
        and not all(isinstance(d, (int, onp.integer)) for d in x_shape)
    )
    shapes = [_valid_shape(s) for s in x_shape] if several else [_valid_shape(x_shape)]
    try:
        delta = float(delta)
    except (TypeError, ValueError):
        raise TypeError(f"delta must be a positive float; got {delta!r:.40}.") from None
    if not (onp.isfinite(delta) and delta > 0):
        raise ValueError(
            f"delta must be a positive finite float (the central-difference step); got {delta!r}."
        )
    gen = as_rng(rng)
    if x_init_value is None:
        xs = [gen.standard_normal(s) for s in shapes]
    else:
        xs = list(x_init_value) if several else [x_init_value]
        if len(xs) != len(shapes):
            raise ValueError(
                f"x_init_value holds {len(xs)} arrays but x_shape lists {len(shapes)} shapes."
            )
    xs = [
        as_differentiable(onp.asarray(x) if not onp.isscalar(x) else x, f"x{k}")
        for k, x in enumerate(xs)
    ]
    for k, (x, s) in enumerate(zip(xs, shapes)):
        if onp.shape(x) != s:
            raise ValueError(
                f"x_init_value{f'[{k}]' if several else ''} has shape {onp.shape(x)} but "
                f"x_shape says {s}; pass matching shapes."
            )
    kwargs = dict(extra_kwargs or {})
    y = f(*xs, **kwargs)
    if y_shape is not None and tuple(onp.shape(y)) != tuple(y_shape):
        raise ValueError(
            f"y_shape is {tuple(y_shape)} but f returned shape {onp.shape(y)}; pass the "
            "output's real shape (or leave y_shape out)."
        )
    pairs = []
    for i in range(len(xs)):
        theoretical = real_jacobian(f, i)(*xs, **kwargs)
        r = numeric_jacobian(f, *xs, wrt=i, method="central", step=delta, **kwargs)
        numerical = onp.reshape(r.jacobian, theoretical.shape)
        pairs.append((onp.asarray(theoretical).T, numerical.T))
    return pairs if several else pairs[0]


def compute_gradient_error(
    f: Callable, x_shape: Any, x_init_value: Any = None, delta: float = 1e-3, **kwargs: Any
) -> float:
    """Max absolute difference between the theoretical and numerical Jacobians.

    >>> import autograd.numpy as anp
    >>> compute_gradient_error(anp.sin, (3,), rng=0) < 1e-6
    True
    """
    out = compute_gradient(f, x_shape, x_init_value, delta, **kwargs)
    pairs = out if isinstance(out, list) else [out]
    return float(max(onp.max(onp.abs(t - n), initial=0.0) for t, n in pairs))


def abs_rel_err(a: Any, b: Any) -> tuple[Any, Any]:
    """``(|a - b|, |a - b| / max(|a| + |b|, 1e-8))``.

    >>> abs_rel_err(1.0, 1.5)
    (0.5, 0.2)
    """
    abs_err = abs(onp.asarray(a) - onp.asarray(b))
    rel_err = abs_err / onp.maximum(abs(onp.asarray(a)) + abs(onp.asarray(b)), 1e-8)
    if onp.ndim(abs_err) == 0:
        return float(abs_err), float(rel_err)
    return abs_err, rel_err


class numeric_grad:  # noqa: N801 - the reference API's name
    """Forward-difference gradient of a scalar function at a point.

    ``f(*pt)`` must return a scalar; ``pt`` is an array or a list of arrays.
    ``gf`` is the list of gradient arrays, one per element of ``pt``.

    >>> import numpy as np
    >>> ng = numeric_grad(lambda x: (x**2).sum(), [np.array([1.0, 2.0])])
    >>> np.round(ng.gf[0], 5)
    array([2., 4.])
    """

    def __init__(self, f: Callable, pt: Any, eps: float | None = None):
        check_callable(f)
        pts = list(pt) if isinstance(pt, (list, tuple)) else [pt]
        pts = [
            as_differentiable(onp.asarray(p, dtype=onp.asarray(p).dtype), f"pt[{k}]")
            for k, p in enumerate(pts)
        ]
        pts = [onp.array(p) for p in pts]  # private copies: perturbed in place below
        if eps is None:
            eps = max(_TYPE_EPS.get(str(p.dtype), 1e-7) for p in pts)
        self.eps = eps
        f0 = self._scalar(f, pts)
        self.gf = []
        for p in pts:
            g = onp.zeros(p.shape, dtype=float)
            flat, gflat = p.reshape(-1), g.reshape(-1)
            for k in range(flat.size):
                old = flat[k]
                flat[k] = old + eps
                gflat[k] = (self._scalar(f, pts) - f0) / eps
                flat[k] = old
            self.gf.append(g)

    @staticmethod
    def _scalar(f, pts) -> float:
        y = f(*pts)
        if onp.size(y) != 1:
            raise ValueError(
                f"numeric_grad needs f to return a scalar; got shape {onp.shape(y)}. "
                "Project the output first (e.g. sum(y * random weights))."
            )
        return float(onp.asarray(y).reshape(()))

    def abs_rel_errors(self, g_pt: Sequence) -> list[tuple]:
        """``[(abs_err, rel_err), ...]`` per array of ``g_pt`` against ``gf``."""
        if len(g_pt) != len(self.gf):
            raise ValueError(
                f"g_pt has {len(g_pt)} arrays but the numeric gradient has {len(self.gf)}."
            )
        out = []
        for k, (a, b) in enumerate(zip(g_pt, self.gf)):
            if onp.shape(a) != b.shape:
                raise ValueError(
                    f"g_pt[{k}] has shape {onp.shape(a)} but the numeric gradient has "
                    f"shape {b.shape}."
                )
            ab, rel = abs_rel_err(onp.asarray(a, dtype=float), b)
            out.append((onp.asarray(ab), onp.asarray(rel)))
        return out

    def max_err(self, g_pt: Sequence, abs_tol: float, rel_tol: float):
        """``(arg, pos, abs_err, rel_err)`` where ``min(abs/abs_tol, rel/rel_tol)`` peaks.

        A peak above 1 means both tolerances are exceeded there.
        """
        best = (-1.0, 0, 0, 0.0, 0.0)
        for k, (ab, rel) in enumerate(self.abs_rel_errors(g_pt)):
            viol = onp.minimum(ab / abs_tol, rel / rel_tol)
            pos = int(onp.argmax(viol))
            if float(viol.flat[pos]) > best[0]:
                best = (float(viol.flat[pos]), k, pos, float(ab.flat[pos]), float(rel.flat[pos]))
        return best[1], best[2], best[3], best[4]


def verify_grad(
    fun: Callable,
    pt: Any,
    n_tests: int = 2,
    rng: Any = None,
    eps: float | None = None,
    abs_tol: float | None = None,
    rel_tol: float | None = None,
) -> None:
    """Compare autograd's gradient of a random projection of ``fun`` with FD.

    The output(s) are projected to a scalar with random weights (each output
    its own, so several outputs work too), ``n_tests`` times. Raises
    :class:`GradientError` where both tolerances are exceeded.

    >>> import numpy as np, autograd.numpy as anp
    >>> verify_grad(anp.tanh, [np.array([[2.0, 3, 4], [-1, 3.3, 9.9]])], rng=np.random)
    """
    check_callable(fun, "fun")
    if isinstance(n_tests, bool) or not isinstance(n_tests, (int, onp.integer)) or n_tests < 1:
        raise ValueError(
            f"n_tests must be an int >= 1 (how many random projections to compare); got "
            f"{n_tests!r}."
        )
    pts = list(pt) if isinstance(pt, (list, tuple)) else [pt]
    if not pts:
        raise ValueError(
            "pt is an empty list: verify_grad needs the point, one array per input of fun "
            "(e.g. pt=[x] or pt=[x, y])."
        )
    pts = [as_differentiable(onp.array(p), f"pt[{k}]") for k, p in enumerate(pts)]
    for k, p in enumerate(pts):
        bad = onp.flatnonzero(~onp.isfinite(onp.ravel(p)))
        if bad.size:
            raise ValueError(
                f"pt[{k}] holds {bad.size} non-finite value(s) (first at flat index "
                f"{int(bad[0])}: {onp.ravel(p)[bad[0]]}); gradients there are meaningless. "
                "Pass a finite point."
            )
    gen = as_rng(rng)
    dtype = str(onp.result_type(*pts))
    abs_tol = _TYPE_TOL.get(dtype, 1e-4) if abs_tol is None else abs_tol
    rel_tol = _TYPE_TOL.get(dtype, 1e-4) if rel_tol is None else rel_tol
    outs = fun(*pts)
    output_layout(outs, getattr(fun, "__name__", "fun"))  # None, a string ...: a clear error
    outs_l = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    for _ in range(n_tests):
        weights = [gen.random(onp.shape(o)) + 0.5 for o in outs_l]

        def cost(*xs, weights=weights):
            y = fun(*xs)
            ys = list(y) if isinstance(y, (list, tuple)) else [y]
            return sum(_np.sum(yk * wk) for yk, wk in zip(ys, weights))

        analytic = grad(cost, tuple(range(len(pts))), disconnected_inputs="ignore")(*pts)
        num = numeric_grad(cost, pts, eps)
        arg, pos, a_err, r_err = num.max_err(list(analytic), abs_tol, rel_tol)
        if a_err > abs_tol and r_err > rel_tol:
            raise GradientError(
                arg,
                pos,
                onp.shape(pts[arg]),
                float(onp.ravel(analytic[arg])[pos]),
                float(num.gf[arg].ravel()[pos]),
                a_err,
                r_err,
                abs_tol,
                rel_tol,
            )
