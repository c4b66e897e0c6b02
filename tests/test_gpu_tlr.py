"""GPU tests of tricov.tlr: the same construction, factorizations, solves and log-determinants
on CuPy arrays, against host references (the bounds of test_tlr_cholesky)."""

from __future__ import annotations

import numpy as np
import pytest

from test_tlr_support import fro_error, jittered_grid, logdet_bound, slack, solve_bound
from tricov import NotPositiveDefiniteError
from tricov.geostat import matern, sqexp
from tricov.tlr import TLRMatrix, potrf, potrf_from_dense, potrf_from_kernel

pytestmark = pytest.mark.gpu

N, NB, NUGGET = 600, 90, 1e-2
X = jittered_grid(N, 2, seed=7)
KERNEL = matern(1.0, 0.1, 1.5)
A = KERNEL(X) + NUGGET * np.eye(N)
MODES = ["right", "left", "DL-kernel", "DL-dense"]


@pytest.fixture
def cp():
    return pytest.importorskip("cupy")


def _factor(cp, mode: str, tol: float, method: str = "rsvd") -> TLRMatrix:
    x = cp.asarray(X)
    if mode == "DL-kernel":
        return potrf_from_kernel(KERNEL, x, tile_size=NB, tol=tol, nugget=NUGGET, seed=0,
                                 method=method)
    if mode == "DL-dense":
        return potrf_from_dense(cp.asarray(A), tile_size=NB, tol=tol, seed=0, method=method)
    T = TLRMatrix.from_kernel(KERNEL, x, tile_size=NB, tol=tol, nugget=NUGGET, seed=0,
                              method=method)
    return potrf(T, algorithm=mode, seed=1)


def _delta(mode: str, tol: float) -> float:
    return (tol if mode.startswith("DL") else 2 * tol) + slack(N, np.float64)


@pytest.mark.parametrize("method", ["svd", "rsvd", "aca"])
def test_construction_on_the_gpu(cp, method):
    T = TLRMatrix.from_kernel(KERNEL, cp.asarray(X), tile_size=NB, tol=1e-8, nugget=NUGGET,
                              seed=0, method=method)
    D = T.to_dense()
    assert type(D).__module__.startswith("cupy")
    assert fro_error(A, D.get()) <= 1e-8 + slack(N, np.float64)
    y = T @ cp.ones(N)
    np.testing.assert_allclose(y.get(), A @ np.ones(N), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tol", [1e-6, 1e-10])
def test_factor_solve_logdet_on_the_gpu(cp, mode, tol):
    T = _factor(cp, mode, tol)
    L = T.to_dense().get()
    delta = _delta(mode, tol)
    assert fro_error(A, L @ L.T) <= delta
    b = np.random.default_rng(0).standard_normal(N)
    x = T.solve(cp.asarray(b))
    assert type(x).__module__.startswith("cupy")
    x_ref = np.linalg.solve(A, b)
    assert np.linalg.norm(x.get() - x_ref) <= solve_bound(A, delta) * np.linalg.norm(x_ref)
    assert abs(T.logdet() - np.linalg.slogdet(A)[1]) <= logdet_bound(A, delta)


@pytest.mark.parametrize("mode", ["left", "DL-kernel"])
def test_aca_and_svd_on_the_gpu(cp, mode):
    for method in ("svd", "aca"):
        L = _factor(cp, mode, 1e-7, method=method).to_dense().get()
        assert fro_error(A, L @ L.T) <= _delta(mode, 1e-7)


def test_not_positive_definite_on_the_gpu(cp):
    x = cp.asarray(jittered_grid(400, 2, seed=1))
    k = sqexp(1.0, 0.2)
    T = TLRMatrix.from_kernel(k, x, tile_size=50, tol=1e-3, nugget=1e-9)
    with pytest.raises(NotPositiveDefiniteError, match="nugget"):
        potrf(T)
    with pytest.raises(NotPositiveDefiniteError, match="smaller tol"):
        potrf_from_kernel(k, x, tile_size=50, tol=1e-3, nugget=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_other_dtypes_on_the_gpu(cp, dtype):
    rng = np.random.default_rng(4)
    n = 300
    q = np.linalg.qr(rng.standard_normal((n, n)) + (1j * rng.standard_normal((n, n))
                                                     if dtype == np.complex128 else 0))[0]
    Ad = (q * (0.6 ** np.arange(n) + 0.5)) @ q.conj().T
    Ad = ((Ad + Ad.conj().T) / 2).astype(dtype)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    F = potrf_from_dense(cp.asarray(Ad), tile_size=64, tol=tol)
    L = F.to_dense().get().astype(np.complex128)
    assert fro_error(Ad.astype(np.complex128), L @ L.conj().T) <= tol + slack(n, dtype)
