"""Batched operations on the GPU: CuPy (and torch through DLPack) members against host references.

Mirrors tests/test_batched.py and tests/test_batched_errors.py: every operation, variant and
dtype, member by member with the backward-error measures of ``reference.py`` (tolerance
``10 n eps``), on stacks in every memory layout of ``test_batched.stacked`` (C and F order,
sub-blocks of NaN-filled buffers, interleaved and reversed members, no unit stride) plus a
stack whose members are not one stride apart (device address arrays instead of a base and a
stride). Orders cover every group width of the register kernels (1 and 3: 4 lanes, 6: 8,
12: 16, 17 to 32: 32), the tile kernels of real types (TRMM, SYRK and LAUUM from about 20
to 32: one 32 x 32 tile; 33 and 64: one 64 x 64 tile, 100 and 200: two and four row tiles,
the last partial; SYRK 130: a partial third row of tiles) and the recursions over the
batched cuBLAS executor (for complex dtypes, whose kernels stop at 16, already 17 to 32).
What an operation must not read holds NaN, and what it must not write is compared bitwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Any

import numpy as np
import pytest

import tricov as tc
from reference import (
    DTYPES,
    assert_bitwise_equal,
    assert_small,
    bits,
    hermitian_from,
    inverse_error,
    lauum_error,
    make_rng,
    nan_fill,
    poison_triangle,
    potrf_error,
    random_general,
    random_spd,
    random_triangular,
    solve_error,
    syrk_error,
    trmm_error,
    trsm_error,
    trtri_error,
)
from test_batched import (
    BATCH,
    STACK_LAYOUTS,
    VARIANTS,
    Stacked,
    check_info_replay,
    members,
    other_triangle,
    spd_stack,
    stacked,
    tri_stack,
)

pytestmark = pytest.mark.gpu

SMALL = (1, 3, 6, 12, 17, 31, 32)
LARGE = (33, 64, 100, 200)
#: Orders (and right-hand-side counts) whose float64 TRMM leaves of 256 run on the tensor-core
#: tile kernel's tiles of 128 (sm_90), rows and columns of partial tiles included.
WIDE = (128, 200, 250, 256)
#: Device layouts: those of test_batched.stacked, and "gapped" (members not one stride apart).
LAYOUTS = STACK_LAYOUTS + ("gapped",)


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


# ------------------------------------------------------------------------------ helpers
@dataclass
class OnDevice:
    """A stack placed in device memory as ``host`` (a test_batched.Stacked) is on the host."""

    host: Stacked
    base: Any
    view: Any

    def fetch(self, cp) -> None:
        """Copy the device buffer back into the host record (``host.view`` shows results)."""
        np.copyto(self.host.base, cp.asnumpy(self.base))


def gapped(values: np.ndarray) -> Stacked:
    """The stack in a (..., k + 1, r, c) NaN buffer, members ``[..., :k]``: its members are not
    one stride apart, so the device gets an array of their addresses."""
    batch = values.shape[:-2]
    base = np.full(batch[:-1] + (batch[-1] + 1,) + values.shape[-2:], nan_fill(values.dtype),
                   values.dtype)
    view = base[..., :batch[-1], :, :]
    view[...] = values
    mask = np.zeros(base.shape, dtype=bool)
    mask[..., :batch[-1], :, :] = True
    return Stacked(base, view, mask, "gapped")


def place(cp, values: np.ndarray, layout: str) -> OnDevice:
    """``values`` in device memory as ``layout`` (one of :data:`LAYOUTS`)."""
    host = gapped(values) if layout == "gapped" else stacked(values, layout)
    base = cp.asarray(host.base)
    if base.size == 0:
        return OnDevice(host, base, cp.empty(host.view.shape, host.view.dtype))
    assert base.strides == host.base.strides
    offset = host.view.__array_interface__["data"][0] - host.base.__array_interface__["data"][0]
    view = cp.ndarray(host.view.shape, host.view.dtype, base.data + offset,
                      strides=host.view.strides)
    return OnDevice(host, base, view)


def layouts(i: int) -> tuple[str, str]:
    """Layouts of the two operands of case ``i``, cycling through all pairs over the cases."""
    k = len(LAYOUTS)
    return LAYOUTS[i % k], LAYOUTS[(i // k + 3 * i + 1) % k]


def alpha_of(i: int, dtype: np.dtype) -> complex:
    if i % 3 == 0:
        return 1.0
    return complex(0.6, -0.8) if np.dtype(dtype).kind == "c" else -0.75


# -------------------------------------------------------------------------- trsm / trmm
TRXM = {"trsm": (tc.batched.trsm, trsm_error), "trmm": (tc.batched.trmm, trmm_error)}


@pytest.fixture
def tile_trmm(request, monkeypatch: pytest.MonkeyPatch):
    """For the "tile" and "wide" sizes: TRMM leaves of up to 256 (the tile kernels, real
    dtypes) for the duration of the test, whatever the default policy; yields the list of the
    tile orders the launches took."""
    import tricov.backends.batched_cuda as bc

    dtype = request.getfixturevalue("dtype")
    orders: list[int] = []
    if request.getfixturevalue("sizes") not in ("tile", "wide"):
        yield orders
        return
    if np.dtype(dtype).kind == "c" or request.getfixturevalue("name") != "trmm":
        pytest.skip("the tile kernels take TRMM leaves of real dtypes")
    order = bc.tile_order

    def recorded(*args: Any) -> int:
        orders.append(order(*args))
        return orders[-1]

    monkeypatch.setattr(bc, "tile_order", recorded)
    tc.set_leaf_size("batched_gpu", "trmm", dtype, 256)
    yield orders
    tc.set_leaf_size("batched_gpu", "trmm", dtype, None)


@pytest.mark.parametrize("sizes", ["small", "large", "tile", "wide"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(TRXM))
def test_trxm_variants(cp, tile_trmm, name: str, dtype: np.dtype, sizes: str) -> None:
    """All 16 variants, each at an order and a right-hand-side count cycling over the lists
    ("tile": the large orders with TRMM leaves on the tile kernels; "wide": orders above 128,
    on its tiles of 128)."""
    fn, error = TRXM[name]
    orders = {"small": SMALL, "wide": WIDE}.get(sizes, LARGE)
    for i, (side, uplo, trans, diag) in enumerate(VARIANTS):
        rhs = WIDE[1:] if sizes == "wide" else (1, 5, 40)
        n, nrhs = orders[i % len(orders)], rhs[i % 3]
        rng = make_rng("gpu-batched", name, sizes, str(dtype), i)
        la, lb = layouts(i + (7 if sizes == "large" else 0))
        alpha = alpha_of(i, dtype)
        a = tri_stack(rng, n, dtype, uplo, unit=diag == "U")
        b = random_general(rng, BATCH + ((n, nrhs) if side == "L" else (nrhs, n)), dtype)
        da, db = place(cp, a, la), place(cp, b, lb)
        out = fn(da.view, db.view, side=side, uplo=uplo, trans=trans, diag=diag, alpha=alpha)
        assert out is db.view
        a_before, b_before = da.host.snapshot(), db.host.snapshot()
        da.fetch(cp)
        db.fetch(cp)
        what = f"{name} {side}{uplo}{trans}{diag} n={n} nrhs={nrhs} A:{la} B:{lb} alpha={alpha}"
        assert (bits(da.host.base) == bits(a_before)).all(), f"{what}: A changed"
        db.host.assert_outside_unchanged(b_before)
        for idx in members(BATCH):
            err = error(a[idx], b[idx], db.host.view[idx], side=side, uplo=uplo, trans=trans,
                        diag=diag, alpha=alpha)
            assert_small(err, dtype, n, f"{what} member {idx}")
    if sizes == "wide":
        from tricov.backends.batched_cuda import _tile_mma

        wide = np.dtype(dtype) == np.float64 and _tile_mma(np.dtype(dtype))
        assert (128 in tile_trmm) == wide, f"tile orders {sorted(set(tile_trmm))}"


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64)], ids=str)
def test_tile_kernels_by_fma(cp, monkeypatch: pytest.MonkeyPatch, dtype: np.dtype) -> None:
    """The tile kernels multiplying by FMAs (GPUs before sm_90, without FP64 MMA of
    16 x 8 x 4), tiles of 32 and of 64: TRMM, SYRK and LAUUM against the references."""
    from tricov.backends.batched_cuda import BatchedCUDAExecutor

    monkeypatch.setattr(BatchedCUDAExecutor, "mma", False)
    dtype = np.dtype(dtype)
    tc.set_leaf_size("batched_gpu", "trmm", dtype, 256)
    try:
        for i, n in enumerate((31, 33, 64, 100)):
            rng = make_rng("gpu-batched-fma", i)
            a = tri_stack(rng, n, dtype, "L")  # a stored diagonal, ignored where "U"
            b = random_general(rng, BATCH + (n, 40), dtype)
            da, db = place(cp, a, LAYOUTS[i]), place(cp, b, LAYOUTS[i + 1])
            tc.batched.trmm(da.view, db.view, diag="U" if i % 2 else "N", alpha=-0.75)
            db.fetch(cp)
            c = np.full(BATCH + (n, n), nan_fill(dtype), dtype)
            dc = place(cp, c, LAYOUTS[i + 2])
            tc.batched.syrk(db.view, dc.view)
            dc.fetch(cp)
            dl = place(cp, a[..., :64, :64] if n > 64 else a, LAYOUTS[i + 3])
            tc.batched.lauum(dl.view)
            dl.fetch(cp)
            for idx in members(BATCH):
                err = trmm_error(a[idx], b[idx], db.host.view[idx], side="L", uplo="L",
                                 trans="N", diag="U" if i % 2 else "N", alpha=-0.75)
                assert_small(err, dtype, n, f"trmm n={n} member {idx}")
                err = syrk_error(db.host.view[idx], c[idx], dc.host.view[idx], uplo="L",
                                 trans="N", alpha=1.0, beta=0.0)
                assert_small(err, dtype, 41, f"syrk n={n} member {idx}")
                ref = a[idx][:64, :64] if n > 64 else a[idx]
                assert_small(lauum_error(ref, dl.host.view[idx], "L"), dtype, n,
                             f"lauum n={n} member {idx}")
    finally:
        tc.set_leaf_size("batched_gpu", "trmm", dtype, None)


# ---------------------------------------------------------------------------------- syrk
@pytest.mark.parametrize("mma", [True, False], ids=["mma", "registers"])
@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64)], ids=str)
def test_orders_25_to_32_on_tensor_cores(cp, monkeypatch: pytest.MonkeyPatch, dtype: np.dtype,
                                        mma: bool) -> None:
    """TRSM in all 16 variants, POTRS, POSV, POTRF and POTRI in both triangles at orders 25 and
    32, with 1, 33 and 64 right-hand sides (one, two and two whole tiles of 32 columns), in
    every layout: TRSM, POTRS (also POSV's) and POTRI on the tensor-core kernel (float64 where
    the device has FP64 MMA), and everything on the register kernels
    (``BatchedCUDAExecutor.mma`` off, as on GPUs without it)."""
    import tricov.backends.batched_cuda as bc

    monkeypatch.setattr(bc.BatchedCUDAExecutor, "mma", mma)
    launched = []
    original = bc.batched_mma
    monkeypatch.setattr(bc, "batched_mma", lambda *a: launched.append(a) or original(*a))
    rhs = (1, 33, 64)
    for i, (side, uplo, trans, diag) in enumerate(VARIANTS):
        n, nrhs = (25, 32)[i % 2], rhs[i % 3]
        rng = make_rng("gpu-batched-mma", str(dtype), mma, i)
        la, lb = layouts(i)
        alpha = alpha_of(i, dtype)
        a = tri_stack(rng, n, dtype, uplo, unit=diag == "U")
        b = random_general(rng, BATCH + ((n, nrhs) if side == "L" else (nrhs, n)), dtype)
        da, db = place(cp, a, la), place(cp, b, lb)
        tc.batched.trsm(da.view, db.view, side=side, uplo=uplo, trans=trans, diag=diag,
                        alpha=alpha)
        b_before = db.host.snapshot()
        db.fetch(cp)
        db.host.assert_outside_unchanged(b_before)
        what = f"trsm {side}{uplo}{trans}{diag} n={n} nrhs={nrhs} A:{la} B:{lb}"
        for idx in members(BATCH):
            err = trsm_error(a[idx], b[idx], db.host.view[idx], side=side, uplo=uplo,
                             trans=trans, diag=diag, alpha=alpha)
            assert_small(err, dtype, n, f"{what} member {idx}")
    for i, (uplo, n) in enumerate(product("LU", (25, 32))):
        rng = make_rng("gpu-batched-mma-potrs", str(dtype), mma, i)
        spd = spd_stack(rng, n, dtype)
        full = np.stack([hermitian_from(spd[idx], "L") for idx in members(BATCH)]).reshape(
            BATCH + (n, n))
        b = random_general(rng, BATCH + (n, rhs[i % 3]), dtype)
        da, db = place(cp, _factor_stack(spd, uplo), LAYOUTS[i]), place(cp, b, LAYOUTS[i + 3])
        tc.batched.potrs(da.view, db.view, uplo=uplo)
        b_before = db.host.snapshot()
        db.fetch(cp)
        db.host.assert_outside_unchanged(b_before)
        for idx in members(BATCH):
            assert_small(solve_error(full[idx], db.host.view[idx], b[idx]), dtype, n,
                         f"potrs {uplo} n={n} member {idx}")
        poisoned = spd.copy()
        for idx in members(BATCH):
            poison_triangle(poisoned[idx], uplo)
        da, db = place(cp, poisoned, LAYOUTS[i + 1]), place(cp, b, LAYOUTS[i + 2])
        tc.batched.posv(da.view, db.view, uplo=uplo)
        a_before, b_before = da.host.snapshot(), db.host.snapshot()
        da.fetch(cp)
        db.fetch(cp)
        da.host.assert_outside_unchanged(a_before)
        db.host.assert_outside_unchanged(b_before)
        assert (other_triangle(da.host.view, uplo) == other_triangle(poisoned, uplo)).all()
        for idx in members(BATCH):
            assert_small(potrf_error(spd[idx], da.host.view[idx], uplo), dtype, n,
                         f"posv factor {uplo} n={n} member {idx}")
            assert_small(solve_error(full[idx], db.host.view[idx], b[idx]), dtype, n,
                         f"posv {uplo} n={n} member {idx}")
        da = place(cp, poisoned, LAYOUTS[i + 4])
        tc.batched.potrf(da.view, uplo=uplo)
        da.fetch(cp)
        for idx in members(BATCH):
            assert_small(potrf_error(spd[idx], da.host.view[idx], uplo), dtype, n,
                         f"potrf {uplo} n={n} member {idx}")
        factor = _factor_stack(spd, uplo)
        for idx in members(BATCH):
            poison_triangle(factor[idx], uplo)
        da = place(cp, factor, LAYOUTS[i + 3])
        tc.batched.potri(da.view, uplo=uplo)
        a_before = da.host.snapshot()
        da.fetch(cp)
        da.host.assert_outside_unchanged(a_before)
        assert (other_triangle(da.host.view, uplo) == other_triangle(factor, uplo)).all()
        for idx in members(BATCH):
            assert_small(inverse_error(full[idx], da.host.view[idx], uplo), dtype, n,
                         f"potri {uplo} n={n} member {idx}")
    on_cores = mma and dtype == np.float64 and bc._tile_mma(dtype)
    assert bool(launched) == on_cores, f"tensor-core solves launched: {len(launched)}"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_syrk_variants(cp, dtype: np.dtype) -> None:
    trans_letters = "NC" if np.dtype(dtype).kind == "c" else "NTC"
    cases = list(product("LU", trans_letters, (0.0, 0.5)))
    orders = (1, 6, 12, 31, 33, 100, 130)
    for i, (uplo, trans, beta) in enumerate(cases * 2):
        n, k = orders[i % len(orders)], (7, 45)[i % 2]
        rng = make_rng("gpu-batched-syrk", str(dtype), i)
        la, lc = layouts(i + 2)
        alpha = 1.0 if i % 2 else -0.7
        a = random_general(rng, BATCH + ((n, k) if trans == "N" else (k, n)), dtype)
        c = np.empty(BATCH + (n, n), dtype)
        for idx in members(BATCH):
            c[idx] = random_spd(rng, n, dtype) if beta else nan_fill(dtype)
            poison_triangle(c[idx], uplo)
        da, dc = place(cp, a, la), place(cp, c, lc)
        out = tc.batched.syrk(da.view, dc.view, uplo=uplo, trans=trans, alpha=alpha, beta=beta)
        assert out is dc.view
        c_before = dc.host.snapshot()
        dc.fetch(cp)
        what = f"syrk {uplo}{trans} n={n} k={k} beta={beta} A:{la} C:{lc}"
        dc.host.assert_outside_unchanged(c_before)
        assert (other_triangle(dc.host.view, uplo) == other_triangle(c, uplo)).all(), what
        for idx in members(BATCH):
            err = syrk_error(a[idx], c[idx], dc.host.view[idx], uplo=uplo, trans=trans,
                             alpha=alpha, beta=beta)
            assert_small(err, dtype, k + 1, f"{what} member {idx}")


# ---------------------------------------------------------------------- Cholesky family
def _factor_stack(a: np.ndarray, uplo: str) -> np.ndarray:
    out = np.empty_like(a)
    for idx in members(a.shape[:-2]):
        low = np.linalg.cholesky(hermitian_from(a[idx], "L")).astype(a.dtype)
        out[idx] = low if uplo == "L" else low.conj().T
        poison_triangle(out[idx], uplo)
    return out


@pytest.mark.parametrize("n", (1, 3, 6, 12, 17, 32) + LARGE)
@pytest.mark.parametrize("uplo", "LU")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cholesky_family(cp, dtype: np.dtype, uplo: str, n: int) -> None:
    check_cholesky_family(cp, dtype, uplo, n)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64)], ids=str)
def test_large_batch_lanes(cp, monkeypatch: pytest.MonkeyPatch, dtype: np.dtype) -> None:
    """The register kernels of large batches (``tricov.kernels.BATCHED_LANES_LARGE``), here
    from one member on: the Cholesky family and indefinite members at orders 8 and 16 (n = 5,
    8, 12, 16), every kernel of the table launched."""
    import tricov.backends.batched_cuda as bc
    import tricov.kernels as tk

    monkeypatch.setattr(tk, "BATCHED_LANES_LARGE",
                        {key: (1, lanes) for key, (_, lanes) in tk.BATCHED_LANES_LARGE.items()})
    launched = set()
    original = bc._small_kernel
    monkeypatch.setattr(bc, "_small_kernel",
                        lambda *a: launched.add(original(*a)[0]) or original(*a))
    graphs = tc.cuda_graphs_enabled()
    tc.set_cuda_graphs(False)  # no replay of calls recorded with the tables as they were
    try:
        for i, n in enumerate((5, 8, 12, 16)):
            check_cholesky_family(cp, dtype, "LU"[i % 2], n)
            test_not_positive_definite_members(cp, dtype, n)
    finally:
        tc.set_cuda_graphs(graphs)
    ctype = "float" if dtype == np.float32 else "double"
    for (ch, order, op), (_, lanes) in tk.BATCHED_LANES_LARGE.items():
        if ch == dtype.char:
            assert tk.batched_small(ctype, order, lanes, op)[0] in launched, (order, lanes, op)


def check_cholesky_family(cp, dtype: np.dtype, uplo: str, n: int) -> None:
    """POTRF, POTI, POTRI, LAUUM, TRTRI (both diagonals), POTRS and POSV of order ``n`` in
    ``uplo``, each on a stack of its own layout, against host references."""
    rng = make_rng("gpu-batched-chol", uplo, n, str(dtype))
    spd = spd_stack(rng, n, dtype)
    full = np.stack([hermitian_from(spd[idx], "L") for idx in members(BATCH)]).reshape(
        BATCH + (n, n))
    poisoned = spd.copy()
    for idx in members(BATCH):
        poison_triangle(poisoned[idx], uplo)
    factor = _factor_stack(spd, uplo)
    rhs = random_general(rng, BATCH + (n, 3), dtype)
    order = iter(LAYOUTS * 3)

    def run(fn, x: np.ndarray, **kw) -> OnDevice:
        d = place(cp, x, next(order))
        assert fn(d.view, uplo=uplo, **kw) is d.view
        before = d.host.snapshot()
        d.fetch(cp)
        d.host.assert_outside_unchanged(before)
        assert (other_triangle(d.host.view, uplo) == other_triangle(x, uplo)).all(), \
            fn.__name__
        return d

    d = run(tc.batched.potrf, poisoned)
    for idx in members(BATCH):
        assert_small(potrf_error(spd[idx], d.host.view[idx], uplo), dtype, n, f"potrf {idx}")
    d = run(tc.batched.poti, poisoned)
    for idx in members(BATCH):
        assert_small(inverse_error(full[idx], d.host.view[idx], uplo), dtype, n, f"poti {idx}")
    d = run(tc.batched.potri, factor)
    for idx in members(BATCH):
        assert_small(inverse_error(full[idx], d.host.view[idx], uplo), dtype, n, f"potri {idx}")
    d = run(tc.batched.lauum, factor)
    for idx in members(BATCH):
        assert_small(lauum_error(factor[idx], d.host.view[idx], uplo), dtype, n, f"lauum {idx}")
    for diag in "NU":
        t = tri_stack(rng, n, dtype, uplo, unit=diag == "U")
        d = run(tc.batched.trtri, t, diag=diag)
        for idx in members(BATCH):
            assert_small(trtri_error(t[idx], d.host.view[idx], uplo, diag), dtype, n,
                         f"trtri {diag} {idx}")
        if diag == "U":  # the unit diagonal is neither read nor written
            assert np.isnan(np.diagonal(d.host.view, axis1=-2, axis2=-1)).all()
    for solver in ("potrs", "posv"):
        db = place(cp, rhs, next(order))
        da = place(cp, factor if solver == "potrs" else poisoned, next(order))
        out = getattr(tc.batched, solver)(da.view, db.view, uplo=uplo)
        assert out is db.view
        a_before, b_before = da.host.snapshot(), db.host.snapshot()
        da.fetch(cp)
        db.fetch(cp)
        db.host.assert_outside_unchanged(b_before)
        if solver == "potrs":
            assert (bits(da.host.base) == bits(a_before)).all(), "potrs changed L"
        else:
            da.host.assert_outside_unchanged(a_before)
        for idx in members(BATCH):
            assert_small(solve_error(full[idx], db.host.view[idx], rhs[idx]), dtype, n,
                         f"{solver} {idx}")
            if solver == "posv":
                assert_small(potrf_error(spd[idx], da.host.view[idx], uplo), dtype, n,
                             f"posv factor {idx}")


# ------------------------------------------------------------------------------- lists
@pytest.mark.parametrize("dtype", [np.float64, np.complex64], ids=str)
def test_lists_of_mixed_sizes(cp, dtype: np.dtype) -> None:
    """Lists whose members differ in size and layout (one launch per group of like members)."""
    dtype = np.dtype(dtype)
    rng = make_rng("gpu-batched-lists", str(dtype))
    sizes = [(0, 1, 3, 7, 12, 17, 32, 33, 40)[k % 9] for k in range(13)]

    def member(values: np.ndarray, k: int) -> OnDevice:
        return place(cp, values[None], STACK_LAYOUTS[k % len(STACK_LAYOUTS)])

    def view(d: OnDevice) -> Any:
        return d.view[0]

    def result(d: OnDevice) -> np.ndarray:
        d.fetch(cp)
        return d.host.view[0]

    tris = [random_triangular(rng, n, dtype, uplo="L") for n in sizes]
    spd = [random_spd(rng, n, dtype) for n in sizes]
    a = [member(t, k) for k, t in enumerate(tris)]
    b_in = [random_general(rng, (n, 2 + k % 3), dtype) for k, n in enumerate(sizes)]
    b = [member(x, k + 3) for k, x in enumerate(b_in)]
    bl = [view(x) for x in b]
    assert tc.batched.trsm([view(x) for x in a], bl, trans="C", alpha=2.0) is bl
    for k, n in enumerate(sizes):
        assert_small(trsm_error(tris[k], b_in[k], result(b[k]), side="L", uplo="L", trans="C",
                                diag="N", alpha=2.0), dtype, max(n, 1), f"trsm member {k}")

    x = [member(s, k) for k, s in enumerate(spd)]
    info = tc.batched.potrf([view(m) for m in x], uplo="U", check=False)
    assert isinstance(info, cp.ndarray)  # on the device: the call did not wait for it
    info = cp.asnumpy(info)
    assert info.dtype == np.int64 and info.shape == (len(sizes),) and not info.any()
    for k, n in enumerate(sizes):
        assert_small(potrf_error(spd[k], result(x[k]), "U"), dtype, max(n, 1),
                     f"potrf member {k}")

    rhs = [random_general(rng, (n, 2), dtype) for n in sizes]
    x = [member(s, k) for k, s in enumerate(spd)]
    b = [member(r, k + 2) for k, r in enumerate(rhs)]
    tc.batched.posv([view(m) for m in x], [view(m) for m in b], uplo="U")
    for k, n in enumerate(sizes):
        assert_small(solve_error(hermitian_from(spd[k], "U"), result(b[k]), rhs[k]), dtype,
                     max(n, 1), f"posv member {k}")

    x = [member(s, k) for k, s in enumerate(spd)]
    tc.batched.poti([view(m) for m in x], uplo="L")
    for k, n in enumerate(sizes):
        assert_small(inverse_error(hermitian_from(spd[k], "L"), result(x[k]), "L"), dtype,
                     max(n, 1), f"poti member {k}")

    c_in = [random_spd(rng, n, dtype) for n in sizes]
    c = [member(m, k) for k, m in enumerate(c_in)]
    g = [random_general(rng, (n, 3), dtype) for n in sizes]
    tc.batched.syrk([cp.asarray(m) for m in g], [view(m) for m in c], uplo="U", alpha=0.5,
                    beta=2.0)
    for k in range(len(sizes)):
        assert_small(syrk_error(g[k], c_in[k], result(c[k]), uplo="U", trans="N", alpha=0.5,
                                beta=2.0), dtype, 4, f"syrk member {k}")


# ------------------------------------------------------------------------- batch shapes
@pytest.mark.parametrize("shape", [(0,), (1,), (0, 4), ()], ids=str)
def test_batch_shapes(cp, shape: tuple[int, ...]) -> None:
    """Empty batches, a batch of one, and a single 2-D matrix (batch shape ())."""
    rng = make_rng("gpu-batched-shapes", shape)
    for n in (6, 40):
        a = spd_stack(rng, n, np.float64, shape)
        d = cp.asarray(a)
        info = tc.batched.potrf(d, check=False)
        assert isinstance(info, cp.ndarray)
        info = cp.asnumpy(info)
        assert info.shape == shape and info.dtype == np.int64 and not info.any()
        got = cp.asnumpy(d)
        for idx in members(shape):
            assert_small(potrf_error(a[idx], got[idx], "L"), np.float64, n)
        b = random_general(rng, shape + (n, 2), np.float64)
        db = cp.asarray(b)
        assert tc.batched.trsm(d, db) is db
        assert tc.batched.posv(cp.asarray(spd_stack(rng, n, np.float64, shape)), db,
                               check=False).shape == shape


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=str)
def test_order_zero_and_alpha_zero(cp, dtype: np.dtype) -> None:
    rng = make_rng("gpu-batched-zero", str(dtype))
    a = cp.asarray(spd_stack(rng, 0, dtype, (5,)))
    assert not cp.asnumpy(tc.batched.poti(a, check=False)).any()
    t = cp.asarray(np.stack([random_triangular(rng, 4, dtype) for _ in range(5)]))
    b = cp.asarray(random_general(rng, (5, 4, 3), dtype))
    tc.batched.trsm(t, b, alpha=0.0)
    assert not cp.asnumpy(b).any()
    c = cp.zeros((5, 3, 3), dtype)
    tc.batched.syrk(cp.asarray(random_general(rng, (5, 3, 0), dtype)), c)
    assert not cp.asnumpy(c).any()


# ------------------------------------------------------------------------------ failures
SHAPE = (3, 13)  # 39 members: several per warp, and a partial last block


def _indefinite(a: np.ndarray, at: int) -> None:
    a[at - 1, at - 1] = -abs(a[at - 1, at - 1]) - 10


@pytest.mark.parametrize("n", [5, 12, 20, 32, 70])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_not_positive_definite_members(cp, dtype: np.dtype, n: int) -> None:
    """Indefinite and NaN members among many: the others are exact, the failing ones keep
    their partial factorization (POSV: their B), ``info``/``indices``/``orders`` LAPACK's."""
    dtype = np.dtype(dtype)
    rng = make_rng("gpu-batched-npd", n, str(dtype))
    a = spd_stack(rng, n, dtype, SHAPE)
    bad = {(0, 4): 1, (1, 7): n, (2, 12): 2}  # first pivot, last pivot, second
    for idx, order in bad.items():
        _indefinite(a[idx], order)
    nan_at = (2, 0)
    a[nan_at][n - 1, 0] = np.nan  # reaches the diagonal of the factor in row n
    failing = {**bad, nan_at: n}
    flat = sorted(np.ravel_multi_index(idx, SHAPE) for idx in failing)
    rhs = random_general(rng, SHAPE + (n, 2), dtype)

    x = cp.asarray(a)
    with pytest.raises(tc.NotPositiveDefiniteError) as err:
        tc.batched.potrf(x)
    assert list(err.value.indices) == flat
    assert list(err.value.orders) == [failing[np.unravel_index(i, SHAPE)] for i in flat]
    assert err.value.order == err.value.orders[0]
    got = cp.asnumpy(x)
    for idx in np.ndindex(*SHAPE):
        if idx in failing:
            order = failing[idx]  # the leading order-1 columns are factored
            part = np.linalg.cholesky(hermitian_from(a[idx], "L")[:order - 1, :order - 1])
            np.testing.assert_allclose(np.tril(got[idx][:order - 1, :order - 1]), part,
                                       rtol=0, atol=100 * n * np.finfo(dtype).eps)
        else:
            assert_small(potrf_error(a[idx], got[idx], "L"), dtype, n, f"potrf {idx}")

    x = cp.asarray(a)
    info = cp.asnumpy(tc.batched.poti(x, uplo="U", check=False))  # the upper triangle
    assert info.shape == SHAPE
    got = cp.asnumpy(x)
    for idx in np.ndindex(*SHAPE):
        if idx in bad:
            assert info[idx] == bad[idx]
            order = bad[idx]  # the partial factorization, not an inverse
            part = np.linalg.cholesky(hermitian_from(a[idx], "U")[:order - 1, :order - 1])
            np.testing.assert_allclose(np.triu(got[idx][:order - 1, :order - 1]),
                                       part.conj().T, rtol=0,
                                       atol=100 * n * np.finfo(dtype).eps)
        elif idx != nan_at:  # the NaN sits in the lower triangle, unread here
            assert info[idx] == 0
            assert_small(inverse_error(hermitian_from(a[idx], "U"), got[idx], "U"), dtype, n)

    x, b = cp.asarray(a), cp.asarray(rhs)
    info = cp.asnumpy(tc.batched.posv(x, b, check=False))
    got = cp.asnumpy(b)
    for idx in np.ndindex(*SHAPE):
        assert info[idx] == failing.get(idx, 0)
        if idx in failing:
            assert_bitwise_equal(got[idx], rhs[idx], f"posv B of failing member {idx}")
        else:
            assert_small(solve_error(hermitian_from(a[idx], "L"), got[idx], rhs[idx]), dtype, n)


@pytest.mark.parametrize("n", [6, 20, 32, 45])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128], ids=str)
def test_singular_members(cp, dtype: np.dtype, n: int) -> None:
    dtype = np.dtype(dtype)
    rng = make_rng("gpu-batched-singular", n, str(dtype))
    t = np.stack([random_triangular(rng, n, dtype, uplo="U") for _ in range(17)])
    zero = {3: 1, 9: n, 16: 2}
    for k, index in zero.items():
        t[k, index - 1, index - 1] = 0
    for fn in (tc.batched.trtri, tc.batched.potri):
        x = cp.asarray(t)
        with pytest.raises(tc.SingularMatrixError) as err:
            fn(x, uplo="U")
        assert list(err.value.indices) == sorted(zero)
        assert list(err.value.orders) == [zero[k] for k in sorted(zero)]
        assert err.value.index == zero[3]
        got = cp.asnumpy(x)
        for k in range(17):
            if k in zero:
                assert_bitwise_equal(got[k], t[k], f"{fn.__name__}: singular member {k}")
            elif fn is tc.batched.trtri:
                assert_small(trtri_error(t[k], got[k], "U", "N"), dtype, n, f"trtri {k}")
    x = cp.asarray(t)
    assert not cp.asnumpy(tc.batched.trtri(x, uplo="U", diag="U", check=False)).any()


@pytest.mark.parametrize("n", [9, 50])
def test_nan_members_do_not_spread(cp, n: int) -> None:
    """NaN in one member's B gives NaN in that member's X only."""
    rng = make_rng("gpu-batched-nan", n)
    t = np.stack([random_triangular(rng, n, np.float64) for _ in range(20)])
    b = random_general(rng, (20, n, 3), np.float64)
    b[11, 0, 1] = np.nan
    db = cp.asarray(b)
    tc.batched.trsm(cp.asarray(t), db, trans="T")
    got = cp.asnumpy(db)
    assert np.isnan(got[11]).any()
    for k in range(20):
        if k != 11:
            assert_small(trsm_error(t[k], b[k], got[k], side="L", uplo="L", trans="T",
                                    diag="N", alpha=1.0), np.float64, n)


# ------------------------------------------------------------------------- large batches
def test_million_members(cp) -> None:
    """A stack of 10**6 2x2 matrices: every member factored (checked in closed form)."""
    rng = make_rng("gpu-batched-million")
    count = 10**6
    a = np.empty((count, 2, 2))
    a[:, 0, 0] = 1.0 + rng.random(count)
    a[:, 1, 1] = 2.0 + rng.random(count)
    a[:, 1, 0] = a[:, 0, 1] = rng.uniform(-1, 1, count)
    l00 = np.sqrt(a[:, 0, 0])
    l10 = a[:, 1, 0] / l00
    l11 = np.sqrt(a[:, 1, 1] - l10**2)
    d = cp.asarray(a)
    tc.batched.potrf(d)
    got = cp.asnumpy(d)
    for x, want in ((got[:, 0, 0], l00), (got[:, 1, 0], l10), (got[:, 1, 1], l11)):
        np.testing.assert_allclose(x, want, rtol=4 * np.finfo(float).eps)
    assert (got[:, 0, 1] == a[:, 0, 1]).all()


@pytest.mark.parametrize("n", [6, 40, 100])
def test_split_launches(cp, monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """Batches split over several launches (register and tile kernels) and cuBLAS calls
    compute every member, the failing one skipped."""
    from tricov.backends import batched_cuda

    monkeypatch.setattr(batched_cuda, "MAX_BLOCKS", 3)
    monkeypatch.setattr(batched_cuda, "GEMM_CHUNK", 5)
    rng = make_rng("gpu-batched-split", n)
    a = spd_stack(rng, n, np.float64, (37,))
    a[20, 2, 2] = -1.0
    rhs = random_general(rng, (37, n, 2), np.float64)
    x, b = cp.asarray(a), cp.asarray(rhs)
    info = cp.asnumpy(tc.batched.posv(x, b, check=False))
    assert info.tolist() == [3 if k == 20 else 0 for k in range(37)]
    got = cp.asnumpy(b)
    for k in range(37):
        if k != 20:
            assert_small(solve_error(hermitian_from(a[k], "L"), got[k], rhs[k]), np.float64, n)
    assert_bitwise_equal(got[20], rhs[20], "posv B of the failing member")
    x = cp.asarray(a)
    info = cp.asnumpy(tc.batched.poti(x, check=False))
    assert info.tolist() == [3 if k == 20 else 0 for k in range(37)]
    got = cp.asnumpy(x)
    for k in range(37):
        if k != 20:
            assert_small(inverse_error(hermitian_from(a[k], "L"), got[k], "L"), np.float64, n)
    tri = np.stack([random_triangular(rng, n, np.float64, uplo="U") for _ in range(37)])
    wide = random_general(rng, (37, n, 150), np.float64)
    c = np.stack([random_spd(rng, n, np.float64) for _ in range(37)])
    tc.set_leaf_size("batched_gpu", "trmm", np.float64, 256)
    try:
        db, dc = cp.asarray(wide), cp.asarray(c)
        tc.batched.trmm(cp.asarray(tri), db, uplo="U", alpha=-0.5)
        tc.batched.syrk(db, dc, alpha=0.25, beta=-1.0)
    finally:
        tc.set_leaf_size("batched_gpu", "trmm", np.float64, None)
    got_b, got_c = cp.asnumpy(db), cp.asnumpy(dc)
    for k in range(37):
        err = trmm_error(tri[k], wide[k], got_b[k], side="L", uplo="U", trans="N", diag="N",
                         alpha=-0.5)
        assert_small(err, np.float64, n, f"trmm member {k}")
        err = syrk_error(got_b[k], c[k], got_c[k], uplo="L", trans="N", alpha=0.25, beta=-1.0)
        assert_small(err, np.float64, 151, f"syrk member {k}")


# ----------------------------------------------------------------------- repeated calls
@pytest.mark.parametrize("kind", ["trsm", "trmm"])
@pytest.mark.parametrize("n", [8, 20])
def test_repeated_calls_replay_their_launches(cp, kind: str, n: int) -> None:
    """A second identical call launches what the first recorded (tricov.batched._replay), on
    the data of the second call; other options, orders the recursion serves, and replay turned
    off all take the slow path, and every result is checked."""
    from tricov.batched import _replay

    rng = make_rng(f"gpu-batched-replay-{kind}-{n}")
    error = {"trsm": trsm_error, "trmm": trmm_error}[kind]
    call = getattr(tc.batched, kind)
    opts = {"side": "L", "uplo": "L", "trans": "T", "diag": "N", "alpha": 0.5}
    _replay.clear()
    d_a, d_b = cp.empty(BATCH + (n, n)), cp.empty(BATCH + (n, 3))
    for round_ in range(3):  # recorded, then replayed on new data twice
        a, b = tri_stack(rng, n, np.float64, "L"), random_general(rng, BATCH + (n, 3), np.float64)
        d_a[...], d_b[...] = cp.asarray(a), cp.asarray(b)
        assert call(d_a, d_b, **opts) is d_b
        key = _replay.key(kind, (d_a, d_b), tuple(opts.values()))
        assert key in _replay._kept, round_
        got = cp.asnumpy(d_b)
        for k in members(BATCH):
            assert_small(error(a[k], b[k], got[k], **opts), np.float64, n, f"round {round_} {k}")
    upper = tri_stack(rng, n, np.float64, "U")  # another key: the slow path, then kept too
    b = random_general(rng, BATCH + (n, 3), np.float64)
    d_a[...], d_b[...] = cp.asarray(upper), cp.asarray(b)
    call(d_a, d_b, **(opts | {"uplo": "U"}))
    got = cp.asnumpy(d_b)
    for k in members(BATCH):
        assert_small(error(upper[k], b[k], got[k], **(opts | {"uplo": "U"})), np.float64, n)
    assert len(_replay._kept) == 2
    wide = cp.asarray(tri_stack(rng, 40, np.float64, "L"))  # above the register kernels
    call(wide, cp.ones(BATCH + (40, 2)), **opts)
    assert len(_replay._kept) == 2
    tc.set_cuda_graphs(False)
    try:
        assert _replay.key(kind, (d_a, d_b), tuple(opts.values())) is None
        assert not _replay._kept
    finally:
        tc.set_cuda_graphs(True)


@pytest.mark.parametrize("kind", ["potrs", "syrk", "lauum"])
def test_replayed_potrs_syrk_lauum(cp, kind: str) -> None:
    """The other operations that replay (no info to return): recorded, then replayed on new
    data, every result checked."""
    from tricov.batched import _replay

    rng = make_rng(f"gpu-batched-replay-{kind}")
    n = 12
    _replay.clear()
    d_a, d_b = cp.empty(BATCH + (n, n)), cp.empty(BATCH + (n, n))
    for round_ in range(2):
        a = tri_stack(rng, n, np.float64, "L")
        b = random_general(rng, BATCH + (n, n), np.float64)
        d_a[...], d_b[...] = cp.asarray(a), cp.asarray(b)
        if kind == "potrs":
            tc.batched.potrs(d_a, d_b)
        elif kind == "syrk":
            tc.batched.syrk(d_b, d_a, alpha=2.0, beta=0.5)
        else:
            tc.batched.lauum(d_a)
        assert len(_replay._kept) == 1, round_
        got_a, got_b = cp.asnumpy(d_a), cp.asnumpy(d_b)
        for k in members(BATCH):
            low = np.tril(a[k])
            if kind == "potrs":
                err = solve_error(low @ low.T, got_b[k], b[k])
            elif kind == "syrk":
                err = syrk_error(b[k], a[k], got_a[k], uplo="L", trans="N", alpha=2.0,
                                 beta=0.5)
            else:
                err = lauum_error(a[k], got_a[k], "L")
            assert_small(err, np.float64, n, f"round {round_} {k}")


@pytest.mark.parametrize("kind", ["potrf", "posv", "poti"])
def test_replayed_calls_return_new_info(cp, kind: str) -> None:
    check_info_replay(cp, kind, 12)


# ----------------------------------------------------------------------- interoperability
def test_torch_dlpack_zero_copy(cp) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    rng = make_rng("gpu-batched-torch")
    a = spd_stack(rng, 8, np.float64, (4,))
    t = torch.tensor(a, device="cuda")
    out = tc.batched.potrf(t)
    assert out is t
    got = t.cpu().numpy()
    for k in range(4):
        assert_small(potrf_error(a[k], got[k], "L"), np.float64, 8)


def test_device_errors(cp) -> None:
    a = spd_stack(make_rng("gpu-batched-args"), 4, np.float64, (3,))
    with pytest.raises(TypeError, match="one device"):
        tc.batched.trsm(cp.asarray(a), a.copy())
    with pytest.raises(TypeError, match="one device"):
        tc.batched.potrf([cp.asarray(a[0]), a[1]])
    with pytest.raises(ValueError, match="overlaps"):
        d = cp.asarray(a)
        tc.batched.trsm(d, d)


def test_torch_stacks_replay(cp) -> None:
    """PyTorch stacks (DLPack) are keyed as the CuPy arrays over their memory: a repeated call
    replays, results land in the caller's tensors, and a failing member raises from a replay."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    from tricov.batched import _replay

    rng = make_rng("gpu-batched-torch-replay")
    _replay.clear()
    n = 8
    t_l = torch.empty(BATCH + (n, n), dtype=torch.float64, device="cuda")
    t_b = torch.empty(BATCH + (n, 3), dtype=torch.float64, device="cuda")
    t_a = torch.empty(BATCH + (n, n), dtype=torch.float64, device="cuda")
    for round_ in range(3):
        tri, b = tri_stack(rng, n, np.float64, "L"), random_general(rng, BATCH + (n, 3), np.float64)
        a = spd_stack(rng, n, np.float64)
        if round_ == 2:
            a[1, 2] = -a[1, 2]  # flat member 5 fails at its first pivot
        t_l.copy_(torch.from_numpy(tri)), t_b.copy_(torch.from_numpy(b))
        t_a.copy_(torch.from_numpy(a))
        assert tc.batched.trsm(t_l, t_b) is t_b
        got = t_b.cpu().numpy()
        for k in members(BATCH):
            assert_small(trsm_error(tri[k], b[k], got[k], side="L", uplo="L", trans="N",
                                    diag="N", alpha=1.0), np.float64, n, f"round {round_} {k}")
        if round_ == 2:
            with pytest.raises(tc.NotPositiveDefiniteError) as caught:
                tc.batched.potrf(t_a)
            assert list(caught.value.indices) == [5]
        else:
            assert tc.batched.potrf(t_a) is t_a
            got = t_a.cpu().numpy()
            for k in members(BATCH):
                assert_small(potrf_error(a[k], got[k], "L"), np.float64, n, f"round {round_}")
        assert len(_replay._kept) == 2, round_
