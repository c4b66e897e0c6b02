"""Low-rank kernels (products, recompression) and ``tricov.tlr.gemm``."""

from __future__ import annotations

import numpy as np
import pytest

from test_tlr_support import jittered_grid, kernel_matrix, matern15
from tricov.tlr import LowRank, TLRMatrix, gemm, potrf
from tricov.tlr.lowrank import lr_product, recompress, truncation_ranks

RNG = np.random.default_rng(42)


def _lr(m, n, k, batch=(), dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((*batch, m, k))
    V = rng.standard_normal((*batch, n, k))
    if np.dtype(dtype).kind == "c":
        U = U + 1j * rng.standard_normal(U.shape)
        V = V + 1j * rng.standard_normal(V.shape)
    return LowRank(U.astype(dtype), V.astype(dtype))


def test_lowrank_basics():
    a = _lr(5, 4, 2, dtype=np.complex128)
    assert a.shape == (5, 4) and a.rank == 2 and a.dtype == np.complex128
    assert a.nbytes == a.U.nbytes + a.V.nbytes
    np.testing.assert_allclose(a.to_dense(), a.U @ a.V.conj().T)
    np.testing.assert_allclose(a.H.to_dense(), a.to_dense().conj().T)
    b = _lr(5, 4, 3, batch=(2,))
    assert b.shape == (2, 5, 4)
    assert "rank=2" in repr(a)


@pytest.mark.parametrize("U, V, err, match", [
    (np.ones(3), np.ones((3, 1)), ValueError, "at least 2"),
    (np.ones((3, 2)), np.ones((3, 1)), ValueError, "same batch shape"),
    (np.ones((2, 3, 1)), np.ones((3, 3, 1)), ValueError, "same batch shape"),
    (np.ones((3, 1)), np.ones((3, 1), dtype=np.float32), TypeError, "float32"),
    (np.ones((3, 1), dtype=int), np.ones((3, 1), dtype=int), TypeError, "dtype"),
])
def test_lowrank_validation(U, V, err, match):
    with pytest.raises(err, match=match):
        LowRank(U, V)


@pytest.mark.parametrize("k1, k2", [(2, 5), (5, 2), (3, 3)])
def test_lr_product(k1, k2):
    a, b = _lr(7, 6, k1, seed=1), _lr(6, 8, k2, seed=2)
    U, V = lr_product(a.U, a.V, b.U, b.V)
    assert U.shape[-1] == min(k1, k2)
    np.testing.assert_allclose(U @ V.T, a.to_dense() @ b.to_dense(), rtol=1e-12, atol=1e-12)


def test_truncation_ranks():
    s = np.array([[4.0, 3.0, 0.0], [1.0, 1e-3, 1e-4]])
    np.testing.assert_array_equal(truncation_ranks(s, np.array([1e-9, 2e-3])), [2, 1])
    np.testing.assert_array_equal(truncation_ranks(s, np.array([3.0, 0.0])), [1, 3])
    np.testing.assert_array_equal(truncation_ranks(s, np.array([2.99, 0.0])), [2, 3])
    np.testing.assert_array_equal(truncation_ranks(s, None, 2), [2, 2])
    np.testing.assert_array_equal(truncation_ranks(s, np.array([5.1, 1.1])), [0, 0])


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
def test_recompress_matches_truncated_svd(dtype):
    # L R^H of width 9 with dependent columns; true rank 6.
    a = _lr(30, 20, 6, batch=(3,), dtype=dtype, seed=3)
    L = np.concatenate([a.U, a.U[..., :3] * 2], axis=-1)
    R = np.concatenate([a.V, -a.V[..., :3] * 0.5], axis=-1)
    D = L @ R.conj().swapaxes(-1, -2)
    eps = np.finfo(dtype).eps
    atol = np.array([1e-3, 1.0, 1e4]) * np.linalg.norm(D[0])
    U, V, ranks = recompress(L, R, atol)
    for b in range(3):
        s = np.linalg.svd(D[b].astype(np.complex128), compute_uv=False)
        tail = np.sqrt(np.cumsum((s ** 2)[::-1])[::-1])
        assert ranks[b] == (tail > atol[b] * (1 + 1e3 * eps)).sum()
        err = np.linalg.norm(D[b] - U[b] @ V[b].conj().T)
        assert err <= atol[b] * (1 + 1e3 * eps)
        r = ranks[b]
        np.testing.assert_allclose(U[b, :, :r].conj().T @ U[b, :, :r], np.eye(r),
                                   atol=1e3 * eps)
        assert np.abs(U[b, :, r:]).max(initial=0) == 0 and np.abs(V[b, :, r:]).max(initial=0) == 0
    U, V, ranks = recompress(L, R, None, rank=2)
    assert list(ranks) == [2, 2, 2]


def test_gemm_tlr_times_dense():
    x = jittered_grid(300, 2)
    A = kernel_matrix(matern15(0.1), x, 1e-2)
    T = TLRMatrix.from_dense(A, tile_size=70, tol=1e-10)
    Td = T.to_dense()
    B = RNG.standard_normal((300, 3))
    C = RNG.standard_normal((300, 3))
    C0 = C.copy()
    out = gemm(2.0, T, B, -0.5, C)
    assert out is C
    np.testing.assert_allclose(C, 2.0 * Td @ B - 0.5 * C0, rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(gemm(1.0, T, B[:, 0], 0.0, None), Td @ B[:, 0], atol=1e-11)
    C[...] = np.nan
    gemm(1.0, T, B, 0.0, C)  # beta = 0 ignores C
    np.testing.assert_allclose(C, Td @ B, atol=1e-11)
    potrf(T)  # the stored matrix is now L
    L = T.to_dense()
    np.testing.assert_allclose(gemm(1.0, T, B, 0.0, None), L @ B, atol=1e-11)


@pytest.mark.parametrize("kinds", ["LL", "LD", "DL", "DD"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_gemm_into_dense(kinds, dtype):
    a = _lr(9, 7, 3, batch=(2,), dtype=dtype, seed=4)
    b = _lr(7, 8, 2, batch=(2,), dtype=dtype, seed=5)
    A = a if kinds[0] == "L" else a.to_dense()
    B = b if kinds[1] == "L" else b.to_dense()
    C = _lr(9, 8, 4, batch=(2,), dtype=dtype, seed=6).to_dense()
    ref = 1.5 * a.to_dense() @ b.to_dense() + 2.0 * C
    np.testing.assert_allclose(gemm(1.5, A, B, 2.0, C), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kinds", ["LL", "LD", "DL", "DD"])
def test_gemm_into_lowrank(kinds):
    a = _lr(20, 15, 3, seed=7)
    b = _lr(15, 18, 4, seed=8)
    A = a if kinds[0] == "L" else a.to_dense()
    B = b if kinds[1] == "L" else b.to_dense()
    C = _lr(20, 18, 2, seed=9)
    ref = -a.to_dense() @ b.to_dense() + 0.5 * C.to_dense()
    exact = gemm(-1.0, A, B, 0.5, LowRank(C.U.copy(), C.V.copy()))
    np.testing.assert_allclose(exact.to_dense(), ref, rtol=1e-12, atol=1e-12)
    atol = 1e-2 * np.linalg.norm(ref)
    out = gemm(-1.0, A, B, 0.5, C, atol=atol)
    assert out is C and C.rank <= 5
    assert np.linalg.norm(ref - C.to_dense()) <= atol
    capped = gemm(-1.0, A, B, 0.5, LowRank(C.U, C.V), rank=1)
    assert capped.rank == 1


def test_gemm_new_results():
    a, b = _lr(6, 5, 2, seed=10), _lr(5, 4, 3, seed=11)
    P = gemm(3.0, a, b, 0.0, None)
    assert isinstance(P, LowRank) and P.rank == 2
    np.testing.assert_allclose(P.to_dense(), 3.0 * a.to_dense() @ b.to_dense(), atol=1e-12)
    D = gemm(1.0, a.to_dense(), b.to_dense(), 0.0, None)
    np.testing.assert_allclose(D, a.to_dense() @ b.to_dense(), atol=1e-12)
    assert gemm(1.0, a, b, 0.0, None, rank=1).rank == 1


def test_gemm_cholesky_update():
    """The trailing update of a TLR Cholesky: ``A_ij <- A_ij - L_ik L_jk^H``."""
    Lik, Ljk, Aij = _lr(30, 25, 4, seed=12), _lr(28, 25, 5, seed=13), _lr(30, 28, 6, seed=14)
    ref = Aij.to_dense() - Lik.to_dense() @ Ljk.to_dense().T
    gemm(-1.0, Lik, Ljk.H, 1.0, Aij, atol=1e-10 * np.linalg.norm(ref))
    assert Aij.rank == 10
    np.testing.assert_allclose(Aij.to_dense(), ref, atol=1e-9)


def test_gemm_errors():
    a = _lr(4, 3, 1)
    T = TLRMatrix.from_dense(np.eye(4), tile_size=2, tol=1e-8)
    with pytest.raises(ValueError, match="inner dimensions"):
        gemm(1.0, a, a, 0.0, None)
    with pytest.raises(TypeError, match="B cannot be a TLRMatrix"):
        gemm(1.0, T, T, 0.0, None)
    with pytest.raises(TypeError, match="C cannot be a TLRMatrix"):
        gemm(1.0, a, a.H, 0.0, T)
    with pytest.raises(TypeError, match="dense arrays"):
        gemm(1.0, T, np.ones((4, 1)), 0.0, None, atol=1.0)
    with pytest.raises(ValueError, match="C has shape"):
        gemm(1.0, a, a.H, 0.0, np.zeros((3, 3)))
    with pytest.raises(ValueError, match="C has shape"):
        gemm(1.0, T, np.ones((4, 2)), 1.0, np.zeros((4, 3)))
    with pytest.raises(ValueError, match="LowRank results only"):
        gemm(1.0, a, a.H, 0.0, np.zeros((4, 4)), atol=1.0)
    with pytest.raises(TypeError, match="alpha"):
        gemm("1", a, a.H, 0.0, None)
    with pytest.raises(TypeError, match="A must be"):
        gemm(1.0, [1.0], a, 0.0, None)
