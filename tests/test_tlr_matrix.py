"""The TLR matrix: construction from kernels and dense arrays, accuracy, properties, products."""

from __future__ import annotations

import numpy as np
import pytest

from test_tlr_support import (
    KERNELS,
    decay_matrix,
    fro_error,
    jittered_grid,
    kernel_matrix,
    matern15,
    slack,
)
from tricov.tlr import METHODS, LowRank, TLRMatrix
from tricov.tlr.sources import PANEL_ELEMENTS


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("tol", [1e-4, 1e-9])
def test_dense_decay_matrix(method, tol):
    A = decay_matrix(300, seed=1, rate=0.3)
    T = TLRMatrix.from_dense(A, tile_size=64, tol=tol, method=method, seed=0)
    assert fro_error(A, T.to_dense()) <= tol
    assert T.ntiles == 5 and T.shape == (300, 300)
    r = T.ranks
    assert (r[np.triu_indices(5)] == -1).all() and (r[np.tril_indices(5, -1)] >= 0).all()
    assert 0 < T.max_rank < 64
    assert T.anorm == pytest.approx(np.linalg.norm(A), rel=1e-12 if method != "aca" else 1e-4)


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernels_on_jittered_grids(dim, name):
    n = 512 if dim == 2 else 343
    x = jittered_grid(n, dim, seed=dim)
    kernel = KERNELS[name](0.15)
    nugget = 1e-4 if name == "sqexp" else 0.0
    A = kernel_matrix(kernel, x, nugget)
    ranks = []
    for tol in (1e-5, 1e-10):
        T = TLRMatrix.from_kernel(kernel, x, tile_size=96, tol=tol, nugget=nugget, seed=1)
        assert fro_error(A, T.to_dense()) <= tol
        ranks.append(T.mean_rank)
        if dim == 2 and tol == 1e-5:
            assert T.nbytes < 0.6 * A.nbytes
    assert ranks[0] < ranks[1]


def test_ranks_fall_with_looser_tolerance_and_with_distance():
    x = jittered_grid(800, 2)
    k = matern15(0.1)
    tight = TLRMatrix.from_kernel(k, x, tile_size=100, tol=1e-10)
    loose = TLRMatrix.from_kernel(k, x, tile_size=100, tol=1e-3)
    assert loose.mean_rank < tight.mean_rank / 2
    r = tight.ranks
    near = np.mean([r[i + 1, i] for i in range(7)])
    far = np.mean([r[i, j] for i in range(8) for j in range(i - 3)])
    assert far < near


@pytest.mark.parametrize("n, nb", [(523, 100), (77, 100), (101, 100), (1, 10), (2, 1)])
def test_odd_sizes(n, nb):
    x = jittered_grid(n, 2, seed=n)
    k = matern15(0.2)
    A = kernel_matrix(k, x)
    T = TLRMatrix.from_kernel(k, x, tile_size=nb, tol=1e-8)
    assert T.ntiles == -(-n // nb)
    assert T.offsets[-1] == n and T.tile(T.ntiles - 1, T.ntiles - 1).shape[0] == n - nb * (
        T.ntiles - 1)
    assert fro_error(A, T.to_dense()) <= 1e-8 + slack(n, np.float64)


def test_empty_matrix():
    T = TLRMatrix.from_dense(np.zeros((0, 0)), tile_size=4, tol=1e-8)
    assert T.ntiles == 0 and T.nbytes == 0 and T.max_rank == 0 and T.mean_rank == 0.0
    assert T.to_dense().shape == (0, 0)
    assert T.matvec(np.zeros(0)).shape == (0,)


def test_fixed_rank_mode():
    x = jittered_grid(400, 2)
    k = matern15(0.1)
    for method in METHODS:
        T = TLRMatrix.from_kernel(k, x, tile_size=64, rank=7, method=method, seed=0)
        r = T.ranks[np.tril_indices(T.ntiles, -1)]
        assert (r == 7).all()
    T = TLRMatrix.from_kernel(k, x, tile_size=64, rank=0)
    assert T.max_rank == 0
    np.testing.assert_allclose(T.to_dense(), np.kron(np.eye(7), np.ones((64, 64)))[:400, :400]
                               * kernel_matrix(k, x), atol=1e-15)


def test_kernel_and_dense_agree():
    x = jittered_grid(450, 2)
    k = matern15(0.1)
    A = kernel_matrix(k, x, 0.5)
    Tk = TLRMatrix.from_kernel(k, x, tile_size=80, tol=1e-9, nugget=0.5)
    Td = TLRMatrix.from_dense(A, tile_size=80, tol=1e-9, nugget=0.0)
    assert fro_error(Tk.to_dense(), Td.to_dense()) <= 2e-9
    assert Tk.anorm == pytest.approx(np.linalg.norm(A), rel=1e-12)


def test_from_dense_reads_only_the_lower_triangle():
    A = decay_matrix(200, seed=3)
    B = np.tril(A) + np.triu(np.full_like(A, 7.0), 1)
    T = TLRMatrix.from_dense(B, tile_size=50, tol=1e-10)
    assert fro_error(A, T.to_dense()) <= 1e-10
    np.testing.assert_array_equal(B, np.tril(A) + np.triu(np.full_like(A, 7.0), 1))


def test_never_forms_the_dense_matrix():
    x = jittered_grid(900, 2)
    k = matern15(0.1)
    calls = []

    def counting(a, b):
        calls.append(len(a) * len(b))
        return k(a, b)

    for method in METHODS:
        calls.clear()
        TLRMatrix.from_kernel(counting, x, tile_size=100, tol=1e-8, method=method, seed=0)
        # at most one tile column (a panel) at a time, never the matrix
        assert max(calls) <= min(PANEL_ELEMENTS, 900 * 100)
    # ACA evaluates far fewer entries than there are.
    assert sum(calls) < 0.6 * 900 * 900


def test_properties_and_nbytes():
    x = jittered_grid(300, 2)
    T = TLRMatrix.from_kernel(matern15(0.1), x, tile_size=64, tol=1e-6)
    expected = sum(T.tile(i, i).nbytes for i in range(T.ntiles))
    expected += sum(T.tile(i, j).nbytes for i in range(T.ntiles) for j in range(i))
    assert T.nbytes == expected < 300 * 300 * 8
    assert T.tile_size == 64 and T.dtype == np.float64 and T.tol == 1e-6 and T.rank is None
    assert T.method == "rsvd" and not T.is_factored and T.n == 300
    assert isinstance(T.tile(2, 1), LowRank)
    assert T.tile_atol() == pytest.approx(1e-6 * T.anorm / T.ntiles)
    assert "Hermitian matrix" in repr(T)
    with pytest.raises(IndexError):
        T.tile(1, 2)


@pytest.mark.parametrize("shape", [(333,), (333, 4)])
def test_matvec(shape):
    x = jittered_grid(333, 2)
    T = TLRMatrix.from_kernel(matern15(0.1), x, tile_size=50, tol=1e-7)
    D = T.to_dense()
    np.testing.assert_allclose(D, D.T, rtol=0, atol=0)
    v = np.random.default_rng(0).standard_normal(shape)
    np.testing.assert_allclose(T @ v, D @ v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(T.matvec(v, trans=True), D @ v, rtol=1e-12, atol=1e-12)
    vc = v + 1j * v[::-1]
    np.testing.assert_allclose(T @ vc, D @ vc, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="shape"):
        T @ np.ones(332)


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-4), (np.complex128, 1e-9),
                                        (np.complex64, 1e-4)])
def test_other_dtypes(dtype, tol):
    A = decay_matrix(200, seed=4, dtype=dtype)
    T = TLRMatrix.from_dense(A, tile_size=48, tol=tol)
    assert T.dtype == dtype and T.tile(1, 0).dtype == dtype
    D = T.to_dense()
    assert fro_error(A.astype(np.complex128), D.astype(np.complex128)) <= tol
    np.testing.assert_array_equal(D, D.conj().T)


def test_kernel_dtype_and_cast():
    x = jittered_grid(100, 2)

    def k32(a, b):
        return matern15(0.1)(a, b).astype(np.float32)

    assert TLRMatrix.from_kernel(k32, x, tile_size=30, tol=1e-4).dtype == np.float32
    T = TLRMatrix.from_kernel(matern15(0.1), x, tile_size=30, tol=1e-4, dtype=np.float32)
    assert T.dtype == np.float32 and T.tile(0, 0).dtype == np.float32


def test_copy_is_independent():
    x = jittered_grid(200, 2)
    T = TLRMatrix.from_kernel(matern15(0.1), x, tile_size=50, tol=1e-6)
    C = T.copy()
    C.tile(0, 0)[...] = 0
    C.tile(1, 0).U[...] = 0
    assert np.abs(T.tile(0, 0)).max() > 0 and np.abs(T.tile(1, 0).U).max() > 0
    assert C.anorm == T.anorm


def test_construction_errors():
    x = jittered_grid(50, 2)
    k = matern15(0.1)
    with pytest.raises(ValueError, match="tile_size"):
        TLRMatrix.from_kernel(k, x, tile_size=0, tol=1e-6)
    with pytest.raises(ValueError, match="tol= .* rank="):
        TLRMatrix.from_kernel(k, x, tile_size=10)
    with pytest.raises(ValueError, match="method"):
        TLRMatrix.from_kernel(k, x, tile_size=10, tol=1e-6, method="lu")
    with pytest.raises(ValueError, match="expected"):
        TLRMatrix.from_kernel(lambda a, b: k(a, b)[:, :-1], x, tile_size=10, tol=1e-6)
    with pytest.raises(ValueError, match="NaN"):
        TLRMatrix.from_kernel(lambda a, b: k(a, b) * np.nan, x, tile_size=10, tol=1e-6)
    with pytest.raises(ValueError, match="points"):
        TLRMatrix.from_kernel(k, np.zeros((5, 2, 2)), tile_size=10, tol=1e-6)
    with pytest.raises(TypeError, match="callable"):
        TLRMatrix.from_kernel(None, x, tile_size=10, tol=1e-6)
    with pytest.raises(ValueError, match="square"):
        TLRMatrix.from_dense(np.ones((4, 3)), tile_size=2, tol=1e-6)
    with pytest.raises(TypeError, match="dtype"):
        TLRMatrix.from_dense(np.ones((4, 4), dtype=int), tile_size=2, tol=1e-6)
    with pytest.raises(ValueError, match="precision of float32"):
        TLRMatrix.from_dense(np.eye(4, dtype=np.float32), tile_size=2, tol=1e-10)
    with pytest.raises(ValueError, match="nugget"):
        TLRMatrix.from_kernel(k, x, tile_size=10, tol=1e-6, nugget=np.inf)
    with pytest.raises(ValueError, match="nugget"):
        TLRMatrix.from_dense(np.eye(4), tile_size=2, tol=1e-6, nugget="1")


def test_progress_bar_on_a_terminal(monkeypatch):
    import sys

    from tricov.tlr._progress import Progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    with Progress(3, "work", True) as bar:
        assert bar._bar is not None
        bar.advance(2)
        bar.advance()
        assert bar._bar.tasks[0].completed == 3
    with Progress(3, "work", False) as bar:
        assert bar._bar is None
    x = jittered_grid(200, 2)
    T = TLRMatrix.from_kernel(matern15(0.1), x, tile_size=50, tol=1e-6, progress=True)
    assert T.ntiles == 4
