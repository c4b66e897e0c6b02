"""Batched failures and argument errors.

* Per-member failures: a member that is not positive definite (POTRF, POSV, POTI) or has a
  zero pivot (TRTRI, POTRI), or holds NaN, among many: the others are computed exactly as
  alone; ``check=True`` raises once with every failing member (``indices`` flat in C order of
  the batch dimensions, ``orders`` LAPACK's info of each); ``check=False`` returns the info of
  every member, shaped like the batch. Both the lane kernels and the per-member executor.
* Argument errors: ValueError/TypeError naming the argument, nothing changed.
"""

from __future__ import annotations

import numpy as np
import pytest

import tricov as tc
from reference import (
    DTYPES,
    assert_bitwise_equal,
    assert_small,
    hermitian_from,
    inverse_error,
    make_rng,
    potrf_error,
    random_general,
    random_spd,
    random_triangular,
    solve_error,
    trsm_error,
)
from test_batched import ORDER, PATHS, on_path, spd_stack

SHAPE = (3, 13)  # 39 members: several chunks of lanes, the last one partial


def _indefinite(a: np.ndarray, at: int) -> None:
    """Make the leading minor of order ``at`` (1-based) of the SPD ``a`` indefinite."""
    a[at - 1, at - 1] = -abs(a[at - 1, at - 1]) - 10


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("path", PATHS)
def test_not_positive_definite_members(path: str, dtype: np.dtype) -> None:
    with on_path(path, dtype):
        _check_not_positive_definite(ORDER[path], np.dtype(dtype))


def _check_not_positive_definite(n: int, dtype: np.dtype) -> None:
    rng = make_rng("batched-npd", n, str(dtype))
    a = spd_stack(rng, n, dtype, SHAPE)
    bad = {(0, 4): 1, (1, 7): n, (2, 12): 2}  # first pivot, last pivot, second
    for idx, order in bad.items():
        _indefinite(a[idx], order)
    nan_at = (2, 0)
    a[nan_at][n - 1, 0] = np.nan  # reaches the diagonal of the factor in row n
    failing = {**bad, nan_at: n}
    flat = sorted(np.ravel_multi_index(idx, SHAPE) for idx in failing)
    rhs = random_general(rng, SHAPE + (n, 2), dtype)

    x = a.copy()
    with pytest.raises(tc.NotPositiveDefiniteError) as err:
        tc.batched.potrf(x)
    assert list(err.value.indices) == flat
    assert list(err.value.orders) == [failing[np.unravel_index(i, SHAPE)] for i in flat]
    assert err.value.order == err.value.orders[0]
    assert isinstance(err.value, np.linalg.LinAlgError)
    for idx in np.ndindex(*SHAPE):
        if idx in failing:
            order = failing[idx]  # the leading order-1 columns are factored
            part = np.linalg.cholesky(hermitian_from(a[idx], "L")[:order - 1, :order - 1])
            np.testing.assert_allclose(np.tril(x[idx][:order - 1, :order - 1]), part,
                                       rtol=0, atol=100 * n * np.finfo(dtype).eps)
        else:
            assert_small(potrf_error(a[idx], x[idx], "L"), dtype, n, f"potrf {idx}")

    x = a.copy()
    info = tc.batched.poti(x, uplo="U", check=False)  # the upper triangle: its own minors
    assert info.shape == SHAPE
    for idx in np.ndindex(*SHAPE):
        if idx in bad:
            assert info[idx] == bad[idx]
        elif idx != nan_at:  # the NaN sits in the lower triangle, unread here
            assert info[idx] == 0
            assert_small(inverse_error(hermitian_from(a[idx], "U"), x[idx], "U"), dtype, n)

    x, b = a.copy(), rhs.copy()
    info = tc.batched.posv(x, b, check=False)
    for idx in np.ndindex(*SHAPE):
        assert info[idx] == failing.get(idx, 0)
        if idx in failing:
            assert_bitwise_equal(b[idx], rhs[idx], f"posv B of failing member {idx}")
        else:
            assert_small(solve_error(hermitian_from(a[idx], "L"), b[idx], rhs[idx]), dtype, n)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128], ids=str)
@pytest.mark.parametrize("path", PATHS)
def test_singular_members(path: str, dtype: np.dtype) -> None:
    with on_path(path, dtype):
        _check_singular(ORDER[path], np.dtype(dtype))


def _check_singular(n: int, dtype: np.dtype) -> None:
    rng = make_rng("batched-singular", n, str(dtype))
    t = np.stack([random_triangular(rng, n, dtype, uplo="U") for _ in range(17)])
    zero = {3: 1, 9: n, 16: 2}
    for k, index in zero.items():
        t[k, index - 1, index - 1] = 0
    for fn in (tc.batched.trtri, tc.batched.potri):
        x = t.copy()
        with pytest.raises(tc.SingularMatrixError) as err:
            fn(x, uplo="U")
        assert list(err.value.indices) == sorted(zero)
        assert list(err.value.orders) == [zero[k] for k in sorted(zero)]
        assert err.value.index == zero[3]
        for k in range(17):
            if k in zero:
                assert_bitwise_equal(x[k], t[k], f"{fn.__name__}: singular member {k}")
            elif fn is tc.batched.trtri:
                u = np.triu(t[k]).astype(complex)
                np.testing.assert_allclose(np.triu(x[k]) @ u, np.eye(n),
                                           atol=100 * n * np.finfo(dtype).eps)
    x = t.copy()
    assert not tc.batched.trtri(x, uplo="U", diag="U", check=False).any()


@pytest.mark.parametrize("n", sorted(set(ORDER.values())))
def test_nan_members_do_not_spread(n: int) -> None:
    """NaN in one member's B gives NaN in that member's X only."""
    rng = make_rng("batched-nan", n)
    t = np.stack([random_triangular(rng, n, np.float64) for _ in range(20)])
    b = random_general(rng, (20, n, 3), np.float64)
    b[11, 0, 1] = np.nan
    b0 = b.copy()
    tc.batched.trsm(t, b, trans="T")
    assert np.isnan(b[11]).any()
    for k in range(20):
        if k != 11:
            assert_small(trsm_error(t[k], b0[k], b[k], side="L", uplo="L", trans="T",
                                    diag="N", alpha=1.0), np.float64, n)


def test_list_failures_report_list_positions() -> None:
    rng = make_rng("batched-list-fail")
    sizes = [3, 60, 1, 8, 60, 2]
    a = [random_spd(rng, n, np.float64) for n in sizes]
    _indefinite(a[1], 7)
    _indefinite(a[5], 2)
    with pytest.raises(tc.NotPositiveDefiniteError) as err:
        tc.batched.potrf([x.copy() for x in a])
    assert err.value.indices == (1, 5) and err.value.orders == (7, 2)


# ----------------------------------------------------------------------- argument errors
def test_argument_errors() -> None:
    rng = make_rng("batched-args")
    a = spd_stack(rng, 4, np.float64, (3,))
    b = random_general(rng, (3, 4, 2), np.float64)
    with pytest.raises(ValueError, match="batch shape"):
        tc.batched.trsm(a, b[:2])
    with pytest.raises(ValueError, match=r"B must have 4 rows"):
        tc.batched.trsm(a, b[:, :3])
    with pytest.raises(ValueError, match=r"B\[1\] must have 4 columns"):
        tc.batched.trsm(list(a), [b[0].T, b[1], b[2].T], side="R")
    with pytest.raises(ValueError, match="square"):
        tc.batched.potrf(b)
    with pytest.raises(ValueError, match=r"A\[2\] must be square"):
        tc.batched.potrf([a[0], a[1], b[2]])
    with pytest.raises(TypeError, match="all stacks"):
        tc.batched.trsm(a, list(b))
    with pytest.raises(TypeError, match="one dtype"):
        tc.batched.trsm(a, b.astype(np.float32))
    with pytest.raises(TypeError, match="not supported"):
        tc.batched.potrf(a.astype(np.int64))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        tc.batched.potrf(a[0, 0])
    with pytest.raises(ValueError, match="uplo"):
        tc.batched.potrf(a, uplo="X")
    with pytest.raises(ValueError, match="lists must have one length"):
        tc.batched.trsm(list(a), list(b)[:2])
    frozen = a.copy()
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        tc.batched.potrf(frozen)
    with pytest.raises(ValueError, match="overlaps"):
        tc.batched.trsm(a, a)
    with pytest.raises(ValueError, match="must not overlap"):
        x = a.copy()
        tc.batched.potrf([x[0], x[1], x[0]])
    with pytest.raises(TypeError, match="alpha"):
        tc.batched.syrk(b, a, alpha=1j)
    before = a.copy()
    with pytest.raises(ValueError):
        tc.batched.posv(a, b[:, :3])
    assert_bitwise_equal(a, before, "posv with bad B changed A")


def test_outputs_overlapping_themselves() -> None:
    """A stack whose members share memory (``as_strided``), or a list member whose elements do:
    ValueError naming the output, nothing written. A stack of the same members laid out
    without overlap is solved as usual."""
    rng = make_rng("batched-self-overlap")
    members = np.stack([random_spd(rng, 3, np.float64) for _ in range(4)])
    buf = np.zeros(40)
    overlapping = np.lib.stride_tricks.as_strided(buf, (4, 3, 3), (8 * 4, 8 * 3, 8))
    overlapping[...] = members[0]  # members 4 elements apart, each 9 long
    before = buf.copy()
    with pytest.raises(ValueError, match=r"\bA\b overlaps itself"):
        tc.batched.potrf(overlapping)
    with pytest.raises(ValueError, match=r"\bB\b overlaps itself"):
        tc.batched.potrs(members.copy(), overlapping)
    rows = np.lib.stride_tricks.as_strided(np.zeros(8), (3, 3), (8, 8))
    with pytest.raises(ValueError, match=r"\bA\[1\] overlaps itself"):
        tc.batched.potrf([members[0].copy(), rows])
    assert_bitwise_equal(buf, before, "a refused call wrote its output")
    # Disjoint, though no stride nests in another: members 2 elements apart, rows 8, columns 17.
    spaced = np.lib.stride_tricks.as_strided(np.zeros(60), (4, 3, 3), (8 * 2, 8 * 8, 8 * 17))
    spaced[...] = members
    tc.batched.potrf(spaced)
    for k in range(4):
        assert_small(potrf_error(members[k], spaced[k], "L"), np.float64, 3, "potrf")
