"""The panel algorithm of the GPU TLR Cholesky (tricov.tlr._panels), run on NumPy.

On CuPy arrays :func:`tricov.tlr.potrf` and ``potrf_from_kernel``/``potrf_from_dense`` take
this path (test_gpu_tlr checks it there); here NumPy stands in for the device, so the logic
(padded column stacks, the short last tile row, chunked panels, the Schur update, the batched
range finder) is tested against dense references with the bounds of test_tlr_cholesky.
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
    slack,
    solve_bound,
)
from tricov import NotPositiveDefiniteError
from tricov.tlr import TLRMatrix, _panels
from tricov.tlr.build import generate_diagonal
from tricov.tlr.sources import DenseSource, KernelSource

N, NB, NUGGET = 700, 96, 1e-2  # 7 full tile rows and a short one of 28
X = jittered_grid(N, 2, seed=3)
KERNEL = matern15(0.1)
A = kernel_matrix(KERNEL, X, NUGGET)


def _dl(src, tol: float, dtype=np.float64, seed: int = 0) -> TLRMatrix:
    T = TLRMatrix(src.n, NB, dtype, tol=tol)
    norm2 = generate_diagonal(T, src)
    T.anorm = float(np.sqrt(_panels.left_looking(T, src, tol, norm2,
                                                 np.random.default_rng(seed), False)))
    T._state = "factored"
    return T


def _ll(M: np.ndarray, tol: float, seed: int = 0) -> TLRMatrix:
    T = TLRMatrix.from_dense(M, tile_size=NB, tol=tol, seed=seed)
    _panels.left_looking(T, None, tol, T.anorm ** 2, np.random.default_rng(seed + 1), False)
    T._state = "factored"
    return T


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mode", ["DL-kernel", "DL-dense", "LL"])
def test_factor_solve_logdet(mode, dtype):
    tol = 1e-9 if dtype == np.float64 else 1e-4
    M = A.astype(dtype)
    if mode == "DL-kernel":
        T = _dl(KernelSource(KERNEL, X, NB, dtype, NUGGET), tol, dtype)
    elif mode == "DL-dense":
        T = _dl(DenseSource(M.copy(), NB, 0.0), tol, dtype)
    else:
        T = _ll(M, tol)
    delta = (tol if mode.startswith("DL") else 2 * tol) + slack(N, dtype)
    L = T.to_dense()
    assert np.allclose(np.triu(L, 1), 0)
    assert fro_error(A, L.astype(np.float64) @ L.T.astype(np.float64)) <= delta
    if dtype == np.float32:
        return  # the solve and logdet bounds need delta << 1 / cond(A)
    b = np.random.default_rng(1).standard_normal((N, 3))
    x = T.solve(b)
    ref = np.linalg.solve(A, b)
    assert np.linalg.norm(x - ref) / np.linalg.norm(ref) <= solve_bound(A, delta) + slack(N, dtype)
    assert abs(T.logdet() - np.linalg.slogdet(A)[1]) <= logdet_bound(A, delta) + slack(N, dtype)
    assert T.ranks.max() > 0


def test_chunked_panels(monkeypatch):
    """Panels cut into chunks of two tiles (the short last tile padded, in a chunk of its own
    or with a full one) give a factor of the same accuracy and ranks as whole panels (the
    random draws differ)."""
    src = KernelSource(KERNEL, X, NB, np.float64, NUGGET)
    whole = _dl(src, 1e-8)
    monkeypatch.setattr(_panels, "PANEL_BYTES", 2 * NB * NB * 8)
    shape = TLRMatrix(N, NB, tol=1e-8)
    assert _panels._chunks(shape, 0) == [(1, 3), (3, 5), (5, 7), (7, 8)]
    assert _panels._chunks(shape, 1) == [(2, 4), (4, 6), (6, 8)]
    chunked = _dl(src, 1e-8)
    L = chunked.to_dense()
    assert fro_error(A, L @ L.T) <= 1e-8 + slack(N, np.float64)
    low = np.tril_indices(chunked.ntiles, -1)
    assert np.abs(chunked.ranks[low] - whole.ranks[low]).max() <= _panels.BLOCK


def test_rank_zero_and_full_rank_tiles():
    """A block-diagonal matrix (zero coupling: rank 0) and a random one at a tolerance below
    its spectrum (full-rank tiles) are both factored exactly."""
    rng = np.random.default_rng(4)
    G = rng.standard_normal((N, N))
    full = G @ G.T / N + np.eye(N)
    T = _ll(full, 1e-14)
    assert T.ranks.max() == NB
    assert fro_error(full, T.to_dense() @ T.to_dense().T) <= 2e-14 + slack(N, np.float64)
    blocks = np.zeros((N, N))
    for s in range(0, N, NB):
        e = min(N, s + NB)
        blocks[s:e, s:e] = full[s:e, s:e]
    T = _dl(DenseSource(blocks, NB, 0.0), 1e-10)
    assert T.ranks.max() == 0
    L = T.to_dense()
    assert fro_error(blocks, L @ L.T) <= slack(N, np.float64)


def test_decaying_ranks_found():
    """Tiles of known numerical rank get ranks within one range-finder block above it."""
    M = decay_matrix(N, seed=2, rate=0.5)
    T = _ll(M, 1e-8)
    L = T.to_dense()
    assert fro_error(M, L @ L.T) <= 2e-8 + slack(N, np.float64)
    assert T.ranks.max() <= 2 * 37 + _panels.BLOCK


def test_compress_stack_accuracy_and_orthonormality():
    rng = np.random.default_rng(0)
    stack = np.stack([A[NB * (i + 1):NB * (i + 2), :NB] for i in range(5)])
    atol = 1e-9 * np.linalg.norm(A)
    QT, VT, ranks = _panels.compress_stack(np.ascontiguousarray(stack), atol, rng)
    for b in range(5):
        r = ranks[b]
        q = QT[b, :r]
        np.testing.assert_allclose(q @ q.T, np.eye(r), atol=1e-12)
        assert np.linalg.norm(stack[b] - q.T @ VT[b, :r]) <= atol
        assert not QT[b, r:].any() and not VT[b, r:].any()
    assert ranks[0] > ranks[-1] >= 0


def test_not_positive_definite():
    M = A.copy()
    M[5 * NB + 3, 5 * NB + 3] = -1.0
    with pytest.raises(NotPositiveDefiniteError) as err:
        _dl(DenseSource(M, NB, 0.0), 1e-8)
    assert err.value.order == 5 * NB + 4


def test_compress_column_builds_the_matrix():
    """The panel compression of TLRMatrix.from_kernel on CuPy, run on NumPy."""
    src = KernelSource(KERNEL, X, NB, np.float64, NUGGET)
    T = TLRMatrix(N, NB, tol=1e-9)
    norm2 = generate_diagonal(T, src)
    rng = np.random.default_rng(0)
    for k in range(T.ntiles - 1):
        norm2 = _panels.compress_column(T, src, k, norm2, rng)
    T.anorm = float(np.sqrt(norm2))
    assert fro_error(A, T.to_dense()) <= 1e-9 + slack(N, np.float64)
    assert 0 < T.ranks[np.tril_indices(T.ntiles, -1)].min()


def test_gram_basis_drops_what_is_below_the_floor():
    """Rows that repeat others, or carry less than the floor, are dropped; what they carry
    stays within the bound of the module notes (WIDTH times the threshold, squared)."""
    from tricov.tlr._orthonormal import gram_basis

    rng = np.random.default_rng(3)
    w, p, floor = 12, 50, 1e-10
    Z = rng.standard_normal((2, w, p))
    Z[0, 8:] = rng.standard_normal((4, 4)) @ Z[0, :4]  # in the span of the first rows
    Z[1, 5:] *= 1e-7
    used = np.zeros((2, w))
    M = gram_basis(Z @ Z.swapaxes(1, 2), np.ones(2), floor, 1e-14, used)
    assert used.sum(axis=1).tolist() == [8, 5]
    for b in range(2):
        Q = (M[b] @ Z[b])[:int(used[b].sum())]
        np.testing.assert_allclose(Q @ Q.T, np.eye(Q.shape[0]), atol=1e-10)
        rest = Z[b] - (Z[b] @ Q.T) @ Q
        assert np.linalg.norm(rest) ** 2 <= w * floor


def test_nan_entries_raise():
    """Panels are checked through their norm (no separate pass): a NaN still raises."""
    M = A.copy()
    M[5 * NB + 3, 2] = M[2, 5 * NB + 3] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        _dl(DenseSource(M, NB, 0.0), 1e-8)


@pytest.mark.parametrize("which", ["kernel", "dense"])
def test_padded_panel_is_the_panel_and_zero_rows(which):
    """A panel with the short last tile padded: the same entries, then zero rows."""
    src = (KernelSource(KERNEL, X, NB, np.float64, NUGGET) if which == "kernel"
           else DenseSource(A, NB, 0.0))
    plain = src.panel(2, 5, 8)
    padded = src.panel(2, 5, 8, rows=3 * NB)
    assert plain.shape == (2 * NB + N - 7 * NB, NB) and padded.shape == (3 * NB, NB)
    np.testing.assert_array_equal(padded[:plain.shape[0]], plain)
    assert not padded[plain.shape[0]:].any()
