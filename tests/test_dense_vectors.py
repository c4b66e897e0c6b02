"""A vector as the right-hand side of trsm, trmm, potrs and posv, as in SciPy.

A 1-D B is one column (``side='L'``, potrs, posv) or one row (``side='R'``) of a matrix over
the same memory: solved in place, returned as the same object, bitwise what the 2-D call on
that column or row gives, checked against a float64/complex128 reference, whatever its stride
(a row or a column of a larger array, reversed), and nothing else in its buffer changes.
"""

from __future__ import annotations

import numpy as np
import pytest

import tricov as tc
from reference import (
    DTYPES,
    assert_bitwise_equal,
    assert_small,
    make_rng,
    nan_fill,
    random_general,
    random_spd,
    random_triangular,
    solve_error,
    trmm_error,
    trsm_error,
)

N = 37  # odd, and past the CPU's small-order paths only through its leaves


# Where a vector of n elements lies in a NaN-filled (n + 3) x (n + 4) buffer: the start of a
# row, a column (stride n + 4 elements), part of a row, a column backwards.
VIEWS = {"own": lambda buf, n: buf[0, :n], "column": lambda buf, n: buf[1:n + 1, 2],
         "row": lambda buf, n: buf[2, 1:n + 1], "reversed": lambda buf, n: buf[n + 2:2:-1, 3]}
WHERE = tuple(VIEWS)


def _vector(rng: np.random.Generator, n: int, dtype: np.dtype, where: str) -> tuple:
    """A vector of ``n`` random values at ``VIEWS[where]`` of a NaN-filled buffer, and the
    buffer."""
    buf = np.full((n + 3, n + 4), nan_fill(dtype), dtype=dtype)
    vec = VIEWS[where](buf, n)
    vec[...] = random_general(rng, (n, 1), dtype)[:, 0]
    return vec, buf


def _as_matrix(buf: np.ndarray, where: str, n: int, column: bool) -> np.ndarray:
    """The 2-D view (a column or a row) of the vector at ``VIEWS[where]`` of ``buf``: the same
    memory layout as tricov gives a 1-D B, so the 2-D call must give the same bits."""
    vec = VIEWS[where](buf, n)
    return vec[:, None] if column else vec[None, :]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize(("name", "side"), [("trsm", "L"), ("trsm", "R"), ("trmm", "L"),
                                            ("trmm", "R")])
def test_triangular_vector(name: str, side: str, where: str, dtype: np.dtype) -> None:
    rng = make_rng("vector", name, side, where, dtype)
    a = random_triangular(rng, N, dtype)
    vec, buf = _vector(rng, N, dtype, where)
    b = vec.copy()
    before = buf.copy()
    kw = {"side": side, "uplo": "L", "trans": "C" if np.dtype(dtype).kind == "c" else "T",
          "diag": "N", "alpha": 0.5}
    out = getattr(tc, name)(a, vec, **kw)
    assert out is vec
    expected = getattr(tc, name)(a, _as_matrix(before.copy(), where, N, side == "L"), **kw)
    assert_bitwise_equal(vec, expected.ravel(), f"{name} on a vector")
    error = trsm_error if name == "trsm" else trmm_error
    matrix = b[:, None] if side == "L" else b[None, :]
    out2d = vec[:, None] if side == "L" else vec[None, :]
    assert_small(error(a, matrix, out2d, **kw), dtype, N, name)
    outside = np.ones(buf.shape, bool)
    outside[np.unravel_index(_offsets(buf, vec), buf.shape)] = False
    assert_bitwise_equal(buf[outside], before[outside], "the buffer around the vector")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("name", ["potrs", "posv"])
def test_cholesky_solve_vector(name: str, where: str, dtype: np.dtype) -> None:
    rng = make_rng("vector", name, where, dtype)
    spd = random_spd(rng, N, dtype)
    vec, buf = _vector(rng, N, dtype, where)
    b, before = vec.copy(), buf.copy()
    first = np.linalg.cholesky(spd).astype(dtype) if name == "potrs" else spd.copy()
    out = getattr(tc, name)(first.copy(), vec, uplo="L")
    assert out is vec
    expected = getattr(tc, name)(first, _as_matrix(before, where, N, True), uplo="L")
    assert_bitwise_equal(vec, expected[:, 0], f"{name} on a vector")
    assert_small(solve_error(spd, vec[:, None], b[:, None]), dtype, N, name)


def test_empty_and_one_element_vectors() -> None:
    """An empty vector against a 0 x 0 matrix, and one element against 1 x 1."""
    empty = np.empty(0)
    assert tc.potrs(np.empty((0, 0)), empty) is empty
    one = np.array([6.0])
    tc.posv(np.array([[4.0]]), one)
    assert one[0] == 1.5
    tc.trsm(np.array([[2.0]]), one, side="R")
    assert one[0] == 0.75


def _offsets(buf: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """Flat indices into ``buf`` of the elements of the view ``vec``."""
    start = (vec.__array_interface__["data"][0] - buf.__array_interface__["data"][0])
    return (start + np.arange(vec.size) * vec.strides[0]) // buf.itemsize
