"""GPU leaf kernels (``kernels/cuda/leaves.cu``) at the default leaf sizes.

Triangular leaves in both shapes of ``tri_leaf`` (narrow and wide bands of B), with inverted
diagonal blocks and with substitution; the accuracy of TRSM on ill-conditioned triangles
(condition numbers 1e6..1e12), where the inverse of a diagonal block must not be used; the
POTRF, TRTRI and LAUUM leaves in shared memory; failures found inside leaves.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tricov as tc
from reference import (
    DTYPES,
    assert_small,
    embed,
    eps,
    hermitian_from,
    inverse_error,
    lauum_error,
    make_rng,
    poison_triangle,
    potrf_error,
    random_general,
    random_spd,
    random_triangular,
    reference_dtype,
    solve_error,
    tolerance,
    trmm_error,
    trsm_error,
    trtri_error,
)
from tricov.kernels import TILE_POTRF

pytestmark = pytest.mark.gpu

#: Order of the triangles: more than one TRSM/TRMM leaf (256) and more than one inverted
#: diagonal block (128), a short last block; several panels of the shared-memory kernels.
N = 300


@pytest.fixture
def cp():
    return pytest.importorskip("cupy")


@pytest.fixture
def cuda():
    from tricov.backends import cuda

    return cuda


def _device(cp, e):
    """The buffer of an embedded operand on the GPU and the operand's view of it."""
    base = cp.asarray(e.base, order="F" if e.base.flags.f_contiguous else "C")
    offset = e.view.__array_interface__["data"][0] - e.base.__array_interface__["data"][0]
    view = cp.ndarray(e.view.shape, dtype=e.view.dtype, memptr=base.data + offset,
                      strides=e.view.strides)
    return base, view


def _run(cp, fn, *embedded, **options):
    """Call ``fn`` on GPU copies of the embedded operands; copy every buffer back."""
    bases, views = zip(*(_device(cp, e) for e in embedded), strict=True)
    try:
        fn(*views, **options)
    finally:
        for e, base in zip(embedded, bases, strict=True):
            e.base[...] = cp.asnumpy(base)


def _alpha(dt):
    return complex(0.6, -0.8) if np.dtype(dt).kind == "c" else -0.75


# ------------------------------------------------------------------------- triangular leaves
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("side,uplo,trans", list(itertools.product("LR", "LU", "NC")))
@pytest.mark.parametrize("kind", ["trsm", "trmm"])
@pytest.mark.parametrize("wide", [False, True])
def test_triangular_leaves(cp, cuda, monkeypatch, dt, side, uplo, trans, kind, wide):
    if wide:
        monkeypatch.setattr(cuda.CUDAExecutor, "wide", 1)
    rng = make_rng("leaves", kind, np.dtype(dt).name, side, uplo, trans, wide)
    diag = "U" if (side == "L") == (trans == "N") else "N"
    m, n = (N, 37) if side == "L" else (37, N)
    a = random_triangular(rng, N, dt, uplo=uplo)
    poison_triangle(a, uplo, unit=diag == "U")
    b = random_general(rng, (m, n), dt)
    alpha = _alpha(dt)
    for la, lb in (("C-sub", "F-sub"), ("F", "C")):
        ea, eb = embed(a, la), embed(b, lb)
        before_a, before_b = ea.snapshot(), eb.snapshot()
        _run(cp, getattr(tc, kind), ea, eb, side=side, uplo=uplo, trans=trans, diag=diag,
             alpha=alpha)
        measure = trsm_error if kind == "trsm" else trmm_error
        err = measure(a, b, eb.view, side=side, uplo=uplo, trans=trans, diag=diag, alpha=alpha)
        assert_small(err, dt, N, f"{kind} {la}/{lb}")
        ea.assert_outside_unchanged(before_a)
        eb.assert_outside_unchanged(before_b)
        np.testing.assert_array_equal(ea.base, before_a)  # A is read only


def _views(cp, *arrays):
    from tricov._views import view_of

    return [view_of(x) for x in arrays]


@pytest.mark.parametrize("dt", DTYPES)
def test_inverted_blocks_flagged_by_condition(cp, cuda, dt):
    """Well-conditioned diagonal blocks are inverted and used; ill-conditioned ones are not."""
    from tricov.kernels import block_order

    rng = make_rng("flags", np.dtype(dt).name)
    bs = block_order(np.dtype(dt).itemsize)
    count = -(-N // bs)
    good = random_triangular(rng, N, dt)
    bad = good.copy()
    bad[:bs, :bs] = _ill_block(rng, bs, dt, 1e9)  # the first diagonal block only
    for t, expected in ((good, [1] * count), (bad, [0] + [1] * (count - 1))):
        A, B = cp.asarray(t, order="F"), cp.zeros((N, 5), dtype=dt, order="F")
        a, b = _views(cp, A, B)
        ex = cuda.CUDAExecutor(dt)
        ex.prepare_trsm(True, False, a, b, 256)
        flags = cp.asnumpy(ex._inverses.flags)
        assert flags.tolist() == expected


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("lower,trans", [(True, "N"), (False, "N"), (True, "T"), (False, "C")])
@pytest.mark.parametrize("order", "FC")
@pytest.mark.parametrize("leaf", [256, 512])
def test_assembled_leaf_inverses(cp, cuda, dt, lower, trans, order, leaf):
    """Leaves of 256 or 512 rows get inverses assembled from those of the kernel's blocks, for
    the whole leaves only: the inverse of the diagonal block of op(T) where it passes the
    condition test (tri_cond, several blocks of threads per leaf), else the identity with its
    flag cleared. Leaf 0 is ill-conditioned only through the coupling of its first two
    well-conditioned blocks of 128, leaf 1 through an ill-conditioned block of 128, leaf 2 is
    well conditioned; 100 rows remain."""
    from tricov import _options as opt
    from tricov._views import view_of

    rng = make_rng("assembled", np.dtype(dt).name, lower, trans, order, leaf)
    m = 3 * leaf + 100
    logical = random_triangular(rng, m, dt, uplo="L" if lower else "U")
    coupling = (slice(128, 256), slice(0, 128)) if lower else (slice(0, 128), slice(128, 256))
    logical[coupling] *= 1e5
    half = _ill_block(rng, 128, dt, 1e9)
    logical[leaf:leaf + 128, leaf:leaf + 128] = half if lower else half.T
    stored = {"N": logical, "T": logical.T, "C": logical.conj().T}[trans]
    op = opt.parse_trans(trans, complex_=np.dtype(dt).kind == "c")
    A = cp.asarray(np.asarray(stored, order=order))
    B = cp.zeros((m, 5), dtype=dt, order="F")
    ex = cuda.CUDAExecutor(dt)
    ex.prepare_trsm(lower, False, view_of(A).apply(op), view_of(B), leaf)
    inv = ex._inverses
    assert (inv.leaf, inv.complete) == (leaf, 3)
    assert cp.asnumpy(inv.leaf_flags).tolist() == [0, 0, 1]
    got = cp.asnumpy(inv.leaves).reshape(3, leaf, leaf).transpose(0, 2, 1)
    eye = np.eye(leaf)
    np.testing.assert_array_equal(got[0], eye)
    np.testing.assert_array_equal(got[1], eye)
    block = (np.tril if lower else np.triu)(logical[2 * leaf:, 2 * leaf:][:leaf, :leaf])
    block = block.astype(reference_dtype(dt))
    err = np.linalg.norm(got[2] @ block - eye, np.inf) / (
        np.linalg.norm(got[2], np.inf) * np.linalg.norm(block, np.inf))
    assert err < tolerance(dt, leaf), err
    outside = np.triu(got[2], 1) if lower else np.tril(got[2], -1)
    assert not outside.any()


# ------------------------------------------------------- ill-conditioned triangles (accuracy)
def _skeel(t: np.ndarray) -> float:
    """|| |T^-1| |T| ||_inf of a lower triangle, in float64/complex128."""
    t = np.asarray(t, dtype=reference_dtype(t.dtype))
    inv = np.linalg.inv(t)
    return float(np.max(np.abs(inv) @ (np.abs(t) @ np.ones(len(t)))))


def _ill_block(rng, n, dt, cond):
    """A lower triangle of order n whose Skeel condition number is about ``cond``: a random
    diagonal of modulus in [1, 2] and normal entries below it scaled to reach ``cond``."""
    kind = np.dtype(dt)
    g = np.tril(random_general(rng, (n, n), kind).astype(reference_dtype(kind)), -1)
    d = np.diag(rng.uniform(1.0, 2.0, n))
    lo, hi = 0.0, 4.0
    for _ in range(60):  # bisection on the scale of the off-diagonal part
        s = (lo + hi) / 2
        if _skeel((d + s * g).astype(kind)) < cond:
            lo = s
        else:
            hi = s
    return (d + lo * g).astype(kind)


def _ill_triangle(rng, dt, cond, uplo):
    """Order N: every 128-row diagonal block ill-conditioned (Skeel condition ~ cond), small
    entries elsewhere below the diagonal."""
    t = random_triangular(rng, N, dt)
    for r in range(0, N, 128):
        k = min(128, N - r)
        t[r:r + k, r:r + k] = _ill_block(rng, k, dt, cond)
    return t if uplo == "L" else np.ascontiguousarray(t.T)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("cond", [1e6, 1e9, 1e12])
@pytest.mark.parametrize("uplo,trans,side", [("L", "N", "L"), ("U", "C", "L"), ("L", "T", "R"),
                                             ("U", "N", "R")])
def test_ill_conditioned_trsm_keeps_substitution_accuracy(cp, cuda, monkeypatch, dt, cond,
                                                          uplo, trans, side):
    """Right-hand sides made from a known solution (B = op(T) X), the case where a solve by
    an inverse loses accuracy in proportion to the condition number: the backward error must
    stay within the tolerance of substitution."""
    rng = make_rng("ill", np.dtype(dt).name, cond, uplo, trans, side)
    t = _ill_triangle(rng, dt, cond, uplo)
    tri = np.tril(t) if uplo == "L" else np.triu(t)
    opt = {"N": tri, "T": tri.T, "C": tri.conj().T}[trans].astype(reference_dtype(dt))
    x = random_general(rng, (N, 24) if side == "L" else (24, N), reference_dtype(dt))
    b = (opt @ x if side == "L" else x @ opt).astype(dt)

    def solve(threshold):
        monkeypatch.setattr(cuda.CUDAExecutor, "inverse_cond", threshold)
        A, B = cp.asarray(t, order="F"), cp.asarray(b, order="F")
        tc.trsm(A, B, side=side, uplo=uplo, trans=trans)
        return trsm_error(t, b, cp.asnumpy(B), side=side, uplo=uplo, trans=trans, diag="N",
                          alpha=1.0)

    gated = solve(cuda.CUDAExecutor.inverse_cond)
    assert_small(gated, dt, N, f"cond {cond:g}")
    if np.finfo(dt).eps < 1e-10 and cond == 1e9:
        # Through the inverses of these blocks the same solve is far less accurate (at the
        # tolerance on the H100 and in a NumPy emulation): the inputs are hard, the gate works.
        assert solve(np.inf) > 20 * gated


# --------------------------------------------------------------------- Cholesky-family leaves
@pytest.fixture(params=["shared", "default", "cusolver"])
def potrf_leaf(request, monkeypatch):
    """POTRF leaves in shared memory (as large as the kernel holds), the default policy (the
    whole matrix in one leaf, by tiles), or that leaf on cuSOLVER."""
    from tricov.backends.cuda import CUDAExecutor
    from tricov.kernels import block_order

    if request.param == "shared":
        for dt in DTYPES:
            tc.set_leaf_size("gpu", "potrf", dt, block_order(dt.itemsize))
    if request.param == "cusolver":
        monkeypatch.setattr(CUDAExecutor, "tile_potrf", 0)
    yield request.param
    for dt in DTYPES:
        tc.set_leaf_size("gpu", "potrf", dt, None)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("uplo", "LU")
@pytest.mark.parametrize("layout", ["F-sub", "C-sub"])
def test_cholesky_family_leaves(cp, potrf_leaf, dt, uplo, layout):
    rng = make_rng("chol-leaves", np.dtype(dt).name, uplo, layout)
    s = random_spd(rng, N, dt)
    a = s.copy()
    poison_triangle(a, uplo)
    full = hermitian_from(a, uplo)

    e = embed(a, layout)
    before = e.snapshot()
    _run(cp, tc.potrf, e, uplo=uplo)
    assert_small(potrf_error(a, e.view, uplo), dt, N, "potrf")
    e.assert_outside_unchanged(before)
    factor = e.view.copy()

    b = random_general(rng, (N, 9), dt)
    eb = embed(b, "F-sub")
    _run(cp, tc.potrs, embed(factor, layout), eb, uplo=uplo)
    assert_small(solve_error(full, eb.view, b), dt, N, "potrs")

    e = embed(a, layout)
    _run(cp, tc.poti, e, uplo=uplo)
    assert_small(inverse_error(full, e.view, uplo), dt, N, "poti")
    e.assert_outside_unchanged(before)

    t = random_triangular(rng, N, dt, uplo=uplo)
    poison_triangle(t, uplo)
    for diag in "NU":
        e = embed(t, layout)
        before = e.snapshot()
        _run(cp, tc.trtri, e, uplo=uplo, diag=diag)
        assert_small(trtri_error(t, e.view, uplo, diag), dt, N, f"trtri {diag}")
        e.assert_outside_unchanged(before)
    e = embed(t, layout)
    _run(cp, tc.lauum, e, uplo=uplo)
    assert_small(lauum_error(t, e.view, uplo), dt, N, "lauum")
    e.assert_outside_unchanged(before)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("uplo", "LU")
@pytest.mark.parametrize("where,bad", [(0, -1.0), (97, 0.0), (130, -3.0), (299, np.nan)])
def test_not_positive_definite_in_leaf(cp, potrf_leaf, dt, uplo, where, bad):
    rng = make_rng("npd", np.dtype(dt).name, uplo, where)
    s = random_spd(rng, N, dt)
    s[where, where] = bad
    A = cp.asarray(s)
    with pytest.raises(tc.NotPositiveDefiniteError) as err:
        tc.potrf(A, uplo=uplo)
    assert err.value.order == where + 1


@pytest.mark.parametrize("dt", [dt for dt in DTYPES if dt.char in TILE_POTRF])
@pytest.mark.parametrize("n", [129, 161, 1000, "limit"])
@pytest.mark.parametrize("order", "FC")
def test_potrf_by_tiles(cp, cuda, dt, n, order):
    """POTRF leaves by tiles of 32 (``potrf_tiles``): orders ending in a short tile (up to
    the dtype's limit), both triangles (the other one NaN), replayed calls; failures on the
    first and the last pivot of a tile and on the matrix's last pivot give LAPACK's order, and
    the minor before the failure holds its exact factor. (Other dtypes' leaves go to
    cuSOLVER.)"""
    from tricov.kernels import block_order

    if n == "limit":  # the largest leaf the tiles take, less 15 rows: a short last tile
        n = TILE_POTRF[np.dtype(dt).char] - 15
    assert cuda.CUDAExecutor.tile_potrf is None
    assert block_order(np.dtype(dt).itemsize) < n <= TILE_POTRF[np.dtype(dt).char]
    rng = make_rng("tiles", np.dtype(dt).name, n, order)
    for uplo in "LU":
        s = random_spd(rng, n, dt)
        a = s.copy()
        poison_triangle(a, uplo)
        A = cp.asarray(a, order=order)
        for _ in range(3):  # eager, captured, replayed
            A[...] = cp.asarray(a)
            tc.potrf(A, uplo=uplo)
            assert_small(potrf_error(a, cp.asnumpy(A), uplo), dt, n, f"potrf {uplo}")
    for k in (33, 64, n):
        s = random_spd(rng, n, dt)
        s[k - 1, k - 1] -= 10 * n
        A = cp.asarray(s, order=order)
        with pytest.raises(tc.NotPositiveDefiniteError) as err:
            tc.potrf(A)
        assert err.value.order == k
        lead = s[: k - 1, : k - 1]
        assert_small(potrf_error(lead, cp.asnumpy(A)[: k - 1, : k - 1], "L"), dt, k - 1,
                     f"partial factor before {k}")


@pytest.fixture
def panels(cuda, monkeypatch):
    """The (rows, columns, result) of every ``CUDAExecutor.potrf_panel`` call while the test
    runs (the calls themselves go through). Captured plans are forgotten first: a C-ordered
    lower triangle is the F-ordered upper one once canonical, so an earlier test's plan could
    replay the test's calls without the recursion (and the spy) ever running."""
    tc.set_cuda_graphs(True)
    calls = []
    fused = cuda.CUDAExecutor.potrf_panel

    def spy(self, a, offset):
        calls.append((a.rows, a.cols, fused(self, a, offset)))
        return calls[-1][2]

    monkeypatch.setattr(cuda.CUDAExecutor, "potrf_panel", spy)
    return calls


@pytest.mark.parametrize("dt", [dt for dt in DTYPES if dt.char in TILE_POTRF])
@pytest.mark.parametrize("lag", [0, 3, 100])
@pytest.mark.parametrize("layout", ["F-sub", "C-sub"])
def test_potrf_panel_by_tiles(cp, cuda, monkeypatch, panels, dt, lag, layout):
    """POTRF's steps as one ``potrf_tiles`` launch each (``CUDAExecutor.potrf_panel``): two
    panels of 150 rows (a short last tile) over the 470 and 320 rows below them (short too),
    for several lags of the rows below, then the last leaf; both triangles (the other one NaN),
    replayed calls, results as accurate as the leaves and TRSMs apart, nothing outside the
    matrix written. Failures in either panel's leaf and in the last leaf give LAPACK's order,
    and the minor before the failure holds its exact factor."""
    n, leaf, panel = 620, 320, 150  # A11 of 150 rows twice, then the last leaf
    monkeypatch.setattr(cuda.CUDAExecutor, "panel_lag", lag)
    tc.set_leaf_size("gpu", "potrf", dt, leaf)
    tc.set_leaf_size("gpu", "potrf_whole", dt, 1)
    tc.set_leaf_size("gpu", "potrf_panel", dt, panel)
    try:
        rng = make_rng("panel", np.dtype(dt).name, lag, layout)
        for uplo in "LU":
            s = random_spd(rng, n, dt)
            a = s.copy()
            poison_triangle(a, uplo)
            for _ in range(3):  # eager, captured, replayed
                e = embed(a, layout)
                before = e.snapshot()
                _run(cp, tc.potrf, e, uplo=uplo)
                assert_small(potrf_error(a, e.view, uplo), dt, n, f"potrf {uplo}")
                e.assert_outside_unchanged(before)
        assert panels[:2] == [(n, panel, True), (n - panel, panel, True)]
        for k in (40, 150, 151, 300, 301, n):  # first / last pivots of panels and the leaf
            s = random_spd(rng, n, dt)
            s[k - 1, k - 1] -= 10 * n
            e = embed(s, layout)
            with pytest.raises(tc.NotPositiveDefiniteError) as err:
                _run(cp, tc.potrf, e)
            assert err.value.order == k
            lead = s[: k - 1, : k - 1]
            assert_small(potrf_error(lead, e.view[: k - 1, : k - 1], "L"), dt, k - 1,
                         f"partial factor before {k}")
    finally:
        tc.set_leaf_size("gpu", "potrf", dt, None)


@pytest.mark.parametrize("order", "FC")
def test_spotrf_default_panels(cp, panels, order):
    """Float32 POTRF at the default leaf sizes past the whole-matrix crossover: panels of 276
    rows (``potrf_panel`` cuts the 552 rows above the last leaf in two) and the last leaf of
    2048, both triangles, as accurate as LAPACK's."""
    from tricov._policy import leaf_sizes

    nb = leaf_sizes("gpu", np.float32)
    n = nb.potrf + 552
    assert nb.potrf_whole < n <= 2 * nb.potrf and nb.potrf_panel == 512
    rng = make_rng("spotrf-panels", order)
    for uplo in "LU":
        a = random_spd(rng, n, np.float32)
        poison_triangle(a, uplo)
        A = cp.asarray(a, order=order)
        tc.potrf(A, uplo=uplo)
        assert_small(potrf_error(a, cp.asnumpy(A), uplo), np.float32, n, f"potrf {uplo}")
    assert panels[:2] == [(n, 276, True), (n - 276, 276, True)]


def test_trtri_leaf_reports_zero_diagonal(cp, cuda):
    """The TRTRI leaf kernel reports the first zero pivot and leaves the block unchanged (the
    front end checks the diagonal before any leaf runs, so call the executor directly)."""
    t = np.tril(random_general(make_rng("singular"), (100, 100), np.float64)) + 4 * np.eye(100)
    t[40, 40] = 0.0
    A = cp.asarray(t, order="F")
    (a,) = _views(cp, A)
    ex = cuda.CUDAExecutor(np.float64)
    ex.trtri(False, a, 0)
    assert ex.info == 41
    np.testing.assert_array_equal(cp.asnumpy(A), t)


def test_leaf_orders_beyond_shared_memory_use_vendor_leaves(cp, cuda, monkeypatch):
    """Leaf sizes above what the shared-memory kernels hold fall back to cuSOLVER/cuBLAS (POTRF
    leaves too, where tiles do not take them)."""
    monkeypatch.setattr(cuda.CUDAExecutor, "tile_potrf", 0)
    rng = make_rng("big-leaves")
    s = random_spd(rng, 700, np.float64)
    for op in ("potrf", "trtri", "lauum", "trsm", "trmm"):
        tc.set_leaf_size("gpu", op, np.float64, 600)
    try:
        A = cp.asarray(s)
        tc.poti(A)
        assert inverse_error(s, cp.asnumpy(A), "L") <= tolerance(np.float64, 700)
        b = random_general(rng, (700, 3), np.float64)
        t = np.tril(s)
        B = cp.asarray(b)
        tc.trsm(cp.asarray(t), B)
        assert trsm_error(t, b, cp.asnumpy(B), side="L", uplo="L", trans="N", diag="N",
                          alpha=1.0) <= tolerance(np.float64, 700)
    finally:
        tc.set_leaf_size("gpu", "potrf", np.float64, None)
    assert eps(np.float64) < 1e-15


def test_stages_after_a_replayed_graph_run_on_the_callers_stream(cp):
    """POTI after POTRF was captured: its POTRF stage replays the graph, its TRTRI and LAUUM
    stages run eagerly and must do so on the caller's stream (not on the stream the graph was
    captured on, where cuBLAS calls would race the leaf kernels)."""
    rng = make_rng("stages")
    s = random_spd(rng, N, np.float64)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        A = cp.asarray(s, order="F")
        for _ in range(3):  # eager, captured, replayed
            A[...] = cp.asarray(s, order="F")
            tc.potrf(A)
        for trial in range(3):
            A[...] = cp.asarray(s, order="F")
            tc.poti(A)
            assert inverse_error(s, cp.asnumpy(A), "L") <= tolerance(np.float64, N), trial
