"""Log-likelihood, simulation and kriging of tricov.geostat against independent SciPy code."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg as sla
from scipy.spatial.distance import cdist
from scipy.special import gamma, kv

import tricov as tc
from tricov.geostat import (
    Kernel,
    great_circle,
    jittered_grid,
    loglik,
    matern,
    morton_order,
    predict,
    simulate,
)

RNG = np.random.default_rng(7)


def _cov_reference(family: str, params: tuple, r: np.ndarray, nugget: float = 0.0) -> np.ndarray:
    """The covariance matrix from its formula (independent of tricov's kernels)."""
    s2, beta = params[0], params[1]
    t = r / beta
    if family == "matern":
        nu = params[2]
        with np.errstate(invalid="ignore"):
            c = s2 * 2 ** (1 - nu) / gamma(nu) * t**nu * kv(nu, t)
        c[t == 0] = s2
    elif family == "exponential":
        c = s2 * np.exp(-t)
    elif family == "sqexp":
        c = s2 * np.exp(-0.5 * t * t)
    else:
        c = s2 * np.exp(-(t ** params[2]))
    return c + nugget * np.eye(len(r)) if nugget else c


def _loglik_reference(c: np.ndarray, z: np.ndarray) -> float:
    factor = sla.cho_factor(c, lower=True)
    quad = z @ sla.cho_solve(factor, z)
    logdet = 2 * np.sum(np.log(np.diag(factor[0])))
    return -0.5 * quad - 0.5 * logdet - len(z) / 2 * math.log(2 * math.pi)


CASES = [
    ("matern", (1.0, 0.1, 0.5), 0.0, 2, 3),
    ("matern", (1.3, 0.07, 0.83), 0.0, 2, 257),
    ("matern", (0.7, 0.2, 1.5), 0.05, 2, 64),
    ("matern", (2.0, 0.05, 3.7), 0.0, 3, 100),
    ("matern", (0.5, 0.3, 2.5), 1e-3, 1, 33),
    ("exponential", (1.1, 0.2), 0.0, 3, 128),
    ("sqexp", (0.9, 0.05), 1e-4, 2, 512),
    ("powexp", (1.4, 0.15, 1.3), 0.0, 2, 70),
]


@pytest.mark.parametrize(("family", "params", "nugget", "d", "tile"), CASES)
@pytest.mark.parametrize("n", [1, 2, 311])
def test_loglik_matches_scipy_cholesky(family: str, params: tuple, nugget: float, d: int,
                                       tile: int, n: int) -> None:
    x = jittered_grid(n, d, RNG)
    z = RNG.normal(size=n)
    ref = _loglik_reference(_cov_reference(family, params, cdist(x, x), nugget), z)
    got = loglik(x, z, params, kernel=family, nugget=nugget, tile_size=tile, workers=2)
    assert got == pytest.approx(ref, rel=1e-10)
    # a Kernel object gives the same number
    k = Kernel(family, params, nugget)
    assert loglik(x, z, kernel=k, tile_size=tile) == pytest.approx(got, rel=1e-13)


def test_loglik_great_circle() -> None:
    lon, lat = RNG.uniform(-20, 20, 150), RNG.uniform(30, 60, 150)
    x = np.stack([lon, lat], 1)
    z = RNG.normal(size=150)
    r = great_circle(x, x)
    ref = _loglik_reference(_cov_reference("matern", (1.0, 400.0, 1.2), r), z)
    got = loglik(x, z, (1.0, 400.0, 1.2), metric="great_circle")
    assert got == pytest.approx(ref, rel=1e-10)


def test_loglik_in_any_order_and_layout() -> None:
    x = jittered_grid(200, 2, RNG)
    z = RNG.normal(size=200)
    perm = RNG.permutation(200)
    a = loglik(x, z, (1.0, 0.1, 0.8))
    assert loglik(x[perm], z[perm], (1.0, 0.1, 0.8)) == pytest.approx(a, rel=1e-11)
    assert loglik(np.asfortranarray(x), z[:, None], (1.0, 0.1, 0.8)) == pytest.approx(a,
                                                                                     rel=1e-14)
    assert loglik(x.astype(np.float32).astype(np.float64), z, (1.0, 0.1, 0.8)) == \
        pytest.approx(a, rel=1e-4)


# sklearn's Matern(length_scale=l, nu) is exp(-sqrt(2 nu) d / l)-based: l = sqrt(2 nu) beta;
# RBF(l) is exp(-d^2 / (2 l^2)): l = beta. ConstantKernel carries sigma2, alpha the nugget.
@pytest.mark.parametrize(("family", "params", "nugget"), [
    ("matern", (1.3, 0.12, 0.5), 0.0),
    ("matern", (0.8, 0.09, 1.5), 1e-6),
    ("matern", (2.1, 0.07, 2.5), 1e-4),
    ("sqexp", (1.0, 0.08), 1e-3),
])
def test_loglik_matches_sklearn(family: str, params: tuple, nugget: float) -> None:
    gp_mod = pytest.importorskip("sklearn.gaussian_process")
    kernels = pytest.importorskip("sklearn.gaussian_process.kernels")
    x = jittered_grid(250, 2, RNG)
    z = RNG.normal(size=250)
    if family == "matern":
        base = kernels.Matern(length_scale=math.sqrt(2 * params[2]) * params[1], nu=params[2])
    else:
        base = kernels.RBF(length_scale=params[1])
    gp = gp_mod.GaussianProcessRegressor(kernels.ConstantKernel(params[0]) * base,
                                         alpha=max(nugget, 1e-300), optimizer=None,
                                         normalize_y=False)
    gp.fit(x, z)
    ref = gp.log_marginal_likelihood_value_
    assert loglik(x, z, params, kernel=family, nugget=nugget) == pytest.approx(ref, rel=1e-10)


def test_loglik_tlr_matches_dense() -> None:
    pytest.importorskip("tricov.tlr")
    x, z = simulate(1200, (1.0, 0.1, 0.7), seed=5)
    for params, nugget in (((1.0, 0.1, 0.7), 0.0), ((1.4, 0.08, 1.2), 0.01)):
        dense = loglik(x, z, params, nugget=nugget)
        tlr = loglik(x, z, params, nugget=nugget, method="tlr", tol=1e-10, tile_size=200)
        assert tlr == pytest.approx(dense, rel=1e-7)


# ---------------------------------------------------------------- bad input


def test_loglik_bad_input() -> None:
    x = jittered_grid(20, 2, RNG)
    z = RNG.normal(size=20)
    p = (1.0, 0.1, 0.5)
    bad_z = z.copy()
    bad_z[4] = np.nan
    with pytest.raises(ValueError, match="z has 1 non-finite .* index 4"):
        loglik(x, bad_z, p)
    bad_x = x.copy()
    bad_x[7, 1] = np.inf
    with pytest.raises(ValueError, match="non-finite coordinates .* row 7"):
        loglik(bad_x, z, p)
    dup = x.copy()
    dup[11] = dup[3]
    with pytest.raises(ValueError, match=r"duplicate points \(rows 3 and 11\)"):
        loglik(dup, z, p)
    assert math.isfinite(loglik(dup, z, p, nugget=0.1))
    with pytest.raises(ValueError, match="vector of 20 values"):
        loglik(x, z[:-1], p)
    with pytest.raises(ValueError, match="vector of 20 values"):
        loglik(x, np.ones((20, 2)), p)
    with pytest.raises(ValueError, match="1, 2 or 3 coordinates"):
        loglik(np.ones((20, 4)), z, p)
    with pytest.raises(ValueError, match=r"\(n, d\) array"):
        loglik(np.ones((20, 2, 1)), z, p)
    with pytest.raises(ValueError, match="at least one point"):
        loglik(np.ones((0, 2)), [], p)
    with pytest.raises(TypeError, match="real numbers"):
        loglik(x.astype(complex), z, p)
    with pytest.raises(ValueError, match="beta must be positive"):
        loglik(x, z, (1.0, 0.0, 0.5))
    with pytest.raises(ValueError, match="nu must be positive"):
        loglik(x, z, (1.0, 0.1, -1.0))
    with pytest.raises(ValueError, match="method must be one of"):
        loglik(x, z, p, method="hodlr")
    with pytest.raises(ValueError, match="latitude 95.0 outside"):
        loglik(np.array([[0.0, 95.0]]), [1.0], p, metric="great_circle")
    with pytest.raises(ValueError, match=r"\(n, 2\) \(longitude, latitude\)"):
        loglik(np.ones((3, 3)), np.ones(3), p, metric="great_circle")


def test_loglik_not_positive_definite() -> None:
    x = jittered_grid(300, 2, RNG)
    z = RNG.normal(size=300)
    with pytest.raises(tc.NotPositiveDefiniteError):
        loglik(x, z, (1.0, 2.0), kernel="sqexp")
    assert math.isfinite(loglik(x, z, (1.0, 2.0), kernel="sqexp", nugget=1e-2))


def test_tlr_missing_is_a_clear_import_error() -> None:
    try:
        import tricov.tlr  # noqa: F401
    except ImportError:
        x = jittered_grid(10, 2, RNG)
        with pytest.raises(ImportError, match="method='tlr' needs the tile low-rank module"):
            loglik(x, np.ones(10), (1.0, 0.1, 0.5), method="tlr")
    else:
        pytest.skip("tricov.tlr is installed")


# ---------------------------------------------------------------- simulation


def test_simulate_reproducible_and_sorted() -> None:
    x1, z1 = simulate(500, (1.0, 0.1, 0.5), seed=11)
    x2, z2 = simulate(500, (1.0, 0.1, 0.5), seed=11)
    x3, z3 = simulate(500, (1.0, 0.1, 0.5), seed=12)
    assert np.array_equal(x1, x2) and np.array_equal(z1, z2)
    assert not np.array_equal(z1, z3)
    assert x1.shape == (500, 2) and z1.shape == (500,)
    assert np.array_equal(morton_order(x1), np.arange(500))
    assert (x1 > 0).all() and (x1 < 1).all()
    assert cdist(x1, x1)[np.triu_indices(500, 1)].min() > 0.2 / 23 - 1e-12
    x4, _ = simulate(64, (1.0, 0.2), kernel="exponential", dim=3, seed=1)
    assert x4.shape == (64, 3)


@pytest.mark.parametrize(("family", "params", "nugget"), [
    ("matern", (2.0, 0.1, 0.8), 0.0), ("powexp", (0.5, 0.2, 1.5), 0.1)])
def test_simulate_has_the_right_covariance(family: str, params: tuple, nugget: float) -> None:
    """Whitened by an independent Cholesky factor of C, the field is N(0, I): the sum of
    squares is chi-square(n) (mean n, sd sqrt(2n)), tested at 5 sd with a fixed seed."""
    n = 800
    x, z = simulate(n, params, kernel=family, nugget=nugget, seed=3)
    c = _cov_reference(family, params, cdist(x, x), nugget)
    w = sla.solve_triangular(np.linalg.cholesky(c), z, lower=True)
    assert abs(w @ w - n) < 5 * math.sqrt(2 * n)
    assert abs(w.mean()) < 5 / math.sqrt(n)


def test_simulate_user_locations_and_errors() -> None:
    loc = RNG.uniform(size=(50, 2))
    x, z = simulate(None, (1.0, 0.1, 0.5), locations=loc, seed=0)
    assert np.array_equal(x, loc) and z.shape == (50,)
    xg, _ = simulate(100, (1.0, 1000.0, 0.5), metric="great_circle", seed=0)
    assert (np.abs(xg[:, 0]) <= 180).all() and (np.abs(xg[:, 1]) <= 90).all()
    with pytest.raises(ValueError, match="n = 40 but locations holds 50"):
        simulate(40, (1.0, 0.1, 0.5), locations=loc)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        simulate(0, (1.0, 0.1, 0.5))
    with pytest.raises(ValueError, match="dim must be 1, 2 or 3"):
        simulate(10, (1.0, 0.1, 0.5), dim=4)
    with pytest.raises(ValueError, match="duplicate points"):
        simulate(None, (1.0, 0.1, 0.5), locations=np.vstack([loc, loc[:1]]))
    with pytest.raises(tc.NotPositiveDefiniteError, match="needs a nugget"):
        simulate(400, (1.0, 3.0), kernel="sqexp")
    with pytest.raises(ValueError, match="method must be"):
        simulate(10, (1.0, 0.1, 0.5), method="fft")


def test_simulate_tlr_matches_dense() -> None:
    """The Cholesky factor is unique: the TLR factor's draw is the dense one, to its accuracy."""
    pytest.importorskip("tricov.tlr")
    x1, z1 = simulate(700, (1.0, 0.1, 0.8), seed=6)
    x2, z2 = simulate(700, (1.0, 0.1, 0.8), seed=6, method="tlr", tol=1e-11, tile_size=100)
    assert np.array_equal(x1, x2)
    np.testing.assert_allclose(z2, z1, atol=1e-6)
    # at user locations (not Morton-sorted) the draw comes back in their order: whitened by
    # the covariance in that order it is N(0, I) (chi-square test at 5 sd, fixed seed)
    loc = x1[::-1].copy()
    _, z3 = simulate(None, (1.0, 0.1, 0.8), locations=loc, seed=6, method="tlr", tol=1e-11,
                     tile_size=100)
    c = _cov_reference("matern", (1.0, 0.1, 0.8), cdist(loc, loc))
    w = sla.solve_triangular(np.linalg.cholesky(c), z3, lower=True)
    assert abs(w @ w - 700) < 5 * math.sqrt(2 * 700)


# ---------------------------------------------------------------- kriging


@pytest.mark.parametrize("nugget", [0.0, 0.05])
def test_predict_matches_direct_formula(nugget: float) -> None:
    # data of its own (not the module's stream, whose state depends on which tests ran before
    # in this process): the atol of 1e-12 is close to the rounding of some draws at nugget 0
    rng = np.random.default_rng(268)
    x = jittered_grid(300, 2, rng)
    z = rng.normal(size=300)
    new = rng.uniform(size=(77, 2))
    k = matern(1.2, 0.15, 1.3, nugget=nugget)
    c = _cov_reference("matern", k.params, cdist(x, x), nugget)
    c0 = _cov_reference("matern", k.params, cdist(x, new))
    mean_ref = c0.T @ np.linalg.solve(c, z)
    var_ref = 1.2 - np.einsum("ij,ij->j", c0, np.linalg.solve(c, c0))
    mean, var = predict(x, z, new, kernel=k, chunk=10)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(var, var_ref, rtol=1e-9, atol=1e-12)
    only = predict(x, z, new, k.params, nugget=nugget, return_variance=False)
    np.testing.assert_allclose(only, mean, rtol=1e-12, atol=1e-13)  # other chunk sizes


def test_predict_at_observed_locations_interpolates() -> None:
    x = jittered_grid(120, 2, RNG)
    z = RNG.normal(size=120)
    mean, var = predict(x, z, x[:30], (1.0, 0.1, 0.5))
    np.testing.assert_allclose(mean, z[:30], rtol=1e-9, atol=1e-9)
    assert np.all(var < 1e-9)
    with pytest.raises(ValueError, match="new_locations have 3 coordinates"):
        predict(x, z, np.ones((2, 3)), (1.0, 0.1, 0.5))
    with pytest.raises(ValueError, match="chunk"):
        predict(x, z, x, (1.0, 0.1, 0.5), chunk=0)


def test_predict_tlr_matches_dense() -> None:
    pytest.importorskip("tricov.tlr")
    x, z = simulate(900, (1.0, 0.1, 0.5), seed=2)
    new = RNG.uniform(size=(40, 2))
    m1, v1 = predict(x, z, new, (1.0, 0.1, 0.5))
    m2, v2 = predict(x, z, new, (1.0, 0.1, 0.5), method="tlr", tol=1e-10, tile_size=150)
    np.testing.assert_allclose(m2, m1, atol=1e-6)
    np.testing.assert_allclose(v2, v1, atol=1e-6)


def test_device_errors():
    x = np.random.default_rng(0).random((10, 2))
    with pytest.raises(ValueError, match="device"):
        loglik(x, np.ones(10), (1.0, 0.1, 0.5), device="tpu")
