"""TLR Cholesky (modes LL and DL), solve and logdet.

Bounds: the factor satisfies ``||A - L L^H||_F <= delta ||A||_F`` with ``delta = tol`` (DL) or
``tol + tol_f`` (LL: construction plus factorization, ``tol_f = tol`` by default), plus a
rounding allowance; the solve and logdet bounds follow from ``delta`` as derived in
``test_tlr_support``.
"""

from __future__ import annotations

import numpy as np
import pytest

from test_tlr_support import (
    decay_matrix,
    fro_error,
    jittered_grid,
    kernel_matrix,
    logdet_bound,
    matern15,
    matern25,
    slack,
    solve_bound,
    sqexp,
)
from tricov import NotPositiveDefiniteError
from tricov.tlr import TLRMatrix, potrf, potrf_from_dense, potrf_from_kernel

N = 600
NB = 90
X = jittered_grid(N, 2, seed=7)
KERNEL = matern15(0.1)
NUGGET = 1e-2
A = kernel_matrix(KERNEL, X, NUGGET)


def _factor(mode: str, tol: float, method: str = "rsvd", **kw) -> TLRMatrix:
    if mode == "DL-kernel":
        return potrf_from_kernel(KERNEL, X, tile_size=NB, tol=tol, nugget=NUGGET, seed=0,
                                 method=method, **kw)
    if mode == "DL-dense":
        return potrf_from_dense(A, tile_size=NB, tol=tol, seed=0, method=method, **kw)
    T = TLRMatrix.from_kernel(KERNEL, X, tile_size=NB, tol=tol, nugget=NUGGET, seed=0,
                              method=method)
    assert potrf(T, algorithm=mode, seed=1, **kw) is T
    return T


def _delta(mode: str, tol: float, n: int = N, dtype=np.float64) -> float:
    return (tol if mode.startswith("DL") else 2 * tol) + slack(n, dtype)


MODES = ["right", "left", "DL-kernel", "DL-dense"]


@pytest.mark.parametrize("mode", MODES)
def test_loose_tolerance(mode):
    T = _factor(mode, 1e-3)
    L = T.to_dense()
    assert fro_error(A, L @ L.T) <= _delta(mode, 1e-3)
    assert T.mean_rank < 15


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tol", [1e-6, 1e-10])
def test_factor_accuracy_solve_and_logdet(mode, tol):
    T = _factor(mode, tol)
    assert T.is_factored and "factor L" in repr(T)
    L = T.to_dense()
    np.testing.assert_array_equal(L, np.tril(L))
    delta = _delta(mode, tol)
    assert fro_error(A, L @ L.T) <= delta
    rng = np.random.default_rng(0)
    b = rng.standard_normal(N)
    x_ref = np.linalg.solve(A, b)
    x = T.solve(b)
    assert x.shape == (N,)
    assert np.linalg.norm(x - x_ref) <= solve_bound(A, delta) * np.linalg.norm(x_ref)
    # The solve is exact for the TLR factor itself (up to rounding).
    LLx = L @ (L.T @ x)
    assert np.linalg.norm(LLx - b) <= 1e-12 * np.linalg.norm(L) ** 2 * np.linalg.norm(x)
    ld_ref = np.linalg.slogdet(A)[1]
    assert abs(T.logdet() - ld_ref) <= logdet_bound(A, delta)
    assert T.logdet() == pytest.approx(2 * np.log(np.diag(L)).sum(), rel=1e-13)


@pytest.mark.parametrize("mode", MODES)
def test_svd_and_aca_compression(mode):
    for method in ("svd", "aca") if mode != "DL-dense" else ("svd",):
        T = _factor(mode, 1e-7, method=method)
        L = T.to_dense()
        assert fro_error(A, L @ L.T) <= _delta(mode, 1e-7)


def test_solve_many_right_hand_sides_and_dtypes():
    T = _factor("left", 1e-10)
    L = T.to_dense()
    B = np.random.default_rng(1).standard_normal((N, 3))
    B0 = B.copy()
    X2 = T.solve(B)
    np.testing.assert_array_equal(B, B0)  # B is not modified
    np.testing.assert_allclose(L @ (L.T @ X2), B, rtol=0, atol=1e-9)
    Bc = B + 1j * B[::-1]
    Xc = T.solve(Bc)
    assert Xc.dtype == np.complex128
    np.testing.assert_allclose(Xc, T.solve(B) + 1j * T.solve(B[::-1]), rtol=1e-13, atol=1e-13)
    assert T.solve(np.zeros((N, 0))).shape == (N, 0)
    assert T.solve(B.astype(np.float32)).dtype == np.float64
    with pytest.raises(ValueError, match="shape"):
        T.solve(np.ones(N + 1))


def test_factor_products():
    T = _factor("right", 1e-8)
    L = T.to_dense()
    v = np.random.default_rng(2).standard_normal((N, 2))
    np.testing.assert_allclose(T.matvec(v), L @ v, atol=1e-12)
    np.testing.assert_allclose(T.matvec(v, trans=True), L.T @ v, atol=1e-12)
    np.testing.assert_allclose(T @ v[:, 0], L @ v[:, 0], atol=1e-12)


def test_rank_zero_tiles_block_diagonal():
    blocks = [decay_matrix(50, seed=s) for s in range(4)]
    n = 200
    Ab = np.zeros((n, n))
    for i, b in enumerate(blocks):
        Ab[50 * i:50 * i + 50, 50 * i:50 * i + 50] = b
    for algorithm in ("right", "left"):
        T = TLRMatrix.from_dense(Ab, tile_size=50, tol=1e-8)
        assert T.max_rank == 0
        potrf(T, algorithm=algorithm)
        assert T.max_rank == 0
        np.testing.assert_allclose(T.to_dense(), np.linalg.cholesky(Ab), atol=1e-13)
    F = potrf_from_dense(Ab, tile_size=50, tol=1e-8)
    assert F.max_rank == 0
    b = np.arange(n, dtype=float)
    np.testing.assert_allclose(F.solve(b), np.linalg.solve(Ab, b), rtol=1e-10)


@pytest.mark.parametrize("mode", MODES)
def test_full_rank_tiles(mode):
    rng = np.random.default_rng(3)
    n, nb = 150, 40
    G = rng.standard_normal((n, n))
    Af = G @ G.T / n + np.eye(n)
    if mode.startswith("DL"):
        T = potrf_from_dense(Af, tile_size=nb, tol=1e-14)
    else:
        T = TLRMatrix.from_dense(Af, tile_size=nb, tol=1e-14)
        potrf(T, algorithm=mode)
    r = T.ranks[np.tril_indices(T.ntiles, -1)]
    assert (r == np.array([min(nb, n - nb * i) for i, _ in zip(*np.tril_indices(T.ntiles, -1),
                                                                  strict=True)])).all()
    np.testing.assert_allclose(T.to_dense(), np.linalg.cholesky(Af), atol=1e-12)


def test_not_positive_definite_at_the_requested_accuracy():
    x = jittered_grid(400, 2, seed=1)
    k = sqexp(0.2)
    As = kernel_matrix(k, x, 1e-9)
    np.linalg.cholesky(As)  # positive definite as a dense matrix
    for algorithm in ("right", "left"):
        T = TLRMatrix.from_kernel(k, x, tile_size=50, tol=1e-3, nugget=1e-9)
        with pytest.raises(NotPositiveDefiniteError, match="nugget") as err:
            potrf(T, algorithm=algorithm)
        assert 50 < err.value.order <= 400
        assert "tol=0.001" in str(err.value)
        with pytest.raises(ValueError, match="failed"):
            T.solve(np.ones(400))
        with pytest.raises(ValueError, match="failed"):
            potrf(T)
    with pytest.raises(NotPositiveDefiniteError, match="smaller tol"):
        potrf_from_kernel(k, x, tile_size=50, tol=1e-3, nugget=1e-9)
    # The advice works: a nugget larger than the compression error ||E||_2 <= tol ||A||_F.
    nugget = 2e-3 * np.linalg.norm(As)
    F = potrf_from_kernel(k, x, tile_size=50, tol=1e-3, nugget=nugget)
    assert np.isfinite(F.logdet())


def test_indefinite_matrix_reports_the_order():
    D = np.diag(np.r_[np.ones(130), -1.0, np.ones(69)])
    for algorithm in ("right", "left"):
        T = TLRMatrix.from_dense(D, tile_size=60, tol=1e-10)
        with pytest.raises(NotPositiveDefiniteError) as err:
            potrf(T, algorithm=algorithm)
        assert err.value.order == 131
    with pytest.raises(NotPositiveDefiniteError) as err:
        potrf_from_dense(D, tile_size=60, tol=1e-10)
    assert err.value.order == 131


@pytest.mark.parametrize("n, nb", [(437, 100), (99, 100), (1, 7)])
def test_odd_sizes(n, nb):
    x = jittered_grid(n, 2, seed=n)
    k = matern25(0.2)
    An = kernel_matrix(k, x, 0.1)
    for mode in ("right", "left", "DL"):
        if mode == "DL":
            T = potrf_from_kernel(k, x, tile_size=nb, tol=1e-9, nugget=0.1)
        else:
            T = TLRMatrix.from_kernel(k, x, tile_size=nb, tol=1e-9, nugget=0.1)
            potrf(T, algorithm=mode)
        L = T.to_dense()
        assert fro_error(An, L @ L.T) <= _delta(mode, 1e-9, n)
        assert T.logdet() == pytest.approx(np.linalg.slogdet(An)[1], abs=logdet_bound(
            An, _delta(mode, 1e-9, n)))


def test_empty():
    T = potrf(TLRMatrix.from_dense(np.zeros((0, 0)), tile_size=3, tol=1e-6))
    assert T.logdet() == 0.0 and T.solve(np.zeros(0)).shape == (0,)


def test_fixed_rank_and_factorization_tolerance():
    T = TLRMatrix.from_kernel(KERNEL, X, tile_size=NB, rank=40, nugget=NUGGET)
    potrf(T)
    assert T.max_rank <= 40
    L = T.to_dense()
    assert fro_error(A, L @ L.T) < 1e-3
    for algorithm in ("right", "left"):
        T = TLRMatrix.from_kernel(KERNEL, X, tile_size=NB, tol=1e-10, nugget=NUGGET)
        potrf(T, tol=1e-5, algorithm=algorithm)
        L = T.to_dense()
        assert fro_error(A, L @ L.T) <= 1e-10 + 1e-5 + slack(N, np.float64)


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-4), (np.complex128, 1e-9),
                                        (np.complex64, 1e-4)])
@pytest.mark.parametrize("mode", ["right", "left", "DL"])
def test_other_dtypes(dtype, tol, mode):
    n = 240
    Ad = decay_matrix(n, seed=5, rate=0.3, dtype=dtype) + 0.1 * np.eye(n, dtype=dtype)
    if mode == "DL":
        T = potrf_from_dense(Ad, tile_size=64, tol=tol)
    else:
        T = TLRMatrix.from_dense(Ad, tile_size=64, tol=tol)
        potrf(T, algorithm=mode)
    L = T.to_dense()
    assert L.dtype == dtype
    ref = Ad.astype(np.complex128)
    L = L.astype(np.complex128)
    delta = _delta(mode, tol, n, dtype)
    assert fro_error(ref, L @ L.conj().T) <= delta
    b = np.ones(n, dtype=dtype)
    x = T.solve(b)
    assert x.dtype == dtype
    x_ref = np.linalg.solve(ref, b)
    assert np.linalg.norm(x - x_ref) <= solve_bound(ref, delta) * np.linalg.norm(x_ref)
    assert abs(T.logdet() - np.linalg.slogdet(ref)[1]) <= logdet_bound(ref, delta)


def test_usage_errors(capsys):
    T = TLRMatrix.from_kernel(KERNEL, X[:100], tile_size=30, tol=1e-6, nugget=NUGGET)
    with pytest.raises(ValueError, match="potrf"):
        T.solve(np.ones(100))
    with pytest.raises(ValueError, match="potrf"):
        T.logdet()
    with pytest.raises(ValueError, match="algorithm"):
        potrf(T, algorithm="up")
    with pytest.raises(TypeError, match="TLRMatrix"):
        potrf(np.eye(3))
    with pytest.raises(TypeError, match="progress"):
        potrf(T, progress=1)
    potrf(T, progress=True)  # not a terminal: no bar, no output
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError, match="already factored"):
        potrf(T)
    with pytest.raises(ValueError, match="method"):
        potrf_from_kernel(KERNEL, X, tile_size=30, tol=1e-6, method="x")
