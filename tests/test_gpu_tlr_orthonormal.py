"""GPU tests of the building blocks of the GPU range finder: the strided-batched and grouped
products of tricov.tlr._stacks and the pivoted Gram factorization of kernels/cuda/gram.cu,
against NumPy (the same functions run on host arrays, and matmul)."""

from __future__ import annotations

import numpy as np
import pytest

from tricov.tlr import _orthonormal
from tricov.tlr._stacks import Product, bmm, bmm_grouped

pytestmark = pytest.mark.gpu


@pytest.fixture
def cp():
    return pytest.importorskip("cupy")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_bmm_matches_matmul_on_strided_views(cp, dtype, ta, tb):
    rng = np.random.default_rng(0)
    m, rows, cols, inner = 5, 7, 9, 11
    A = rng.standard_normal((m, 13, 17)).astype(dtype)
    B = rng.standard_normal((m, 19, 23)).astype(dtype)
    a = A[:, :inner, :rows] if ta else A[:, :rows, :inner]  # row strides wider than the rows
    b = B[:, :cols, :inner] if tb else B[:, :inner, :cols]
    out = rng.standard_normal((m, rows + 3, cols + 2)).astype(dtype)
    ref = out.copy()
    want = 0.5 * (a.swapaxes(1, 2) if ta else a) @ (b.swapaxes(1, 2) if tb else b)
    ref[:, 1:rows + 1, :cols] = want - 2.0 * ref[:, 1:rows + 1, :cols]
    o = cp.asarray(out)
    bmm(cp.asarray(A)[:, :inner, :rows] if ta else cp.asarray(A)[:, :rows, :inner],
        cp.asarray(B)[:, :cols, :inner] if tb else cp.asarray(B)[:, :inner, :cols],
        o[:, 1:rows + 1, :cols], ta=ta, tb=tb, alpha=0.5, beta=-2.0)
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(o.get(), ref, atol=50 * inner * eps * np.abs(ref).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("broadcast", [False, True])
def test_bmm_reads_chosen_members_in_place(cp, dtype, ta, tb, broadcast):
    """Members of a strided view of B chosen by index (repeated, out of order), read by
    address: the same as on the host and as a product with the gathered stack."""
    rng = np.random.default_rng(4)
    rows, cols, inner = 6, 9, 5
    members = np.array([4, 0, 4, 2])
    shape_a = (inner, rows) if ta else (rows, inner)
    A = rng.standard_normal(shape_a if broadcast else (4, *shape_a)).astype(dtype)
    B = rng.standard_normal((5, 12, 14)).astype(dtype)
    b = B[:, 1:cols + 1, 2:inner + 2] if tb else B[:, 1:inner + 1, 2:cols + 2]
    out = rng.standard_normal((4, rows, cols + 3)).astype(dtype)
    want = out.copy()
    bmm(A, b, want[:, :, 1:cols + 1], ta=ta, tb=tb, alpha=0.5, beta=-1.0, b_members=members)
    gathered = (b[members].swapaxes(1, 2) if tb else b[members])
    ref = out.copy()
    ref[:, :, 1:cols + 1] = 0.5 * ((A.swapaxes(-1, -2) if ta else A) @ gathered) \
        - out[:, :, 1:cols + 1]
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(want, ref, atol=50 * inner * eps * _scale(ref))
    o = cp.asarray(out)
    dB = cp.asarray(B)
    bmm(cp.asarray(A), dB[:, 1:cols + 1, 2:inner + 2] if tb else dB[:, 1:inner + 1, 2:cols + 2],
        o[:, :, 1:cols + 1], ta=ta, tb=tb, alpha=0.5, beta=-1.0, b_members=members)
    np.testing.assert_allclose(o.get(), ref, atol=50 * inner * eps * _scale(ref))
    assert (o.get()[:, :, [0, cols + 1, cols + 2]] == out[:, :, [0, cols + 1, cols + 2]]).all()


def test_bmm_broadcasts_a_matrix(cp):
    rng = np.random.default_rng(1)
    om = rng.standard_normal((6, 10))
    C = rng.standard_normal((4, 8, 10))
    out = cp.empty((4, 6, 8))
    bmm(cp.asarray(om), cp.asarray(C), out, tb=True)
    np.testing.assert_allclose(out.get(), om @ C.swapaxes(1, 2), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bmm_grouped_matches_matmul(cp, dtype):
    """Products of different shapes, transposes, strided views, a broadcast matrix, alpha and
    beta, and empty ones (no member, no column, no inner dimension) in one grouped call, twice
    (the second reuses the addresses' pinned buffers once the first copy is done)."""
    rng = np.random.default_rng(2)
    host, dev, wants = [], [], []
    shapes = [(3, 5, 7, 9, False, False), (4, 6, 2, 11, True, False), (2, 8, 8, 3, False, True),
              (5, 1, 4, 6, True, True), (0, 3, 3, 3, False, False), (2, 3, 0, 4, False, False),
              (2, 3, 4, 0, False, False)]
    for m, rows, cols, inner, ta, tb in shapes:
        A = rng.standard_normal((m, inner + 2, rows + 3) if ta else (m, rows + 2, inner + 3))
        B = rng.standard_normal((cols + 1, inner + 1) if tb else (inner + 1, cols + 1))
        out = rng.standard_normal((m, rows + 1, cols + 2))
        A, B, out = (x.astype(dtype) for x in (A, B, out))
        a = A[:, 1:inner + 1, :rows] if ta else A[:, 1:rows + 1, :inner]
        b = B[:cols, :inner] if tb else B[:inner, :cols]
        want = out.copy()
        want[:, :rows, 1:cols + 1] = (0.5 * (a.swapaxes(1, 2) if ta else a)
                                      @ (b.T if tb else b) - 2.0 * out[:, :rows, 1:cols + 1])
        wants.append(want)
        dA, dB, dout = cp.asarray(A), cp.asarray(B), cp.asarray(out)
        host.append(dout)
        da = dA[:, 1:inner + 1, :rows] if ta else dA[:, 1:rows + 1, :inner]
        db = dB[:cols, :inner] if tb else dB[:inner, :cols]
        dev.append(Product(da, db, dout[:, :rows, 1:cols + 1], ta, tb, 0.5, -2.0))
    first = [o.copy() for o in host]
    bmm_grouped(dev)
    eps = np.finfo(dtype).eps
    for got, want in zip(host, wants, strict=True):
        np.testing.assert_allclose(got.get(), want, atol=200 * eps * _scale(want))
    for o, f in zip(host, first, strict=True):
        o[...] = f
    bmm_grouped(dev)
    for got, want in zip(host, wants, strict=True):
        np.testing.assert_allclose(got.get(), want, atol=200 * eps * _scale(want))


def _scale(x: np.ndarray) -> float:
    return max(1.0, float(np.abs(x).max(initial=0.0)))


def test_bmm_grouped_on_leading_parts(cp):
    """Per-member rows and inner sizes (zero ones skipped, their outputs untouched) against
    the host: the same function on NumPy arrays, and a direct product."""
    rng = np.random.default_rng(3)
    m, R, p, r = 6, 9, 40, 5
    V = rng.standard_normal((m, R, p))
    v = rng.standard_normal((r, p))
    U = rng.standard_normal((m, R, p + 3))
    ranks = np.array([9, 0, 3, 1, 7, 2])
    Z_h, T_h = np.full((m, R, r), 5.0), np.zeros((m, p + 3, r + 2))
    Z_d, T_d = cp.asarray(Z_h), cp.asarray(T_h)
    for Z, T, xp in ((Z_h, T_h, np), (Z_d, T_d, cp)):
        bmm_grouped([Product(xp.asarray(V), xp.asarray(v), Z, tb=True, rows=ranks)])
        bmm_grouped([Product(xp.asarray(U), Z, T[:, :, 1:r + 1], ta=True, inner=ranks)])
    np.testing.assert_allclose(Z_d.get(), Z_h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(T_d.get(), T_h, rtol=1e-12, atol=1e-12)
    for b, k in enumerate(ranks):
        assert (Z_h[b, k:] == 5.0).all()
        want = U[b, :k].T @ (V[b, :k] @ v.T)
        np.testing.assert_allclose(T_h[b, :, 1:r + 1], want, rtol=1e-12, atol=1e-12)
    assert (T_h[:, :, 0] == 0).all() and (T_h[:, :, r + 1] == 0).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("w,p", [(1, 200), (7, 130), (32, 200), (32, 64), (33, 90), (64, 200)])
def test_orthonormal_rows_match_the_host(cp, dtype, w, p):
    """Rank-deficient blocks (repeated and tiny rows), a member that is not live and an empty
    one, rows read and written through strides: the fused kernel keeps the rows the host
    algorithm keeps, and its rows are orthonormal."""
    rng = np.random.default_rng(w)
    m = 6
    big = rng.standard_normal((m, w + 2, p + 5))
    Z = big[:, 1:w + 1, 2:p + 2]
    Z[1, w // 2:] = Z[1, :w - w // 2] * 3.0  # half the rows repeated
    Z[2, ::2] *= 1e-9  # rows below the floor
    Z[4] = 0
    big = big.astype(dtype)
    Z = big[:, 1:w + 1, 2:p + 2]
    live = np.array([1, 1, 1, 0, 1, 1], dtype=dtype)
    floor, rel = 1e-12, 4 * w * float(np.finfo(dtype).eps)
    used_h = np.zeros((m, w + 3), dtype=dtype)
    D_h = _orthonormal.orthonormal_rows(Z, live, floor, rel, np.empty((m, w, p), dtype=dtype),
                                        used_h[:, 2:2 + w])
    used_d = cp.zeros((m, w + 3), dtype=dtype)
    out = cp.full((m, w + 1, p + 3), 7.0, dtype=dtype)
    _orthonormal.orthonormal_rows(cp.asarray(big)[:, 1:w + 1, 2:p + 2], cp.asarray(live),
                                  floor, rel, out[:, :w, 3:], used_d[:, 2:2 + w])
    np.testing.assert_array_equal(used_d.get(), used_h)
    D = out.get()
    assert (D[:, w:] == 7).all() and (D[:, :, :3] == 7).all()  # nothing written outside
    D = D[:, :w, 3:].astype(np.float64)
    kept = used_h[:, 2:2 + w].sum(axis=1).astype(int)
    assert kept[3] == kept[4] == 0 and kept[0] == w and kept[1] == (w + 1) // 2
    tol = 1e3 * w * float(np.finfo(dtype).eps)
    for b in range(m):
        Q = D[b]
        np.testing.assert_allclose(Q[:kept[b]] @ Q[:kept[b]].T, np.eye(kept[b]), atol=tol)
        assert not Q[kept[b]:].any()
        np.testing.assert_allclose(Q, D_h[b], atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_upper_triangle_kernel_on_views(cp, dtype):
    """symmetrize_lower and zero_upper on a strided square view: the strict upper triangle
    mirrors (conjugated) or is zeroed, nothing else changes, as on the host."""
    from tricov.tlr._array import symmetrize_lower, zero_upper

    rng = np.random.default_rng(5)
    big = rng.standard_normal((40, 45)) + (1j * rng.standard_normal((40, 45))
                                           if np.dtype(dtype).kind == "c" else 0)
    big = big.astype(dtype)
    for f in (symmetrize_lower, zero_upper):
        want = big.copy()
        f(want[3:36, 5:38])
        got = cp.asarray(big)
        f(got[3:36, 5:38])
        np.testing.assert_array_equal(got.get(), want)
