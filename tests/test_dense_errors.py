"""Every error case of the dense API raises what the contract says, and changes nothing.

* ``NotPositiveDefiniteError`` (a ``numpy.linalg.LinAlgError``) with the 1-based ``order`` of
  the first leading minor that is not positive definite, below and above the leaf size, for
  potrf, posv (B unchanged) and poti; also for NaN input.
* ``SingularMatrixError`` with the 1-based ``index`` of the first zero diagonal element, for
  trtri and potri, the matrix left bitwise unchanged.
* ``ValueError`` / ``TypeError`` naming the offending argument for bad shapes, dtypes, option
  letters, read-only or overlapping outputs and bad scalars; the operands are left unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tricov as tc
from reference import (
    DTYPES,
    assert_bitwise_equal,
    assert_small,
    embed,
    forced_leaf_size,
    make_rng,
    nan_fill,
    potrf_error,
    random_general,
    random_spd,
    random_triangular,
    reference_dtype,
    solve_error,
    trmm_error,
    trsm_error,
)

# --------------------------------------------------------------- not positive definite


def failing_spd(n: int, k: int, dtype: np.dtype, uplo: str, seed: object) -> np.ndarray:
    """A Hermitian matrix whose leading minors 1..k-1 are positive definite and k-th is not.

    ``A = L L^H`` with a known factor, then ``A[k-1, k-1]`` lowered by ``|L[k-1, k-1]|^2 + 1``:
    the k-th pivot becomes -1 and the earlier ones do not change. Stored in the ``uplo``
    triangle (the other one is NaN).
    """
    rng = make_rng("failing", seed)
    lo = random_triangular(rng, n, reference_dtype(dtype))
    lo[np.diag_indices(n)] = np.abs(np.diag(lo))
    a = lo @ lo.conj().T
    a[k - 1, k - 1] -= abs(lo[k - 1, k - 1]) ** 2 + 1
    a = a.astype(dtype)
    other = np.triu(np.ones((n, n), bool), 1) if uplo == "L" else np.tril(np.ones((n, n), bool), -1)
    a[other] = nan_fill(dtype)
    return a


# (n, k, leaf): k below, at and above the leaf size, at the default leaf (128) and a tiny one.
NPD_CASES = [(1, 1, None), (200, 1, None), (200, 5, None), (200, 128, None), (200, 129, None),
             (200, 200, None), (23, 4, 4), (23, 5, 4), (23, 13, 4), (23, 23, 4), (9, 6, 1)]


@pytest.mark.parametrize("case", NPD_CASES, ids=lambda c: f"n{c[0]}k{c[1]}leaf{c[2]}")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("uplo", "LU")
def test_potrf_not_positive_definite(uplo: str, dtype: np.dtype, case: tuple) -> None:
    """potrf, posv and poti raise NotPositiveDefiniteError with the failing order k."""
    n, k, leaf = case
    a = failing_spd(n, k, dtype, uplo, (n, k, str(dtype), uplo))
    for name in ("potrf", "poti", "posv"):
        work = embed(a, "C-sub" if uplo == "L" else "F")
        b = random_general(make_rng("npd-b", n), (n, 2), dtype)
        b0 = b.copy()
        args = (work.view, b) if name == "posv" else (work.view,)
        with pytest.raises(tc.NotPositiveDefiniteError) as info, forced_leaf_size(dtype, leaf):
            getattr(tc, name)(*args, uplo=uplo)
        assert isinstance(info.value, np.linalg.LinAlgError)
        assert info.value.order == k, f"{name}: order {info.value.order}, expected {k}"
        if name == "posv":
            assert_bitwise_equal(b, b0, "posv changed B although the factorization failed")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_potrf_partial_factor_is_exact_before_failure(dtype: np.dtype) -> None:
    """As in LAPACK, the first k-1 columns (rows for 'U') hold the factor of the minor k-1."""
    n, k = 40, 30
    a = failing_spd(n, k, dtype, "L", ("partial", str(dtype)))
    out = a.copy()
    with pytest.raises(tc.NotPositiveDefiniteError), forced_leaf_size(dtype, 8):
        tc.potrf(out)
    lead = a[: k - 1, : k - 1]
    assert_small(potrf_error(lead, out[: k - 1, : k - 1], "L"), dtype, k - 1, "partial factor")


# (k, where): the NaN on the diagonal at (k, k) or off it in row k of the lower triangle
# (column k of the upper one), k below and above the default leaf size.
NAN_CASES = [(1, "diag"), (3, "diag"), (150, "diag"), (3, "offdiag"), (150, "offdiag")]


@pytest.mark.parametrize(("k", "where"), NAN_CASES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("uplo", "LU")
def test_potrf_nan_input(uplo: str, dtype: np.dtype, k: int, where: str) -> None:
    """NaN in the referenced triangle raises NotPositiveDefiniteError at the NaN's row k
    (LAPACK's reference potrf tests each pivot for NaN)."""
    n = 160
    a = random_spd(make_rng("nan-potrf", str(dtype), k), n, dtype)
    i, j = (k - 1, k - 1) if where == "diag" else (k - 1, k // 2 - 1 if k > 2 else 0)
    if uplo == "U":
        i, j = j, i
    a[i, j] = nan_fill(dtype)
    for leaf in (None, 16):
        with pytest.raises(tc.NotPositiveDefiniteError) as info, forced_leaf_size(dtype, leaf):
            tc.potrf(a.copy(), uplo=uplo)
        assert info.value.order == k


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_potrf_semidefinite(dtype: np.dtype) -> None:
    """An exactly zero pivot is not positive: order of the zero."""
    a = np.diag([1.0, 2.0, 0.0, 3.0]).astype(dtype)
    with pytest.raises(tc.NotPositiveDefiniteError) as info:
        tc.potrf(a)
    assert info.value.order == 3


# ----------------------------------------------------------------------- singular


SINGULAR_CASES = [(1, (0,), None), (5, (2, 4), None), (200, (150, 199), None),
                  (200, (3, 150), None), (21, (9, 17), 2), (21, (20,), 4)]


@pytest.mark.parametrize("case", SINGULAR_CASES, ids=lambda c: f"n{c[0]}z{c[1][0]}leaf{c[2]}")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("uplo", "LU")
@pytest.mark.parametrize("name", ["trtri", "potri"])
def test_singular(name: str, uplo: str, dtype: np.dtype, case: tuple) -> None:
    """A zero on the diagonal: SingularMatrixError with the first one's 1-based index, and
    the matrix (its whole buffer) bitwise unchanged."""
    n, zeros, leaf = case
    t = random_triangular(make_rng("sing", n, str(dtype), uplo), n, dtype, uplo=uplo)
    for z in zeros:
        t[z, z] = -0.0 if z % 2 else 0.0
    emb = embed(t, "F-sub")
    before = emb.snapshot()
    with pytest.raises(tc.SingularMatrixError) as info, forced_leaf_size(dtype, leaf):
        getattr(tc, name)(emb.view, uplo=uplo)
    assert isinstance(info.value, np.linalg.LinAlgError)
    assert info.value.index == zeros[0] + 1
    assert_bitwise_equal(emb.base, before, f"{name} changed A although it raised")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_trtri_unit_ignores_zero_diagonal(dtype: np.dtype) -> None:
    """With diag='U' the diagonal is not read, so a zero there is no error."""
    t = random_triangular(make_rng("unit0", str(dtype)), 7, dtype)
    t[3, 3] = 0
    out = tc.trtri(t.copy(), diag="U")
    assert out[3, 3] == 0
    assert np.isfinite(out[np.tril_indices(7)]).all()


# ------------------------------------------------------------------ argument errors


def _sq(n: int = 3, dtype: Any = np.float64) -> np.ndarray:
    return np.eye(n, dtype=dtype) * 2 + np.tril(np.ones((n, n), dtype=dtype), -1) * 0.1


def _rect(m: int = 3, n: int = 2, dtype: Any = np.float64) -> np.ndarray:
    return np.arange(1.0, 1.0 + m * n).reshape(m, n).astype(dtype)


# Each operation with well-formed operands (names as in error messages) and its options.
SIGNATURES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "trsm": (("A", "B"), ("side", "uplo", "trans", "diag")),
    "trmm": (("A", "B"), ("side", "uplo", "trans", "diag")),
    "syrk": (("A", "C"), ("uplo", "trans")),
    "potrf": (("A",), ("uplo",)),
    "potrs": (("L", "B"), ("uplo",)),
    "posv": (("A", "B"), ("uplo",)),
    "trtri": (("A",), ("uplo", "diag")),
    "lauum": (("A",), ("uplo",)),
    "potri": (("L",), ("uplo",)),
    "poti": (("A",), ("uplo",)),
}


def good_operands(name: str, dtype: Any = np.float64) -> list[np.ndarray]:
    """Valid operands for ``name`` (3x3 matrices, a 3x2 B or A)."""
    if name == "syrk":
        return [_rect(dtype=dtype), np.zeros((3, 3), dtype=dtype)]
    if len(SIGNATURES[name][0]) == 2:
        return [_sq(dtype=dtype), _rect(dtype=dtype)]
    return [_sq(dtype=dtype) @ _sq(dtype=dtype).T]


def expect_error(exc: type[Exception], match: str, name: str, args: list[Any],
                 **kw: Any) -> None:
    """``tc.<name>(*args, **kw)`` raises ``exc`` matching ``match``; array args unchanged."""
    saved = [a.copy() if isinstance(a, np.ndarray) else None for a in args]
    with pytest.raises(exc, match=match):
        getattr(tc, name)(*args, **kw)
    for a, s in zip(args, saved, strict=True):
        if s is None:
            continue
        if a.dtype == object:  # no bits to compare: compare the elements
            assert (a == s).all(), f"{name} changed an operand although it raised"
        else:
            assert_bitwise_equal(a, s, f"{name} changed an operand although it raised")


def _word(name: str) -> str:
    return rf"\b{name}\b"


@pytest.mark.parametrize("name", SIGNATURES)
def test_good_operands_work(name: str) -> None:
    """The operands the error tests start from are valid (so each error has one cause)."""
    getattr(tc, name)(*good_operands(name))


# Operations whose second operand may be a vector (one right-hand side).
VECTOR_RHS = ("trsm", "trmm", "potrs", "posv")


@pytest.mark.parametrize("name", SIGNATURES)
def test_not_2d(name: str) -> None:
    """1-D and 3-D operands: ValueError naming the operand. A vector B of the right length is
    a valid right-hand side (tests/test_dense_vectors.py); one of another length is not."""
    names = SIGNATURES[name][0]
    for i, arg in enumerate(names):
        vector_ok = name in VECTOR_RHS and i == 1
        for bad in (np.ones(4) if vector_ok else np.ones(3), np.ones((2, 3, 3))):
            args = good_operands(name)
            args[i] = bad
            expect_error(ValueError, _word(arg), name, args)


def _overlapping(rows: int, cols: int) -> np.ndarray:
    """A writeable ``rows x cols`` view whose rows overlap (row stride one element)."""
    buf = np.zeros(rows + cols)
    return np.lib.stride_tricks.as_strided(buf, (rows, cols), (8, 8))


@pytest.mark.parametrize("name", SIGNATURES)
def test_output_overlapping_itself(name: str) -> None:
    """An output two of whose elements share memory (``as_strided``): ValueError naming it,
    before anything is written."""
    names = SIGNATURES[name][0]
    written = {"trsm": [1], "trmm": [1], "syrk": [1], "potrs": [1], "posv": [0, 1]}
    for i in written.get(name, [0]):
        args = good_operands(name)
        args[i] = _overlapping(*args[i].shape)
        expect_error(ValueError, _word(names[i]) + ".*overlaps itself", name, args)


def test_disjoint_unusual_strides_are_fine() -> None:
    """Strides that do not nest but never reach one element twice (a 3 x 2 view with strides
    of 2 and 3 elements) are an output like any other: copied in and out, solved right."""
    rng = make_rng("unusual")
    a = random_triangular(rng, 3, np.float64)
    b = random_general(rng, (3, 2), np.float64)
    buf = np.full(8, 7.0)
    out = np.lib.stride_tricks.as_strided(buf, (3, 2), (16, 24))
    out[...] = b
    tc.trsm(a, out)
    assert_small(trsm_error(a, b, out.copy(), side="L", uplo="L", trans="N", diag="N",
                            alpha=1.0), np.float64, 3, "trsm")
    assert buf[1] == buf[6] == 7.0  # the elements of the buffer outside the view


@pytest.mark.parametrize("name", SIGNATURES)
def test_not_square(name: str) -> None:
    """A non-square triangular/symmetric operand: ValueError naming it."""
    names = SIGNATURES[name][0]
    i = 1 if name == "syrk" else 0
    args = good_operands(name)
    args[i] = np.ones((3, 4))
    expect_error(ValueError, _word(names[i]), name, args)


MISMATCHED = [
    ("trsm", [_sq(3), _rect(4, 2)], {}, "B"),
    ("trsm", [_sq(3), _rect(3, 2)], {"side": "R"}, "B"),
    ("trmm", [_sq(3), _rect(2, 4)], {"side": "R"}, "B"),
    ("trmm", [_sq(3), _rect(2, 3)], {"side": "L"}, "B"),
    ("potrs", [_sq(3), _rect(4, 1)], {}, "B"),
    ("posv", [_sq(3), _rect(2, 1)], {}, "B"),
    ("syrk", [_rect(4, 2), np.zeros((3, 3))], {}, "A"),
    ("syrk", [_rect(3, 2), np.zeros((3, 3))], {"trans": "T"}, "A"),
]


@pytest.mark.parametrize(("name", "args", "kw", "arg"), MISMATCHED,
                         ids=lambda x: x if isinstance(x, str) else "")
def test_mismatched_shapes(name: str, args: list, kw: dict, arg: str) -> None:
    """Operands whose shapes do not fit each other: ValueError naming the argument."""
    expect_error(ValueError, _word(arg), name, [a.copy() for a in args], **kw)


BAD_DTYPES = [np.int64, np.int32, np.bool_, object, np.float16]


@pytest.mark.parametrize("bad", BAD_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", SIGNATURES)
def test_unsupported_dtype(name: str, bad: Any) -> None:
    """Integer, bool, object and float16 operands: TypeError naming the operand."""
    names = SIGNATURES[name][0]
    for i, arg in enumerate(names):
        args = good_operands(name)
        args[i] = args[i].astype(bad)
        expect_error(TypeError, _word(arg), name, args)
    # All operands of the unsupported dtype.
    expect_error(TypeError, "dtype", name, [a.astype(bad) for a in good_operands(name)])


@pytest.mark.parametrize("name", [n for n, s in SIGNATURES.items() if len(s[0]) == 2])
def test_mixed_dtypes(name: str) -> None:
    """Two supported but different dtypes: TypeError."""
    for d0, d1 in ((np.float64, np.float32), (np.complex128, np.float64),
                   (np.complex64, np.complex128)):
        a, b = good_operands(name)
        expect_error(TypeError, "dtype", name, [a.astype(d0), b.astype(d1)])


@pytest.mark.parametrize("name", SIGNATURES)
def test_non_array(name: str) -> None:
    """A list instead of an array: TypeError naming the operand."""
    names = SIGNATURES[name][0]
    args = good_operands(name)
    args[0] = args[0].tolist()
    expect_error(TypeError, _word(names[0]), name, args)


@pytest.mark.parametrize("name", SIGNATURES)
def test_unknown_option_letters(name: str) -> None:
    """Unknown letters, empty or long strings and non-strings: ValueError naming the option."""
    for option in SIGNATURES[name][1]:
        for bad in ("X", "", "LL", "NN", 1, None, "Q"):
            expect_error(ValueError, _word(option), name, good_operands(name), **{option: bad})


def test_complex_syrk_refuses_trans_t() -> None:
    """herk semantics: trans='T' on complex data is a ValueError naming trans."""
    for dtype in (np.complex64, np.complex128):
        expect_error(ValueError, _word("trans"), "syrk", good_operands("syrk", dtype), trans="T")
        expect_error(ValueError, _word("trans"), "syrk", good_operands("syrk", dtype), trans="t")


@pytest.mark.parametrize("name", SIGNATURES)
def test_read_only_output(name: str) -> None:
    """A read-only output: ValueError naming it."""
    names = SIGNATURES[name][0]
    written = {"trsm": [1], "trmm": [1], "syrk": [1], "potrs": [1], "posv": [0, 1]}
    for i in written.get(name, [0]):
        args = good_operands(name)
        args[i].flags.writeable = False
        expect_error(ValueError, _word(names[i]), name, args)


@pytest.mark.parametrize("name", ["trsm", "trmm", "syrk", "potrs"])
def test_read_only_input_is_fine(name: str) -> None:
    """A read-only input (A, or L for potrs) is accepted: only outputs must be writeable."""
    args = good_operands(name)
    expected = getattr(tc, name)(*[a.copy() for a in args])
    args[0].flags.writeable = False
    assert_bitwise_equal(getattr(tc, name)(*args), expected, f"{name} with read-only input")


@pytest.mark.parametrize("name", [n for n, s in SIGNATURES.items() if len(s[0]) == 2])
def test_overlapping_output(name: str) -> None:
    """An output sharing memory with another operand: ValueError."""
    x = np.zeros((3, 6))
    x[:, :3] = good_operands(name)[0] if name != "syrk" else np.eye(3)
    x[:, 3:5] = 1.0
    # The same array twice, and two views of one buffer that share a column.
    if name == "syrk":
        cases = [(x[:, :3], x[:, :3]), (x[:, 2:4], x[:, :3])]
    else:
        cases = [(x[:, :3], x[:, :3]), (x[:, :3], x[:, 2:4])]
    for first, second in cases:
        expect_error(ValueError, "overlap", name, [first, second])


@pytest.mark.parametrize("name", ["trsm", "trmm", "potrs", "posv"])
def test_disjoint_views_of_one_buffer_are_fine(name: str) -> None:
    """Operands that are disjoint views of one array do not overlap: the call works."""
    rng = make_rng("disjoint", name)
    spd = random_spd(rng, 7, np.float64)
    first = {"trsm": random_triangular(rng, 7, np.float64),
             "trmm": random_triangular(rng, 7, np.float64),
             "potrs": np.linalg.cholesky(spd), "posv": spd}[name]
    b = random_general(rng, (7, 2), np.float64)
    x = np.zeros((7, 9), order="F")
    x[:, :7], x[:, 7:] = first, b
    getattr(tc, name)(x[:, :7], x[:, 7:])
    out = x[:, 7:]
    kw = {"side": "L", "uplo": "L", "trans": "N", "diag": "N", "alpha": 1.0}
    if name == "trsm":
        err = trsm_error(first, b, out, **kw)
    elif name == "trmm":
        err = trmm_error(first, b, out, **kw)
    else:
        err = solve_error(spd, out, b)
    assert_small(err, np.float64, 7, name)


@pytest.mark.parametrize("name", ["trsm", "trmm"])
def test_scalar_errors_trxm(name: str) -> None:
    """Complex alpha with real arrays and non-numeric alpha: TypeError naming alpha."""
    for dtype in (np.float32, np.float64):
        for bad in (1j, complex(1, 2), np.complex128(0.5 + 0.5j)):
            expect_error(TypeError, _word("alpha"), name, good_operands(name, dtype), alpha=bad)
    for bad in ("1.0", None, [1.0]):
        expect_error(TypeError, _word("alpha"), name, good_operands(name), alpha=bad)


def test_scalar_errors_syrk() -> None:
    """syrk's alpha and beta must be real numbers, also for complex data (herk)."""
    for dtype in DTYPES:
        for key in ("alpha", "beta"):
            for bad in (1j, complex(0.5, -1), "2"):
                expect_error(TypeError, _word(key), "syrk", good_operands("syrk", dtype),
                             **{key: bad})


@pytest.mark.parametrize("name", ["trsm", "trmm"])
def test_complex_alpha_with_zero_imaginary_part_is_fine(name: str) -> None:
    """``alpha=2+0j`` with real arrays is the real number 2."""
    a, b = good_operands(name)
    expected = getattr(tc, name)(a, b.copy(), alpha=2.0)
    assert_bitwise_equal(getattr(tc, name)(a, b.copy(), alpha=2 + 0j), expected, "alpha 2+0j")
