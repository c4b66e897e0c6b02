"""The staged TRMM and out-of-place TRSM schedules (tricov.backends.staged), on the CPU.

The GPU runs every recursive TRMM staged: leaves batched, then products batched level by
level, reading a copy of B; and its TRSMs move the right-hand sides between B and a workspace
(products write the rows they update there, leaves solve from there into B). Here the CPU
executor is made to run the same schedules (its batched calls fall back to one BLAS call per
member, its leaves solve in place and copy, a GEMM into another output copies C first), so
every variant, dtype, layout and odd size of the schedules is checked against the references
without a GPU, and the calls they make are counted.
"""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest

import tricov as tc
from reference import DTYPES, LAYOUTS, forced_leaf_size, make_rng, random_general, random_triangular
from test_dense_cholesky import check_posv, check_potrf, check_potri, check_potrs, check_trtri
from test_dense_trxm import VARIANTS, _alpha, check_trxm
from tricov._views import Mat
from tricov.backends import staged
from tricov.backends.cpu import CPUExecutor


@pytest.fixture(params=["copy", "spine"])
def staging(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> dict:
    """The CPU executor runs TRMM staged (on a copy of B, or without it: both schedules, as
    ``state['mode']`` says) and TRSM out of place, with a workspace budget of
    ``state['budget']`` bytes, and counts its batched calls and TRSM leaves in
    ``state['calls']`` (kind, members) and the elements the schedules copy in
    ``state['copied']``."""
    state: dict = {"budget": 1 << 30, "calls": [], "keep": [], "copied": [],
                   "mode": request.param}
    monkeypatch.setattr(staged, "SPINE_COLUMNS", 1 if request.param == "spine" else 1 << 30)

    def run_trmm(self, b, body):
        staged.run(self, b, body, state["budget"])

    def run_trsm(self, lower, unit, a, b, block, body):
        staged.solve(self, b, body, state["budget"])

    def stage_block(self, view, copy):
        work = np.full((max(1, view.mrows), view.mcols), np.nan, dtype=self.dtype, order="F")
        if copy:
            work[:view.mrows] = self._memory(view.ptr, view.mrows, view.mcols, view.ld)
        state["keep"].append(work)
        return Mat(work.ctypes.data, view.mrows, view.mcols, max(1, view.mrows), view.op,
                   view.itemsize)

    def copy_into(self, src, dst):
        if not state.get("in_leaf"):  # the copies of the schedule, not of a leaf's own
            state["copied"].append(src.mrows * src.mcols)
        if src.mrows and src.mcols:
            self._memory(dst.ptr, dst.mrows, dst.mcols, dst.ld)[...] = self._memory(
                src.ptr, src.mrows, src.mcols, src.ld)

    plain_into = CPUExecutor.trsm_into

    def trsm_into(self, lower, unit, alpha, a, src, dst):
        state["calls"].append(("trsm", 1))
        state["in_leaf"] = True
        try:
            plain_into(self, lower, unit, alpha, a, src, dst)
        finally:
            state["in_leaf"] = False

    plain_gemm, plain_leaves = CPUExecutor.gemm, CPUExecutor.trmm_from

    def gemm(self, alpha, a, b, beta, c, count=1, steps=(0, 0, 0), out=None):
        state["calls"].append(("gemm", count))
        if out is not None:  # C read, the result in out: as a copy and an in-place GEMM
            self._memory(out.ptr, out.mrows, out.mcols, out.ld)[...] = self._memory(
                c.ptr, c.mrows, c.mcols, c.ld)
            c = out
        plain_gemm(self, alpha, a, b, beta, c, count, steps)

    def trmm_from(self, lower, unit, alpha, a, src, dst, count=1, steps=(0, 0, 0)):
        state["calls"].append(("trmm", count))
        state["in_leaf"] = True
        try:
            plain_leaves(self, lower, unit, alpha, a, src, dst, count, steps)
        finally:
            state["in_leaf"] = False

    for name, fn in (("run_trmm", run_trmm), ("run_trsm", run_trsm),
                     ("stage_block", stage_block), ("copy_into", copy_into), ("gemm", gemm),
                     ("trmm_from", trmm_from), ("trsm_into", trsm_into)):
        monkeypatch.setattr(CPUExecutor, name, fn, raising=False)
    return state


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("variant", VARIANTS, ids="".join)
@pytest.mark.parametrize("name", ["trmm", "trsm"])
def test_every_variant(staging: dict, name: str, dtype: np.dtype,
                       variant: tuple[str, ...]) -> None:
    """Every variant x dtype x layouts, non-power-of-two sizes, several levels."""
    for leaf, (la, lb) in product((1, 3), product(LAYOUTS, LAYOUTS)):
        m, n = (29, 6) if variant[0] == "L" else (6, 29)
        with forced_leaf_size(dtype, leaf):
            check_trxm(name, dtype, variant, m, n, la, lb, _alpha(dtype), (leaf, la, lb))


@pytest.mark.parametrize("budget_columns", [1, 2, 5])
@pytest.mark.parametrize("side", "LR")
@pytest.mark.parametrize("name", ["trmm", "trsm"])
def test_panels(staging: dict, name: str, side: str, budget_columns: int) -> None:
    """B wider than the workspace budget goes in panels of columns (the last one narrower)."""
    dtype = np.dtype(np.float64)
    m, n = (40, 11) if side == "L" else (11, 40)
    staging["budget"] = budget_columns * 40 * dtype.itemsize
    with forced_leaf_size(dtype, 4):
        for la, lb in (("F", "C-sub"), ("C", "F-sub")):
            check_trxm(name, dtype, (side, "U", "T", "N"), m, n, la, lb, -0.5, (la, lb))
    panels = -(-11 // budget_columns) * 2  # panels per call, two calls
    leaves = 1 if name == "trmm" else 10  # batched leaf calls per panel
    assert sum(1 for kind, _ in staging["calls"] if kind == name) == panels * leaves


@pytest.mark.parametrize("uplo", "LU")
def test_one_call_per_level(staging: dict, uplo: str) -> None:
    """A power-of-two order runs as one batched leaf call and one GEMM per level (on a copy
    of B), or one GEMM per level for the products off the spine and one per spine node,
    copying only the first leaf's rows (without); B equals the product of the in-place
    recursion (the same products, summed in another order)."""
    dtype = np.dtype(np.float64)
    rng = make_rng("staged-levels", uplo)
    a = random_triangular(rng, 64, dtype, uplo=uplo)
    b = random_general(rng, (64, 3), dtype)
    with forced_leaf_size(dtype, 4):
        got = tc.trmm(a, b.copy(), uplo=uplo)
    assert staging["calls"][0] == ("trmm", 16)
    if staging["mode"] == "copy":
        assert sorted(staging["calls"][1:]) == [("gemm", 2**k) for k in range(4)]
        assert staging["copied"] == []  # the copy of B is the stage's own
    else:
        assert sorted(staging["calls"][1:]) == sorted(
            [("gemm", 1)] * 4 + [("gemm", 2**k - 1) for k in range(1, 4)])
        assert staging["copied"] == [4 * 3]
    want = (np.tril(a) if uplo == "L" else np.triu(a)) @ b
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13 * np.abs(want).max())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("uplo", "LU")
def test_cholesky_family(staging: dict, dtype: np.dtype, uplo: str) -> None:
    """POTRF, POTRS, POSV, TRTRI and POTRI, whose recursions run TRSMs and TRMMs: through the
    schedules, on both layouts, several levels deep."""
    for layout, other in (("F", "C-sub"), ("C", "F-sub")):
        seed = (uplo, layout)
        with forced_leaf_size(dtype, 3):
            check_potrf(dtype, uplo, 23, layout, seed)
            check_potrs(dtype, uplo, 23, 5, layout, other, seed)
            check_posv(dtype, uplo, 23, 4, layout, other, seed)
            check_trtri(dtype, uplo, 23, layout, seed)
            check_potri(dtype, uplo, 23, layout, seed)
    assert {kind for kind, _ in staging["calls"]} == {"trsm", "trmm", "gemm"}


@pytest.mark.parametrize("lower", [True, False])
def test_solve_reads_only_solved_rows(staging: dict, lower: bool) -> None:
    """The workspace starts as NaN: a product or leaf that read a block of it before a product
    wrote it would spread NaN into B. Only the first leaf's rows are copied back (the others
    solve from the workspace into B). The solution is that of the in-place recursion."""
    dtype = np.dtype(np.float64)
    rng = make_rng("staged-solve", lower)
    a = random_triangular(rng, 50, dtype, uplo="L" if lower else "U")
    b = random_general(rng, (50, 3), dtype)
    with forced_leaf_size(dtype, 4):
        got = tc.trsm(a, b.copy(), uplo="L" if lower else "U")
    assert [kind for kind, _ in staging["calls"]].count("trsm") == 13  # 32 + 16 + 2 rows
    assert staging["copied"] == [(4 if lower else 2) * 3]  # rows 0-3, or 48-49, solved first
    want = np.linalg.solve(np.tril(a) if lower else np.triu(a), b)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
