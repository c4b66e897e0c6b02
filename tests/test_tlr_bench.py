"""The TLR Cholesky benchmark function (small sizes: the measurement itself, not its speed)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from tricov.tlr import bench, potrf_from_kernel

KEYS = {"n", "tol", "tile_size", "mode", "algorithm", "method", "kernel", "time_compress",
        "time_factor", "time_total", "max_rank", "mean_rank", "nbytes", "nbytes_matrix",
        "accuracy", "accuracy_samples", "dense_time", "dense_generate_time", "dense_nbytes",
        "speedup", "memory_ratio", "blas_threads", "dense_impl", "dense_threads"}


@pytest.mark.parametrize("mode,impl", [("DL", "scipy"), ("LL", "tricov")])
def test_run_reports_everything(mode, impl):
    r = bench.run(700, 1e-8, 150, mode=mode, dense=True, dense_impl=impl, dense_threads=1)
    assert set(r) == KEYS
    assert r["dense_impl"] == impl and r["dense_threads"] == 1
    assert r["n"] == 700 and r["tile_size"] == 150 and r["mode"] == mode
    assert 0 < r["max_rank"] <= 150 and 0 < r["mean_rank"] <= r["max_rank"]
    assert r["dense_nbytes"] == 700 * 700 * 8
    assert 0 < r["nbytes"] < r["dense_nbytes"]
    assert r["memory_ratio"] == r["nbytes"] / r["dense_nbytes"]
    assert r["time_total"] > 0 and r["dense_time"] > 0
    assert r["speedup"] == pytest.approx(r["dense_time"] / r["time_total"])
    bound = 1e-8 if mode == "DL" else 2e-8
    assert 0 < r["accuracy"] < 3 * bound  # a randomized estimate of a quantity <= bound
    if mode == "LL":
        assert r["time_compress"] > 0 and r["nbytes_matrix"] > 0
    else:
        assert r["time_compress"] is None and r["nbytes_matrix"] is None


def test_run_rejects_unknown_dense_impl():
    with pytest.raises(ValueError, match="dense_impl"):
        bench.run(100, 1e-8, 50, dense=True, dense_impl="numpy")


def test_accuracy_estimate_matches_the_exact_error():
    pts = bench.jittered_points(500)
    kernel = bench.matern_kernel(0.5, 0.2)
    T = potrf_from_kernel(kernel, pts, tile_size=100, tol=1e-3, nugget=0.1)
    A = kernel(pts, pts) + 0.1 * np.eye(500)
    L = T.to_dense()
    exact = np.linalg.norm(A - L @ L.T) / np.linalg.norm(A)
    est = bench.accuracy(T, kernel, pts, 0.1, samples=40, seed=1)
    assert 0.6 * exact < est < 1.6 * exact  # spread about 1/sqrt(80) ~ 11%


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_matern_kernel(nu):
    x = np.random.default_rng(0).random((300, 2))
    y = np.random.default_rng(1).random((170, 2))
    s = cdist(x, y) * np.sqrt(2 * nu) / 0.3
    ref = {0.5: np.exp(-s), 1.5: (1 + s) * np.exp(-s),
           2.5: (1 + s + s * s / 3) * np.exp(-s)}[nu] * 2.0
    np.testing.assert_allclose(bench.matern_kernel(nu, 0.3, 2.0)(x, y), ref, rtol=1e-13,
                               atol=1e-15)
    with pytest.raises(ValueError, match="nu"):
        bench.matern_kernel(1.0)


def test_jittered_points():
    p = bench.jittered_points(1000, 2)
    assert p.shape == (1000, 2) and p.min() > 0 and p.max() < 1
    d = cdist(p, p) + np.eye(1000)
    assert d.min() >= 0.2 / 32 - 1e-12
    assert bench.jittered_points(125, 3).shape == (125, 3)


def test_run_errors():
    with pytest.raises(ValueError, match="mode"):
        bench.run(10, mode="XX")


def test_run_sets_blas_threads():
    r = bench.run(300, 1e-6, 100, threads=1, dense=False, accuracy_samples=0)
    assert r["blas_threads"] == 1
    assert r["dense_time"] is None and r["accuracy"] is None and r["speedup"] is None
