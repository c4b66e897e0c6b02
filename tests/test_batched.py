"""Batched operations: every operation, variant and dtype, member by member against references.

Each operation runs on stacks of shape ``(2, 3, ...)`` in several memory layouts (members C- or
F-ordered, inside larger NaN-filled buffers, interleaved, with negative batch strides, or with
no unit stride at all, which is copied), on three paths of the CPU engine:

* ``lanes``: order 6, the SIMD lane kernels (an even order: padded scratch strides);
* ``executor``: order 53 with the lane kernels switched off, one native BLAS/LAPACK call per
  member;
* ``recursion``: the same with a batched leaf size of 16, the recursions of the dense path
  over the per-member executor (several levels, including the conjugation flips).

Every member is checked with the backward-error measures of ``reference.py`` (tolerance
``10 n eps``); what an operation must not read holds NaN, and what it must not write is
compared bitwise.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import product
from typing import Any

import numpy as np
import pytest

import tricov as tc
from reference import (
    DTYPES,
    Embedded,
    assert_small,
    bits,
    forced_leaf_size,
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

BATCH = (2, 3)
PATHS = ("lanes", "executor", "recursion")
ORDER = {"lanes": 6, "executor": 53, "recursion": 53}
#: Member layouts of a stack; all but "strided" are used in place.
STACK_LAYOUTS = ("C", "F", "C-sub", "F-sub", "interleaved", "reversed", "strided")
VARIANTS = list(product("LR", "LU", "NTC", "NU"))  # side, uplo, trans, diag


# ------------------------------------------------------------------------------ helpers
#: A stack placed in memory: ``view`` is what tricov gets, ``base`` the whole buffer (the same
#: record as a single operand embedded by tests/reference.py).
Stacked = Embedded


def stacked(values: np.ndarray, layout: str) -> Stacked:
    """Place a copy of the stack ``values`` (..., r, c) in memory as ``layout``."""
    values = np.asarray(values)
    batch, (r, c) = values.shape[:-2], values.shape[-2:]

    def full(shape: tuple[int, ...]) -> np.ndarray:
        return np.full(shape, nan_fill(values.dtype), dtype=values.dtype)

    select: Callable[[np.ndarray], np.ndarray]
    if layout == "C":
        base, select = full(values.shape), lambda x: x
    elif layout == "F":
        base, select = full(batch + (c, r)), lambda x: np.swapaxes(x, -1, -2)
    elif layout == "C-sub":
        base, select = full(batch + (r + 2, c + 3)), lambda x: x[..., 2:2 + r, 1:1 + c]
    elif layout == "F-sub":
        base = full(batch + (c + 3, r + 2))
        select = lambda x: np.swapaxes(x[..., 1:1 + c, 2:2 + r], -1, -2)  # noqa: E731
    elif layout == "interleaved":  # members' rows far apart, members next to each other
        base, select = full((r,) + batch + (c,)), lambda x: np.moveaxis(x, 0, -2)
    elif layout == "reversed":  # negative batch strides
        base = full(values.shape)
        select = lambda x: x[(slice(None, None, -1),) * len(batch)]  # noqa: E731
    elif layout == "strided":
        base = full(batch + (2 * r + 1, 3 * c + 1))
        select = lambda x: x[..., 1:1 + 2 * r:2, 0:3 * c:3]  # noqa: E731
    else:
        raise ValueError(layout)
    view = select(base)
    view[...] = values
    mask = np.zeros(base.shape, dtype=bool)
    select(mask)[...] = True
    return Stacked(base, view, mask, layout)


def members(shape: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    return iter(np.ndindex(*shape))


def batched_leaf(dtype: np.dtype, size: int | None) -> contextlib.AbstractContextManager:
    """The batched CPU leaf size of every operation, for ``dtype``, inside the block."""
    return forced_leaf_size(dtype, size, backend="batched_cpu")


@contextmanager
def on_path(path: str, dtype: np.dtype) -> Iterator[None]:
    """Inside the block, the CPU engine takes ``path`` for ``dtype``."""
    from tricov.batched import _cpu, _replay

    saved = dict(_cpu.LANES_MAX), dict(_cpu.LANES_MAX_FEW_RHS)
    if path != "lanes":
        for limits in (_cpu.LANES_MAX, _cpu.LANES_MAX_FEW_RHS):
            limits.update(dict.fromkeys(limits, 0))
    _replay.clear()  # calls recorded on another path
    try:
        with batched_leaf(dtype, 16 if path == "recursion" else None):
            yield
    finally:
        _cpu.LANES_MAX.update(saved[0])
        _cpu.LANES_MAX_FEW_RHS.update(saved[1])
        _replay.clear()


def layout_pair(i: int) -> tuple[str, str]:
    """Layouts for the two operands of case ``i``, cycling through all pairs over the cases."""
    k = len(STACK_LAYOUTS)
    return STACK_LAYOUTS[i % k], STACK_LAYOUTS[(i // k + 3 * i + 1) % k]


def _alpha(i: int, dtype: np.dtype) -> complex:
    if i % 3 == 0:
        return 1.0
    return complex(0.6, -0.8) if np.dtype(dtype).kind == "c" else -0.75


def tri_stack(rng: np.random.Generator, n: int, dtype: np.dtype, uplo: str,
              unit: bool = False) -> np.ndarray:
    """A stack of well-conditioned triangles whose unreferenced part is NaN."""
    out = np.empty(BATCH + (n, n), dtype)
    for idx in members(BATCH):
        out[idx] = random_triangular(rng, n, dtype, uplo=uplo)
        poison_triangle(out[idx], uplo, unit=unit)
    return out


def spd_stack(rng: np.random.Generator, n: int, dtype: np.dtype, shape=BATCH) -> np.ndarray:
    out = np.empty(shape + (n, n), dtype)
    for idx in members(shape):
        out[idx] = random_spd(rng, n, dtype)
    return out


def other_triangle(x: np.ndarray, uplo: str) -> np.ndarray:
    """Bits of the strict triangle opposite to ``uplo`` of every member."""
    n = x.shape[-1]
    k = np.triu_indices(n, 1) if uplo == "L" else np.tril_indices(n, -1)
    return bits(x[..., k[0], k[1]])


# -------------------------------------------------------------------------- trsm / trmm
TRXM = {"trsm": (tc.batched.trsm, trsm_error), "trmm": (tc.batched.trmm, trmm_error)}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", sorted(TRXM))
def test_trxm_variants(name: str, path: str, dtype: np.dtype) -> None:
    fn, error = TRXM[name]
    n, nrhs = ORDER[path], 6  # lane kernels: one block of four columns and a remainder
    with on_path(path, dtype):
        for i, (side, uplo, trans, diag) in enumerate(VARIANTS):
            rng = make_rng("batched", name, path, str(dtype), i)
            la, lb = layout_pair(i)
            alpha = _alpha(i, dtype)
            a = tri_stack(rng, n, dtype, uplo, unit=diag == "U")
            b = random_general(rng, BATCH + ((n, nrhs) if side == "L" else (nrhs, n)), dtype)
            sa, sb = stacked(a, la), stacked(b, lb)
            a_before, b_before = sa.snapshot(), sb.snapshot()
            out = fn(sa.view, sb.view, side=side, uplo=uplo, trans=trans, diag=diag,
                     alpha=alpha)
            what = f"{name} {side}{uplo}{trans}{diag} A:{la} B:{lb} alpha={alpha}"
            assert out is sb.view
            assert (bits(sa.base) == bits(a_before)).all(), f"{what}: A changed"
            sb.assert_outside_unchanged(b_before)
            for idx in members(BATCH):
                err = error(a[idx], b[idx], sb.view[idx], side=side, uplo=uplo, trans=trans,
                            diag=diag, alpha=alpha)
                assert_small(err, dtype, n, f"{what} member {idx}")


# ---------------------------------------------------------------------------------- syrk
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("path", PATHS)
def test_syrk_variants(path: str, dtype: np.dtype) -> None:
    n, k = ORDER[path], 7
    cases = list(product("LU", "NC" if np.dtype(dtype).kind == "c" else "NTC", (0.0, 0.5)))
    with on_path(path, dtype):
        for i, (uplo, trans, beta) in enumerate(cases):
            rng = make_rng("batched-syrk", path, str(dtype), i)
            la, lc = layout_pair(i + 2)
            alpha = 1.0 if i % 2 else -0.7
            a = random_general(rng, BATCH + ((n, k) if trans == "N" else (k, n)), dtype)
            c = np.empty(BATCH + (n, n), dtype)
            for idx in members(BATCH):
                c[idx] = random_spd(rng, n, dtype) if beta else nan_fill(dtype)
                poison_triangle(c[idx], uplo)
            sa, sc = stacked(a, la), stacked(c, lc)
            c_before = sc.snapshot()
            out = tc.batched.syrk(sa.view, sc.view, uplo=uplo, trans=trans, alpha=alpha,
                                  beta=beta)
            what = f"syrk {uplo}{trans} beta={beta} A:{la} C:{lc}"
            assert out is sc.view
            sc.assert_outside_unchanged(c_before)
            assert (other_triangle(sc.view, uplo) == other_triangle(c, uplo)).all(), what
            for idx in members(BATCH):
                err = syrk_error(a[idx], c[idx], sc.view[idx], uplo=uplo, trans=trans,
                                 alpha=alpha, beta=beta)
                assert_small(err, dtype, k + 1, f"{what} member {idx}")


# ---------------------------------------------------------------------- Cholesky family
def _factor_stack(a: np.ndarray, uplo: str) -> np.ndarray:
    """Cholesky factors (NumPy) of a stack, in the ``uplo`` triangle, NaN elsewhere."""
    out = np.empty_like(a)
    for idx in members(a.shape[:-2]):
        low = np.linalg.cholesky(hermitian_from(a[idx], "L")).astype(a.dtype)
        out[idx] = low if uplo == "L" else low.conj().T
        poison_triangle(out[idx], uplo)
    return out


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("uplo", "LU")
def test_cholesky_family(uplo: str, path: str, dtype: np.dtype) -> None:
    n, nrhs = ORDER[path], 3
    rng = make_rng("batched-chol", uplo, path, str(dtype))
    spd = spd_stack(rng, n, dtype)
    full = np.stack([hermitian_from(spd[idx], "L") for idx in members(BATCH)]).reshape(
        BATCH + (n, n))
    poisoned = spd.copy()
    for idx in members(BATCH):
        poison_triangle(poisoned[idx], uplo)
    factor = _factor_stack(spd, uplo)
    rhs = random_general(rng, BATCH + (n, nrhs), dtype)
    layouts = iter(STACK_LAYOUTS * 3)

    def run(fn, x: np.ndarray, **kw) -> tuple[Stacked, np.ndarray]:
        s = stacked(x, next(layouts))
        before = s.snapshot()
        assert fn(s.view, uplo=uplo, **kw) is s.view
        s.assert_outside_unchanged(before)
        assert (other_triangle(s.view, uplo) == other_triangle(x, uplo)).all(), fn.__name__
        return s, before

    with on_path(path, dtype):
        s, _ = run(tc.batched.potrf, poisoned)
        for idx in members(BATCH):
            assert_small(potrf_error(spd[idx], s.view[idx], uplo), dtype, n, f"potrf {idx}")
        s, _ = run(tc.batched.poti, poisoned)
        for idx in members(BATCH):
            assert_small(inverse_error(full[idx], s.view[idx], uplo), dtype, n, f"poti {idx}")
        s, _ = run(tc.batched.potri, factor)
        for idx in members(BATCH):
            assert_small(inverse_error(full[idx], s.view[idx], uplo), dtype, n, f"potri {idx}")
        s, _ = run(tc.batched.lauum, factor)
        for idx in members(BATCH):
            assert_small(lauum_error(factor[idx], s.view[idx], uplo), dtype, n, f"lauum {idx}")
        for diag in "NU":
            t = tri_stack(rng, n, dtype, uplo, unit=diag == "U")
            s, _ = run(tc.batched.trtri, t, diag=diag)
            for idx in members(BATCH):
                assert_small(trtri_error(t[idx], s.view[idx], uplo, diag), dtype, n,
                             f"trtri {diag} {idx}")
            if diag == "U":  # the unit diagonal is neither read nor written
                assert np.isnan(np.diagonal(s.view, axis1=-2, axis2=-1)).all()
        for solver in ("potrs", "posv"):
            sb = stacked(rhs, next(layouts))
            sa = stacked(factor if solver == "potrs" else poisoned, next(layouts))
            a_before, b_before = sa.snapshot(), sb.snapshot()
            out = getattr(tc.batched, solver)(sa.view, sb.view, uplo=uplo)
            assert out is sb.view
            sb.assert_outside_unchanged(b_before)
            if solver == "potrs":
                assert (bits(sa.base) == bits(a_before)).all(), "potrs changed L"
            else:
                sa.assert_outside_unchanged(a_before)
            for idx in members(BATCH):
                assert_small(solve_error(full[idx], sb.view[idx], rhs[idx]), dtype, n,
                             f"{solver} {idx}")
                if solver == "posv":
                    assert_small(potrf_error(spd[idx], sa.view[idx], uplo), dtype, n,
                                 f"posv factor {idx}")


# ------------------------------------------------------------------------------- lists
LIST_SIZES = (0, 1, 2, 3, 7, 9, 48, 49, 60)


def _member(rng: np.random.Generator, shape: tuple[int, int], dtype: np.dtype, k: int,
            make: Callable[[], np.ndarray] | None = None) -> np.ndarray:
    """A 2-D member with the values of ``make()`` (or random ones) in layout number ``k``."""
    values = make() if make is not None else random_general(rng, shape, dtype)
    return stacked(values[None], STACK_LAYOUTS[k % len(STACK_LAYOUTS)]).view[0]


@pytest.mark.parametrize("dtype", [np.float64, np.complex64], ids=str)
def test_lists_of_mixed_sizes(dtype: np.dtype) -> None:
    """Lists whose members differ in size and layout, for every operation."""
    dtype = np.dtype(dtype)
    rng = make_rng("batched-lists", str(dtype))
    sizes = [LIST_SIZES[k % len(LIST_SIZES)] for k in range(13)]
    uplo = "U"
    spd = [random_spd(rng, n, dtype) for n in sizes]
    tris = [random_triangular(rng, n, dtype, uplo="L") for n in sizes]

    a = [_member(rng, (n, n), dtype, k, lambda n=n, k=k: tris[k]) for k, n in enumerate(sizes)]
    b = [_member(rng, (n, 2 + k % 3), dtype, k + 3) for k, n in enumerate(sizes)]
    b_in = [x.copy() for x in b]
    assert tc.batched.trsm(a, b, trans="C", alpha=2.0) is b
    for k, n in enumerate(sizes):
        assert_small(trsm_error(tris[k], b_in[k], b[k], side="L", uplo="L", trans="C",
                                diag="N", alpha=2.0), dtype, max(n, 1), f"trsm member {k}")
    b = [_member(rng, (2 + k % 3, n), dtype, k + 1) for k, n in enumerate(sizes)]
    b_in = [x.copy() for x in b]
    tc.batched.trmm(a, b, side="R", trans="T", diag="U")
    for k, n in enumerate(sizes):
        assert_small(trmm_error(tris[k], b_in[k], b[k], side="R", uplo="L", trans="T",
                                diag="U", alpha=1.0), dtype, max(n, 1), f"trmm member {k}")

    x = [_member(rng, (n, n), dtype, k, lambda k=k: spd[k]) for k, n in enumerate(sizes)]
    assert tc.batched.potrf(x, uplo=uplo) is x
    for k, n in enumerate(sizes):
        assert_small(potrf_error(spd[k], x[k], uplo), dtype, max(n, 1), f"potrf member {k}")
    info = tc.batched.poti([_member(rng, (n, n), dtype, k, lambda k=k: spd[k])
                            for k, n in enumerate(sizes)], uplo=uplo, check=False)
    assert info.shape == (len(sizes),) and not info.any()

    rhs = [random_general(rng, (n, 2), dtype) for n in sizes]
    x = [_member(rng, (n, n), dtype, k, lambda k=k: spd[k]) for k, n in enumerate(sizes)]
    b = [_member(rng, (n, 2), dtype, k + 2, lambda k=k: rhs[k]) for k, n in enumerate(sizes)]
    tc.batched.posv(x, b, uplo=uplo)
    for k, n in enumerate(sizes):
        assert_small(solve_error(hermitian_from(spd[k], uplo), b[k], rhs[k]), dtype, max(n, 1),
                     f"posv member {k}")

    c = [_member(rng, (n, n), dtype, k) for k, n in enumerate(sizes)]
    c_in = [m.copy() for m in c]
    g = [random_general(rng, (n, 3), dtype) for n in sizes]
    tc.batched.syrk(g, c, uplo=uplo, alpha=0.5, beta=2.0)
    for k, n in enumerate(sizes):
        c_in[k][np.diag_indices(n)] = c_in[k].diagonal().real
        assert_small(syrk_error(g[k], c_in[k], c[k], uplo=uplo, trans="N", alpha=0.5,
                                beta=2.0), dtype, 4, f"syrk member {k}")


# ------------------------------------------------------------------------- batch shapes
@pytest.mark.parametrize("shape", [(0,), (1,), (0, 4), ()], ids=str)
def test_batch_shapes(shape: tuple[int, ...]) -> None:
    """Empty batches, a batch of one, and a single 2-D matrix (batch shape ())."""
    rng = make_rng("batched-shapes", shape)
    a = spd_stack(rng, 6, np.float64, shape)
    a0 = a.copy()
    info = tc.batched.potrf(a, check=False)
    assert info.shape == shape and info.dtype == np.int64 and not info.any()
    for idx in members(shape):
        assert_small(potrf_error(a0[idx], a[idx], "L"), np.float64, 6)
    b = random_general(rng, shape + (6, 2), np.float64)
    assert tc.batched.trsm(a, b) is b
    assert tc.batched.posv(spd_stack(rng, 6, np.float64, shape), b, check=False).shape == shape


def test_broadcast_triangle() -> None:
    """A read-only triangle broadcast over a batch of right-hand sides (batch strides 0)."""
    rng = make_rng("batched-broadcast")
    t = tri_stack(rng, 5, np.float64, "L", unit=False)[0, 0]
    a = np.broadcast_to(t, (2, 3, 5, 5))
    b = random_general(rng, (2, 3, 5, 4), np.float64)
    x = b.copy()
    assert tc.batched.trsm(a, x) is x
    for idx in members((2, 3)):
        err = trsm_error(t, b[idx], x[idx], side="L", uplo="L", trans="N", diag="N", alpha=1.0)
        assert_small(err, np.float64, 5, f"trsm member {idx}")


@pytest.mark.parametrize("n", [0, 1])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=str)
def test_orders_zero_and_one(n: int, dtype: np.dtype) -> None:
    rng = make_rng("batched-n", n, str(dtype))
    a = spd_stack(rng, n, dtype, (11,))
    a0 = a.copy()
    assert not tc.batched.poti(a, check=False).any()
    for k in range(11):
        assert_small(inverse_error(a0[k], a[k], "L"), dtype, 1) if n else None
    b = random_general(rng, (11, n, 3), dtype)
    b0 = b.copy()
    t = np.stack([random_triangular(rng, n, dtype) for _ in range(11)])
    tc.batched.trsm(t, b, side="L", trans="C")
    for k in range(11):
        assert_small(trsm_error(t[k], b0[k], b[k], side="L", uplo="L", trans="C", diag="N",
                                alpha=1.0), dtype, 1)
    c = np.zeros((11, 3, 3), dtype)
    tc.batched.syrk(random_general(rng, (11, 3, n), dtype), c)  # k = n: C = 0 for n = 0
    if n == 0:
        assert not c.any()


def test_million_members() -> None:
    """A stack of 10**6 2x2 matrices: every member factored (checked in closed form)."""
    rng = make_rng("batched-million")
    count = 10**6
    a = np.empty((count, 2, 2))
    a[:, 0, 0] = 1.0 + rng.random(count)
    a[:, 1, 1] = 2.0 + rng.random(count)
    a[:, 1, 0] = a[:, 0, 1] = rng.uniform(-1, 1, count)
    l00 = np.sqrt(a[:, 0, 0])
    l10 = a[:, 1, 0] / l00
    l11 = np.sqrt(a[:, 1, 1] - l10**2)
    up = a[:, 0, 1].copy()
    tc.batched.potrf(a)
    for got, want in ((a[:, 0, 0], l00), (a[:, 1, 0], l10), (a[:, 1, 1], l11)):
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(float).eps)
    assert (a[:, 0, 1] == up).all()


def test_thread_partition(monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch shared by several threads (more than chunks, so some get none) computes
    every member and reports each failing member's own info."""
    from tricov.batched import _cpu
    from tricov.kernels.numba import small

    monkeypatch.setattr(small, "SERIAL_WORK", 1)  # threads even for this small batch
    for threads in (3, 40):
        monkeypatch.setattr(_cpu.numba, "get_num_threads", lambda t=threads: t)
        for path in ("lanes", "executor"):
            rng = make_rng("batched-threads", threads, path)
            a = spd_stack(rng, 7, np.float64, (37,))
            bad = {3: 1, 20: 7, 36: 4}
            for k, order in bad.items():
                a[k, order - 1, order - 1] = -1.0
            a0 = a.copy()
            with on_path(path, np.float64):
                info = tc.batched.potrf(a, check=False)
            assert info.tolist() == [bad.get(k, 0) for k in range(37)]
            for k in range(37):
                if k not in bad:
                    assert_small(potrf_error(a0[k], a[k], "L"), np.float64, 7, f"{path} {k}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [4, 8, 12, 15, 16, 17, 18, 33])
def test_potrf_lane_orders(n: int, dtype: np.dtype) -> None:
    """POTRF of the orders whose chunk loop is compiled for the order (4, 8, 12: small._work)
    and of real orders run by panels of four columns (from small.PANEL_MIN: every remainder
    of the order by four), upper and lower, C order and strided sub-views, a partial last chunk
    and failing members (at the first, a middle and the last column of a panel): each member's
    factor and info, the other triangle and the buffer around them untouched."""
    from tricov.kernels.numba import small

    assert small.PANEL_MIN <= 15
    count = 2 * small.lanes_for(dtype) + 3
    rng = make_rng("batched-compiled-orders", n, str(dtype))
    spd = spd_stack(rng, n, dtype, (count,))
    # a pivot turned negative at that order
    bad = {1: n, 2: 1, count - 2: min(n, 6), count - 1: max(1, n // 2)}
    for k, order in bad.items():
        spd[k, order - 1, order - 1] = -abs(spd[k, order - 1, order - 1]) - n
    for uplo, layout in (("L", "C"), ("U", "F-sub"), ("L", "strided")):
        x = spd.copy()
        for k in range(count):
            poison_triangle(x[k], uplo)
        s = stacked(x, layout)
        before = s.snapshot()
        info = tc.batched.potrf(s.view, uplo=uplo, check=False)
        assert info.tolist() == [bad.get(k, 0) for k in range(count)], (uplo, layout)
        s.assert_outside_unchanged(before)
        assert (other_triangle(s.view, uplo) == other_triangle(x, uplo)).all()
        for k in range(count):
            if k not in bad:
                full = hermitian_from(spd[k], "L")
                assert_small(potrf_error(full, s.view[k], uplo), dtype, n, f"{uplo} {k}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cholesky_lanes_past_128(dtype: np.dtype, monkeypatch: pytest.MonkeyPatch) -> None:
    """POTRF, POSV, POTI and TRTRI of order 150 on the lane kernels (their crossover is 256,
    scratch permitting), upper and lower, C order and strided sub-views, against references;
    POTRS of that order on the lanes with few right-hand sides, else on the executor."""
    from tricov.batched import _cpu, _replay
    from tricov.kernels.numba import small

    n, count = 150, 3
    ops = set()
    run = small.run
    monkeypatch.setattr(small, "run", lambda op, *args: (ops.add(op), run(op, *args)))
    _replay.clear()  # every call below runs, none is replayed
    try:
        _cholesky_past_128(n, count, dtype)
        factor = np.linalg.cholesky(spd_stack(make_rng("potrs"), n, dtype, (1,)))
        tc.batched.potrs(factor, np.ones((1, n, _cpu.FEW_RHS + 1), dtype))
        assert small.POTRS not in ops  # many right-hand sides: the executor
        rhs = random_general(make_rng("potrs-rhs"), (1, n, _cpu.FEW_RHS), dtype)
        x = rhs.copy()
        tc.batched.potrs(factor, x)
        full = factor[0] @ factor[0].conj().T
        assert_small(solve_error(full, x[0], rhs[0]), dtype, n, "potrs few")
    finally:
        _replay.clear()
    assert ops == {small.POTRF, small.TRTRI, small.POSV, small.POTI, small.POTRS}, ops


def _cholesky_past_128(n: int, count: int, dtype: np.dtype) -> None:
    rng = make_rng("batched-lanes-past-128", str(dtype))
    spd = spd_stack(rng, n, dtype, (count,))
    full = [hermitian_from(spd[k], "L") for k in range(count)]
    rhs = random_general(rng, (count, n, 2), dtype)
    for uplo, layout in (("L", "C"), ("U", "F-sub")):
        s = stacked(spd, layout)
        assert tc.batched.potrf(s.view, uplo=uplo) is s.view
        for k in range(count):
            assert_small(potrf_error(full[k], s.view[k], uplo), dtype, n, f"potrf {uplo} {k}")
        factor = s.view.copy()
        t = stacked(factor, "strided")
        tc.batched.trtri(t.view, uplo=uplo)
        for k in range(count):
            assert_small(trtri_error(factor[k], t.view[k], uplo, "N"), dtype, n, f"trtri {k}")
        a, b = stacked(spd, layout), stacked(rhs, "C")
        tc.batched.posv(a.view, b.view, uplo=uplo)
        for k in range(count):
            assert_small(solve_error(full[k], b.view[k], rhs[k]), dtype, n, f"posv {uplo} {k}")
        a = stacked(spd, layout)
        tc.batched.poti(a.view, uplo=uplo)
        for k in range(count):
            assert_small(inverse_error(full[k], a.view[k], uplo), dtype, n, f"poti {uplo} {k}")


@pytest.mark.parametrize("dtype", [np.float64, np.complex64], ids=str)
def test_prefetched_views(dtype: np.dtype, monkeypatch: pytest.MonkeyPatch) -> None:
    """Members small enough to be prefetched ahead of their chunk, as views with a leading
    dimension above their rows, in more chunks than the prefetch distance, on two threads."""
    from tricov.batched import _cpu
    from tricov.kernels.numba import small

    monkeypatch.setattr(small, "SERIAL_WORK", 1)
    monkeypatch.setattr(_cpu.numba, "get_num_threads", lambda: 2)
    n, count = 16, 8 * small.lanes_for(dtype) + 3
    low, high = small.PREFETCH_BYTES
    assert low < n * n * np.dtype(dtype).itemsize <= high
    rng = make_rng("batched-prefetch", str(dtype))
    buffer = np.full((count, n + 5, n + 2), np.nan, dtype)
    a = buffer[:, 1:1 + n, :n]
    a[...] = spd_stack(rng, n, dtype, (count,))
    a0 = a.copy()
    tc.batched.potrf(a)
    for k in range(count):
        assert_small(potrf_error(a0[k], a[k], "L"), dtype, n, f"member {k}")
    assert np.isnan(buffer[:, 0]).all() and np.isnan(buffer[:, 1 + n:]).all()
    assert np.isnan(buffer[:, :, n:]).all()


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
@pytest.mark.parametrize("n", [1, 5, 8, 13, 32])
def test_sector_bytes(n: int, dtype: str) -> None:
    """The sectors of the bench's byte counts, against the sectors of every address of a C-ordered
    stack (a batch of 11, not a whole number of the members' repeating pattern)."""
    from tricov.batched.bench import BatchedCase, sector_bytes

    size, batch = np.dtype(dtype).itemsize, 11
    rows, cols = np.tril_indices(n)
    members = np.arange(batch)[:, None]
    tri = np.unique(((members * n * n + rows * n + cols) * size) // 32).size
    for op, k in (("potrf", 0), ("posv", 3), ("syrk", 7)):
        rect = np.unique((np.arange(batch * n * (k or n)) * size) // 32).size
        counts = {"potrf": (2, 0), "posv": (2, 2), "syrk": (2, 1)}[op]
        expect = (counts[0] * tri + counts[1] * rect) * 32
        assert sector_bytes(BatchedCase(op, n, batch, k, dtype)) == expect, (op, n, dtype)


# ------------------------------------------------------------------------------ doctests
@pytest.mark.parametrize("name", ["tricov.batched", "tricov.batched._api",
                                  "tricov.batched.bench"])
def test_docstring_examples(name: str) -> None:
    import doctest
    import importlib

    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{name} has no docstring examples"
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed"


def check_info_replay(xp: Any, kind: str, n: int) -> None:
    """Shared by the host and device tests (tricov.batched._replay): POTRF, POSV or POTI on
    stacks of module ``xp`` (numpy or cupy) recorded, replayed on new data, then replayed with
    a failing member. Every result is checked; ``check=False`` returns a new info array of the
    members' module, ``check=True`` raises for the failing member, and no replay writes the
    info array an earlier call returned."""
    from tricov.batched import _replay

    to_host = getattr(xp, "asnumpy", np.asarray)
    rng = make_rng("batched-replay-info", kind, xp.__name__)
    _replay.clear()
    a_mem, b_mem = xp.empty(BATCH + (n, n)), xp.empty(BATCH + (n, 2))
    run = {"potrf": lambda check: tc.batched.potrf(a_mem, check=check),
           "posv": lambda check: tc.batched.posv(a_mem, b_mem, check=check),
           "poti": lambda check: tc.batched.poti(a_mem, check=check)}[kind]
    infos = []
    for round_ in range(3):  # recorded, replayed, replayed with a failing member
        a = spd_stack(rng, n, np.float64)
        if round_ == 2:
            a[1, 2] = -a[1, 2]  # flat member 5 fails at its first pivot
        b = random_general(rng, BATCH + (n, 2), np.float64)
        a_mem[...], b_mem[...] = xp.asarray(a), xp.asarray(b)
        if round_ == 2:
            with pytest.raises(tc.NotPositiveDefiniteError) as caught:
                run(True)
            assert list(caught.value.indices) == [5] and list(caught.value.orders) == [1]
        else:
            info = run(False)
            assert isinstance(info, xp.ndarray) and info.shape == BATCH
            assert not to_host(info).any()
            infos.append(info)
        assert len(_replay._kept) == 1, round_
        got_a, got_b = to_host(a_mem), to_host(b_mem)
        for k in members(BATCH):
            if round_ == 2 and k == (1, 2):
                continue
            if kind == "potrf":
                err = potrf_error(a[k], got_a[k], "L")
            elif kind == "posv":
                err = solve_error(hermitian_from(a[k], "L"), got_b[k], b[k])
            else:
                err = inverse_error(hermitian_from(a[k], "L"), got_a[k], "L")
            assert_small(err, np.float64, n, f"round {round_} {k}")
    assert infos[0] is not infos[1]  # and neither was written by round 2
    assert not to_host(infos[0]).any() and not to_host(infos[1]).any()


@pytest.mark.parametrize("kind", ["potrf", "posv", "poti"])
def test_repeated_host_calls_replay_with_info(kind: str) -> None:
    check_info_replay(np, kind, 6)


def test_repeated_host_calls_replay() -> None:
    """A repeated TRSM on the same stacks reruns the lane kernels its first call recorded
    (tricov.batched._replay), on the data of the repeated call; lists, orders above the lane
    kernels and replay turned off take the full path. Every result is checked."""
    from tricov.batched import _replay

    rng = make_rng("batched-host-replay", "trsm")
    n = 6
    _replay.clear()
    a_mem, b_mem = np.empty(BATCH + (n, n)), np.empty(BATCH + (n, 3))
    for round_ in range(3):  # recorded, then replayed twice
        tri = np.linalg.cholesky(spd_stack(rng, n, np.float64))
        b = random_general(rng, BATCH + (n, 3), np.float64)
        a_mem[...], b_mem[...] = tri, b
        assert tc.batched.trsm(a_mem, b_mem, trans="T") is b_mem
        assert len(_replay._kept) == 1, round_
        for k in members(BATCH):
            err = trsm_error(tri[k], b[k], b_mem[k], side="L", uplo="L", trans="T", diag="N",
                             alpha=1.0)
            assert_small(err, np.float64, n, f"round {round_} {k}")
    tc.batched.trsm(list(a_mem.reshape(-1, n, n)), list(b_mem.reshape(-1, n, 3)))
    from tricov.batched._cpu import FEW_RHS

    wide = tri_stack(rng, 200, np.float64, "L")  # above the lane kernels of TRSM
    tc.batched.trsm(wide, np.ones(BATCH + (200, FEW_RHS + 1)))
    assert len(_replay._kept) == 1
    tc.set_cuda_graphs(False)
    try:
        assert _replay.key("trsm", (a_mem, b_mem), ("L", "L", "N", "N", 1.0)) is None
        assert not _replay._kept
    finally:
        tc.set_cuda_graphs(True)


def test_replay_holds_bounded_host_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Recorded host calls keep their members' addresses: beyond HOST_BYTES together the least
    recently used are forgotten (the newest is always kept)."""
    from tricov.batched import _replay

    rng = make_rng("batched-replay-bytes")
    monkeypatch.setattr(_replay, "HOST_BYTES", 1)
    stacks = [tri_stack(rng, 4, np.float64, "L") for _ in range(3)]
    b = random_general(rng, BATCH + (4, 1), np.float64)
    for a in stacks:
        tc.batched.trsm(a, b)
        assert len(_replay._kept) == 1
    monkeypatch.setattr(_replay, "HOST_BYTES", 1 << 30)
    for a in stacks:
        tc.batched.trsm(a, b)
    assert len(_replay._kept) == 3
    assert _replay._held[0] == sum(entry[2] for entry in _replay._kept.values()) > 0


def test_replay_keeps_a_running_count_of_its_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bytes the kept calls hold are counted as calls come and go (a sum over every kept
    call at each new call made calls on fresh arrays 2.5 times slower once 256 were kept), and
    the count always equals that sum: through evictions by count and by bytes, and clear()."""
    from tricov.batched import _replay

    def consistent() -> bool:
        return _replay._held[0] == sum(entry[2] for entry in _replay._kept.values())

    rng = make_rng("batched-replay-count")
    _replay.clear()
    monkeypatch.setattr(_replay, "CAPACITY", 4)
    stacks = [tri_stack(rng, 4, np.float64, "L") for _ in range(7)]
    for a in stacks:  # three evicted by count
        tc.batched.potrf(a, check=False)
        assert consistent() and len(_replay._kept) <= 4
    one = max(entry[2] for entry in _replay._kept.values())
    monkeypatch.setattr(_replay, "HOST_BYTES", 2 * one)
    tc.batched.potrf(tri_stack(rng, 4, np.float64, "L"), check=False)  # evicted by bytes
    assert consistent() and len(_replay._kept) == 2
    for a in stacks[-2:]:  # replays of kept or forgotten calls
        tc.batched.potrf(a, check=False)
        assert consistent()
    _replay.clear()
    assert _replay._held[0] == 0 and not _replay._kept
