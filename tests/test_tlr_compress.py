"""Compression of dense blocks: truncated SVD, adaptive randomized SVD, ACA."""

from __future__ import annotations

import numpy as np
import pytest

from test_tlr_support import decay_matrix, jittered_grid, matern15
from tricov.tlr import METHODS, compress
from tricov.tlr.compression import aca


def _far_block(m: int = 150, n: int = 130, dtype=np.float64) -> np.ndarray:
    """Covariances between two separated clusters of points: numerically low rank."""
    x = jittered_grid(m, 2, seed=1) * 0.4
    y = jittered_grid(n, 2, seed=2) * 0.4 + np.array([0.6, 0.1])
    return matern15(0.2)(x, y).astype(dtype)


def _optimal_error(A: np.ndarray, r: int) -> float:
    s = np.linalg.svd(A, compute_uv=False)
    return float(np.sqrt((s[r:] ** 2).sum()))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("tol", [1e-3, 1e-7, 1e-12])
def test_relative_accuracy(method, tol):
    A = _far_block()
    c = compress(A, tol=tol, method=method, seed=0)
    err = np.linalg.norm(A - c.to_dense())
    assert err <= tol * np.linalg.norm(A)
    assert 0 < c.rank < 60
    # Not much larger than the optimal rank for this accuracy.
    s = np.linalg.svd(A, compute_uv=False)
    tail = np.sqrt(np.cumsum((s ** 2)[::-1])[::-1])
    optimal = int((tail > tol * np.linalg.norm(A)).sum())
    assert c.rank <= optimal + (0 if method == "svd" else 3)
    np.testing.assert_allclose(c.U.T @ c.U, np.eye(c.rank), atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_absolute_accuracy_and_rank_cap(method):
    A = _far_block()
    atol = 1e-6 * np.linalg.norm(A)
    c = compress(A, atol=atol, method=method, seed=3)
    assert np.linalg.norm(A - c.to_dense()) <= atol
    capped = compress(A, atol=atol * 1e-6, rank=4, method=method, seed=3)
    assert capped.rank == 4


def test_fixed_rank_svd_is_optimal_and_rsvd_is_close():
    A = _far_block()
    for r in (1, 5, 12):
        e_opt = _optimal_error(A, r)
        c = compress(A, rank=r, method="svd")
        assert c.rank == r
        assert np.linalg.norm(A - c.to_dense()) == pytest.approx(e_opt, rel=1e-8)
        c = compress(A, rank=r, method="rsvd", seed=1)
        assert c.rank == r
        assert np.linalg.norm(A - c.to_dense()) <= 1.5 * e_opt
        c = compress(A, rank=r, method="aca", seed=1)
        assert c.rank == r
        assert np.linalg.norm(A - c.to_dense()) <= 10 * e_opt


@pytest.mark.parametrize("method", METHODS)
def test_zero_block_has_rank_zero(method):
    c = compress(np.zeros((40, 30)), tol=1e-8, method=method, seed=0)
    assert c.rank == 0 and c.shape == (40, 30)
    A = _far_block(40, 30)
    c = compress(A, atol=2 * np.linalg.norm(A), method=method, seed=0)
    assert c.rank == 0


@pytest.mark.parametrize("method", METHODS)
def test_full_rank_random_block(method):
    A = np.random.default_rng(5).standard_normal((37, 23))
    c = compress(A, tol=1e-14, method=method, seed=0)
    assert c.rank == 23
    assert np.linalg.norm(A - c.to_dense()) <= 1e-14 * np.linalg.norm(A) + 1e-13


@pytest.mark.parametrize("method", METHODS)
def test_stack_members_are_compressed_independently(method):
    A = np.stack([_far_block(), 1e-3 * _far_block(), np.zeros((150, 130))])
    A[1, :, :3] += np.random.default_rng(2).standard_normal((150, 3))
    c = compress(A, tol=1e-8, method=method, seed=0)
    assert c.U.shape[:2] == (3, 150) and c.V.shape[:2] == (3, 130)
    for b in range(3):
        assert np.linalg.norm(A[b] - c.to_dense()[b]) <= 1e-8 * np.linalg.norm(A[b])
    assert np.abs(c.U[2]).max() == 0  # the zero member holds only padding


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-4), (np.complex128, 1e-10),
                                        (np.complex64, 1e-4)])
@pytest.mark.parametrize("method", METHODS)
def test_other_dtypes(dtype, tol, method):
    A = _far_block().astype(dtype)
    if np.dtype(dtype).kind == "c":
        A = A * np.exp(1j * np.linspace(0, 3, A.shape[1]))[None, :].astype(dtype)
    c = compress(A, tol=tol, method=method, seed=0)
    assert c.U.dtype == dtype and c.V.dtype == dtype
    ref = A.astype(np.complex128)
    assert np.linalg.norm(ref - c.to_dense()) <= tol * np.linalg.norm(ref)


def test_decay_matrix_ranks_follow_tolerance():
    A = decay_matrix(240, rate=0.5)[120:, :120]  # an off-diagonal block
    r = [compress(A, tol=t, method="rsvd", seed=0).rank for t in (1e-2, 1e-6, 1e-10)]
    assert r[0] < r[1] < r[2] < 60


def test_aca_reads_only_rows_and_columns():
    A = _far_block(600, 500)
    seen = {"entries": 0}

    def rows(i):
        seen["entries"] += len(i) * A.shape[1]
        return A[i, :]

    def cols(j):
        seen["entries"] += len(j) * A.shape[0]
        return A[:, j]

    atol = 1e-8 * np.linalg.norm(A)
    U, V = aca(rows, cols, A.shape, atol, rng=np.random.default_rng(0))
    assert np.linalg.norm(A - U @ V.T) <= atol
    assert seen["entries"] < A.size / 4


def test_argument_errors():
    A = _far_block(20, 10)
    with pytest.raises(ValueError, match="tol= .* rank="):
        compress(A)
    with pytest.raises(ValueError, match="not both"):
        compress(A, tol=1e-3, atol=1e-3)
    with pytest.raises(ValueError, match="method"):
        compress(A, tol=1e-3, method="qr")
    with pytest.raises(ValueError, match="precision of float32"):
        compress(A.astype(np.float32), tol=1e-9)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        compress(A, tol=1.5)
    with pytest.raises(ValueError, match="rank must be >= 0"):
        compress(A, rank=-1)
    with pytest.raises(TypeError, match="rank must be an int"):
        compress(A, rank=2.0)
    with pytest.raises(ValueError, match="atol"):
        compress(A, atol=-1.0)
    with pytest.raises(ValueError, match="NaN"):
        compress(np.full((3, 3), np.nan), tol=1e-3)
    with pytest.raises(TypeError, match="dtype"):
        compress(np.ones((3, 3), dtype=np.int64), tol=1e-3)
    with pytest.raises(ValueError, match="2-D"):
        compress(np.ones(3), tol=1e-3)
