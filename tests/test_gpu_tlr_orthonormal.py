"""GPU tests of the building blocks of the GPU range finder: the strided-batched products of
tricov.tlr._stacks and the pivoted Gram factorization of kernels/cuda/gram.cu, against NumPy
(the same functions run on host arrays, and matmul)."""

from __future__ import annotations

import numpy as np
import pytest

from tricov.tlr import _orthonormal
from tricov.tlr._stacks import bmm

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


def test_bmm_broadcasts_a_matrix(cp):
    rng = np.random.default_rng(1)
    om = rng.standard_normal((6, 10))
    C = rng.standard_normal((4, 8, 10))
    out = cp.empty((4, 6, 8))
    bmm(cp.asarray(om), cp.asarray(C), out, tb=True)
    np.testing.assert_allclose(out.get(), om @ C.swapaxes(1, 2), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("w,p", [(1, 200), (7, 130), (32, 200), (32, 64)])
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
