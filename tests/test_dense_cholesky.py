"""The Cholesky family (potrf, potrs, posv, trtri, lauum, potri, poti) against references.

Every check places its operands in a layout of :data:`reference.LAYOUTS` (or "strided"),
fills what the operation must not read with NaN (the other triangle; the diagonal for
``diag='U'``), and verifies: the returned object is the one passed, nothing outside the operand
and nothing in the other triangle changed (bitwise), and the result is within the backward-error
tolerance of a float64/complex128 reference.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import product

import numpy as np
import pytest
import scipy.linalg as sla

import tricov as tc
from reference import (
    ALL_LAYOUTS,
    COMPLEX_DTYPES,
    DTYPES,
    LAYOUTS,
    assert_bitwise_equal,
    assert_small,
    embed,
    forced_leaf_size,
    hermitian_from,
    inverse_error,
    lauum_error,
    make_rng,
    poison_triangle,
    potrf_error,
    random_general,
    random_spd,
    random_triangular,
    solve_error,
    triangle,
    triangle_mask,
    trtri_error,
)


def _protected(n: int, uplo: str, unit: bool = False) -> np.ndarray:
    """Mask of what an in-place ``uplo`` operation must leave alone: the other triangle,
    and the diagonal too for a unit triangle."""
    return ~triangle_mask(n, uplo, diag=not unit)


def _factor(rng: np.random.Generator, n: int, dtype: np.dtype, uplo: str) -> np.ndarray:
    """A Cholesky factor computed by SciPy (independent of tricov), in its ``uplo`` triangle."""
    a = random_spd(rng, n, dtype)
    if n == 0:
        return a
    return sla.cholesky(a, lower=uplo == "L").astype(dtype)


def _one_operand(name: str, fn: Callable, dtype: np.dtype, uplo: str, n: int, layout: str,
                 a: np.ndarray, unit: bool = False, **kw: str) -> tuple[np.ndarray, np.ndarray]:
    """Run an in-place single-operand op; check identity, outside and protected triangle.

    Returns (the poisoned input, the output view).
    """
    ea = embed(a, layout)
    poison_triangle(ea.view, uplo, unit=unit)
    a_in = ea.view.copy()
    before = ea.snapshot()
    out = fn(ea.view, uplo=uplo, **kw)
    what = f"{name} uplo={uplo} {kw} {np.dtype(dtype)} n={n} layout={layout}"
    assert out is ea.view, what
    ea.assert_outside_unchanged(before)
    keep = _protected(n, uplo, unit)
    assert_bitwise_equal(ea.view[keep], a_in[keep], f"{what}: protected part of A changed")
    return a_in, ea.view


def check_potrf(dtype: np.dtype, uplo: str, n: int, layout: str, seed: object) -> None:
    """potrf: ``A - L L^H`` small, positive real diagonal."""
    a = random_spd(make_rng("potrf", seed), n, dtype)
    a_in, out = _one_operand("potrf", tc.potrf, dtype, uplo, n, layout, a)
    assert_small(potrf_error(a_in, out, uplo), dtype, n, f"potrf {uplo} {dtype} n={n} {layout}")
    d = np.diag(out)
    assert np.all(d.real > 0) and np.all(d.imag == 0)


def check_trtri(dtype: np.dtype, uplo: str, n: int, layout: str, seed: object,
                diag: str = "N") -> None:
    """trtri: ``T X - I`` small; with diag='U' the (NaN) diagonal is neither read nor written."""
    a = random_triangular(make_rng("trtri", seed), n, dtype, uplo=uplo)
    a_in, out = _one_operand("trtri", tc.trtri, dtype, uplo, n, layout, a,
                             unit=diag == "U", diag=diag)
    assert_small(trtri_error(a_in, out, uplo, diag), dtype, n,
                 f"trtri {uplo}{diag} {dtype} n={n} {layout}")


def check_lauum(dtype: np.dtype, uplo: str, n: int, layout: str, seed: object) -> None:
    """lauum: ``L^H L`` (lower) or ``U U^H`` (upper) in the same triangle.

    The triangle has a real positive diagonal, as a Cholesky factor does (lauum's use in
    potri); :func:`test_lauum_complex_diagonal` covers a general complex diagonal.
    """
    a = random_triangular(make_rng("lauum", seed), n, dtype, uplo=uplo)
    a[np.diag_indices(n)] = np.abs(np.diag(a))
    a_in, out = _one_operand("lauum", tc.lauum, dtype, uplo, n, layout, a)
    assert_small(lauum_error(a_in, out, uplo), dtype, n, f"lauum {uplo} {dtype} n={n} {layout}")


def check_potri(dtype: np.dtype, uplo: str, n: int, layout: str, seed: object) -> None:
    """potri: from a factor, the triangle of ``(L L^H)^-1`` (or ``(U^H U)^-1``)."""
    f = _factor(make_rng("potri", seed), n, dtype, uplo)
    a_in, out = _one_operand("potri", tc.potri, dtype, uplo, n, layout, f)
    t = triangle(a_in, uplo)
    a_full = t @ t.conj().T if uplo == "L" else t.conj().T @ t
    assert_small(inverse_error(a_full, out, uplo), dtype, n,
                 f"potri {uplo} {dtype} n={n} {layout}")


def check_poti(dtype: np.dtype, uplo: str, n: int, layout: str, seed: object) -> None:
    """poti: the triangle of ``A^-1`` from A."""
    a = random_spd(make_rng("poti", seed), n, dtype)
    a_in, out = _one_operand("poti", tc.poti, dtype, uplo, n, layout, a)
    assert_small(inverse_error(hermitian_from(a_in, uplo), out, uplo), dtype, n,
                 f"poti {uplo} {dtype} n={n} {layout}")


def check_potrs(dtype: np.dtype, uplo: str, n: int, nrhs: int, layout_l: str, layout_b: str,
                seed: object) -> None:
    """potrs: ``L L^H X = B`` with L read only in its triangle and never written."""
    rng = make_rng("potrs", seed)
    f = _factor(rng, n, dtype, uplo)
    b = random_general(rng, (n, nrhs), dtype)
    el, eb = embed(f, layout_l), embed(b, layout_b)
    poison_triangle(el.view, uplo)
    l_before, b_before = el.snapshot(), eb.snapshot()
    out = tc.potrs(el.view, eb.view, uplo=uplo)
    what = f"potrs {uplo} {np.dtype(dtype)} n={n} nrhs={nrhs} L:{layout_l} B:{layout_b}"
    assert out is eb.view, what
    assert_bitwise_equal(el.base, l_before, f"{what}: L was written")
    eb.assert_outside_unchanged(b_before)
    t = triangle(el.view, uplo)
    a_full = t @ t.conj().T if uplo == "L" else t.conj().T @ t
    assert_small(solve_error(a_full, eb.view, b), dtype, n, what)


def check_posv(dtype: np.dtype, uplo: str, n: int, nrhs: int, layout_a: str, layout_b: str,
               seed: object) -> None:
    """posv: A gets its factor (other triangle untouched), B the solution of ``A X = B``."""
    rng = make_rng("posv", seed)
    a = random_spd(rng, n, dtype)
    b = random_general(rng, (n, nrhs), dtype)
    ea, eb = embed(a, layout_a), embed(b, layout_b)
    poison_triangle(ea.view, uplo)
    a_in = ea.view.copy()
    a_before, b_before = ea.snapshot(), eb.snapshot()
    out = tc.posv(ea.view, eb.view, uplo=uplo)
    what = f"posv {uplo} {np.dtype(dtype)} n={n} nrhs={nrhs} A:{layout_a} B:{layout_b}"
    assert out is eb.view, what
    ea.assert_outside_unchanged(a_before)
    eb.assert_outside_unchanged(b_before)
    keep = _protected(n, uplo)
    assert_bitwise_equal(ea.view[keep], a_in[keep], f"{what}: other triangle of A changed")
    assert_small(potrf_error(a_in, ea.view, uplo), dtype, n, f"{what}: factor")
    assert_small(solve_error(hermitian_from(a_in, uplo), eb.view, b), dtype, n, what)


SINGLE: dict[str, Callable[..., None]] = {
    "potrf": check_potrf,
    "trtri": check_trtri,
    "lauum": check_lauum,
    "potri": check_potri,
    "poti": check_poti,
}
PAIRED: dict[str, Callable[..., None]] = {"potrs": check_potrs, "posv": check_posv}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("uplo", "LU")
@pytest.mark.parametrize("name", SINGLE)
def test_single_operand_grid(name: str, uplo: str, dtype: np.dtype) -> None:
    """potrf/trtri/lauum/potri/poti: uplo x dtype x layout (all, strided too) x leaf."""
    check = SINGLE[name]
    for leaf, n in ((None, 9), (2, 9), (1, 6)):
        for layout in ALL_LAYOUTS:
            with forced_leaf_size(dtype, leaf):
                check(dtype, uplo, n, layout, (leaf, layout))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("uplo", "LU")
def test_trtri_unit_grid(uplo: str, dtype: np.dtype) -> None:
    """trtri with diag='U': NaN diagonal, every layout, at the leaf and recursing."""
    for leaf, layout in product((None, 2), ALL_LAYOUTS):
        with forced_leaf_size(dtype, leaf):
            check_trtri(dtype, uplo, 9, layout, ("U", leaf, layout), "U")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("uplo", "LU")
@pytest.mark.parametrize("name", PAIRED)
def test_two_operand_grid(name: str, uplo: str, dtype: np.dtype) -> None:
    """potrs/posv: uplo x dtype x (layout of A/L, layout of B) x leaf."""
    check = PAIRED[name]
    for leaf in (None, 2):
        pairs = [*product(LAYOUTS, LAYOUTS), ("strided", "F"), ("C", "strided"),
                 ("strided", "strided")]
        for la, lb in pairs:
            with forced_leaf_size(dtype, leaf):
                check(dtype, uplo, 7, 3, la, lb, (leaf, la, lb))


SIZES = [0, 1, 2, 3, 17, 130, 257]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(SINGLE) + list(PAIRED))
def test_sizes(name: str, dtype: np.dtype, n: int) -> None:
    """Empty, tiny, odd and multi-level sizes at the default leaf size, sampled uplo/layouts."""
    rng = make_rng("chol-sizes", name, str(dtype), n)
    uplo = "LU"[rng.integers(2)]
    la, lb = (LAYOUTS[i] for i in rng.choice(4, 2))
    if name in SINGLE:
        SINGLE[name](dtype, uplo, n, la, ("size", n))
    else:
        nrhs = (1, 5, 0)[rng.integers(3)] if n else 4
        PAIRED[name](dtype, uplo, n, nrhs, la, lb, ("size", n))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_deep_recursion(dtype: np.dtype) -> None:
    """Leaf sizes 1, 3 and 5 on n=37 for every operation and both triangles."""
    for leaf in (1, 3, 5):
        with forced_leaf_size(dtype, leaf):
            for uplo in "LU":
                for name, check in SINGLE.items():
                    check(dtype, uplo, 37, "F-sub" if uplo == "L" else "C-sub", (name, leaf))
                check_trtri(dtype, uplo, 37, "C", ("unit", leaf), "U")
                for name, check in PAIRED.items():
                    check(dtype, uplo, 37, 4, "C-sub", "F-sub", (name, leaf))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_potrf_whole_crossover(dtype: np.dtype) -> None:
    """With leaves of 4 and ``potrf_whole`` 20: n = 20 is one leaf, n = 21 and 37 recurse from
    the top; potrf, posv and poti stay within tolerance either way."""
    with forced_leaf_size(dtype, 4), forced_leaf_size(dtype, 20, ("potrf_whole",)):
        assert tc.leaf_sizes("cpu", dtype).potrf_whole == 20
        for n in (20, 21, 37):
            for uplo in "LU":
                for name in ("potrf", "poti"):
                    SINGLE[name](dtype, uplo, n, "F-sub" if uplo == "L" else "C-sub",
                                 ("whole", name, n))
                PAIRED["posv"](dtype, uplo, n, 3, "C-sub", "F-sub", ("whole", n))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rectangular_rhs(dtype: np.dtype) -> None:
    """Many and few right-hand sides (300 x 7 and 7 x 300), above the default leaf size."""
    for uplo in "LU":
        check_potrs(dtype, uplo, 300, 7, "F", "C", ("rect", uplo))
        check_posv(dtype, uplo, 7, 300, "C-sub", "F-sub", ("rect", uplo))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_letters_case_insensitive(dtype: np.dtype) -> None:
    """Lower-case uplo/diag letters give bitwise the same result as upper-case ones."""
    rng = make_rng("chol-case", str(dtype))
    a = random_spd(rng, 12, dtype)
    t = random_triangular(rng, 12, dtype, uplo="U")
    for fn in (tc.potrf, tc.lauum, tc.poti):
        assert_bitwise_equal(fn(a.copy(), uplo="U"), fn(a.copy(), uplo="u"), fn.__name__)
    assert_bitwise_equal(tc.trtri(t.copy(), uplo="U", diag="U"),
                         tc.trtri(t.copy(), uplo="u", diag="u"), "trtri")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_nan_in_b_gives_nan(dtype: np.dtype) -> None:
    """NaN in the right-hand side of potrs/posv comes out as NaN in that column only."""
    rng = make_rng("chol-nanb", str(dtype))
    a = random_spd(rng, 20, dtype)
    f = _factor(rng, 20, dtype, "L")
    for solve, first in ((tc.potrs, f), (tc.posv, a.copy())):
        b = random_general(rng, (20, 3), dtype)
        b[5, 1] = np.nan
        with forced_leaf_size(dtype, 4):
            solve(first, b)
        assert np.isnan(b[:, 1]).all()
        assert not np.isnan(b[:, [0, 2]]).any()


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES, ids=str)
def test_lauum_complex_diagonal(dtype: np.dtype) -> None:
    """lauum is ``L^H L`` also for a triangle whose diagonal is not real (the contract says
    nothing restricting the diagonal; LAPACK's ?lauum silently takes its real part)."""
    for uplo, n, leaf in (("L", 1, None), ("U", 2, None), ("L", 9, 2), ("U", 140, None)):
        a = random_triangular(make_rng("lauum-cdiag", str(dtype), n), n, dtype, uplo=uplo)
        out = a.copy()
        with forced_leaf_size(dtype, leaf):
            tc.lauum(out, uplo=uplo)
        assert_small(lauum_error(a, out, uplo), dtype, n, f"lauum {uplo} n={n} leaf={leaf}")
