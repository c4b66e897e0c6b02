"""GPU tests of tricov.geostat: the Matérn kernel on CuPy arrays against the CPU path, and the
log-likelihood, kriging and fit with ``device="gpu"`` against their CPU results."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tricov.geostat import Kernel, _bessel, fit, jittered_grid, loglik, matern, predict, simulate

pytestmark = pytest.mark.gpu

EPS = np.finfo(np.float64).eps


@pytest.fixture
def cp():
    return pytest.importorskip("cupy")


def _arguments() -> np.ndarray:
    """Scaled distances over every branch: 0, below 2^-100, the whole table, beyond 512."""
    rng = np.random.default_rng(3)
    t = np.concatenate([[0.0, 2.0**-110, 2.0**-100, 1e-20, 0.5, 1.0, 1.25, 1.2500001, 2.0, 511.9,
                         512.0, 600.0, 740.0, 1e4, np.inf],
                        10.0 ** rng.uniform(-30, 2.7, 4000)])
    return t


@pytest.mark.parametrize("nu", [0.1, 0.3, 0.8, 1.0, 1.3, 2.0, 3.7, 7.2, 30.5, 61.3])
@pytest.mark.parametrize("exact", [False, True])
def test_matern_matches_the_cpu_path(cp, nu, exact):
    from tricov.geostat import _bessel_cuda

    t = _arguments()
    ref = _bessel.matern_scaled(t, nu, exact=exact)
    got = _bessel_cuda.matern_scaled_inplace(cp.asarray(t), nu, exact=exact).get()
    # the same method in the same order; libm and CUDA's exp/pow differ by an ulp or two,
    # which the upward recurrence (large nu) and the continued fraction carry a few times over
    np.testing.assert_allclose(got, ref, rtol=64 * EPS, atol=0)
    assert np.isnan(_bessel_cuda.matern_scaled_inplace(cp.asarray([np.nan]), nu).get()).all()


def test_matern_on_a_strided_tile(cp):
    rng = np.random.default_rng(1)
    r = rng.uniform(0, 3, (70, 50))
    full = cp.asfortranarray(cp.asarray(r))
    tile = full[5:38, 7:41]
    k = matern(1.7, 0.4, 1.3)
    k.correlate(tile, cp)
    ref = r.copy()
    ref[5:38, 7:41] = _bessel.matern_scaled(r[5:38, 7:41] / 0.4, 1.3)
    np.testing.assert_allclose(full.get(), ref, rtol=16 * EPS)
    # a C-ordered block and a 1-D vector
    v = cp.asarray(r[0])
    k.correlate(v, cp)
    np.testing.assert_allclose(v.get(), _bessel.matern_scaled(r[0] / 0.4, 1.3), rtol=16 * EPS)


FAMILIES = [matern(1.3, 0.12, 0.5), matern(1.0, 0.2, 1.5), matern(0.7, 0.05, 2.5),
            matern(1.1, 0.3, 0.8), matern(1.0, 0.1, 61.3), Kernel("exponential", (2.0, 0.3)),
            Kernel("sqexp", (1.0, 0.15)), Kernel("powexp", (0.9, 0.2, 1.4))]


@pytest.mark.parametrize("kernel", FAMILIES, ids=lambda k: f"{k.family}{k.params}")
@pytest.mark.parametrize("dim", [1, 2, 3, "sphere"])
def test_kernel_blocks_match_the_cpu_path(cp, kernel, dim):
    """The one-pass GPU fill (geostat._entries_cuda) against the vectorised CPU path: every
    family and metric, C and F blocks, a strided tile of a larger array, the nugget."""
    import dataclasses

    rng = np.random.default_rng(2)
    if dim == "sphere":
        kernel = dataclasses.replace(kernel, metric="great_circle", params=(
            kernel.params[0], kernel.params[1] * 3000.0, *kernel.params[2:]))
        x = np.stack([rng.uniform(-180, 180, 90), rng.uniform(-89, 89, 90)], axis=1)
    else:
        x = rng.uniform(0, 1, (90, dim))
    kernel = dataclasses.replace(kernel, nugget=0.01)
    y = x[::3].copy()
    # tolerance: as test_matern_matches_the_cpu_path (CUDA's and libm's exp/pow/sin differ
    # by an ulp or two, carried a few times over)
    tol = {"rtol": 64 * EPS, "atol": 4 * EPS}
    for order in ("C", "F"):
        got = kernel(cp.asarray(x), cp.asarray(y), order=order)
        assert got.flags.c_contiguous == (order == "C")
        np.testing.assert_allclose(got.get(), kernel(x, y), **tol)
    same = kernel(cp.asarray(x)).get()
    np.testing.assert_allclose(same, kernel(x), **tol)
    assert same[0, 0] == pytest.approx(kernel.params[0] + 0.01)
    big = cp.full((120, 80), -1.0, order="F")
    kernel(cp.asarray(x[:50]), cp.asarray(y[:20]), out=big[7:57, 11:51:2])
    ref = np.full((120, 80), -1.0)
    ref[7:57, 11:51:2] = kernel(x[:50], y[:20])
    np.testing.assert_allclose(big.get(), ref, **tol)
    empty = kernel(cp.asarray(x[:0]), cp.asarray(y))
    assert empty.shape == (0, 30)


@pytest.mark.parametrize("kernel", [matern(1.3, 0.12, 0.5), matern(0.8, 0.2, 1.7),
                                    Kernel("powexp", (1.0, 0.1, 1.5), 0.05)])
def test_dense_loglik_on_the_gpu(cp, kernel):
    x = jittered_grid(1500, 2, np.random.default_rng(5))
    z = np.random.default_rng(6).standard_normal(1500)
    cpu = loglik(x, z, kernel=kernel)
    gpu = loglik(x, z, kernel=kernel, device="gpu", tile_size=700)   # several assembly tiles
    assert gpu == pytest.approx(cpu, rel=1e-10)
    # CuPy inputs are accepted too
    assert loglik(cp.asarray(x), cp.asarray(z), kernel=kernel, device="gpu") \
        == pytest.approx(cpu, rel=1e-10)


def test_tlr_loglik_on_the_gpu(cp):
    x = jittered_grid(2000, 2, np.random.default_rng(8))
    z = np.random.default_rng(9).standard_normal(2000)
    k = matern(1.0, 0.1, 0.8)
    exact = loglik(x, z, kernel=k)
    gpu = loglik(x, z, kernel=k, method="tlr", tol=1e-9, tile_size=256, device="gpu")
    assert gpu == pytest.approx(exact, rel=1e-6)


@pytest.mark.parametrize("method", ["dense", "tlr"])
def test_predict_on_the_gpu(cp, method):
    x, z = simulate(800, (1.0, 0.15, 1.5), seed=4)
    new = np.random.default_rng(2).random((300, 2))
    params = (1.0, 0.15, 1.5)
    m_cpu, v_cpu = predict(x, z, new, params, method=method, tol=1e-10, tile_size=200,
                           chunk=128)
    m_gpu, v_gpu = predict(x, z, new, params, method=method, tol=1e-10, tile_size=200,
                           chunk=128, device="gpu")
    assert isinstance(m_gpu, np.ndarray) and isinstance(v_gpu, np.ndarray)
    if method == "dense":
        np.testing.assert_allclose(m_gpu, m_cpu, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(v_gpu, v_cpu, rtol=1e-6, atol=1e-8)
        return
    # Two TLR factorizations (different algorithms and random draws) of this ill-conditioned
    # matrix (no nugget) differ from the exact prediction by about 5e-8 each: the GPU's error
    # must be of the order of the CPU's, against the dense prediction.
    m_ref, v_ref = predict(x, z, new, params, method="dense")
    for got, cpu, ref in ((m_gpu, m_cpu, m_ref), (v_gpu, v_cpu, v_ref)):
        assert np.abs(got - ref).max() <= 4 * np.abs(cpu - ref).max() + 1e-12


def test_fit_on_the_gpu_matches_the_cpu(cp):
    x, z = simulate(400, (1.0, 0.1, 0.5), seed=3)
    kw = dict(fix={"nu": 0.5}, progress=False, xtol=1e-6)
    cpu = fit(x, z, **kw)
    gpu = fit(x, z, device="gpu", **kw)
    assert gpu.loglik == pytest.approx(cpu.loglik, rel=1e-9)
    for name in ("sigma2", "beta"):
        assert math.isclose(gpu.params[name], cpu.params[name], rel_tol=1e-3)

