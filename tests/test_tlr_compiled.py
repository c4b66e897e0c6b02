"""The compiled CPU path of the TLR code: kernel entries, tile generation, parallel ACA, the
left-looking factorization on packed factors, and the LAPACK wrappers they use.

References: the NumPy evaluation of the same kernel (entries), dense matrices and their SciPy /
NumPy factorizations (compression and factor accuracy, with the bounds of ``test_tlr_support``).
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from test_tlr_support import fro_error, jittered_grid, logdet_bound, slack, solve_bound
from tricov import NotPositiveDefiniteError
from tricov.geostat import exponential, matern, powexp, sqexp
from tricov.kernels.numba import lapack, tiles
from tricov.tlr import TLRMatrix, _columns, _threads, potrf, potrf_from_kernel, sources
from tricov.tlr.sources import KernelSource

EPS = np.finfo(np.float64).eps


def _rng(*key: int) -> np.random.Generator:
    """Data of each test's own (not a module stream shared in test order)."""
    return np.random.default_rng([1121, *key])

KERNELS = [matern(2.0, 0.1, 0.5), matern(1.0, 0.07, 1.5), matern(1.0, 0.05, 2.5),
           matern(1.3, 0.1, 0.8), matern(0.7, 0.1, 3.7), matern(1.0, 0.02, 70.0),
           exponential(1.0, 0.2), sqexp(1.5, 0.2), powexp(1.0, 0.2, 1.3)]


@pytest.fixture
def threads():
    """Restore Numba's thread count after a test that changes it."""
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)


def _compiled_block(kern, x, r0, r1, c0, c1):
    fn, p, tab, _ = kern.compiled()
    out = np.full((r1 - r0, c1 - c0), np.nan)
    tiles.fill(fn, np.ascontiguousarray(x), p, tab, r0, c0, out, 0.0, 0, r1 - r0)
    return out


# ---------------------------------------------------------------------------- entries
@pytest.mark.parametrize("kern", KERNELS, ids=lambda k: f"{k.family}{k.params}")
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_compiled_entries_match_the_kernel(kern, dim):
    x = _rng(dim).random((150, dim))
    got = _compiled_block(kern, x, 0, 63, 20, 150)  # 8190 elements: several chunks
    ref = kern(x[:63], x[20:150])
    col = np.full((150, 1), np.nan)  # a column, as ACA asks for
    fn, p, tab, _ = kern.compiled()
    tiles.fill(fn, x, p, tab, 0, 7, col, 0.0, 0, 150)
    np.testing.assert_allclose(col[:, 0], kern(x, x[7:8])[:, 0], rtol=16 * EPS,
                               atol=4 * EPS * kern.sigma2)
    # same operations; NumPy's SIMD exp/pow and libm's may differ by an ulp or two
    np.testing.assert_allclose(got, ref, rtol=16 * EPS, atol=4 * EPS * kern.sigma2)


def test_compiled_entries_great_circle():
    rng = _rng(4)
    x = np.column_stack([rng.uniform(-180, 180, 60), rng.uniform(-90, 90, 60)])
    kern = matern(2.0, 800.0, 1.2, metric="great_circle")
    got = _compiled_block(kern, x, 0, 60, 0, 60)
    ref = kern(x, x[::-1][::-1].copy())  # another array: no nugget, same entries
    np.testing.assert_allclose(got, ref, rtol=64 * EPS, atol=8 * EPS * 2.0)


def test_source_tiles_with_nuggets():
    x = jittered_grid(300, 2, seed=3)
    kern = matern(1.0, 0.1, 1.5, nugget=0.25)
    src = KernelSource(kern, x, 80, None, 0.5)
    assert src.compiled is not None and src.dtype == np.float64
    A = kern(x)  # the kernel's nugget on the diagonal
    np.testing.assert_allclose(src.diag(1), A[80:160, 80:160] + 0.5 * np.eye(80),
                               rtol=8 * EPS, atol=8 * EPS)
    d = src.diag(3)  # the short last tile
    assert d.shape == (60, 60)
    np.testing.assert_array_equal(d, d.T)
    np.testing.assert_allclose(d, A[240:, 240:] + 0.5 * np.eye(60), rtol=8 * EPS, atol=8 * EPS)
    np.testing.assert_allclose(src.panel(0, 1, 4), A[80:, :80], rtol=8 * EPS, atol=8 * EPS)
    # float32 tiles come from the float64 entries
    s32 = KernelSource(kern, x, 80, np.float32, 0.0)
    assert s32.panel(0, 1, 2).dtype == np.float32


def test_python_kernels_and_gpu_style_points_take_the_generic_path():
    x = jittered_grid(100, 2)
    src = KernelSource(lambda a, b: np.exp(-np.abs(a[:, :1] - b[:, 0])), x, 50, None, 0.0)
    assert src.compiled is None
    with pytest.raises(ValueError, match="no compiled form"):
        src.aca(np.array([[1, 0]]), 1e-8, None, 0)


# ---------------------------------------------------------------------------- ACA
def _aca_case(n=1200, nb=150, kern=None):
    x = jittered_grid(n, 2, seed=5)
    kern = kern or matern(1.0, 0.1, 0.5)
    src = KernelSource(kern, x, nb, None, 0.0)
    A = kern(x)
    nt = src.offsets.size - 1
    cols, rows = np.triu_indices(nt, 1)
    return src, A, np.stack([rows, cols], axis=1)


@pytest.mark.parametrize("kern", [matern(1.0, 0.1, 0.5), matern(1.0, 0.05, 2.5),
                                  matern(1.0, 0.1, 0.8)], ids=["nu0.5", "nu2.5", "nu0.8"])
@pytest.mark.parametrize("atol", [1e-3, 1e-8, 1e-12])
def test_compiled_aca_meets_the_tolerance(kern, atol):
    src, A, ik = _aca_case(kern=kern)
    off = src.offsets
    factors, norms = src.aca(ik, atol, None, seed=7)
    for (i, k), (u, v), nrm in zip(ik.tolist(), factors, norms, strict=True):
        tile = A[off[i]:off[i + 1], off[k]:off[k + 1]]
        assert u.flags.c_contiguous and v.flags.c_contiguous
        r = u.shape[1]
        np.testing.assert_allclose(u.T @ u, np.eye(r), atol=64 * EPS * max(r, 1))
        err = np.linalg.norm(tile - u @ v.T)
        assert err <= atol + 64 * EPS * np.linalg.norm(tile)
        assert nrm == pytest.approx(np.linalg.norm(v) ** 2, rel=1e-12, abs=1e-300)
        # at most the optimal rank of a tolerance 8 times smaller (the recompression keeps
        # room for twice the residual estimate)
        s = np.linalg.svd(tile, compute_uv=False)
        tail = np.sqrt(np.cumsum(s[::-1] ** 2))[::-1]
        assert r <= int((tail > atol / 8).sum()) + 1


def test_compiled_aca_fixed_rank_and_cap():
    src, A, ik = _aca_case()
    off = src.offsets
    fixed, _ = src.aca(ik[:20], None, 4, seed=1)
    capped, _ = src.aca(ik[:20], 1e-14, 6, seed=1)
    for (i, k), (u, v), (uc, vc) in zip(ik[:20].tolist(), fixed, capped, strict=True):
        tile = A[off[i]:off[i + 1], off[k]:off[k + 1]]
        s = np.linalg.svd(tile, compute_uv=False)
        assert u.shape[1] == 4 and uc.shape[1] == 6
        # within a small factor of the best approximations of these ranks
        assert np.linalg.norm(tile - u @ v.T) <= 10 * np.sqrt(np.sum(s[4:] ** 2)) + 1e-14
        assert np.linalg.norm(tile - uc @ vc.T) <= 10 * np.sqrt(np.sum(s[6:] ** 2)) + 1e-14


def test_compiled_aca_is_independent_of_threads_batches_and_room(threads, monkeypatch):
    src, _, ik = _aca_case(n=900, nb=100)
    numba.set_num_threads(1)
    ref, ref_norms = src.aca(ik, 1e-9, None, seed=3)
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    par, _ = src.aca(ik, 1e-9, None, seed=3)
    sub, _ = src.aca(ik[::-3], 1e-9, None, seed=3)
    monkeypatch.setattr(sources, "_ACA_ROOM", 1)  # every tile of rank > 1 redone
    redo, redo_norms = src.aca(ik, 1e-9, None, seed=3)
    for (u, v), (up, vp), (ur, vr) in zip(ref, par, redo, strict=True):
        np.testing.assert_array_equal(u, up)
        np.testing.assert_array_equal(v, vp)
        np.testing.assert_array_equal(u, ur)
        np.testing.assert_array_equal(v, vr)
    for b, (u, v) in zip(range(len(ik) - 1, -1, -3), sub, strict=True):
        np.testing.assert_array_equal(u, ref[b][0])
        np.testing.assert_array_equal(v, ref[b][1])
    np.testing.assert_array_equal(ref_norms, redo_norms)


def test_from_kernel_compiled():
    x = jittered_grid(1000, 2, seed=9)
    kern = matern(1.0, 0.1, 1.5)
    A = kern(x)
    T = TLRMatrix.from_kernel(kern, x, tile_size=128, tol=1e-9, seed=0)
    assert T.method == "aca"
    assert fro_error(A, T.to_dense()) <= 1e-9 + slack(1000, np.float64)
    assert T.anorm == pytest.approx(np.linalg.norm(A), rel=1e-8)
    T32 = TLRMatrix.from_kernel(kern, x, tile_size=128, tol=1e-5, dtype=np.float32)
    assert T32.dtype == np.float32 and T32.tile(3, 1).U.dtype == np.float32
    assert fro_error(A, T32.to_dense().astype(np.float64)) <= 1e-5 + slack(1000, np.float32)
    Tr = TLRMatrix.from_kernel(kern, x, tile_size=128, tol=1e-9, method="rsvd", seed=0)
    assert Tr.method == "rsvd" and fro_error(A, Tr.to_dense()) <= 1e-9 + slack(1000, np.float64)


# ---------------------------------------------------------------------------- factorization
N, NB = 1100, 160  # the last tile (140) is shorter
X = jittered_grid(N, 2, seed=11)
KERN = matern(1.0, 0.08, 1.5, nugget=1e-2)
A = KERN(X)


def _check_factor(T, tol, delta_factor):
    L = T.to_dense()
    np.testing.assert_array_equal(L, np.tril(L))
    delta = delta_factor * tol + slack(N, np.float64)
    assert fro_error(A, L @ L.T) <= delta
    b = np.random.default_rng(0).standard_normal(N)
    x_ref = np.linalg.solve(A, b)
    assert np.linalg.norm(T.solve(b) - x_ref) <= solve_bound(A, delta) * np.linalg.norm(x_ref)
    assert abs(T.logdet() - np.linalg.slogdet(A)[1]) <= logdet_bound(A, delta)
    return L


@pytest.mark.parametrize("tol", [1e-5, 1e-10])
def test_compiled_factorization_ll_and_dl(tol):
    T = TLRMatrix.from_kernel(KERN, X, tile_size=NB, tol=tol, seed=0)
    assert _columns.usable(T, tol)
    potrf(T, seed=1)
    _check_factor(T, tol, 2)
    D = potrf_from_kernel(KERN, X, tile_size=NB, tol=tol, seed=2)
    _check_factor(D, tol, 1)


def test_compiled_dl_one_tile_per_panel(monkeypatch):
    monkeypatch.setattr(_columns, "DENSE_CHUNK", 1)
    D = potrf_from_kernel(KERN, X, tile_size=NB, tol=1e-9, seed=3)
    _check_factor(D, 1e-9, 1)


def test_compiled_factorization_threads_and_retries(threads, monkeypatch):
    def factor():
        T = TLRMatrix.from_kernel(KERN, X, tile_size=NB, tol=1e-8, seed=0)
        return potrf(T, seed=1).to_dense()

    numba.set_num_threads(1)
    one = factor()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    two = factor()
    # row blocks of the SYRK and TRSM follow the threads: equal up to rounding
    assert np.linalg.norm(one - two) <= 1e-12 * np.linalg.norm(one)
    dl = potrf_from_kernel(KERN, X, tile_size=NB, tol=1e-8, seed=2).to_dense()
    monkeypatch.setattr(_columns, "ROOM", -10**6)  # every tile's factors redone with room
    np.testing.assert_array_equal(factor(), two)
    np.testing.assert_array_equal(potrf_from_kernel(KERN, X, tile_size=NB, tol=1e-8,
                                                    seed=2).to_dense(), dl)


def test_compiled_factorization_rank_cap_and_zero_tiles():
    T = TLRMatrix.from_kernel(KERN.replace(nugget=1.0), X, tile_size=NB, tol=1e-12, seed=0)
    potrf(T, rank=6, seed=1)
    assert T.max_rank == 6 and T.is_factored
    blocks = [np.exp(-np.abs(np.subtract.outer(np.arange(40.0), np.arange(40.0)))) for _ in
              range(3)]
    Ab = np.zeros((120, 120))
    for i, b in enumerate(blocks):
        Ab[40 * i:40 * i + 40, 40 * i:40 * i + 40] = b
    Tb = potrf(TLRMatrix.from_dense(Ab, tile_size=40, tol=1e-10))
    assert Tb.max_rank == 0
    np.testing.assert_allclose(Tb.to_dense(), np.linalg.cholesky(Ab), atol=1e-13)


def test_compiled_factorization_not_positive_definite():
    x = np.repeat(jittered_grid(150, 2), 2, axis=0)  # every point twice, no nugget
    T = TLRMatrix.from_kernel(matern(1.0, 0.1, 2.5), x, tile_size=50, tol=1e-8)
    with pytest.raises(NotPositiveDefiniteError) as info:
        potrf(T)
    assert 1 <= info.value.order <= 300
    with pytest.raises(ValueError, match="failed"):
        T.solve(np.ones(300))
    assert T.nbytes > 0


# ---------------------------------------------------------------------------- helpers
@pytest.mark.parametrize("shape", [(7, 3), (3, 7), (5, 5), (0, 4), (4, 0), (1, 1)])
def test_lapack_wrappers(shape):
    fns = lapack.addresses()
    a = _rng(*shape).standard_normal(shape)
    k = min(shape)
    q, r = lapack.qr(a, fns)
    assert q.shape == (shape[0], k) and r.shape == (k, shape[1])
    np.testing.assert_allclose(q @ r, a, atol=32 * EPS * max(1.0, np.abs(a).max(initial=0)))
    np.testing.assert_allclose(q.T @ q, np.eye(k), atol=32 * EPS)
    np.testing.assert_array_equal(r, np.triu(r))
    np.testing.assert_array_equal(lapack.qr_r(a, fns), r)
    np.testing.assert_array_equal(lapack.qr_q(a, fns), q)
    s2, vt2 = lapack.svd_right(a, fns)
    s = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose(s2, s, atol=32 * EPS)
    np.testing.assert_allclose(vt2 @ vt2.T, np.eye(k), atol=32 * EPS)
    av = a @ vt2.T  # columns s_i u_i: orthogonal, of norms s
    np.testing.assert_allclose(av.T @ av, np.diag(s2 ** 2), atol=64 * EPS * max(1.0, s.max(
        initial=0)) ** 2)
    g = a.T @ a
    w, v = lapack.eigh(g, fns)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(g), atol=64 * EPS * max(1.0, w.max(initial=0)))
    np.testing.assert_allclose((v * w) @ v.T, g, atol=64 * EPS * max(1.0, w.max(initial=0)))


def test_lapack_wrappers_nan_in_nan_out():
    fns = lapack.addresses()
    a = _rng(6).standard_normal((6, 4))
    a[2, 1] = np.nan
    assert np.isnan(lapack.svd_right(a, fns)[0]).all()
    assert np.isnan(lapack.eigh(a.T @ a, fns)[0]).all()


def test_run_ranges_covers_everything_and_raises():
    seen = []

    def record(out, b0, b1):
        out.extend(range(b0, b1))

    _threads.run_ranges(record, 103, (seen,), chunk=4)
    assert sorted(seen) == list(range(103))
    _threads.run_ranges(record, 0, (seen,))

    def fail(b0, b1):
        raise RuntimeError(f"range {b0}")

    with pytest.raises(RuntimeError, match="range"):
        _threads.run_ranges(fail, 10, (), chunk=2)
