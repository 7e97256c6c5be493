"""The teaching views (issue 13): the landscape and the linear map.

Every assertion reads what was drawn (the artists' data), against derivatives
from the gallery's hand-derived Jacobians / Hessians or from gx.
"""

import autograd.numpy as anp
import numpy as onp
import pytest
from matplotlib.text import Text

import gradexplorer as gx
from gradexplorer import gallery
from gradexplorer.display.heatmap import figure_png
from gradexplorer.display.landscape import plot_landscape, update_landscape
from gradexplorer.display.linear_map import plot_linear_map, update_linear_map

# ---------------------------------------------------------------- helpers


def _head_tail(ann):
    return onp.array(ann.xy, dtype=float) - onp.array(ann.xyann, dtype=float)


def _unit(v):
    return onp.asarray(v, dtype=float) / onp.linalg.norm(v)


def _parallel(a, b, tol=1e-9):
    """Same line (either sign)."""
    return abs(abs(float(_unit(a) @ _unit(b))) - 1) < tol


def _line_slope(line):
    xs, ys = (onp.asarray(d, dtype=float) for d in line.get_data())
    return (ys[-1] - ys[0]) / (xs[-1] - xs[0])


def _readable(fig):
    """Every visible text at least 8 pt; the figure at most 8.6 in wide, 6 in tall."""
    figure_png(fig)  # lay it out: legends and ticks exist only once drawn
    small = [
        (t.get_text(), t.get_fontsize())
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and t.get_fontsize() < 8
    ]
    assert not small, small
    w, h = fig.get_size_inches()
    assert w <= 8.6 and h <= 6.0


def _artist_ids(art):
    return {k: id(a) for k, a in art.artists.items()}


def _children(fig):
    return [len(ax.get_children()) for ax in fig.axes]


# ---------------------------------------------------------------- landscape: R^2 -> R


def _quadratic_form(x):
    A = onp.array([[3.0, 1.0], [1.0, 2.0]])
    return gallery.get("quadratic_form").f(x, A)


PLANES = [
    ("rosenbrock", lambda e: e.f, lambda e: e.args()[0][:2]),
    ("logsumexp", lambda e: e.f, lambda e: e.args()[0][:2]),
    ("l2_norm", lambda e: e.f, lambda e: e.args(3)[0][:2]),
    ("quadratic_form", lambda e: _quadratic_form, lambda e: e.args()[0][:2]),
    ("saddle", lambda e: lambda x: x[0] ** 2 - x[1] ** 2, lambda e: onp.array([0.6, 0.3])),
]


@pytest.mark.parametrize(("name", "get_f", "get_x"), PLANES, ids=[p[0] for p in PLANES])
def test_plane_draws_gradient_hessian_and_newton(name, get_f, get_x):
    e = gallery.EXAMPLES.get(name)
    f, x = get_f(e), get_x(e)
    art = plot_landscape(f, x)
    A = art.artists
    g, H = gx.grad(f)(x), gx.hessian(f)(x)
    if e is not None and e.hessian is not None and name != "quadratic_form":
        onp.testing.assert_allclose(H, e.hessian(x), rtol=1e-10, atol=1e-10)
    onp.testing.assert_allclose(art.gradient, g, rtol=1e-12)
    onp.testing.assert_allclose(art.hessian, H, rtol=1e-10, atol=1e-12)
    # the arrow starts at x and points along ∇f
    onp.testing.assert_allclose(A["arrow"].xyann, x)
    assert _unit(_head_tail(A["arrow"])) @ _unit(g) == pytest.approx(1.0, abs=1e-12)
    onp.testing.assert_allclose(A["point"].get_xydata()[0], x)
    lam, vec = onp.linalg.eigh(H)
    onp.testing.assert_allclose(art.eigenvalues, lam, rtol=1e-10, atol=1e-12 * abs(lam).max())
    for k in range(2):  # the eigen-direction segments follow the eigenvectors, through x
        seg = A[f"eigen{k}"].get_xydata()
        assert _parallel(seg[1] - seg[0], vec[:, k])
        onp.testing.assert_allclose(seg.mean(axis=0), x, atol=1e-12)
        shown = f"{lam[k]:.3g}" if abs(lam[k]) > 1e-9 * abs(lam).max() else "0 (flat)"
        assert shown in A[f"eigen{k}_label"].get_text()
    ell = A["ellipse"]
    tol = 1e-9 * abs(lam).max()
    definite = onp.all(lam > tol) or onp.all(lam < -tol)
    assert ell.get_visible() == definite
    verdict = A["verdict"].get_text()
    if definite:
        # the level set of ½ sᵀHs: axes along the eigenvectors, lengths ∝ 1/√|λ|
        onp.testing.assert_allclose(ell.center, x)
        angle = onp.radians(ell.angle)
        assert _parallel([onp.cos(angle), onp.sin(angle)], vec[:, 0])
        assert ell.width / ell.height == pytest.approx(onp.sqrt(lam[1] / lam[0]), rel=1e-9)
    elif lam[0] < -tol and lam[1] > tol:
        assert "saddle" in verdict
    else:
        assert "singular" in verdict
    if onp.all(lam > tol):
        newton = x - onp.linalg.solve(H, g)
        onp.testing.assert_allclose(A["newton"].get_xydata()[0], newton, rtol=1e-10)
        assert A["newton_arrow"].get_visible() and "Newton" in verdict
    else:
        assert art.newton is None and not A["newton_arrow"].get_visible()
    _readable(art.fig)


def _taylor_orders(art, f):
    """f minus its first / second-order models at t and 2t: the error ratios are
    2^2 and 2^3 (to first / second order) when the models are the Taylor ones."""
    A = art.artists
    ts, phi = (onp.asarray(d) for d in A["slice_f"].get_data())
    tangent = onp.asarray(A["slice_tangent"].get_ydata())
    quad = onp.asarray(A["slice_quadratic"].get_ydata())
    i0 = int(onp.argmin(abs(ts)))
    assert ts[i0] == pytest.approx(0.0, abs=1e-12)
    assert tangent[i0] == pytest.approx(art.value) and quad[i0] == pytest.approx(art.value)
    e1 = [abs(phi[i0 + k] - tangent[i0 + k]) for k in (1, 2)]
    e2 = [abs(phi[i0 + k] - quad[i0 + k]) for k in (1, 2)]
    if e1[1] > 1e-10 * (1 + abs(art.value)):  # f is not linear along d (|x| is, radially)
        assert e1[1] / e1[0] == pytest.approx(4.0, rel=0.1)
        assert e2[1] < 0.01 * e1[1] and (e2[1] < 1e-12 or 5.0 < e2[1] / e2[0] < 11.0)
    else:
        assert max(e2) <= 1e-10 * (1 + abs(art.value))
    d = art.direction
    assert art.curvature == pytest.approx(d @ gx.hessian(f)(art.x) @ d, rel=1e-9)


@pytest.mark.parametrize(("name", "get_f", "get_x"), PLANES, ids=[p[0] for p in PLANES])
def test_plane_slice_shows_taylor_models(name, get_f, get_x):
    e = gallery.EXAMPLES.get(name)
    f, x = get_f(e), get_x(e)
    art = plot_landscape(f, x)
    assert _parallel(art.direction, art.gradient) and art.direction @ art.gradient < 0
    path = art.artists["slice_path"].get_xydata()
    assert _parallel(path[1] - path[0], art.direction)
    _taylor_orders(art, f)


SLICES = ["rosenbrock", "logsumexp", "l2_norm", "sum_squares"]


@pytest.mark.parametrize("name", SLICES)
def test_slice_of_a_larger_function(name):
    e = gallery.get(name)
    (x,) = e.args()
    d = onp.linspace(1.0, 2.0, x.size).reshape(x.shape)
    art = plot_landscape(e.f, x, direction=d)
    assert art.kind == "slice" and len(art.fig.axes) == 1 and art.hessian is None
    onp.testing.assert_allclose(art.direction, _unit(d.ravel()))
    onp.testing.assert_allclose(art.gradient, onp.ravel(e.jacobian(x)[0]), rtol=1e-10, atol=1e-12)
    f = lambda v: e.f(v.reshape(x.shape))  # noqa: E731
    art.x = x.ravel()
    _taylor_orders(art, f)
    assert "the given direction" in art.fig.axes[0].get_title()
    _readable(art.fig)


# ---------------------------------------------------------------- landscape: R -> R

CURVES = [("sin", 0.3), ("sin", 2.0), ("x_exp_x", -0.5), ("x_exp_x", 1.2)]


@pytest.mark.parametrize(("name", "x"), CURVES)
def test_curve_tangent_and_secants(name, x):
    e = gallery.get(name)
    art = plot_landscape(e.f, x)
    A, h = art.artists, art.step
    exact = float(e.jacobian(onp.array([x]))[0][0, 0])
    assert art.kind == "curve" and art.slope == pytest.approx(exact, rel=1e-12)
    assert _line_slope(A["tangent"]) == pytest.approx(exact, rel=1e-9)
    f = lambda t: float(e.f(onp.array(t)))  # noqa: E731
    forward = (f(x + h) - f(x)) / h
    central = (f(x + h) - f(x - h)) / (2 * h)
    assert _line_slope(A["forward"]) == pytest.approx(forward, rel=1e-9)
    assert _line_slope(A["central"]) == pytest.approx(central, rel=1e-9)
    onp.testing.assert_allclose(A["forward_points"].get_xdata(), [x, x + h])
    onp.testing.assert_allclose(A["central_points"].get_xdata(), [x - h, x + h])
    # the geometry of the V: central leans off the tangent far less than forward
    assert abs(central - exact) < abs(forward - exact)
    texts = [t.get_text() for t in A["legend"].get_texts()]
    assert f"{forward - exact:+.2e}" in texts[2] and f"{central - exact:+.2e}" in texts[3]
    onp.testing.assert_allclose(A["v_step"].get_xdata(), [h, h])
    _readable(art.fig)


def test_curve_step_is_the_given_one():
    art = plot_landscape(anp.sin, 1.0, step=0.05, span=2.0)
    assert art.step == 0.05 and art.box == (-1.0, 3.0)
    assert update_landscape(art, anp.sin, 1.5, step=0.01)
    assert art.step == 0.01 and _line_slope(art.artists["tangent"]) == pytest.approx(onp.cos(1.5))


# ---------------------------------------------------------------- landscape: updates


UPDATES = [
    ("plane", lambda x: x[0] ** 2 + 3 * x[1] ** 2 + x[0] * x[1], [0.5, 0.4], [0.3, -0.2]),
    ("saddle", lambda x: x[0] ** 2 - x[1] ** 2, [0.6, 0.3], [0.2, 0.5]),
    ("curve", anp.sin, 1.0, 0.7),
    ("slice", lambda x: anp.sum(x**4), onp.linspace(0.5, 1, 5), onp.linspace(1, 0.2, 5)),
]


@pytest.mark.parametrize(("kind", "f", "x", "x2"), UPDATES, ids=[u[0] for u in UPDATES])
def test_update_landscape_moves_the_same_artists(kind, f, x, x2):
    x, x2 = onp.asarray(x, dtype=float), onp.asarray(x2, dtype=float)
    art = plot_landscape(f, x)
    figure_png(art.fig)
    ids, children = _artist_ids(art), _children(art.fig)
    assert update_landscape(art, f, x2)
    figure_png(art.fig)
    assert _artist_ids(art) == ids and _children(art.fig) == children
    fresh = plot_landscape(f, x2, span=art.span)
    onp.testing.assert_allclose(art.gradient, fresh.gradient)
    for key in ("point", "slice_f", "slice_quadratic", "forward_points", "central_points"):
        if key in art.artists:
            onp.testing.assert_allclose(
                art.artists[key].get_xydata(), fresh.artists[key].get_xydata(), atol=1e-12
            )
    for key in ("tangent", "forward", "central"):  # drawn over the kept interval
        if key in art.artists:
            assert _line_slope(art.artists[key]) == pytest.approx(_line_slope(fresh.artists[key]))
    if kind in ("plane", "saddle"):
        assert _unit(_head_tail(art.artists["arrow"])) @ _unit(art.gradient) == pytest.approx(1)
        assert art.artists["ellipse"].center == pytest.approx(tuple(x2))


def test_update_landscape_refuses_what_it_cannot_move():
    f = lambda x: anp.sum(x**2)  # noqa: E731
    art = plot_landscape(f, onp.array([1.0, 0.5]))
    assert not update_landscape(art, f, onp.array([50.0, 0.0]))  # left the box
    assert not update_landscape(art, f, onp.array([1.0, 0.5, 0.1]))  # another dimension
    assert not update_landscape(art, lambda x: anp.sum(x**2), onp.array([1.0, 0.5]))  # another f


# ---------------------------------------------------------------- linear map: real


def _gallery_J(e, args, rows, cols):
    return onp.asarray(e.jacobian(*args)[0], dtype=float).reshape(-1, args[0].size * (
        2 if onp.iscomplexobj(args[0]) else 1))[onp.ix_(rows, cols)]  # fmt: skip


MAPS = [
    ("polar", {}, (0, 1), (0, 1)),
    ("softmax", {"coords": (1, 3), "outputs": (0, 4)}, (1, 3), (0, 4)),
    ("cumsum", {"coords": (4, 0), "outputs": (4, 2)}, (4, 0), (4, 2)),
    ("x_exp_x", {"coords": (2, 3), "outputs": (3, 2)}, (2, 3), (3, 2)),
]


@pytest.mark.parametrize(("name", "kw", "cols", "rows"), MAPS, ids=[m[0] for m in MAPS])
def test_linear_map_ellipse_is_radius_times_singular_values(name, kw, cols, rows):
    e = gallery.get(name)
    args = e.args()
    art = plot_linear_map(e.f, args[0], radius=0.2, **kw)
    A, r = art.artists, 0.2
    J = _gallery_J(e, args, list(rows), list(cols))
    onp.testing.assert_allclose(art.jacobian, J, rtol=1e-10, atol=1e-12)
    s = onp.linalg.svd(J, compute_uv=False)
    onp.testing.assert_allclose(art.singular_values, s, rtol=1e-10, atol=1e-14)
    ell = A["ellipse"]
    onp.testing.assert_allclose([ell.width / 2, ell.height / 2], r * s, rtol=1e-10, atol=1e-14)
    onp.testing.assert_allclose(art.ellipse_axes, r * s, rtol=1e-10, atol=1e-14)
    # area of the ellipse / area of the circle = |det J|
    ratio = (onp.pi * ell.width * ell.height / 4) / (onp.pi * r**2)
    assert ratio == pytest.approx(abs(onp.linalg.det(J)), rel=1e-9, abs=1e-14)
    assert f"{abs(art.det):.3g}" in A["headline"].get_text()
    # σ₁u₁ is the image of v₁, and the ellipse's first axis lies along it
    tip = _head_tail(A["y_sv0"])
    onp.testing.assert_allclose(tip, r * J @ art.v[:, 0], atol=1e-12)
    angle = onp.radians(ell.angle)
    assert _parallel([onp.cos(angle), onp.sin(angle)], art.u[:, 0])
    # each marked point: f(point) exactly, and J's image on the ellipse
    y = onp.ravel(e.f(*args))
    xr = onp.ravel(args[0])
    for k, deg in enumerate((0, 90, 180, 270)):
        p = xr.copy()
        p[list(cols)] += r * onp.array([onp.cos(onp.radians(deg)), onp.sin(onp.radians(deg))])
        onp.testing.assert_allclose(A[f"mark{k}"].get_xydata()[0], p[list(cols)])
        true = onp.ravel(e.f(p.reshape(args[0].shape)))[list(rows)]
        onp.testing.assert_allclose(A[f"true{k}"].get_xydata()[0], true, atol=1e-12)
        lin = y[list(rows)] + J @ (p - xr)[list(cols)]
        onp.testing.assert_allclose(A[f"lin{k}"].get_xydata()[0], lin, atol=1e-12)
    assert art.cr_residual is None
    for ax in art.fig.axes:
        assert ax.get_aspect() == 1.0
    _readable(art.fig)


def _signed_area(pts):
    x, y = onp.asarray(pts).T
    return 0.5 * float(x @ onp.roll(y, -1) - y @ onp.roll(x, -1))


def test_negative_determinant_flips_the_marked_points():
    A = onp.array([[0.0, 1.0], [1.0, 0.0]])  # a reflection
    art = plot_linear_map(lambda x: A @ x, onp.array([1.0, 2.0]))
    assert art.det == pytest.approx(-1.0)
    assert "orientation flips" in art.artists["headline"].get_text()
    marks = [art.artists[f"mark{k}"].get_xydata()[0] for k in range(4)]
    images = [art.artists[f"true{k}"].get_xydata()[0] for k in range(4)]
    assert _signed_area(marks) > 0 > _signed_area(images)
    _readable(art.fig)


# ---------------------------------------------------------------- linear map: complex


COMPLEX = [
    ("z**2", lambda z: z**2, 1.0 + 0.5j, True),
    ("exp", anp.exp, 0.3 - 0.7j, True),
    ("z*conj(z)", lambda z: z * anp.conj(z), 1.0 + 0.5j, False),
    ("z+conj(z)/2", lambda z: z + 0.5 * anp.conj(z), 1.0 + 0.5j, False),
]


@pytest.mark.parametrize(("name", "f", "z", "holo"), COMPLEX, ids=[c[0] for c in COMPLEX])
def test_cauchy_riemann_circle_or_ellipse(name, f, z, holo):
    art = plot_linear_map(f, z)
    b = gx.complex_blocks(f, onp.array([z]))
    assert art.holomorphic == holo
    assert art.cr_residual == pytest.approx(float(b.cr_residual[0, 0]), abs=1e-12)
    a, c = art.ellipse_axes
    words = art.artists["headline"].get_text()
    if holo:
        # J = [[a, -b], [b, a]]: a rotation and a scaling, so the circle stays a circle
        assert a == pytest.approx(c, rel=1e-9)
        assert abs(b.dz[0, 0]) * art.radius == pytest.approx(a, rel=1e-9)
        assert "circle → circle" in words
    else:
        assert a > c * (1 + 1e-3)
        assert "not holomorphic" in words
    ax_in = art.fig.axes[0]
    assert (ax_in.get_xlabel(), ax_in.get_ylabel()) == ("Re z", "Im z")
    _readable(art.fig)


@pytest.mark.parametrize("name", ["cube_holomorphic", "exp_times_z", "conj", "z_abs2"])
def test_complex_gallery_entries(name):
    e = gallery.get(name)
    (z,) = e.args()
    art = plot_linear_map(e.f, z, coords=1, outputs=1)
    n = z.size
    assert art.coords == (1, 1 + n) and art.outputs == (1, 1 + n)
    assert art.holomorphic == e.holomorphic
    J = _gallery_J(e, (z,), [1, 1 + n], [1, 1 + n])
    onp.testing.assert_allclose(art.jacobian, J, rtol=1e-10, atol=1e-12)
    assert art.artists["ellipse"].width / 2 == pytest.approx(art.radius * art.singular_values[0])


# ---------------------------------------------------------------- linear map: updates


def test_update_linear_map_moves_the_same_artists():
    e = gallery.get("polar")
    (x,) = e.args()
    art = plot_linear_map(e.f, x)
    figure_png(art.fig)
    ids, children = _artist_ids(art), _children(art.fig)
    x2 = x + onp.array([0.4, 0.9])
    assert update_linear_map(art, e.f, x2)
    figure_png(art.fig)
    assert _artist_ids(art) == ids and _children(art.fig) == children
    fresh = plot_linear_map(e.f, x2, radius=art.radius)
    onp.testing.assert_allclose(art.singular_values, fresh.singular_values)
    for key in ("circle", "image", "true0", "lin2", "mark1"):
        onp.testing.assert_allclose(
            art.artists[key].get_xydata(), fresh.artists[key].get_xydata(), atol=1e-12
        )
    assert art.artists["ellipse"].center == pytest.approx(tuple(onp.ravel(e.f(x2))))
    assert not update_linear_map(art, e.f, x2, coords=(1, 0))
    assert not update_linear_map(art, lambda p: e.f(p), x2)
    assert not update_linear_map(art, e.f, onp.ones(3))


def test_update_linear_map_complex_stays_a_circle():
    f = lambda z: z**3  # noqa: E731
    art = plot_linear_map(f, 1.0 + 1.0j)
    ids = _artist_ids(art)
    assert update_linear_map(art, f, 0.5 - 0.2j)
    assert _artist_ids(art) == ids and art.holomorphic
    assert art.ellipse_axes[0] == pytest.approx(art.radius * 3 * abs(0.5 - 0.2j) ** 2)


# ---------------------------------------------------------------- rendering and errors


def test_repr_png_renders_both_views():
    for art in (plot_landscape(anp.sin, 0.5), plot_linear_map(lambda z: z**2, 1j + 1)):
        assert art._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"


BAD = [
    (plot_landscape, (anp.sin, onp.ones(3)), {}, TypeError, r"shape \(3,\).*f\(x\)\[0\]"),
    (plot_landscape, (anp.sin, 1 + 1j), {}, TypeError, "complex.*plot_linear_map"),
    (plot_landscape, (anp.sum, onp.ones(2)), {"direction": [1, 0, 0]}, ValueError, "2 entries"),
    (plot_landscape, (anp.sum, onp.ones(2)), {"direction": [0, 0]}, ValueError, "nonzero"),
    (plot_landscape, (anp.sin, 1.0), {"step": -1}, ValueError, "positive.*got -1"),
    (plot_landscape, (anp.sin, 1.0), {"span": 0}, ValueError, "positive.*got 0"),
    (plot_landscape, (anp.sin, onp.array([])), {}, ValueError, "non-empty"),
    (plot_landscape, (anp.sin, onp.nan), {}, ValueError, "finite point"),
    (plot_landscape, ("sin", 1.0), {}, TypeError, "function f first"),
    (plot_linear_map, (anp.sum, onp.ones(2)), {}, ValueError, "two real output.*plot_landscape"),
    (plot_linear_map, (anp.sin, 1.0), {}, ValueError, "two real input.*complex one"),
    (plot_linear_map, (anp.sin, onp.ones(2)), {"coords": (0, 5)}, ValueError, r"range\(2\).*got"),
    (plot_linear_map, (anp.sin, onp.ones(3)), {"outputs": (1, 1)}, ValueError, "different"),
    (plot_linear_map, (anp.sin, onp.ones(3) + 0j), {"coords": 3}, ValueError, r"range\(3\)"),
    (plot_linear_map, (lambda x: (x, x), onp.ones(2)), {}, TypeError, "one array"),
    (plot_linear_map, (anp.sin, onp.ones(2)), {"radius": -1.0}, ValueError, "positive"),
]


@pytest.mark.parametrize(("fn", "args", "kw", "exc", "match"), BAD)
def test_bad_inputs_say_what_to_do(fn, args, kw, exc, match):
    with pytest.raises(exc, match=match):
        fn(*args, **kw)
