"""Host-stored TLR matrices and the streamed factorization (tricov.tlr.stream), on the CPU.

With NumPy inputs, ``storage='host'`` runs the streamed algorithm with NumPy standing in for
the device (every copy counted as a transfer), so the streaming logic is tested here: the
streamed factor equals the factor of the device algorithm (same chunks, same random draws), a
tight budget is respected (as accounted) while the factor stays within the accuracy bounds of
test_tlr_cholesky, and the usage errors are clear. The GPU runs are in test_gpu_tlr_stream.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from test_tlr_support import (
    decay_matrix,
    fro_error,
    jittered_grid,
    kernel_matrix,
    logdet_bound,
    matern15,
    slack,
    solve_bound,
    sqexp,
)
from tricov import NotPositiveDefiniteError
from tricov.tlr import TLRMatrix, potrf, potrf_from_dense, potrf_from_kernel
from tricov.tlr.build import generate_diagonal
from tricov.tlr.cholesky import _left_looking
from tricov.tlr.sources import KernelSource

N, NB, NUGGET = 900, 100, 1e-2
X = jittered_grid(N, 2, seed=5)
KERNEL = matern15(0.1)
A = kernel_matrix(KERNEL, X, NUGGET)
TOL = 1e-9


def _eps_norm(M: np.ndarray) -> float:
    return 64 * float(np.finfo(M.dtype).eps) * float(np.linalg.norm(M))


def _device_ll(T: TLRMatrix, seed: int) -> TLRMatrix:
    """The device (array-module) left-looking factor of T, the algorithm that streams."""
    _left_looking(T, None, T.tol, T.rank, T.anorm ** 2, np.random.default_rng(seed), "rsvd",
                  False)
    T._state = "factored"
    return T


def _device_dl(dtype, seed: int) -> TLRMatrix:
    src = KernelSource(KERNEL, X, NB, dtype, NUGGET)
    T = TLRMatrix(N, NB, dtype, tol=TOL if dtype != np.float32 else 1e-4)
    norm2 = _left_looking(T, src, T.tol, None, generate_diagonal(T, src),
                          np.random.default_rng(seed), "rsvd", False)
    T.anorm, T._state = math.sqrt(norm2), "factored"
    return T


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_streamed_factor_equals_the_device_factor(dtype):
    tol = 1e-4 if dtype == np.float32 else TOL
    kw = dict(tile_size=NB, tol=tol, nugget=NUGGET, seed=0, dtype=dtype)
    H = TLRMatrix.from_kernel(KERNEL, X, storage="host", **kw)
    D = TLRMatrix.from_kernel(KERNEL, X, **kw)
    assert H.storage == "host" and D.storage == "device" and D.transfer_stats is None
    np.testing.assert_array_equal(H.to_dense(), D.to_dense())
    assert H.transfer_stats["d2h_bytes"] == H.nbytes and H.transfer_stats["h2d_bytes"] == 0
    potrf(H, seed=1)
    LD = _device_ll(D, 1).to_dense()
    assert H.is_factored and isinstance(H.tile(1, 0).U, np.ndarray)
    assert np.linalg.norm(H.to_dense() - LD) <= _eps_norm(LD)
    st = H.transfer_stats
    assert st["device_peak_bytes"] <= st["device_memory"] == math.inf
    assert st["h2d_bytes"] > 0 and st["cache_hits"] > 0


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_streamed_dl_factor_equals_the_device_factor(dtype):
    F = potrf_from_kernel(KERNEL, X, tile_size=NB, tol=TOL, nugget=NUGGET, seed=3,
                          dtype=dtype, storage="host")
    LD = _device_dl(dtype, 3).to_dense()
    assert np.linalg.norm(F.to_dense() - LD) <= _eps_norm(LD)
    assert F.anorm == pytest.approx(np.linalg.norm(A), rel=1e-6)


@pytest.mark.parametrize("mode", ["LL", "DL"])
def test_tight_budget_is_respected_and_accurate(mode):
    full = TLRMatrix.from_kernel(KERNEL, X, tile_size=NB, tol=TOL, nugget=NUGGET, seed=0)
    budget = int(0.7 * full.nbytes)  # below the factor: tiles must be uploaded again
    if mode == "DL":
        T = potrf_from_kernel(KERNEL, X, tile_size=NB, tol=TOL, nugget=NUGGET, seed=0,
                              storage="host", device_memory=budget)
        delta = TOL + slack(N, np.float64)
    else:
        T = TLRMatrix.from_kernel(KERNEL, X, tile_size=NB, tol=TOL, nugget=NUGGET, seed=0,
                                  storage="host")
        before = dict(T.transfer_stats)
        potrf(T, seed=1, device_memory=budget)
        assert T.transfer_stats["h2d_bytes"] - before["h2d_bytes"] > full.nbytes
        delta = 2 * TOL + slack(N, np.float64)
    st = T.transfer_stats
    assert 0 < st["device_peak_bytes"] <= budget == st["device_memory"]
    L = T.to_dense()
    assert fro_error(A, L @ L.T) <= delta
    b = np.random.default_rng(0).standard_normal(N)
    x, x_ref = T.solve(b), np.linalg.solve(A, b)
    assert isinstance(x, np.ndarray)
    assert np.linalg.norm(x - x_ref) <= solve_bound(A, delta) * np.linalg.norm(x_ref)
    assert abs(T.logdet() - np.linalg.slogdet(A)[1]) <= logdet_bound(A, delta)


def test_fraction_budget_needs_a_device_to_mean_something():
    T = TLRMatrix.from_kernel(KERNEL, X[:300], tile_size=NB, tol=TOL, nugget=NUGGET,
                              storage="host")
    potrf(T, device_memory=0.5)  # no free memory to take a fraction of: unbounded
    assert T.transfer_stats["device_memory"] == math.inf


@pytest.mark.parametrize("n, nb", [(437, 100), (99, 100), (1, 7), (0, 5)])
def test_odd_sizes_and_one_tile(n, nb):
    x = jittered_grid(max(n, 1), 2, seed=n)[:n]
    k = matern15(0.2)
    An = kernel_matrix(k, x, 0.1)
    for mode in ("LL", "DL"):
        if mode == "DL":
            T = potrf_from_kernel(k, x, tile_size=nb, tol=1e-9, nugget=0.1, storage="host")
        else:
            T = potrf(TLRMatrix.from_kernel(k, x, tile_size=nb, tol=1e-9, nugget=0.1,
                                            storage="host"))
        assert T.storage == "host" and T.is_factored
        if n == 0:
            assert T.logdet() == 0.0 and T.solve(np.zeros(0)).shape == (0,)
            continue
        L = T.to_dense()
        delta = (1 if mode == "DL" else 2) * 1e-9 + slack(n, np.float64)
        assert fro_error(An, L @ L.T) <= delta
        assert T.logdet() == pytest.approx(np.linalg.slogdet(An)[1],
                                           abs=logdet_bound(An, delta))


def test_rank_zero_tiles():
    n = 200
    Ab = np.zeros((n, n))
    for i in range(4):
        Ab[50 * i:50 * i + 50, 50 * i:50 * i + 50] = decay_matrix(50, seed=i)
    T = TLRMatrix.from_dense(Ab, tile_size=50, tol=1e-8, storage="host")
    assert T.max_rank == 0
    potrf(T)
    assert T.max_rank == 0
    np.testing.assert_allclose(T.to_dense(), np.linalg.cholesky(Ab), atol=1e-13)
    F = potrf_from_dense(Ab, tile_size=50, tol=1e-8, storage="host")
    b = np.arange(n, dtype=float)
    np.testing.assert_allclose(F.solve(b), np.linalg.solve(Ab, b), rtol=1e-10)


def test_fixed_rank_and_complex_dense():
    Ad = decay_matrix(300, seed=2, dtype=np.complex128)
    F = potrf_from_dense(Ad, tile_size=64, tol=1e-10, storage="host", device_memory=1_500_000)
    L = F.to_dense()
    assert fro_error(Ad, L @ L.conj().T) <= 1e-10 + slack(300, np.complex128)
    assert F.transfer_stats["device_peak_bytes"] <= 1_500_000
    T = TLRMatrix.from_kernel(KERNEL, X, tile_size=NB, rank=40, nugget=NUGGET, storage="host")
    potrf(T, tol=1e-8)
    assert T.max_rank <= 40
    L = T.to_dense()
    assert fro_error(A, L @ L.T) <= 1e-3  # rank 40 is coarse; the factor still represents A


def test_not_positive_definite():
    x = jittered_grid(400, 2, seed=1)
    k = sqexp(0.2)
    T = TLRMatrix.from_kernel(k, x, tile_size=50, tol=1e-3, nugget=1e-9, storage="host")
    with pytest.raises(NotPositiveDefiniteError, match="nugget") as err:
        potrf(T)
    assert 50 < err.value.order <= 400
    with pytest.raises(ValueError, match="failed"):
        T.solve(np.ones(400))
    with pytest.raises(NotPositiveDefiniteError, match="smaller tol"):
        potrf_from_kernel(k, x, tile_size=50, tol=1e-3, nugget=1e-9, storage="host")
    D = np.diag(np.r_[np.ones(130), -1.0, np.ones(69)])
    with pytest.raises(NotPositiveDefiniteError) as err:
        potrf(TLRMatrix.from_dense(D, tile_size=60, tol=1e-10, storage="host"))
    assert err.value.order == 131


def test_budget_too_small():
    T = TLRMatrix.from_kernel(KERNEL, X, tile_size=NB, tol=TOL, nugget=NUGGET, storage="host")
    with pytest.raises(ValueError, match=r"device_memory=.* too small for tiles of 100 x 100"):
        potrf(T, device_memory=NB * NB * 8 - 1)
    assert not T.is_factored  # refused before any work: T is intact
    with pytest.raises(ValueError, match="device_memory=.* too small: tile"):
        potrf(T, device_memory=NB * NB * 8 + 1000)
    with pytest.raises(ValueError, match="failed"):
        T.logdet()
    with pytest.raises(ValueError, match="too small for tiles"):
        potrf_from_kernel(KERNEL, X, tile_size=NB, tol=TOL, storage="host",
                          device_memory=NB * NB * 8)  # DL needs two dense tiles


def test_usage_errors():
    with pytest.raises(ValueError, match="storage must be one of"):
        TLRMatrix.from_kernel(KERNEL, X, tile_size=NB, tol=TOL, storage="gpu")
    with pytest.raises(ValueError, match="storage must be one of"):
        potrf_from_dense(A, tile_size=NB, tol=TOL, storage="pinned")
    T = TLRMatrix.from_kernel(KERNEL, X[:300], tile_size=NB, tol=TOL, nugget=NUGGET)
    with pytest.raises(ValueError, match="device_memory applies"):
        potrf(T, device_memory=1 << 30)
    with pytest.raises(ValueError, match="device_memory applies"):
        potrf_from_kernel(KERNEL, X[:300], tile_size=NB, tol=TOL, device_memory=1 << 30)
    H = TLRMatrix.from_kernel(KERNEL, X[:300], tile_size=NB, tol=TOL, nugget=NUGGET,
                              storage="host")
    with pytest.raises(ValueError, match="left-looking"):
        potrf(H, algorithm="right")
    for bad, err in (("1GB", TypeError), (True, TypeError), (0, ValueError), (1.5, ValueError),
                     (0.0, ValueError)):
        with pytest.raises(err, match="device_memory"):
            potrf(H, device_memory=bad)
    assert not H.is_factored


def test_host_storage_products_copies_and_repr():
    T = TLRMatrix.from_kernel(KERNEL, X, tile_size=NB, tol=TOL, nugget=NUGGET, storage="host")
    v = np.random.default_rng(2).standard_normal((N, 2))
    np.testing.assert_allclose(T @ v, A @ v, rtol=0, atol=1e-7 * np.linalg.norm(A))
    C = T.copy()
    assert C.storage == "host" and "storage=host" in repr(C)
    potrf(C)
    assert not T.is_factored and C.is_factored
    L = C.to_dense()
    np.testing.assert_allclose(C.matvec(v, trans=True), L.T @ v, atol=1e-12)
