"""GPU tests of the dense operations: CuPy (and torch through DLPack) against host references.

Every operation x variant x dtype x layout; small leaf sizes force the recursion to run several
levels and both leaf paths (tricov's narrow kernel and cuBLAS) to be taken.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tricov as tc

pytestmark = pytest.mark.gpu

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
#: Each dtype with its products as the defaults run them, and float32 again with every GEMM of
#: at least two rows and columns run as a split-TF32 GEMM.
DT_SPLIT = [pytest.param(dt, False, id=np.dtype(dt).name) for dt in DTYPES] + [
    pytest.param(np.float32, True, id="float32-split")]
OPS = ("trsm", "trmm", "syrk", "potrf", "trtri", "lauum")


@pytest.fixture
def cp():
    return pytest.importorskip("cupy")


@pytest.fixture
def small_leaves():
    for dt in DTYPES:
        for op in OPS:
            tc.set_leaf_size("gpu", op, dt, 48)
    yield
    for dt in DTYPES:
        tc.set_leaf_size("gpu", "trsm", dt, None)


def _products(monkeypatch, split):
    """With ``split``, run every float32 GEMM of two or more rows and columns as a split-TF32
    GEMM (however small)."""
    if split:
        from tricov.backends import cuda

        monkeypatch.setattr(cuda.CUDAExecutor, "split_rows", 1)
        monkeypatch.setattr(tc._precision, "_enabled", True)


def _eps(dt):
    return np.finfo(dt).eps


def _rand(rng, shape, dt):
    x = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


def _tri(rng, n, dt, lower):
    a = _rand(rng, (n, n), dt)
    a = np.tril(a) if lower else np.triu(a)
    a[np.diag_indices(n)] = n + np.abs(a[np.diag_indices(n)])
    return a


def _spd(rng, n, dt):
    x = _rand(rng, (n, n), dt).astype(np.complex128 if np.dtype(dt).kind == "c" else np.float64)
    return (x @ x.conj().T / n + np.eye(n)).astype(dt)


def _op(a, trans):
    return {"N": a, "T": a.T, "C": a.conj().T}[trans]


def _dev(cp, x, order):
    return cp.asarray(np.asarray(x, order=order))


@pytest.mark.parametrize("dt,split", DT_SPLIT)
@pytest.mark.parametrize("side,uplo,trans,diag", list(itertools.product("LR", "LU", "NTC", "NU")))
@pytest.mark.parametrize("shape", [(70, 5), (129, 131)])
@pytest.mark.parametrize("kind", ["trsm", "trmm"])
@pytest.mark.parametrize("leaf", ["kernel", "cublas"])
def test_trsm_trmm(cp, small_leaves, monkeypatch, dt, split, side, uplo, trans, diag, shape, kind,
                   leaf):
    from tricov.backends import cuda

    _products(monkeypatch, split)
    if leaf == "cublas":
        monkeypatch.setattr(cuda.CUDAExecutor, "narrow", 0)
    rng = np.random.default_rng(7)
    m, n = shape
    k = m if side == "L" else n
    a = _tri(rng, k, dt, uplo == "L")
    b = _rand(rng, (m, n), dt)
    alpha = 0.5 - 0.25j if np.dtype(dt).kind == "c" else 0.5
    for la, lb in itertools.product("CF", "CF"):
        A, B = _dev(cp, a, la), _dev(cp, b, lb)
        getattr(tc, kind)(A, B, side=side, uplo=uplo, trans=trans, diag=diag, alpha=alpha)
        x = cp.asnumpy(B).astype(np.complex128)
        t = a.astype(np.complex128)
        if diag == "U":
            t[np.diag_indices(k)] = 1
        t = _op(t, trans)
        norm = np.linalg.norm
        if kind == "trsm":
            lhs = t @ x if side == "L" else x @ t
            rhs = alpha * b
            scale = norm(t, np.inf) * norm(x, np.inf) + norm(rhs, np.inf)
        else:
            lhs = x
            rhs = alpha * (t @ b if side == "L" else b @ t)
            scale = abs(alpha) * norm(t, np.inf) * norm(b, np.inf)
        err = norm(lhs - rhs, np.inf) / scale
        assert err < 30 * k * _eps(dt), (la, lb, err)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("leaf", [256, 512, 1024])
def test_trsm_long_leaves_wide_b(cp, dt, leaf):
    """Leaves of up to 1024 rows on wide B: solved as GEMMs with assembled inverses where the
    substitution kernel could take the leaf if its inverse failed the test, else in place."""
    rng = np.random.default_rng(leaf)
    m, n = 2 * leaf + 37, 2100
    a = _tri(rng, m, dt, True)
    b = _rand(rng, (m, n), dt)
    A, B = cp.asarray(a, order="F"), cp.asarray(b, order="F")
    tc.set_leaf_size("gpu", "trsm", dt, leaf)
    try:
        tc.trsm(A, B)
    finally:
        tc.set_leaf_size("gpu", "trsm", dt, None)
    x, t = cp.asnumpy(B).astype(np.complex128), a.astype(np.complex128)
    norm = np.linalg.norm
    err = norm(t @ x - b, np.inf) / (norm(t, np.inf) * norm(x, np.inf) + norm(b, np.inf))
    assert err < 30 * m * _eps(dt), err


@pytest.mark.parametrize("dt,split", DT_SPLIT)
@pytest.mark.parametrize("side,uplo,trans", [("L", "L", "N"), ("L", "U", "C"), ("R", "L", "T"),
                                             ("R", "U", "N")])
@pytest.mark.parametrize("budget", [1, 7, 1 << 30])
@pytest.mark.parametrize("kind", ["trsm", "trmm", "trmm-spine"])
def test_staged_views_and_panels(cp, small_leaves, monkeypatch, dt, split, side, uplo, trans,
                                 budget, kind):
    """The staged TRMM (leaves, then products level by level, on a copy of B or, "spine",
    without it) and the TRSM out of place (leaves GEMMs with inverted diagonal blocks, products
    into a workspace through cuBLASLt) on sub-matrix views whose leading dimension exceeds
    their rows, in panels of ``budget`` columns of B."""
    from tricov.backends import cuda, staged

    _products(monkeypatch, split)
    if kind == "trmm-spine":  # every panel without the copy; no plan of the other schedule
        monkeypatch.setattr(staged, "SPINE_COLUMNS", 1)
        tc.set_cuda_graphs(tc.cuda_graphs_enabled())
        kind = "trmm"

    rng = np.random.default_rng(11)
    # 292 = 256 + 36 rows: leaves of 32 and a last one of 36 (leaves of 48 at most), which
    # spans two inverted blocks and solves in place
    m, n = (292, 19) if side == "L" else (19, 292)
    k = m if side == "L" else n
    monkeypatch.setattr(cuda.CUDAExecutor, "stage_bytes", budget * k * np.dtype(dt).itemsize)
    a = _tri(rng, k, dt, uplo == "L")
    b = _rand(rng, (m, n), dt)
    t = _op(a.astype(np.complex128), trans)
    norm = np.linalg.norm
    for order in "CF":
        big_a = _dev(cp, _rand(rng, (k + 5, k + 3), dt), order)
        big_b = _dev(cp, _rand(rng, (m + 4, n + 6), dt), order)
        A, B = big_a[2:k + 2, 1:k + 1], big_b[3:m + 3, 2:n + 2]
        A[...] = cp.asarray(a)
        B[...] = cp.asarray(b)
        frame = cp.asnumpy(big_b).copy()
        getattr(tc, kind)(A, B, side=side, uplo=uplo, trans=trans, alpha=0.5)
        got = cp.asnumpy(big_b)
        x = got[3:m + 3, 2:n + 2].astype(np.complex128)
        if kind == "trmm":
            err = norm(x - 0.5 * (t @ b if side == "L" else b @ t), np.inf) / (
                0.5 * norm(t, np.inf) * norm(b, np.inf))
        else:
            err = norm((t @ x if side == "L" else x @ t) - 0.5 * b, np.inf) / (
                norm(t, np.inf) * norm(x, np.inf) + 0.5 * norm(b, np.inf))
        assert err < 30 * k * _eps(dt), (order, err)
        got[3:m + 3, 2:n + 2] = frame[3:m + 3, 2:n + 2]
        np.testing.assert_array_equal(got, frame)


@pytest.mark.parametrize("dt,split", DT_SPLIT)
@pytest.mark.parametrize("uplo", "LU")
@pytest.mark.parametrize("trans", "NC")
def test_syrk(cp, small_leaves, monkeypatch, dt, split, uplo, trans):
    _products(monkeypatch, split)
    rng = np.random.default_rng(3)
    n, k = 131, 37
    a = _rand(rng, (n, k) if trans == "N" else (k, n), dt)
    c = _rand(rng, (n, n), dt)
    c = ((c + c.conj().T) / 2).astype(dt)  # Hermitian: herk keeps the diagonal real
    for la, lc in itertools.product("CF", "CF"):
        A, C = _dev(cp, a, la), _dev(cp, c, lc)
        tc.syrk(A, C, uplo=uplo, trans=trans, alpha=2.0, beta=0.5)
        out = cp.asnumpy(C)
        op = a if trans == "N" else a.conj().T
        ref = 2.0 * op.astype(np.complex128) @ op.conj().T.astype(np.complex128) + 0.5 * c
        tri = np.tril if uplo == "L" else np.triu
        other = np.triu if uplo == "L" else np.tril
        err = np.abs(tri(out - ref, 0)).max() / np.abs(ref).max()
        assert err < 30 * k * _eps(dt)
        assert np.array_equal(other(out, 1 if uplo == "L" else -1),
                              other(c, 1 if uplo == "L" else -1))


@pytest.mark.parametrize("dt,split", DT_SPLIT)
@pytest.mark.parametrize("uplo", "LU")
@pytest.mark.parametrize("order", "CF")
@pytest.mark.parametrize("leaves", ["small", "default"])
def test_cholesky_family(cp, request, monkeypatch, dt, split, uplo, order, leaves):
    """Leaves of 48 (deep recursions), or the defaults on an order that recurses past them."""
    _products(monkeypatch, split)
    if leaves == "small":
        request.getfixturevalue("small_leaves")
    rng = np.random.default_rng(5)
    n = 203 if leaves == "small" else 600
    s = _spd(rng, n, dt)
    tri = np.tril if uplo == "L" else np.triu
    wide = s.astype(np.complex128)
    tol = 60 * n * _eps(dt)

    A = _dev(cp, s, order)
    tc.potrf(A, uplo=uplo)
    f = tri(cp.asnumpy(A)).astype(np.complex128)
    rec = f @ f.conj().T if uplo == "L" else f.conj().T @ f
    assert np.abs(rec - wide).max() / np.abs(wide).max() < tol

    inv = np.linalg.inv(wide)
    A = _dev(cp, s, order)
    tc.poti(A, uplo=uplo)
    got = cp.asnumpy(A)
    assert np.abs(tri(got - inv)).max() / np.abs(inv).max() < tol * np.linalg.cond(wide)

    L = _dev(cp, tri(cp.asnumpy(_dev(cp, s, order))), order)
    tc.potrf(L, uplo=uplo)
    b = _rand(rng, (n, 9), dt)
    B = _dev(cp, b, "F")
    tc.potrs(L, B, uplo=uplo)
    x = cp.asnumpy(B).astype(np.complex128)
    assert np.abs(wide @ x - b).max() / (np.abs(wide).max() * np.abs(x).max()) < tol

    t = tri(_rand(rng, (n, n), dt)) + n * np.eye(n, dtype=dt)
    T = _dev(cp, t, order)
    tc.trtri(T, uplo=uplo)
    got = tri(cp.asnumpy(T)).astype(np.complex128)
    assert np.abs(got @ t - np.eye(n)).max() < tol

    T = _dev(cp, t, order)
    tc.lauum(T, uplo=uplo)
    tw = t.astype(np.complex128)
    ref = tw.conj().T @ tw if uplo == "L" else tw @ tw.conj().T
    assert np.abs(tri(cp.asnumpy(T) - ref)).max() / np.abs(ref).max() < tol


def test_split_tf32_parts(cp):
    """The split kernel: hi and lo are TF32 values (13 low bits zero) with hi + lo = x to
    2^-22 |x|, laid out in three parts as asked, in every member; infinities and NaN pass
    through hi with lo = 0, and the largest floats do not round up to infinity."""
    from tricov.backends.cuda import CUDAExecutor

    rng = np.random.default_rng(2)
    rows, cols, lds, count = 37, 5, 41, 3
    src = (rng.standard_normal((count, cols, lds)) * 10.0 ** rng.integers(-30, 30, (count, cols,
                                                                                  lds)))
    src = src.astype(np.float32)
    src[0, 0, :6] = [np.inf, -np.inf, np.nan, np.finfo(np.float32).max, 1e-45, 0.0]
    ex = CUDAExecutor(np.dtype(np.float32))
    for down in (True, False):
        dev = cp.asarray(src)
        dst = cp.full(count * 3 * rows * cols, 7.0, dtype=np.float32)
        ld3, member = ex._split_into((rows, cols), down, dev.data.ptr, lds, lds * cols * 4,
                                     dst.data.ptr, count, 0b101)
        assert member == 3 * rows * cols * 4 and ld3 == (3 * rows if down else rows)
        out = cp.asnumpy(dst).reshape(count, -1)
        for z in range(count):
            x = src[z, :, :rows].T  # rows x cols
            flat = out[z]
            part = [flat[p * rows + np.arange(rows)[:, None] + ld3 * np.arange(cols)] if down
                    else flat[p * rows * cols + np.arange(rows)[:, None]
                              + ld3 * np.arange(cols)] for p in range(3)]
            lo, hi = part[0], part[1]
            np.testing.assert_array_equal(part[2], lo)
            for v in (hi, lo):
                assert not np.any(v.view(np.uint32) & 0x1FFF)
            finite = np.isfinite(x)
            assert np.all(np.isfinite(hi[finite])) and np.all(lo[~finite] == 0)
            np.testing.assert_array_equal(hi[~finite], x[~finite])
            err = np.abs(hi[finite].astype(np.float64) + lo[finite] - x[finite])
            assert np.all(err <= 2.0 ** -22 * np.abs(x[finite]) + 1e-45)


@pytest.mark.parametrize("dt", [np.float32, np.complex64])
@pytest.mark.parametrize("kind", ["trsm", "trmm"])
def test_split_tf32_at_default_sizes(cp, monkeypatch, dt, kind):
    """At the default policy, a float32 TRSM or TRMM large enough for split-TF32 products uses
    them, and the result keeps float32's backward error; with the setting off, or in complex64
    (where a TF32 product of three times the depth gains nothing), none is split. (Other
    operations reach split products at larger orders; with every product split, they are
    tested above on small leaves.)"""
    from tricov.backends.cuda import CUDAExecutor

    calls = []
    split_into = CUDAExecutor._split_into
    monkeypatch.setattr(CUDAExecutor, "_split_into",
                        lambda self, *args: calls.append(args) or split_into(self, *args))
    rng = np.random.default_rng(9)
    n = 2100
    norm = np.linalg.norm
    for enabled in (True, False):
        monkeypatch.setattr(tc._precision, "_enabled", enabled)
        calls.clear()
        a = _tri(rng, n, dt, True)
        b = _rand(rng, (n, n), dt)
        B = cp.asarray(b, order="F")
        getattr(tc, kind)(cp.asarray(a, order="F"), B)
        x, t = cp.asnumpy(B).astype(np.complex128), a.astype(np.complex128)
        if kind == "trsm":
            err = norm(t @ x - b, np.inf) / (norm(t, np.inf) * norm(x, np.inf) + norm(b, np.inf))
        else:
            err = norm(x - t @ b, np.inf) / (norm(t, np.inf) * norm(b, np.inf))
        assert err < 30 * n * _eps(dt), (enabled, err)
        assert bool(calls) == (enabled and dt == np.float32), len(calls)


def _count_fused(monkeypatch):
    """Record the fused split-TF32 products that run (their shapes)."""
    from tricov.backends.cuda import CUDAExecutor

    runs = []
    fused = CUDAExecutor._fused

    def counted(self, *args):
        ran = fused(self, *args)
        if ran:
            runs.append(args[2:5])
        return ran

    monkeypatch.setattr(CUDAExecutor, "_fused", counted)
    return runs


@pytest.mark.parametrize("m,n,k", [(2052, 64, 2048), (2048, 256, 2080), (8192, 256, 2048),
                                   (4096, 128, 2048), (8192, 128, 2048)])
@pytest.mark.parametrize("tb", ["N", "T"])
def test_fused_tf32_products(cp, monkeypatch, m, n, k, tb):
    """The fused split-TF32 kernel of narrow float32 products (Hopper only): C = alpha A op(B)
    + beta C within float32's error bound for sums of k products, ``2 k u (|alpha| |A| |op(B)|
    + |beta| |C|)``, in place and into another output D (C only read), on views whose leading
    dimensions exceed their rows, rows that end inside a block (2052), every tiling (64, 128
    and 256 columns a block) over the whole depth or parts of it (8, 4 and 2 parts at 2052 x
    64, 2048 x 256, 4096 x 128 on an H100; 65 slabs in 4 parts), op(B) transposed or not, and
    beta = 0 with NaN in C (not read)."""
    from tricov.backends import cuda

    runs = _count_fused(monkeypatch)
    monkeypatch.setattr(tc._precision, "_enabled", True)
    rng = np.random.default_rng(m + n + k)
    lda, ldb, ldc = m + 12, (k if tb == "N" else n) + 4, m + 6
    a = rng.standard_normal((lda, k)).astype(np.float32)
    b = rng.standard_normal((ldb, n if tb == "N" else k)).astype(np.float32)
    ex = cuda.CUDAExecutor(np.dtype(np.float32))
    for alpha, beta in ((-1.0, 1.0), (2.5, -0.5), (1.0, 0.0)):
        c0 = rng.standard_normal((ldc, n)).astype(np.float32)
        if beta == 0.0:
            c0[:m] = np.nan
        A, B, C = (cp.asarray(x, order="F") for x in (a, b, c0))
        ex.raw_gemm(b"N", tb.encode(), m, n, k, alpha, A.data.ptr, lda, B.data.ptr, ldb, beta,
                    C.data.ptr, ldc)
        opb = (b[:k, :n] if tb == "N" else b[:n, :k].T).astype(np.float64)
        a64 = a[:m].astype(np.float64)
        cm = np.nan_to_num(c0[:m].astype(np.float64)) if beta else np.zeros((m, n))
        ref = alpha * a64 @ opb + beta * cm
        scale = abs(alpha) * np.abs(a64) @ np.abs(opb) + abs(beta) * np.abs(cm)
        got = cp.asnumpy(C)
        err = np.abs(got[:m] - ref) / (2 * k * 2.0**-24 * scale)
        assert np.all(err <= 1), (alpha, beta, np.nanmax(err))
        np.testing.assert_array_equal(got[m:], c0[m:])  # rows below C untouched
        if beta == 1.0:  # the same product into another output D; C only read
            D = cp.full((ldc + 2, n), 3.0, dtype=np.float32, order="F")
            C = cp.asarray(c0, order="F")
            ex.raw_gemm_into(b"N", tb.encode(), m, n, k, alpha, A.data.ptr, lda, B.data.ptr,
                             ldb, beta, C.data.ptr, ldc, D.data.ptr, ldc + 2)
            into = cp.asnumpy(D)
            assert np.all(np.abs(into[:m] - ref) <= 2 * k * 2.0**-24 * scale)
            assert np.all(into[m:] == 3.0)
            np.testing.assert_array_equal(cp.asnumpy(C), c0)
    assert len(runs) == (4 if cuda._hopper() else 0)


def test_fused_tf32_keeps_float32_digits(cp, monkeypatch):
    """Both operands keep 22 bits in the fused kernel (a one-pass TF32 product keeps 11):
    multiplied by a matrix of zeros and ones that picks one depth per element, A's values and
    B's come back to 2^-22 of themselves, as their split parts sum to (tf32.cuh)."""
    from tricov.backends import cuda

    runs = _count_fused(monkeypatch)
    monkeypatch.setattr(tc._precision, "_enabled", True)
    rng = np.random.default_rng(5)
    m, n, k = 2048, 64, 2048
    values = rng.standard_normal((m, k)) * 10.0 ** rng.integers(-20, 20, (m, k))
    values = values.astype(np.float32)
    ex = cuda.CUDAExecutor(np.dtype(np.float32))

    def product(a, b):
        A, B = cp.asarray(a, order="F"), cp.asarray(b, order="F")
        C = cp.zeros((m, n), dtype=np.float32, order="F")
        ex.raw_gemm(b"N", b"N", m, n, k, 1.0, A.data.ptr, m, B.data.ptr, k, 0.0, C.data.ptr, m)
        return cp.asnumpy(C).astype(np.float64)

    cols = (7 * np.arange(n) + 3) % k  # B picks these columns of A
    picks = np.zeros((k, n), dtype=np.float32)
    picks[cols, np.arange(n)] = 1.0
    rows = (5 * np.arange(m)) % k  # A picks these rows of B
    sel = np.zeros((m, k), dtype=np.float32)
    sel[np.arange(m), rows] = 1.0
    for got, expect in ((product(values, picks), values[:, cols]),
                        (product(sel, values[:k, :n]), values[:k, :n][rows])):
        err = np.abs(got - expect)
        assert np.all(err <= 2.0**-22 * np.abs(expect) + 1e-45), err.max()
    assert len(runs) == (2 if cuda._hopper() else 0)


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("n,k", [(2048, 512), (2560, 96)])
def test_fused_tf32_syrk(cp, monkeypatch, uplo, n, k):
    """Float32 SYRK of 2048 rows and more as the fused split-TF32 kernel on C's triangle
    (Hopper only): within float32's bound ``2 k u (|alpha| |A| |A|^T + |beta| |C|)`` on the
    triangle, the other triangle bitwise as it was, on views whose leading dimensions exceed
    their rows; with beta = 0 and NaN in C too."""
    from tricov.backends import cuda

    runs = _count_fused(monkeypatch)
    monkeypatch.setattr(tc._precision, "_enabled", True)
    rng = np.random.default_rng(n + k)
    lda, ldc = n + 4, n + 8
    a = rng.standard_normal((lda, k)).astype(np.float32)
    a64 = a[:n].astype(np.float64)
    tri = np.tril if uplo == "L" else np.triu
    mask = tri(np.ones((n, n), dtype=bool))
    ex = cuda.CUDAExecutor(np.dtype(np.float32))
    for alpha, beta in ((-1.0, 1.0), (0.5, 0.0)):
        c0 = rng.standard_normal((ldc, n)).astype(np.float32)
        if beta == 0.0:
            c0[:n][mask] = np.nan
        A, C = cp.asarray(a, order="F"), cp.asarray(c0, order="F")
        ex.raw_herk(uplo.encode(), b"N", n, k, alpha, A.data.ptr, lda, beta, C.data.ptr, ldc)
        got = cp.asnumpy(C)
        cm = np.nan_to_num(c0[:n].astype(np.float64)) if beta else np.zeros((n, n))
        ref = alpha * a64 @ a64.T + beta * cm
        scale = abs(alpha) * np.abs(a64) @ np.abs(a64).T + abs(beta) * np.abs(cm)
        err = np.abs(got[:n] - ref)[mask] / (2 * k * 2.0**-24 * scale[mask])
        assert np.all(err <= 1), (alpha, beta, err.max())
        np.testing.assert_array_equal(got[:n][~mask], c0[:n][~mask])
        np.testing.assert_array_equal(got[n:], c0[n:])
    assert len(runs) == (2 if cuda._hopper() else 0)


@pytest.mark.parametrize("n", [4096, 3584])
def test_fused_tf32_in_potrf(cp, monkeypatch, n):
    """A float32 POTRF of 3584 or 4096 rows at the default policy updates its trailing
    matrices by fused split-TF32 SYRKs on Hopper and keeps float32's backward error; the upper
    triangle of the input stays as it was."""
    from tricov.backends import cuda

    runs = _count_fused(monkeypatch)
    monkeypatch.setattr(tc._precision, "_enabled", True)
    rng = np.random.default_rng(n)
    s = _spd(rng, n, np.float32)
    junk = np.triu(rng.standard_normal((n, n)), 1).astype(np.float32)
    A = cp.asarray(np.tril(s) + junk, order="F")
    tc.potrf(A, uplo="L")
    got = cp.asnumpy(A)
    lo = np.tril(got).astype(np.float64)
    err = np.linalg.norm(lo @ lo.T - s, 2) / np.linalg.norm(s, 2)
    assert err < 30 * n * _eps(np.float32), err
    np.testing.assert_array_equal(np.triu(got, 1), junk)
    if cuda._hopper():
        assert runs and all(shape[0] == shape[1] >= 2048 for shape in runs), runs


@pytest.mark.parametrize("kind", ["trsm", "trmm"])
@pytest.mark.parametrize("order", ["F", "C"])
def test_fused_tf32_in_narrow_solves(cp, monkeypatch, kind, order):
    """At the default policy a float32 TRSM or TRMM with 256 right-hand sides and 8192 rows
    runs its single products of 2048 rows and more (the top one, 4096 x 256 x 4096, and a
    TRSM's two of 2048) as fused split-TF32 kernels on Hopper, keeping float32's backward
    error; with split TF32 off, none runs."""
    from tricov.backends import cuda

    runs = _count_fused(monkeypatch)
    rng = np.random.default_rng(11)
    n, nrhs = 8192, 256
    norm = np.linalg.norm
    for enabled in (True, False):
        monkeypatch.setattr(tc._precision, "_enabled", enabled)
        runs.clear()
        a = _tri(rng, n, np.float32, True)
        b = _rand(rng, (n, nrhs), np.float32)
        B = cp.asarray(b, order=order)
        getattr(tc, kind)(cp.asarray(a, order=order), B)
        x, t = cp.asnumpy(B).astype(np.float64), a.astype(np.float64)
        if kind == "trsm":
            err = norm(t @ x - b, np.inf) / (norm(t, np.inf) * norm(x, np.inf) + norm(b, np.inf))
        else:
            err = norm(x - t @ b, np.inf) / (norm(t, np.inf) * norm(b, np.inf))
        assert err < 30 * n * _eps(np.float32), (enabled, err)
        if enabled and order == "F" and cuda._hopper():
            # TRMM's lower levels are strided-batched products, which stay on cuBLAS
            expect = [(2048, nrhs, 2048)] * 2 * (kind == "trsm") + [(4096, nrhs, 4096)]
            assert sorted(runs) == expect, runs
        if not enabled:
            assert not runs


def test_not_positive_definite_order(cp, small_leaves):
    n = 150
    s = np.eye(n)
    s[97, 97] = -1.0
    with pytest.raises(tc.NotPositiveDefiniteError) as err:
        tc.potrf(cp.asarray(s))
    assert err.value.order == 98


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,vendor", [(100, False), (300, False), (300, True)])
def test_nan_pivot_order(cp, monkeypatch, dtype, n, vendor):
    """A NaN in the triangle fails at its row, the order LAPACK reports, for tricov's leaf
    kernels (n = 100 in shared memory, 300 by tiles) and for cuSOLVER's POTRF (it does not test
    pivots for NaN, a kernel does), eagerly, captured and replayed; C order too (the upper
    triangle of memory)."""
    if vendor:
        from tricov.backends.cuda import CUDAExecutor

        monkeypatch.setattr(CUDAExecutor, "tile_potrf", 0)
    rng = np.random.default_rng(n)
    s = _spd(rng, n, dtype)
    s[n - 20, 37] = np.nan
    for order in ("F", "C"):
        S = cp.asarray(s, order=order)
        for _ in range(3):
            S[...] = cp.asarray(s)
            with pytest.raises(tc.NotPositiveDefiniteError) as err:
                tc.potrf(S)
            assert err.value.order == n - 19
        S[...] = cp.asarray(_spd(rng, n, dtype))
        tc.potrf(S)  # the same plan, no failure


@pytest.mark.parametrize("dtype", DTYPES)
def test_vendor_potrf_c_order(cp, monkeypatch, dtype):
    """cuSOLVER's POTRF on a C-ordered view (row stride above its order): factored as the
    lower triangle between two in-place transposes. The factor is right, the other triangle
    (NaN here) and the columns beside the view come back bitwise, and a failing leading minor
    is reported at its order."""
    from tricov.backends.cuda import CUDAExecutor

    monkeypatch.setattr(CUDAExecutor, "tile_potrf", 0)
    n = 333  # 11 tiles of 32, the last partial
    rng = np.random.default_rng(333)
    s = _spd(rng, n, dtype)
    buf = np.full((n, n + 5), 7.0, dtype)
    buf[:, 2:2 + n] = s
    view = buf[:, 2:2 + n]
    view[np.triu_indices(n, 1)] = np.nan
    B = cp.asarray(buf)  # C order
    tc.potrf(B[:, 2:2 + n])
    got = cp.asnumpy(B)
    low = np.tril(got[:, 2:2 + n]).astype(np.complex128)
    err = np.linalg.norm(low @ low.conj().T - s, 1) / np.linalg.norm(s, 1)
    assert err < 10 * n * _eps(dtype), err
    assert np.isnan(got[:, 2:2 + n][np.triu_indices(n, 1)]).all()
    assert (got[:, :2] == 7).all() and (got[:, 2 + n:] == 7).all()
    bad = _spd(rng, n, dtype)
    bad[200, 200] = -1000
    with pytest.raises(tc.NotPositiveDefiniteError) as err_info:
        tc.potrf(cp.asarray(bad))
    assert err_info.value.order == 201


@pytest.mark.parametrize("dt", DTYPES)
def test_vector_rhs_and_self_overlap(cp, dt):
    """A CuPy vector as B (a strided column, and a row for side='R') is solved in place; a
    broadcast CuPy output (stride 0: writeable, every row the same memory) is refused."""
    rng = np.random.default_rng(41)
    n = 41
    s = _spd(rng, n, dt)
    low = np.linalg.cholesky(s.astype(np.complex128)).astype(dt)
    b = _rand(rng, (n, 3), dt)
    B = cp.asarray(b)  # C order: column 1 has a stride of 3 elements
    col = B[:, 1]
    assert tc.potrs(cp.asarray(low), col) is col
    x = cp.asnumpy(col).astype(np.complex128)
    err = np.linalg.norm(s @ x - b[:, 1]) / (np.linalg.norm(s) * np.linalg.norm(x))
    assert err < 10 * n * _eps(dt), err
    got = cp.asnumpy(B)
    assert (got[:, [0, 2]] == b[:, [0, 2]]).all()
    row = cp.asarray(b[:, 2].copy())
    tc.trsm(cp.asarray(low), row, side="R")
    y = cp.asnumpy(row).astype(np.complex128)
    err = np.linalg.norm(y @ low - b[:, 2]) / (np.linalg.norm(low) * np.linalg.norm(y))
    assert err < 10 * n * _eps(dt), err
    with pytest.raises(ValueError, match="overlaps itself"):
        tc.potrf(cp.broadcast_to(cp.ones(n, dtype=dt), (n, n)))


def test_singular_trtri(cp):
    t = np.eye(20)
    t[4, 4] = 0
    T = cp.asarray(t)
    with pytest.raises(tc.SingularMatrixError) as err:
        tc.trtri(T)
    assert err.value.index == 5
    assert np.array_equal(cp.asnumpy(T), t)


def test_view_in_nan_frame(cp, small_leaves):
    rng = np.random.default_rng(1)
    big = np.full((300, 260), np.nan)
    a = _tri(rng, 120, np.float64, True)
    big[10:130, 20:140] = np.where(np.tril(np.ones((120, 120))) > 0, a, np.nan)
    b = rng.standard_normal((120, 40))
    big[150:270, 200:240] = b
    D = cp.asarray(big)
    tc.trsm(D[10:130, 20:140], D[150:270, 200:240])
    out = cp.asnumpy(D)
    x = out[150:270, 200:240]
    assert np.abs(a @ x - b).max() < 1e-10
    mask = np.ones_like(big, dtype=bool)
    mask[150:270, 200:240] = False
    assert np.array_equal(out[mask], big[mask], equal_nan=True)


def test_torch_dlpack_zero_copy(cp):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    a = torch.eye(64, dtype=torch.float64, device="cuda") * 2
    b = torch.ones(64, 3, dtype=torch.float64, device="cuda")
    out = tc.trsm(a, b)
    assert out is b
    assert torch.allclose(b, torch.full_like(b, 0.5))


@pytest.mark.parametrize("graphs", [True, False])
def test_repeated_calls_replay_with_current_data(cp, small_leaves, graphs):
    """The third and later identical calls replay a captured graph: results follow the data."""
    rng = np.random.default_rng(11)
    tc.set_cuda_graphs(graphs)
    try:
        n = 150
        a = _tri(rng, n, np.float64, True)
        A = cp.asarray(a, order="F")
        B = cp.empty((n, 7), order="F")
        S = cp.empty((n, n), order="F")
        for trial in range(4):
            b = rng.standard_normal((n, 7))
            B[...] = cp.asarray(b)
            tc.trsm(A, B)
            x = cp.asnumpy(B)
            assert np.abs(a @ x - b).max() < 1e-10, trial
            B[...] = cp.asarray(b)
            tc.trmm(A, B)  # staged: B's copy is a workspace of the plan
            assert np.abs(cp.asnumpy(B) - a @ b).max() < 1e-10, trial
            s = _spd(rng, n, np.float64)
            if trial == 3:
                s[120, 120] = -5.0  # fails at a leaf after the graph was captured
            S[...] = cp.asarray(s)
            if trial < 3:
                tc.potrf(S)
                f = np.tril(cp.asnumpy(S))
                assert np.abs(f @ f.T - s).max() < 1e-10, trial
            else:
                with pytest.raises(tc.NotPositiveDefiniteError) as err:
                    tc.potrf(S)
                assert err.value.order == 121
    finally:
        tc.set_cuda_graphs(True)


@pytest.mark.parametrize("ta,tb", list(itertools.product("NT", "NT")))
@pytest.mark.parametrize("how", ["whole", "groups", "blocks", "depths", "into"])
def test_split_tf32_products(cp, monkeypatch, ta, tb, how):
    """Split-TF32 GEMMs on sub-matrix views (leading dimensions above their rows), whole, in
    groups of strided members, or in blocks of rows, columns and depth within a small
    workspace, plain or into another output: each product within float32's error bound."""
    from tricov.backends import cuda

    monkeypatch.setattr(cuda.CUDAExecutor, "split_rows", 1)
    monkeypatch.setattr(tc._precision, "_enabled", True)
    m, n, k, count = 67, 45, 150, (3 if how == "groups" else 1)
    per = 12 * (m + n) * k
    budget = {"whole": per * count, "groups": per, "blocks": per // 3, "depths": per // 3,
              "into": per // 3}[how]
    monkeypatch.setattr(cuda.CUDAExecutor, "split_bytes", budget)
    if how in ("depths", "into"):
        monkeypatch.setattr(cuda, "_SPLIT_DEPTH", 64)
    rng = np.random.default_rng(4)
    sa, sb, sc = ((m, k) if ta == "N" else (k, m)), ((k, n) if tb == "N" else (n, k)), (m, n)
    a = rng.standard_normal((count, sa[1], sa[0] + 3)).astype(np.float32)  # F-order members
    b = rng.standard_normal((count, sb[1], sb[0] + 2)).astype(np.float32)
    c = rng.standard_normal((count, sc[1], sc[0] + 5)).astype(np.float32)
    A, B, C = cp.asarray(a), cp.asarray(b), cp.asarray(c)
    D = cp.full_like(C, np.nan)
    ex = cuda.CUDAExecutor(np.dtype(np.float32))
    args = (ta.encode(), tb.encode(), m, n, k, 0.5, A.data.ptr, sa[0] + 3, B.data.ptr,
            sb[0] + 2, -1.5, C.data.ptr, sc[0] + 5)
    if how == "into":
        ex.raw_gemm_into(*args, D.data.ptr, sc[0] + 5)
    elif count > 1:
        ex.raw_gemm_strided(*args, count, *(x[0].nbytes for x in (a, b, c)))
    else:
        ex.raw_gemm(*args)
    got = cp.asnumpy(D if how == "into" else C)
    for z in range(count):
        opa = a[z][:, :sa[0]].T.astype(np.float64)
        opb = b[z][:, :sb[0]].T.astype(np.float64)
        opa, opb = (opa if ta == "N" else opa.T), (opb if tb == "N" else opb.T)
        cz = c[z][:, :m].T.astype(np.float64)
        ref = 0.5 * opa @ opb - 1.5 * cz
        scale = 0.5 * np.abs(opa) @ np.abs(opb) + 1.5 * np.abs(cz)
        err = np.abs(got[z][:, :m].T - ref) / scale
        assert err.max() < 30 * k * _eps(np.float32), (z, err.max())
        # the rows of C (or D) past the view are untouched
        pad = got[z][:, m:]
        assert np.isnan(pad).all() if how == "into" else np.array_equal(pad, c[z][:, m:])


@pytest.mark.parametrize("graphs", [True, False])
def test_split_tf32_replayed_with_current_data(cp, small_leaves, monkeypatch, graphs):
    """Repeated float32 calls with every product split: the split kernels and TF32 GEMMs are
    captured into the plan's graph and replayed on the current data."""
    _products(monkeypatch, True)
    rng = np.random.default_rng(12)
    tc.set_cuda_graphs(graphs)
    norm = np.linalg.norm
    try:
        n = 150
        a = _tri(rng, n, np.float32, True)
        A = cp.asarray(a, order="F")
        B = cp.empty((n, 70), dtype=np.float32, order="F")
        S = cp.empty((n, n), dtype=np.float32, order="F")
        t = a.astype(np.float64)
        for trial in range(4):
            b = rng.standard_normal((n, 70)).astype(np.float32)
            B[...] = cp.asarray(b)
            tc.trsm(A, B)
            x = cp.asnumpy(B).astype(np.float64)
            err = norm(t @ x - b, np.inf) / (norm(t, np.inf) * norm(x, np.inf) + norm(b, np.inf))
            assert err < 30 * n * _eps(np.float32), (trial, err)
            B[...] = cp.asarray(b)
            tc.trmm(A, B)
            err = norm(cp.asnumpy(B) - t @ b, np.inf) / (norm(t, np.inf) * norm(b, np.inf))
            assert err < 30 * n * _eps(np.float32), (trial, err)
            s = _spd(rng, n, np.float32)
            S[...] = cp.asarray(s)
            tc.potrf(S)
            f = np.tril(cp.asnumpy(S)).astype(np.float64)
            err = np.abs(f @ f.T - s).max() / np.abs(s).max()
            assert err < 60 * n * _eps(np.float32), (trial, err)
    finally:
        tc.set_cuda_graphs(True)


def test_split_tf32_without_memory_runs_fp32(cp, monkeypatch):
    """Where the split operands cannot be allocated, the product runs on FP32: right result,
    and no TF32 GEMM issued."""
    from tricov.backends import cuda

    monkeypatch.setattr(cuda.CUDAExecutor, "split_rows", 1)
    monkeypatch.setattr(tc._precision, "_enabled", True)
    ex = cuda.CUDAExecutor(np.dtype(np.float32))

    class _NoMemory:
        def empty(self, nbytes, dtype):
            raise cp.cuda.memory.OutOfMemoryError(nbytes, 0, 0)

    monkeypatch.setattr(ex, "xp", _NoMemory())
    tf32 = []
    gemm = cuda.CUDAExecutor._gemm
    monkeypatch.setattr(cuda.CUDAExecutor, "_gemm",
                        lambda self, *args: tf32.append(args[0]) or gemm(self, *args))
    rng = np.random.default_rng(6)
    m, n, k = 40, 30, 50
    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n)))
    A, B = cp.asarray(a, order="F"), cp.asarray(b, order="F")
    C = cp.zeros((m, n), dtype=np.float32, order="F")
    ex.raw_gemm(b"N", b"N", m, n, k, 1.0, A.data.ptr, m, B.data.ptr, k, 0.0, C.data.ptr, m)
    ref = a.astype(np.float64) @ b
    assert tf32 == [False]
    assert np.abs(cp.asnumpy(C) - ref).max() < 30 * k * _eps(np.float32) * np.abs(ref).max()
