"""Kernels and distances of tricov.geostat against direct formulas and SciPy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from scipy.special import gamma, gammaln, kv

from tricov.geostat import (
    Kernel,
    _bessel,
    covariance,
    euclidean,
    exponential,
    great_circle,
    make_kernel,
    matern,
    morton_order,
    powexp,
    sqexp,
)
from tricov.geostat.distance import array_namespace

EPS = np.finfo(np.float64).eps
RNG = np.random.default_rng(20261121)


def _matern_scipy(t: np.ndarray, nu: float) -> np.ndarray:
    """The direct formula with SciPy's kv, where it neither overflows nor underflows."""
    return 2.0 ** (1.0 - nu) / gamma(nu) * t**nu * kv(nu, t)


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b) / np.abs(b)))


# ---------------------------------------------------------------- the scaled Matérn function

ARGS = np.concatenate([np.logspace(-6, np.log10(40.0), 1500), np.linspace(0.9, 2.2, 301)])
CLOSED = {0.5: lambda t: np.exp(-t), 1.5: lambda t: (1 + t) * np.exp(-t),
          2.5: lambda t: (1 + t + t * t / 3) * np.exp(-t)}


@pytest.mark.parametrize("nu", sorted(CLOSED))
@pytest.mark.parametrize("exact", [False, True])
def test_general_path_matches_closed_forms(nu: float, exact: bool) -> None:
    t = np.concatenate([np.exp(RNG.uniform(np.log(1e-25), np.log(500.0), 20000)), ARGS])
    ref = CLOSED[nu](t)
    got = _bessel.matern_scaled(t, nu, exact=exact)
    ok = ref > 1e-290
    assert _rel(got[ok], ref[ok]) < 32 * EPS


@pytest.mark.parametrize("nu", [0.05, 0.3, 0.8, 1.0, 1.3, 2.0, 3.7, 7.2, 12.5])
def test_general_path_matches_scipy_kv(nu: float) -> None:
    ref = _matern_scipy(ARGS, nu)
    # SciPy's kv (AMOS) is itself accurate to about 1e-13 near t = 2, where its methods switch
    assert _rel(_bessel.matern_scaled(ARGS, nu), ref) < 1e-12
    assert _rel(_bessel.matern_scaled(ARGS, nu, exact=True), ref) < 1e-12


@pytest.mark.parametrize("nu", [0.07, 0.45, 0.55, 0.999, 1.2, 1.9, 2.6, 4.4, 9.3, 33.0])
def test_table_matches_series_and_fraction(nu: float) -> None:
    t = np.concatenate([np.exp(RNG.uniform(np.log(8e-31), np.log(512.0), 30000)),
                        2.0 ** np.arange(-100.0, 9.0, 0.25)])     # every piece boundary
    exact = _bessel.matern_scaled(t, nu, exact=True)
    fast = _bessel.matern_scaled(t, nu)
    ok = exact > 1e-250
    assert _rel(fast[ok], exact[ok]) < 64 * EPS


@pytest.mark.parametrize("nu", [3.5, 10.0, 30.5, 60.5, 100.0, 250.0])
def test_large_nu_small_t_against_series(nu: float) -> None:
    """M_nu(t) = 1 - t^2 / (4 (nu-1)) + t^4 / (32 (nu-1)(nu-2)) + O(t^6 + t^(2 nu)): below
    1e-17 for t <= 1e-3 and nu >= 3.5."""
    t = np.logspace(-9, -3, 200)
    series = 1 - t**2 / (4 * (nu - 1)) + t**4 / (32 * (nu - 1) * (nu - 2))
    got = _bessel.matern_scaled(t, nu)
    # beyond nu = 60 the upward recurrence runs per element, adding up to ~eps/4 per step
    assert _rel(got, series) < (8 + max(0.0, nu - 60) / 4) * EPS
    # where SciPy overflows (kv = inf, t^nu = 0) the result is still right
    assert np.all(np.isfinite(got))


@pytest.mark.parametrize("nu", [0.01, 0.2, 0.7, 1.0, 1.6, 5.5])
def test_tiny_and_zero_arguments(nu: float) -> None:
    t = np.array([0.0, 1e-320, 1e-300, 1e-200, 5e-31, 8e-31])
    got = _bessel.matern_scaled(t, nu)
    if nu < 1:
        # 1 - Gamma(1-nu)/Gamma(1+nu) (t/2)^(2 nu), all other terms below 1e-60
        c = np.exp(gammaln(1 - nu) - gammaln(1 + nu) + 2 * nu * np.log(np.maximum(t, 1e-323) / 2))
        ref = np.where(t == 0, 1.0, 1.0 - c)
    else:
        ref = np.ones_like(t)
    np.testing.assert_allclose(got, ref, rtol=4 * EPS, atol=0)


@pytest.mark.parametrize("nu", [0.3, 1.7, 4.2, 80.0])
def test_large_arguments_and_monotone(nu: float) -> None:
    t = np.concatenate([np.linspace(0, 60, 3001), [400.0, 511.0, 512.0, 700.0, 1e4, 1e300,
                                                     np.inf]])
    got = _bessel.matern_scaled(t, nu)
    assert np.all(got >= 0) and np.all(got <= 1) and got[0] == 1.0
    assert np.all(np.diff(got) <= 0), "M_nu must decrease"
    assert got[-1] == 0.0 and got[-2] == 0.0
    big = t[-7:-5]
    ref = _matern_scipy(big, nu)
    np.testing.assert_allclose(got[-7:-5], ref, rtol=1e-12)


def test_nan_propagates() -> None:
    got = _bessel.matern_scaled(np.array([0.5, np.nan, 1.0]), 0.8)
    assert np.isnan(got[1]) and np.isfinite(got[[0, 2]]).all()


def test_inplace_on_strided_views() -> None:
    big = np.asfortranarray(RNG.uniform(0, 5, (40, 30)))
    ref = _matern_scipy(big[3:31:2, 5:25], 1.3)
    view = big[3:31:2, 5:25]
    _bessel.matern_scaled_inplace(view, 1.3)
    assert _rel(big[3:31:2, 5:25], ref) < 1e-12
    with pytest.raises(ValueError, match="1-D or 2-D"):
        _bessel.matern_scaled_inplace(np.zeros((2, 2, 2)), 1.3)


def test_gamma_terms() -> None:
    for mu in (-0.5, -0.31, -1e-3, 0.0, 2e-8, 0.27, 0.5):
        g1, g2, gp, gm = _bessel._gamma_terms(mu)
        assert gp == pytest.approx(gamma(1 + mu), rel=4 * EPS)
        assert gm == pytest.approx(gamma(1 - mu), rel=4 * EPS)
        assert g2 == pytest.approx((1 / gamma(1 - mu) + 1 / gamma(1 + mu)) / 2, rel=4 * EPS)
        if abs(mu) > 0.1:
            ref = (1 / gamma(1 - mu) - 1 / gamma(1 + mu)) / (2 * mu)
            assert g1 == pytest.approx(ref, rel=64 * EPS)
        else:
            assert g1 == pytest.approx(-0.5772156649015329, rel=0.02)


# ---------------------------------------------------------------- distances


@pytest.mark.parametrize("d", [1, 2, 3])
def test_euclidean_vs_cdist(d: int) -> None:
    x, y = RNG.normal(size=(37, d)), RNG.normal(size=(23, d))
    np.testing.assert_allclose(euclidean(x, y), cdist(x, y), rtol=4 * EPS, atol=0)
    out = np.full((50, 40), -7.0, order="F")
    euclidean(x, y, out=out[5:42, 10:33])
    np.testing.assert_allclose(out[5:42, 10:33], cdist(x, y), rtol=4 * EPS)
    assert (out[:5] == -7).all() and (out[:, :10] == -7).all()


def test_great_circle_known_values() -> None:
    # LAX (33 57'N, 118 24'W) to JFK (40 38'N, 73 47'W): 0.623585 rad (Williams' formulary)
    lax = np.array([[-(118 + 24 / 60), 33 + 57 / 60]])
    jfk = np.array([[-(73 + 47 / 60), 40 + 38 / 60]])
    assert great_circle(lax, jfk, radius=1.0)[0, 0] == pytest.approx(0.623585, abs=5e-7)
    assert great_circle(lax, jfk)[0, 0] == pytest.approx(0.623585 * 6371.0, rel=1e-6)
    pts = np.array([[0.0, 0.0], [90.0, 0.0], [180.0, 0.0], [0.0, 90.0], [17.0, -90.0]])
    d = great_circle(pts, pts, radius=2.0)
    assert d[0, 1] == pytest.approx(np.pi, rel=4 * EPS)          # quarter circle, R = 2
    assert d[0, 2] == pytest.approx(2 * np.pi, rel=4 * EPS)      # antipodes
    assert d[3, 4] == pytest.approx(2 * np.pi, rel=4 * EPS)      # pole to pole
    assert d[0, 3] == pytest.approx(np.pi, rel=4 * EPS)
    np.testing.assert_array_equal(np.diag(d), 0.0)


def test_great_circle_vs_chord_formula() -> None:
    def unit(p: np.ndarray) -> np.ndarray:
        lon, lat = np.radians(p[:, 0]), np.radians(p[:, 1])
        return np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], 1)

    x = np.stack([RNG.uniform(-180, 180, 60), RNG.uniform(-89, 89, 60)], 1)
    y = np.stack([RNG.uniform(-180, 180, 45), RNG.uniform(-89, 89, 45)], 1)
    chord = cdist(unit(x), unit(y))
    ref = 2 * 6371.0 * np.arcsin(chord / 2)
    got = great_circle(x, y)
    far = ref < 0.9 * np.pi * 6371.0       # both forms are ill-conditioned near antipodes
    np.testing.assert_allclose(got[far], ref[far], rtol=1e-12)
    # tiny distances keep their relative accuracy (the point of the haversine form): against
    # the local flat-Earth distance, whose relative error is of the order of the angle, 3e-9
    near = x[:5] + np.array([1e-7, -1.5e-7])
    step = near - x[:5]                     # exact (Sterbenz), unlike the step added
    lat = np.radians(x[:5, 1] + step[:, 1] / 2)
    flat = 6371.0 * np.radians(np.hypot(step[:, 0] * np.cos(lat), step[:, 1]))
    np.testing.assert_allclose(np.diag(great_circle(x[:5], near)), flat, rtol=1e-8)


def test_array_namespace_is_numpy_for_numpy() -> None:
    assert array_namespace(np.zeros(2), None) is np


# ---------------------------------------------------------------- kernels


def _points(n: int, d: int) -> np.ndarray:
    return RNG.uniform(size=(n, d))


@pytest.mark.parametrize("d", [1, 2, 3])
def test_kernel_families_vs_formulas(d: int) -> None:
    x, y = _points(41, d), _points(29, d)
    r = cdist(x, y)
    cases = [
        (matern(1.7, 0.23, 0.5), 1.7 * np.exp(-r / 0.23)),
        (matern(1.7, 0.23, 1.5), 1.7 * (1 + r / 0.23) * np.exp(-r / 0.23)),
        (matern(1.7, 0.23, 2.5), 1.7 * (1 + r / 0.23 + (r / 0.23) ** 2 / 3) * np.exp(-r / 0.23)),
        (matern(0.6, 0.11, 0.83), 0.6 * _matern_scipy(r / 0.11, 0.83)),
        (matern(2.0, 0.4, 3.3), 2.0 * _matern_scipy(r / 0.4, 3.3)),
        (exponential(1.2, 0.3), 1.2 * np.exp(-r / 0.3)),
        (sqexp(0.9, 0.2), 0.9 * np.exp(-0.5 * (r / 0.2) ** 2)),
        (powexp(1.1, 0.25, 1.4), 1.1 * np.exp(-((r / 0.25) ** 1.4))),
    ]
    for k, ref in cases:
        got = k(x, y)
        assert got.shape == (41, 29) and got.flags.c_contiguous
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0, err_msg=str(k))
        got_f = k(x, y, order="F")
        assert got_f.flags.f_contiguous
        np.testing.assert_allclose(got_f, got, rtol=4 * EPS, atol=0)


def test_kernel_symmetric_block_and_nugget() -> None:
    x = _points(30, 2)
    k = matern(1.5, 0.2, 1.1, nugget=0.25)
    same = k(x)
    np.testing.assert_allclose(np.diag(same), 1.75, rtol=4 * EPS)
    assert np.array_equal(k(x, x), same)
    np.testing.assert_allclose(same, same.T, rtol=4 * EPS)
    # the same memory seen through two views is the same set
    assert np.array_equal(k(x[3:9], x[3:9]), same[3:9, 3:9])
    # another set, even at the same coordinates: no nugget (a cross-covariance)
    cross = k(x, x.copy())
    np.testing.assert_allclose(np.diag(cross), 1.5, rtol=4 * EPS)
    assert np.array_equal(cross - np.diag(np.diag(cross)), same - np.diag(np.diag(same)))
    # duplicate coordinates at different indices do not share the nugget
    dup = np.vstack([x[:3], x[:1]])
    c = k(dup)
    assert c[0, 3] == pytest.approx(1.5) and c[3, 3] == pytest.approx(1.75)


def test_kernel_great_circle() -> None:
    pts = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    k = exponential(2.0, 500.0, metric="great_circle")
    d = great_circle(pts, pts)
    np.testing.assert_allclose(k(pts), 2.0 * np.exp(-d / 500.0), rtol=4 * EPS)
    k1 = exponential(2.0, 0.1, metric="great_circle", radius=1.0)
    np.testing.assert_allclose(k1(pts), 2.0 * np.exp(-great_circle(pts, pts, radius=1.0) / 0.1),
                               rtol=4 * EPS)


def test_kernel_parameters_by_name_and_replace() -> None:
    k = Kernel("Matern", {"beta": 0.2, "nu": 1.0, "sigma2": 3.0})
    assert k.family == "matern" and k.params == (3.0, 0.2, 1.0)
    assert k.param_dict() == {"sigma2": 3.0, "beta": 0.2, "nu": 1.0, "nugget": 0.0}
    k2 = k.replace(nu=2.0, nugget=0.1)
    assert k2.params == (3.0, 0.2, 2.0) and k2.nugget == 0.1 and k.params[2] == 1.0
    assert Kernel("gaussian", (1, 2)).family == "sqexp"
    assert make_kernel("exp", [1.0, 0.5]).family == "exponential"
    assert make_kernel(k, None) is k
    # lists are taken as float64 arrays
    np.testing.assert_allclose(k([[0.0, 0.0]], [[0.2, 0.0]]), [[3.0 * kv(1.0, 1.0)]],  # nu = 1
                               rtol=1e-14)


@pytest.mark.parametrize(("args", "err", "match"), [
    (("matern", (1.0, -0.1, 0.5)), ValueError, "beta must be positive"),
    (("matern", (0.0, 0.1, 0.5)), ValueError, "sigma2 must be positive"),
    (("matern", (1.0, 0.1, 0.0)), ValueError, "nu must be positive"),
    (("matern", (1.0, 0.1, np.nan)), ValueError, "nu must be finite"),
    (("matern", (1.0, 0.1)), ValueError, "takes 3 parameters"),
    (("matern", {"sigma2": 1.0, "beta": 0.1}), ValueError, "missing"),
    (("matern", (1.0, True, 0.5)), TypeError, "beta must be a real number"),
    (("powexp", (1.0, 0.1, 2.5)), ValueError, "alpha must be in"),
    (("bessel", (1.0, 0.1)), ValueError, "kernel must be one of"),
    (("matern", (1.0, 0.1, 0.5), -1.0), ValueError, "nugget must be >= 0"),
    (("matern", (1.0, 0.1, 0.5), 0.0, "manhattan"), ValueError, "metric must be one of"),
    (("matern", (1.0, 0.1, 0.5), 0.0, "great_circle", 0.0), ValueError, "radius"),
])
def test_kernel_bad_parameters(args: tuple, err: type, match: str) -> None:
    with pytest.raises(err, match=match):
        Kernel(*args)


def test_kernel_bad_shapes() -> None:
    k = matern()
    with pytest.raises(ValueError, match="same number of columns"):
        k(np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="shape"):
        k(np.zeros((3, 2)), np.zeros((4, 2)), out=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="order must be"):
        k(np.zeros((3, 2)), order="K")
    with pytest.raises(ValueError, match="params are required"):
        make_kernel("matern", None)
    with pytest.raises(ValueError, match="not both"):
        make_kernel(k, (1.0, 0.1, 0.5))


# ---------------------------------------------------------------- assembly and ordering


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("tile", [1, 7, 64, 500])
def test_covariance_tiles_equal_one_block(workers: int, tile: int) -> None:
    x, y = _points(67, 2), _points(45, 2)
    k = matern(1.3, 0.15, 0.9, nugget=0.05)
    full = k(x)
    got = covariance(k, x, tile_size=tile, workers=workers)
    assert got.flags.f_contiguous
    np.testing.assert_array_equal(got, full)
    low = np.full((67, 67), np.nan, order="F")
    covariance(k, x, lower=True, out=low, tile_size=tile, workers=workers)
    np.testing.assert_array_equal(np.tril(low), np.tril(full))
    np.testing.assert_array_equal(covariance(k, x, y, tile_size=tile, workers=workers), k(x, y))


def test_covariance_errors() -> None:
    x = _points(5, 2)
    with pytest.raises(ValueError, match="lower=True needs y=None"):
        covariance(matern(), x, x.copy(), lower=True)
    with pytest.raises(ValueError, match="out must be"):
        covariance(matern(), x, out=np.zeros((5, 4)))
    with pytest.raises(ValueError, match="tile_size"):
        covariance(matern(), x, tile_size=0)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_morton_order(d: int) -> None:
    x = RNG.uniform(size=(2000, d))
    order = morton_order(x)
    assert np.array_equal(np.sort(order), np.arange(2000))
    step_sorted = np.linalg.norm(np.diff(x[order], axis=0), axis=1).mean()
    step_random = np.linalg.norm(np.diff(x, axis=0), axis=1).mean()
    assert step_sorted < 0.35 * step_random
    if d == 1:
        # sorted by grid cell (2^21 cells over the range; points sharing a cell keep their input
        # order), which is the sort by coordinate up to the cell width
        cells = np.floor((x[:, 0] - x[:, 0].min()) * ((2.0**21 - 1) / np.ptp(x[:, 0])))
        assert np.array_equal(order, np.argsort(cells, kind="stable"))
    grid = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=float)
    assert morton_order(grid).tolist() == [0, 2, 1, 3]   # lowest bit from the first axis
    assert morton_order(np.zeros((0, 2))).size == 0


def test_kernel_nu_near_integer_and_half_integer_is_continuous() -> None:
    t = np.linspace(0.01, 5, 200)
    for nu in (1.0, 1.5, 2.0, 2.5, 3.0):
        lo = _bessel.matern_scaled(t, nu - 1e-9)
        hi = _bessel.matern_scaled(t, nu + 1e-9)
        mid = matern(1.0, 1.0, nu).correlate(t.copy())
        np.testing.assert_allclose(lo, mid, rtol=1e-8)
        np.testing.assert_allclose(hi, mid, rtol=1e-8)
    assert math.isclose(float(_bessel.matern_scaled(np.array([1.0]), 1.0)[0]),
                        float(kv(1.0, 1.0)), rel_tol=1e-14)


def test_large_blocks_fill_in_parallel_identically(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = _points(600, 2), _points(500, 2)
    k = matern(1.1, 0.2, 0.7, nugget=0.3)
    monkeypatch.setenv("TRICOV_NUM_THREADS", "1")
    serial = [k(x), k(x, y), k(x, y, order="F")]
    monkeypatch.setenv("TRICOV_NUM_THREADS", "2")
    parallel = [k(x), k(x, y), k(x, y, order="F")]
    for a, b in zip(serial, parallel, strict=True):
        assert a.flags.c_contiguous == b.flags.c_contiguous
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.diag(parallel[0]), 1.4, rtol=4 * EPS)


# ---------------------------------------------------------------- element-parallel forms


@pytest.mark.parametrize("nu", [0.3, 0.51, 1.7, 2.5001, 3.7, 7.2])
def test_table_row_matches_the_element_path(nu: float) -> None:
    rng = np.random.default_rng(int(nu * 1000))
    t = np.concatenate([np.exp(rng.uniform(np.log(1e-40), np.log(700.0), 5000)),
                        [0.0, 2.0 ** -101, 2.0 ** -99, 511.9, 512.0, 600.0, np.inf, np.nan]])
    mode, tab = _bessel.tables(nu)
    got = t.copy()
    _bessel.table_row(got, *tab, mode)
    ref = _bessel.matern_scaled(t, nu)  # the per-element table loops
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_allclose(got[ok], ref[ok], rtol=4 * EPS, atol=0)


def test_exp_neg_within_an_ulp_of_numpy() -> None:
    rng = np.random.default_rng(745)
    t = np.concatenate([rng.uniform(0, 50, 20000), rng.uniform(700, 760, 500),
                        [0.0, 1e-300, 708.0, 708.5, 745.0, 746.0, np.inf, np.nan, -1.0, -700.0,
                         -708.5, -710.0, -np.inf]])
    got = np.empty_like(t)
    _bessel.exp_neg(t, got)
    with np.errstate(over="ignore"):
        ref = np.exp(-t)
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(got[~finite], ref[~finite])  # inf and NaN alike
    assert np.all(np.abs(got[finite] - ref[finite]) <= np.spacing(ref[finite]))
