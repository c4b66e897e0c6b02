"""Property-based tests of the dense API: Hypothesis draws shapes, variants, dtypes, layouts,
leaf sizes and scalars, and every draw is checked as in the grid tests (reference within
tolerance, nothing outside the operands or in protected triangles written)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reference import ALL_LAYOUTS, DTYPES, forced_leaf_size
from test_dense_cholesky import PAIRED, SINGLE, check_trtri
from test_dense_syrk import check_syrk
from test_dense_trxm import check_trxm

dtypes = st.sampled_from(DTYPES)
layouts = st.sampled_from(ALL_LAYOUTS)
leaves = st.sampled_from([None, 1, 2, 3, 5, 8, 16])
sizes = st.integers(min_value=0, max_value=40)
seeds = st.integers(min_value=0, max_value=2**31 - 1)
REAL_ALPHAS = [1.0, -1.0, 0.5, -3.0, 0.0]
COMPLEX_ALPHAS = [*REAL_ALPHAS, 1j, complex(-0.6, 0.8), complex(2.0, -1.5)]

EXAMPLES = settings(max_examples=100, deadline=None)


@EXAMPLES
@given(name=st.sampled_from(["trsm", "trmm"]), side=st.sampled_from("LR"),
       uplo=st.sampled_from("LU"), trans=st.sampled_from("NTCntc"), diag=st.sampled_from("NU"),
       dtype=dtypes, m=sizes, n=sizes, la=layouts, lb=layouts, leaf=leaves, data=st.data())
def test_trxm_property(name: str, side: str, uplo: str, trans: str, diag: str,
                       dtype: np.dtype, m: int, n: int, la: str, lb: str, leaf: int | None,
                       data: st.DataObject) -> None:
    alpha = data.draw(st.sampled_from(COMPLEX_ALPHAS if dtype.kind == "c" else REAL_ALPHAS))
    seed = data.draw(seeds)
    with forced_leaf_size(dtype, leaf):
        check_trxm(name, dtype, (side, uplo, trans.upper(), diag), m, n, la, lb, alpha, seed)


@EXAMPLES
@given(uplo=st.sampled_from("LU"), dtype=dtypes, n=sizes, k=sizes, la=layouts, lc=layouts,
       leaf=leaves, alpha=st.sampled_from(REAL_ALPHAS), beta=st.sampled_from([0.0, 1.0, -0.5]),
       data=st.data())
def test_syrk_property(uplo: str, dtype: np.dtype, n: int, k: int, la: str, lc: str,
                       leaf: int | None, alpha: float, beta: float, data: st.DataObject) -> None:
    trans = data.draw(st.sampled_from("NC" if dtype.kind == "c" else "NTC"))
    seed = data.draw(seeds)
    with forced_leaf_size(dtype, leaf):
        check_syrk(dtype, uplo, trans, n, k, la, lc, alpha, beta, seed)


@EXAMPLES
@given(name=st.sampled_from(sorted(SINGLE)), uplo=st.sampled_from("LU"), dtype=dtypes,
       n=sizes, layout=layouts, leaf=leaves, seed=seeds)
def test_single_operand_property(name: str, uplo: str, dtype: np.dtype, n: int, layout: str,
                                 leaf: int | None, seed: int) -> None:
    with forced_leaf_size(dtype, leaf):
        SINGLE[name](dtype, uplo, n, layout, seed)


@settings(max_examples=50, deadline=None)
@given(uplo=st.sampled_from("LU"), dtype=dtypes, n=sizes, layout=layouts, leaf=leaves,
       seed=seeds)
def test_trtri_unit_property(uplo: str, dtype: np.dtype, n: int, layout: str,
                             leaf: int | None, seed: int) -> None:
    with forced_leaf_size(dtype, leaf):
        check_trtri(dtype, uplo, n, layout, seed, "U")


@EXAMPLES
@given(name=st.sampled_from(sorted(PAIRED)), uplo=st.sampled_from("LU"), dtype=dtypes,
       n=sizes, nrhs=sizes, la=layouts, lb=layouts, leaf=leaves, seed=seeds)
def test_solve_property(name: str, uplo: str, dtype: np.dtype, n: int, nrhs: int, la: str,
                        lb: str, leaf: int | None, seed: int) -> None:
    with forced_leaf_size(dtype, leaf):
        PAIRED[name](dtype, uplo, n, nrhs, la, lb, seed)
