"""TRSM and TRMM: every variant, dtype and layout, against float64/complex128 references."""

from __future__ import annotations

from collections.abc import Callable
from itertools import product

import numpy as np
import pytest

import tricov as tc
from reference import (
    COMPLEX_DTYPES,
    DTYPES,
    LAYOUTS,
    REAL_DTYPES,
    assert_bitwise_equal,
    assert_small,
    embed,
    forced_leaf_size,
    make_rng,
    nan_fill,
    poison_triangle,
    random_general,
    random_triangular,
    trmm_error,
    trsm_error,
)

OPS: dict[str, tuple[Callable, Callable]] = {
    "trsm": (tc.trsm, trsm_error),
    "trmm": (tc.trmm, trmm_error),
}
VARIANTS = list(product("LR", "LU", "NTC", "NU"))  # side, uplo, trans, diag


def _alpha(dtype: np.dtype) -> complex:
    return complex(0.6, -0.8) if np.dtype(dtype).kind == "c" else -0.75


def check_trxm(name: str, dtype: np.dtype, variant: tuple[str, str, str, str], m: int, n: int,
               layout_a: str, layout_b: str, alpha: complex, seed: object) -> None:
    """Run one trsm/trmm call on embedded, NaN-poisoned operands and check everything.

    The unreferenced triangle of A (and its diagonal for diag='U') holds NaN; A must come back
    bitwise unchanged, B's buffer outside B too, the result must be within tolerance, and the
    call must return the B it was given.
    """
    fn, error = OPS[name]
    side, uplo, trans, diag = variant
    rng = make_rng(name, seed)
    k = m if side == "L" else n
    a = random_triangular(rng, k, dtype, uplo=uplo)
    b = random_general(rng, (m, n), dtype)
    ea, eb = embed(a, layout_a), embed(b, layout_b)
    poison_triangle(ea.view, uplo, unit=diag == "U")
    a_in = ea.view.copy()
    a_before, b_before = ea.snapshot(), eb.snapshot()
    out = fn(ea.view, eb.view, side=side, uplo=uplo, trans=trans, diag=diag, alpha=alpha)
    what = f"{name} {''.join(variant)} {np.dtype(dtype)} {m}x{n} A:{layout_a} B:{layout_b}"
    assert out is eb.view, what
    assert_bitwise_equal(ea.base, a_before, f"{what}: A was written")
    eb.assert_outside_unchanged(b_before)
    err = error(a_in, b, eb.view, side=side, uplo=uplo, trans=trans, diag=diag, alpha=alpha)
    assert_small(err, dtype, k, what)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("variant", VARIANTS, ids="".join)
@pytest.mark.parametrize("name", OPS)
def test_full_grid(name: str, variant: tuple[str, str, str, str], dtype: np.dtype) -> None:
    """Every variant x dtype x (layout of A, layout of B), at the leaf and recursing deeply."""
    for leaf in (None, 2):
        for la, lb in product(LAYOUTS, LAYOUTS):
            m, n = (7, 5) if variant[0] == "L" else (5, 7)
            with forced_leaf_size(dtype, leaf):
                check_trxm(name, dtype, variant, m, n, la, lb, _alpha(dtype), (la, lb))


# Sizes of B (m, n). The triangle is m x m for side L, n x n for side R: 0, 1, 2, 3, odd,
# just above the default leaf (130) and two recursion levels (257, 300).
SIZES = [(0, 4), (4, 0), (1, 1), (2, 3), (3, 2), (17, 5), (130, 9), (257, 31), (300, 7),
         (7, 300), (9, 130)]


def _sample(seq: list, k: int, *key: object) -> list:
    """``k`` distinct items of ``seq`` chosen deterministically from ``key``."""
    idx = make_rng("sample", *key).choice(len(seq), size=k, replace=False)
    return [seq[i] for i in sorted(idx)]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", OPS)
def test_sizes(name: str, dtype: np.dtype, size: tuple[int, int]) -> None:
    """Odd and large sizes (the recursion runs several levels at the default leaf size) on a
    deterministic sample of variants and layouts."""
    m, n = size
    for variant in _sample(VARIANTS, 4, name, str(dtype), size):
        la, lb = _sample(LAYOUTS, 2, name, str(dtype), size, variant)
        check_trxm(name, dtype, variant, m, n, la, lb, _alpha(dtype), (size, variant))


@pytest.mark.parametrize("leaf", [1, 3, 5])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", OPS)
def test_deep_recursion(name: str, dtype: np.dtype, leaf: int) -> None:
    """Tiny leaf sizes on non-power-of-two sizes: every level of the recursion is exercised."""
    with forced_leaf_size(dtype, leaf):
        for variant in _sample(VARIANTS, 6, name, str(dtype), leaf):
            side = variant[0]
            m, n = (37, 11) if side == "L" else (11, 37)
            la, lb = _sample(LAYOUTS, 2, name, str(dtype), leaf, variant)
            check_trxm(name, dtype, variant, m, n, la, lb, _alpha(dtype), (leaf, variant))


@pytest.mark.parametrize("alpha", [1.0, -2.5, 1j, complex(0.3, 0.4)])
@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
@pytest.mark.parametrize("name", OPS)
def test_complex_alpha(name: str, dtype: np.dtype, alpha: complex) -> None:
    """Real, imaginary and general complex alpha on complex data, conjugating variants too."""
    for variant in (("L", "L", "C", "N"), ("R", "U", "C", "U"), ("L", "U", "T", "N"),
                    ("R", "L", "N", "N")):
        check_trxm(name, np.dtype(dtype), variant, 9, 6 if variant[0] == "L" else 9, "C", "F",
                   alpha, alpha)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("side", "LR")
def test_alpha_zero(name: str, dtype: np.dtype, side: str) -> None:
    """alpha=0: B becomes exactly zero and A is not read (it is all NaN)."""
    fn, _ = OPS[name]
    rng = make_rng("alpha0", name, str(dtype), side)
    b = random_general(rng, (6, 4), dtype)
    eb = embed(b, "F-sub")
    a = np.full((6, 6) if side == "L" else (4, 4), nan_fill(dtype), dtype=dtype)
    before = eb.snapshot()
    out = fn(a, eb.view, side=side, alpha=0.0)
    assert out is eb.view
    assert np.all(eb.view == 0)
    eb.assert_outside_unchanged(before)
    assert np.isnan(a).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", OPS)
def test_nan_in_b_gives_nan(name: str, dtype: np.dtype) -> None:
    """A NaN in B shows up in the result (no hang, no silent number), also when recursing."""
    fn, _ = OPS[name]
    rng = make_rng("nanb", name, str(dtype))
    for leaf in (None, 3):
        a = random_triangular(rng, 20, dtype)
        b = random_general(rng, (20, 3), dtype)
        b[0, 1] = nan_fill(dtype)
        with forced_leaf_size(dtype, leaf):
            fn(a, b)
        # Left, lower, no transpose: row 0 of B feeds every row of column 1.
        assert np.isnan(b[:, 1]).all()
        assert not np.isnan(b[:, [0, 2]]).any()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", OPS)
def test_strided_operands(name: str, dtype: np.dtype) -> None:
    """Non-unit-stride views (copied in and out) give the right answer and touch nothing else."""
    for variant in _sample(VARIANTS, 4, "strided", name, str(dtype)):
        for la, lb in (("strided", "strided"), ("strided", "C-sub"), ("F", "strided")):
            m, n = (13, 4) if variant[0] == "L" else (4, 13)
            check_trxm(name, dtype, variant, m, n, la, lb, _alpha(dtype), ("strided", la, lb))


@pytest.mark.parametrize("name", OPS)
def test_letters_case_insensitive(name: str) -> None:
    """Lower-case option letters give bitwise the same result as upper-case ones."""
    fn, _ = OPS[name]
    rng = make_rng("case", name)
    a = random_triangular(rng, 9, np.complex128, uplo="U")
    b = random_general(rng, (5, 9), np.complex128)
    upper = fn(a, b.copy(), side="R", uplo="U", trans="C", diag="U", alpha=2.0)
    lower = fn(a, b.copy(), side="r", uplo="u", trans="c", diag="u", alpha=2.0)
    assert_bitwise_equal(upper, lower, "case")


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
def test_real_trans_c_is_t(name: str, dtype: np.dtype) -> None:
    """For real data trans='C' means 'T'."""
    fn, _ = OPS[name]
    rng = make_rng("ct", name, str(dtype))
    a = random_triangular(rng, 11, dtype)
    b = random_general(rng, (11, 4), dtype)
    assert_bitwise_equal(fn(a, b.copy(), trans="C"), fn(a, b.copy(), trans="T"), "C vs T")
