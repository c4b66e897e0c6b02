"""The staged TRMM schedule (tricov.backends.staged), checked on the CPU.

The GPU runs every recursive TRMM staged: leaves batched, then products batched level by
level, reading a copy of B. Here the CPU executor is made to run the same schedule (its
batched calls fall back to one BLAS call per member), so every variant, dtype, layout and odd
size of the schedule is checked against the references without a GPU, and the number of
batched calls it makes is checked against the levels of the recursion.
"""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest

import tricov as tc
from reference import DTYPES, LAYOUTS, forced_leaf_size, make_rng, random_general, random_triangular
from test_dense_trxm import VARIANTS, _alpha, check_trxm
from tricov._views import Mat
from tricov.backends import staged
from tricov.backends.cpu import CPUExecutor


@pytest.fixture
def staging(monkeypatch: pytest.MonkeyPatch) -> dict:
    """The CPU executor runs TRMM staged, with a copy budget of ``state['budget']`` bytes, and
    counts its batched calls in ``state['calls']`` (kind, members)."""
    state: dict = {"budget": 1 << 30, "calls": [], "keep": []}

    def run_trmm(self, b, body):
        staged.run(self, b, body, state["budget"])

    def copy_block(self, view):
        work = np.array(self._memory(view.ptr, view.mrows, view.mcols, view.ld), order="F")
        state["keep"].append(work)
        return Mat(work.ctypes.data, view.mrows, view.mcols, max(1, view.mrows), view.op,
                   view.itemsize)

    plain_gemm, plain_leaves = CPUExecutor.gemm, CPUExecutor.trmm_from

    def gemm(self, alpha, a, b, beta, c, count=1, steps=(0, 0, 0)):
        state["calls"].append(("gemm", count))
        plain_gemm(self, alpha, a, b, beta, c, count, steps)

    def trmm_from(self, lower, unit, alpha, a, src, dst, count=1, steps=(0, 0, 0)):
        state["calls"].append(("trmm", count))
        plain_leaves(self, lower, unit, alpha, a, src, dst, count, steps)

    for name, fn in (("run_trmm", run_trmm), ("copy_block", copy_block), ("gemm", gemm),
                     ("trmm_from", trmm_from)):
        monkeypatch.setattr(CPUExecutor, name, fn, raising=False)
    return state


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("variant", VARIANTS, ids="".join)
def test_every_variant(staging: dict, dtype: np.dtype, variant: tuple[str, ...]) -> None:
    """Every variant x dtype x layouts, non-power-of-two sizes, several levels."""
    for leaf, (la, lb) in product((1, 3), product(LAYOUTS, LAYOUTS)):
        m, n = (29, 6) if variant[0] == "L" else (6, 29)
        with forced_leaf_size(dtype, leaf):
            check_trxm("trmm", dtype, variant, m, n, la, lb, _alpha(dtype), (leaf, la, lb))


@pytest.mark.parametrize("budget_columns", [1, 2, 5])
@pytest.mark.parametrize("side", "LR")
def test_panels(staging: dict, side: str, budget_columns: int) -> None:
    """B wider than the copy budget goes in panels of columns (the last one narrower)."""
    dtype = np.dtype(np.float64)
    m, n = (40, 11) if side == "L" else (11, 40)
    staging["budget"] = budget_columns * 40 * dtype.itemsize
    with forced_leaf_size(dtype, 4):
        for la, lb in (("F", "C-sub"), ("C", "F-sub")):
            check_trxm("trmm", dtype, (side, "U", "T", "N"), m, n, la, lb, -0.5, (la, lb))
    copies = -(-11 // budget_columns) * 2  # panels per call, two calls
    assert sum(1 for kind, _ in staging["calls"] if kind == "trmm") == copies


@pytest.mark.parametrize("uplo", "LU")
def test_one_call_per_level(staging: dict, uplo: str) -> None:
    """A power-of-two order runs as one batched leaf call and one GEMM per level; B equals the
    product of the in-place recursion (the same products, summed in another order)."""
    dtype = np.dtype(np.float64)
    rng = make_rng("staged-levels", uplo)
    a = random_triangular(rng, 64, dtype, uplo=uplo)
    b = random_general(rng, (64, 3), dtype)
    with forced_leaf_size(dtype, 4):
        got = tc.trmm(a, b.copy(), uplo=uplo)
    assert staging["calls"][0] == ("trmm", 16)
    assert sorted(staging["calls"][1:]) == [("gemm", 2**k) for k in range(4)]
    want = (np.tril(a) if uplo == "L" else np.triu(a)) @ b
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13 * np.abs(want).max())
