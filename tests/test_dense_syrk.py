"""SYRK (HERK for complex data): every variant, dtype and layout, against references."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest

import tricov as tc
from reference import (
    COMPLEX_DTYPES,
    DTYPES,
    LAYOUTS,
    assert_bitwise_equal,
    assert_small,
    embed,
    forced_leaf_size,
    make_rng,
    nan_fill,
    poison_triangle,
    random_general,
    syrk_error,
    triangle_mask,
)


def _transes(dtype: np.dtype) -> str:
    """The trans letters syrk accepts for ``dtype`` ('T' is refused for complex: herk)."""
    return "NC" if np.dtype(dtype).kind == "c" else "NTC"


def check_syrk(dtype: np.dtype, uplo: str, trans: str, n: int, k: int, layout_a: str,
               layout_c: str, alpha: float, beta: float, seed: object) -> None:
    """One syrk call on embedded operands; C's other triangle holds NaN and must not change.

    With ``beta == 0`` C's own triangle holds NaN too, which must be overwritten, not read.
    C's diagonal is real: BLAS herk ignores its imaginary part except where it returns early
    (``k == 0`` or ``alpha == 0`` with ``beta == 1``), so a non-real one has no defined result.
    """
    rng = make_rng("syrk", seed)
    a = random_general(rng, (n, k) if trans == "N" else (k, n), dtype)
    c = random_general(rng, (n, n), dtype)
    c[np.diag_indices(n)] = np.diag(c).real  # a Hermitian C has a real diagonal
    if beta == 0:
        c[...] = nan_fill(dtype)
    ea, ec = embed(a, layout_a), embed(c, layout_c)
    poison_triangle(ec.view, uplo)
    c_in = ec.view.copy()
    a_before, c_before = ea.snapshot(), ec.snapshot()
    out = tc.syrk(ea.view, ec.view, uplo=uplo, trans=trans, alpha=alpha, beta=beta)
    what = (f"syrk {uplo}{trans} {np.dtype(dtype)} n={n} k={k} alpha={alpha} beta={beta} "
            f"A:{layout_a} C:{layout_c}")
    assert out is ec.view, what
    assert_bitwise_equal(ea.base, a_before, f"{what}: A was written")
    ec.assert_outside_unchanged(c_before)
    other = ~triangle_mask(n, uplo)
    assert_bitwise_equal(ec.view[other], c_in[other], f"{what}: other triangle of C")
    err = syrk_error(a, c_in, ec.view, uplo=uplo, trans=trans, alpha=alpha, beta=beta)
    assert_small(err, dtype, k + 1, what)  # k products and the beta term per element


# trans='T' on complex data is refused (herk); that is tested in test_dense_errors.
GRID = [(u, t, d) for u, d in product("LU", DTYPES) for t in _transes(d)]


@pytest.mark.parametrize(("uplo", "trans", "dtype"), GRID, ids=lambda p: str(p))
def test_full_grid(uplo: str, trans: str, dtype: np.dtype) -> None:
    """Every uplo x trans x dtype x (layout of A, layout of C) x beta, at the leaf and deep."""
    for leaf, beta in product((None, 2), (0.0, -0.5)):
        for la, lc in product(LAYOUTS, LAYOUTS):
            args = (dtype, uplo, trans, 7, 5, la, lc, 1.25, beta, (leaf, beta, la, lc))
            with forced_leaf_size(dtype, leaf):
                check_syrk(*args)


# (n, k): C is n x n, op(A) is n x k.
SIZES = [(0, 3), (3, 0), (1, 1), (2, 3), (17, 4), (130, 7), (257, 3), (5, 300), (129, 129)]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"n{s[0]}k{s[1]}")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_sizes(dtype: np.dtype, size: tuple[int, int]) -> None:
    """Empty, tiny, odd and multi-level sizes on a deterministic sample of variants."""
    n, k = size
    rng = make_rng("syrk-sizes", str(dtype), size)
    for uplo in "LU":
        trans = _transes(dtype)[rng.integers(len(_transes(dtype)))]
        la, lc = (LAYOUTS[i] for i in rng.choice(4, 2))
        beta = (0.0, 0.5)[rng.integers(2)]
        check_syrk(dtype, uplo, trans, n, k, la, lc, -0.5, beta, (size, uplo))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_deep_recursion(dtype: np.dtype) -> None:
    """Leaf sizes 1 and 3 on a 37 x 37 C: every recursion level runs."""
    for leaf in (1, 3):
        with forced_leaf_size(dtype, leaf):
            for uplo, trans in product("LU", _transes(dtype)):
                check_syrk(dtype, uplo, trans, 37, 6, "C-sub", "F-sub", 0.75, 2.0,
                           (leaf, uplo, trans))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_syrk_whole_crossover(dtype: np.dtype, monkeypatch: pytest.MonkeyPatch) -> None:
    """With leaves of 4, ``syrk_whole`` 20 and ``syrk_split`` 40: C of 19 rows recurses, C of 20
    and 37 rows is one leaf, C of 45 rows splits once into whole halves of 32 and 13 (13 of them
    recursing); setting SYRK's leaf again drops ``syrk_whole``. Results stay within tolerance."""
    from tricov.backends.cpu import CPUExecutor

    rows: list[int] = []
    raw = CPUExecutor.raw_herk

    def spy(self, uplo, trans, n, *args):
        rows.append(n)
        return raw(self, uplo, trans, n, *args)

    monkeypatch.setattr(CPUExecutor, "raw_herk", spy)
    with forced_leaf_size(dtype, 4), forced_leaf_size(dtype, 20, ("syrk_whole",)):
        tc.set_leaf_size("cpu", "syrk_split", dtype, 40)
        assert tc.leaf_sizes("cpu", dtype).syrk_whole == 20
        for n, calls in ((19, [4] * 4 + [3]), (20, [20]), (37, [37]), (45, [32, 4, 4, 4, 1])):
            rows.clear()
            check_syrk(dtype, "L", "N", n, 6, "C-sub", "F-sub", 0.75, 2.0, ("whole", n))
            assert sorted(rows, reverse=True) == calls, (n, rows)
        tc.set_leaf_size("cpu", "syrk", dtype, 4)
        assert tc.leaf_sizes("cpu", dtype).syrk_whole > 1 << 40
        rows.clear()
        check_syrk(dtype, "U", "C", 20, 6, "F", "C", 0.75, 2.0, ("dropped", 20))
        assert max(rows) == 4, rows


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_strided_operands(dtype: np.dtype) -> None:
    """Non-unit-stride A and C are copied in and out correctly."""
    for uplo, (la, lc) in product("LU", (("strided", "strided"), ("F", "strided"),
                                         ("strided", "C"))):
        check_syrk(dtype, uplo, "N", 9, 4, la, lc, 1.0, 0.5, (uplo, la, lc))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_alpha_zero_scales_c(dtype: np.dtype) -> None:
    """alpha=0 leaves ``beta C`` in the triangle."""
    for uplo in "LU":
        check_syrk(dtype, uplo, "N", 6, 3, "F", "C", 0.0, 0.5, ("a0", uplo))


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
def test_herk_diagonal_is_real(dtype: np.dtype) -> None:
    """For complex data the diagonal of the result is real (a Hermitian matrix), with beta=0."""
    rng = make_rng("herk-diag", str(dtype))
    a = random_general(rng, (8, 5), dtype)
    c = np.full((8, 8), nan_fill(dtype), dtype=dtype)
    tc.syrk(a, c, trans="N")
    assert np.all(np.diag(c).imag == 0)


def test_nan_in_a_gives_nan() -> None:
    """A NaN in A reaches C (no hang, no silent number)."""
    rng = make_rng("syrk-nan")
    a = random_general(rng, (20, 4), np.float64)
    a[3, 2] = np.nan
    c = np.zeros((20, 20))
    with forced_leaf_size(np.float64, 4):
        tc.syrk(a, c)
    lower = np.tril(np.ones((20, 20), dtype=bool))
    rows = np.zeros((20, 20), dtype=bool)
    rows[3, :], rows[:, 3] = True, True
    assert np.isnan(c[lower & rows]).all()
    assert not np.isnan(c[lower & ~rows]).any()
