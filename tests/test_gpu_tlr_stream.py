"""GPU tests of host-stored TLR matrices (storage='host', tricov.tlr.stream): tiles in host
memory, construction and factorization on the GPU, against host references with the bounds of
test_tlr_cholesky, and against the device-stored factor."""

from __future__ import annotations

import numpy as np
import pytest

from test_tlr_support import (
    decay_matrix,
    fro_error,
    jittered_grid,
    logdet_bound,
    slack,
    solve_bound,
)
from tricov import NotPositiveDefiniteError
from tricov.geostat import matern, sqexp
from tricov.tlr import TLRMatrix, potrf, potrf_from_dense, potrf_from_kernel

pytestmark = pytest.mark.gpu

N, NB, NUGGET, TOL = 600, 90, 1e-2, 1e-9
X = jittered_grid(N, 2, seed=7)
KERNEL = matern(1.0, 0.1, 1.5)
A = KERNEL(X) + NUGGET * np.eye(N)


@pytest.fixture
def cp():
    return pytest.importorskip("cupy")


def _factor(cp, mode: str, storage: str, **kw) -> TLRMatrix:
    x = cp.asarray(X)
    if mode == "DL":
        return potrf_from_kernel(KERNEL, x, tile_size=NB, tol=TOL, nugget=NUGGET, seed=0,
                                 storage=storage, **kw)
    T = TLRMatrix.from_kernel(KERNEL, x, tile_size=NB, tol=TOL, nugget=NUGGET, seed=0,
                              storage=storage)
    return potrf(T, seed=1, **kw)


def _check(F: TLRMatrix, Aref: np.ndarray, delta: float) -> None:
    L = F.to_dense()
    L = L if isinstance(L, np.ndarray) else L.get()
    assert fro_error(Aref, L @ L.conj().T) <= delta
    assert abs(F.logdet() - np.linalg.slogdet(Aref)[1]) <= logdet_bound(Aref, delta)


@pytest.mark.parametrize("mode", ["LL", "DL"])
def test_host_factor_matches_device_factor(cp, mode):
    H = _factor(cp, mode, "host")
    D = _factor(cp, mode, "device")
    assert H.storage == "host" and isinstance(H.tile(1, 0).U, np.ndarray)
    assert type(D.tile(1, 0).U).__module__.startswith("cupy")
    delta = (TOL if mode == "DL" else 2 * TOL) + slack(N, np.float64)
    _check(H, A, delta)
    _check(D, A, delta)
    # Both are factors of A to delta: they differ by at most what that allows.
    assert abs(H.logdet() - D.logdet()) <= 2 * logdet_bound(A, delta)
    b = np.random.default_rng(0).standard_normal(N)
    x = H.solve(cp.asarray(b))
    assert type(x).__module__.startswith("cupy")
    x_ref = np.linalg.solve(A, b)
    assert np.linalg.norm(x.get() - x_ref) <= solve_bound(A, delta) * np.linalg.norm(x_ref)
    st = H.transfer_stats
    assert st["d2h_bytes"] >= H.nbytes and st["h2d_bytes"] > 0
    assert 0 < st["device_peak_bytes"] <= st["device_memory"]


@pytest.mark.parametrize("mode", ["LL", "DL"])
def test_tight_budget_on_the_gpu(cp, mode):
    full = TLRMatrix.from_kernel(KERNEL, cp.asarray(X), tile_size=NB, tol=TOL, nugget=NUGGET,
                                 seed=0)  # the GPU's compression (the CPU's ACA differs)
    budget = full.nbytes  # below what the unbounded run holds (its cache and working set)
    F = _factor(cp, mode, "host", device_memory=budget)
    st = F.transfer_stats
    assert 0 < st["device_peak_bytes"] <= budget == st["device_memory"]
    _check(F, A, (TOL if mode == "DL" else 2 * TOL) + slack(N, np.float64))


def test_tiles_uploaded_again_on_the_gpu(cp):
    """A budget of half the matrix, with 20 tile rows (so that one tile column's working set
    is a small part of it): the cache cannot keep every tile, tiles go up again (more bytes
    uploaded than the matrix holds) and the factor stays accurate."""
    n, nb = 1500, 75
    x = jittered_grid(n, 2, seed=3)
    a = KERNEL(x) + NUGGET * np.eye(n)
    T = TLRMatrix.from_kernel(KERNEL, cp.asarray(x), tile_size=nb, tol=TOL, nugget=NUGGET,
                              seed=0, storage="host")
    size = T.nbytes
    budget = size // 2
    before = dict(T.transfer_stats)
    potrf(T, seed=1, device_memory=budget)
    st = T.transfer_stats
    assert st["h2d_bytes"] - before["h2d_bytes"] > size
    assert 0 < st["device_peak_bytes"] <= budget == st["device_memory"]
    _check(T, a, 2 * TOL + slack(n, np.float64))


@pytest.mark.parametrize("dtype", [np.float32, np.complex128, np.complex64])
@pytest.mark.parametrize("mode", ["LL", "DL"])
def test_other_dtypes_on_the_gpu(cp, dtype, mode):
    n = 300
    Ad = decay_matrix(n, seed=4, dtype=dtype)
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-10
    if mode == "DL":
        F = potrf_from_dense(cp.asarray(Ad), tile_size=64, tol=tol, storage="host")
        delta = tol
    else:
        F = potrf(TLRMatrix.from_dense(cp.asarray(Ad), tile_size=64, tol=tol, storage="host"))
        delta = 2 * tol
    assert F.dtype == dtype and F.tile(0, 0).dtype == dtype
    _check(F, Ad.astype(np.complex128), delta + slack(n, dtype))


@pytest.mark.parametrize("n, nb", [(437, 100), (99, 100), (1, 7)])
def test_odd_sizes_and_one_tile_on_the_gpu(cp, n, nb):
    x = jittered_grid(n, 2, seed=n)
    k = matern(1.0, 0.2, 2.5)
    An = k(x) + 0.1 * np.eye(n)
    for mode in ("LL", "DL"):
        if mode == "DL":
            F = potrf_from_kernel(k, cp.asarray(x), tile_size=nb, tol=1e-9, nugget=0.1,
                                  storage="host")
        else:
            F = potrf(TLRMatrix.from_kernel(k, cp.asarray(x), tile_size=nb, tol=1e-9,
                                            nugget=0.1, storage="host"))
        _check(F, An, (1e-9 if mode == "DL" else 2e-9) + slack(n, np.float64))


def test_rank_zero_tiles_on_the_gpu(cp):
    n = 200
    Ab = np.zeros((n, n))
    for i in range(4):
        Ab[50 * i:50 * i + 50, 50 * i:50 * i + 50] = decay_matrix(50, seed=i)
    T = potrf(TLRMatrix.from_dense(cp.asarray(Ab), tile_size=50, tol=1e-8, storage="host"))
    assert T.max_rank == 0
    np.testing.assert_allclose(T.to_dense(), np.linalg.cholesky(Ab), atol=1e-13)
    F = potrf_from_dense(cp.asarray(Ab), tile_size=50, tol=1e-8, storage="host")
    b = np.arange(n, dtype=float)
    np.testing.assert_allclose(F.solve(b), np.linalg.solve(Ab, b), rtol=1e-10)


def test_not_positive_definite_on_the_gpu(cp):
    x = cp.asarray(jittered_grid(400, 2, seed=1))
    k = sqexp(1.0, 0.2)
    T = TLRMatrix.from_kernel(k, x, tile_size=50, tol=1e-3, nugget=1e-9, storage="host")
    with pytest.raises(NotPositiveDefiniteError, match="nugget"):
        potrf(T)
    with pytest.raises(NotPositiveDefiniteError, match="smaller tol"):
        potrf_from_kernel(k, x, tile_size=50, tol=1e-3, nugget=1e-9, storage="host")


def test_budget_too_small_on_the_gpu(cp):
    T = TLRMatrix.from_kernel(KERNEL, cp.asarray(X), tile_size=NB, tol=TOL, nugget=NUGGET,
                              storage="host")
    with pytest.raises(ValueError, match="device_memory=.* too small"):
        potrf(T, device_memory=NB * NB * 8 - 1)
    assert not T.is_factored
    with pytest.raises(ValueError, match="device_memory=.* too small"):
        potrf_from_kernel(KERNEL, cp.asarray(X), tile_size=NB, tol=TOL, storage="host",
                          device_memory=NB * NB * 8 + 4096)
    F = potrf(T, device_memory=0.5)  # a fraction of the free device memory
    assert 0 < F.transfer_stats["device_memory"] < cp.cuda.runtime.memGetInfo()[1]
