"""The dense public operations: triangular BLAS-3 and the Cholesky family, in place.

Each function checks its arguments, turns the caller's options into logical views through the
variant identities (right side = left side on ``B^T``; upper = lower on ``A^T``; C order = the
transpose of F order), and runs the one recursion of its operation on the executor of the
arrays' device. See ``DESIGN.md`` for the contract.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from . import _calls, recursive
from . import _options as opt
from ._errors import NotPositiveDefiniteError, SingularMatrixError
from ._frontend import Operands, as_matrix, real_scalar, scalar
from ._policy import leaf_sizes
from ._views import Mat
from .backends import cuda
from .backends.base import herk_ops_ok, trxm_ops_ok

__all__ = ["lauum", "posv", "poti", "potri", "potrf", "potrs", "syrk", "trmm", "trsm", "trtri"]

Array = TypeVar("Array")


def _square(arr: Any, name: str) -> int:
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be square, got shape {tuple(arr.shape)}")
    return int(arr.shape[0])


def _triangle(a: Mat, lower: bool, op: int) -> tuple[Mat, bool]:
    """``op(A)`` for the ``lower`` (or upper) triangle of ``a``, and whether it is lower."""
    return a.apply(op), lower != opt.has_t(op)


def _triangular(ops: Operands, rec: Callable, a: Mat, b: Mat, b_index: int, *, left: bool,
                lower: bool, op: int, unit: bool, alpha: complex) -> None:
    """Run a triangular recursion (trsm or trmm) for one BLAS variant on views.

    ``op(A)`` is lower when ``lower`` differs from whether ``op`` transposes; a right-side
    operation ``X op(A)`` is the left-side one ``op(A)^T X^T``. Where the result would need a
    conjugate without a transpose (complex data, mixed layouts), B is conjugated in place
    around the call instead: ``conj(T) X = B`` is ``T conj(X) = conj(B)``.
    """
    tri, tri_lower = _triangle(a, lower, op)
    if not left:
        tri, tri_lower, b = tri.T, not tri_lower, b.T
    flip = not trxm_ops_ok(tri, b, ops.complex)
    if flip:
        ops.conj_inplace(b_index)
        b = b.conj
    try:
        ops.run(rec, leaf_sizes(ops.ex.backend, ops.dtype), tri_lower, unit, alpha, tri, b)
    finally:
        if flip:
            ops.conj_inplace(b_index)


def _trxm(rec: Callable, A: Array, B: Array, side: str, uplo: str, trans: str, diag: str,
          alpha: complex) -> Array:
    left = opt.parse_side(side)
    X = as_matrix(B, "B", column=left)
    call = _calls.key(rec, (A, X), (side, uplo, trans, diag, alpha))
    if _calls.replay(call, (A, X)):
        return B
    lower, unit = opt.parse_uplo(uplo), opt.parse_diag(diag)
    ops = Operands(("A", A, False), ("B", X, True), call=call)
    op = opt.parse_trans(trans, complex_=ops.complex)
    a_arr, b_arr = ops.arrays
    n = _square(a_arr, "A")
    k = b_arr.shape[0] if left else b_arr.shape[1]
    if n != k:
        which = "rows" if left else "columns"
        raise ValueError(f"A is {n}x{n} but B has {k} {which} (side={side!r})")
    alpha = scalar(alpha, "alpha", ops.complex)
    if b_arr.size == 0:
        return B
    if alpha == 0:
        b_arr[...] = 0
        return B
    with ops as (a, b):
        _triangular(ops, rec, a, b, 1, left=left, lower=lower, op=op, unit=unit, alpha=alpha)
    return B


def trsm(A: Array, B: Array, *, side: str = "L", uplo: str = "L", trans: str = "N",
         diag: str = "N", alpha: complex = 1.0) -> Array:
    """Triangular solve with many right-hand sides, in place.

    Solves ``op(A) X = alpha B`` (``side='L'``) or ``X op(A) = alpha B`` (``side='R'``) and
    writes X over B.

    Parameters
    ----------
    A : (k, k) array
        Triangular matrix; only the ``uplo`` triangle is read (and not its diagonal if
        ``diag='U'``). ``k`` is the number of rows of B for ``side='L'``, of columns for 'R'.
    B : (m, n) array, or a vector
        Right-hand sides, overwritten with the solution. Same dtype and device as A. A 1-D B
        is one column (``side='L'``) or one row (``side='R'``).
    side : {'L', 'R'}
    uplo : {'L', 'U'}
    trans : {'N', 'T', 'C'}
        ``op(A)`` is A, its transpose, or its conjugate transpose.
    diag : {'N', 'U'}
        'U' takes the diagonal of A as ones.
    alpha : scalar

    Returns
    -------
    B
        The array passed as B, now holding X.

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> A = np.array([[2.0, 0.0], [1.0, 4.0]])
    >>> B = np.array([[2.0], [9.0]])
    >>> tc.trsm(A, B)
    array([[1.],
           [2.]])
    """
    return _trxm(recursive.trsm, A, B, side, uplo, trans, diag, alpha)


def trmm(A: Array, B: Array, *, side: str = "L", uplo: str = "L", trans: str = "N",
         diag: str = "N", alpha: complex = 1.0) -> Array:
    """Triangular matrix multiply, in place: ``B = alpha op(A) B`` or ``B = alpha B op(A)``.

    Parameters and options are those of :func:`trsm`.

    Returns
    -------
    B
        The array passed as B, now holding the product.

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> A = np.array([[2.0, 0.0], [1.0, 4.0]])
    >>> tc.trmm(A, np.array([[1.0], [2.0]]))
    array([[2.],
           [9.]])
    """
    return _trxm(recursive.trmm, A, B, side, uplo, trans, diag, alpha)


def syrk(A: Array, C: Array, *, uplo: str = "L", trans: str = "N", alpha: float = 1.0,
         beta: float = 0.0) -> Array:
    """Symmetric (Hermitian for complex data) rank-k update of one triangle, in place.

    ``C = alpha A A^H + beta C`` (``trans='N'``) or ``C = alpha A^H A + beta C`` (``'C'``;
    'T' for real data). Only the ``uplo`` triangle of C is read and written.

    Parameters
    ----------
    A : (n, k) or (k, n) array
    C : (n, n) array
    uplo : {'L', 'U'}
    trans : {'N', 'T', 'C'}
        For complex data only 'N' and 'C' (herk semantics).
    alpha, beta : real scalars
        With ``beta=0`` C need not be initialised (NaN in C is overwritten).

    Returns
    -------
    C

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> A = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> tc.syrk(A, np.zeros((2, 2)))
    array([[ 5.,  0.],
           [11., 25.]])
    """
    call = _calls.key("syrk", (A, C), (uplo, trans, alpha, beta))
    if _calls.replay(call, (A, C)):
        return C
    lower = opt.parse_uplo(uplo)
    ops = Operands(("A", A, False), ("C", C, True), call=call)
    op = opt.parse_trans(trans, complex_=ops.complex, hermitian=True)
    a_arr, c_arr = ops.arrays
    n = _square(c_arr, "C")
    an = a_arr.shape[1] if opt.has_t(op) else a_arr.shape[0]
    if an != n:
        raise ValueError(f"C is {n}x{n} but op(A) has {an} rows (A has shape "
                         f"{tuple(a_arr.shape)}, trans={trans!r})")
    alpha, beta = real_scalar(alpha, "alpha"), real_scalar(beta, "beta")
    if n == 0:
        return C
    with ops as (a, c):
        d = a.apply(op)
        if not lower:  # the upper triangle of C is the lower one of C^T = conj(C)
            c, d = c.T, d.conj
        flip = not herk_ops_ok(d, c, ops.complex)
        if flip:
            ops.conj_inplace(1)
            c = c.conj
        try:
            ops.run(recursive.herk, leaf_sizes(ops.ex.backend, ops.dtype), alpha, d, beta, c)
        finally:
            if flip:
                ops.conj_inplace(1)
    return C


def _lower_view(a: Mat, lower: bool) -> Mat:
    """The upper triangle of A is the lower triangle of the view ``A^T``."""
    return a if lower else a.T


def _potrf_views(ops: Operands, a: Mat) -> None:
    """Factor operand 0 (viewed as ``a``); raise with LAPACK's order on failure.

    Some LAPACKs (OpenBLAS among them) and cuSOLVER do not test pivots for NaN. A NaN anywhere
    in the referenced triangle reaches the diagonal of the factor in its own row, so the first
    NaN on the diagonal gives the order reference LAPACK would report: found here after the
    call, or by the executor itself where it says so (GPU: in the same read as the statuses).
    """
    ops.run(recursive.potrf, leaf_sizes(ops.ex.backend, ops.dtype), a)
    if ops.ex.nan_pivots_reported:
        ops.raise_failure(NotPositiveDefiniteError)
        return
    ops.unrecorded()
    order = ops.ex.info
    if not order:
        xp = ops.xp
        nan = xp.flatnonzero(xp.isnan(xp.diagonal(ops.working(0))))
        order = int(nan[0]) + 1 if nan.size else 0
    if order:
        raise NotPositiveDefiniteError(order)


def _zero_diagonal(xp: Any, arr: Any) -> None:
    """Raise :class:`SingularMatrixError` at the first exact zero on the diagonal of ``arr``."""
    if xp is np:
        zeros = np.flatnonzero(np.diagonal(arr) == 0)
        index = int(zeros[0]) + 1 if zeros.size else 0
    else:
        index = cuda.zero_pivot(arr)
    if index:
        raise SingularMatrixError(index)


def _potri_views(ops: Operands, a: Mat) -> None:
    nb = leaf_sizes(ops.ex.backend, ops.dtype)
    ops.run(recursive.trtri, nb, False, a)
    ops.raise_failure(SingularMatrixError)
    ops.run(recursive.lauum, nb, a)


def potrf(A: Array, *, uplo: str = "L") -> Array:
    """Cholesky factorization in place: ``A = L L^H`` (or ``U^H U`` for ``uplo='U'``).

    Only the ``uplo`` triangle of A is read and overwritten by the factor.

    Parameters
    ----------
    A : (n, n) array
        Symmetric (Hermitian) positive definite.
    uplo : {'L', 'U'}

    Returns
    -------
    A

    Raises
    ------
    NotPositiveDefiniteError
        With ``order``, the first leading minor that is not positive definite (or NaN). As in
        LAPACK, A then holds a partial factorization.

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> tc.potrf(np.array([[4.0, 2.0], [2.0, 5.0]]))
    array([[2., 2.],
           [1., 2.]])
    """
    call = _calls.key("potrf", (A,), (uplo,))
    if _calls.replay(call, (A,)):
        return A
    lower = opt.parse_uplo(uplo)
    ops = Operands(("A", A, True), call=call, checked="potrf")
    _square(ops.arrays[0], "A")
    with ops as (a,):
        _potrf_views(ops, _lower_view(a, lower))
    return A


def trtri(A: Array, *, uplo: str = "L", diag: str = "N") -> Array:
    """Inverse of a triangular matrix in place (only the ``uplo`` triangle is touched).

    Raises
    ------
    SingularMatrixError
        With ``index``, the first exactly zero diagonal element; A is then unchanged.

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> tc.trtri(np.array([[2.0, 0.0], [1.0, 4.0]]))
    array([[ 0.5  ,  0.   ],
           [-0.125,  0.25 ]])
    """
    call = _calls.key("trtri", (A,), (uplo, diag))
    if _calls.replay(call, (A,)):
        return A
    lower, unit = opt.parse_uplo(uplo), opt.parse_diag(diag)
    ops = Operands(("A", A, True), call=call, checked="trtri")
    _square(ops.arrays[0], "A")
    if not unit:
        ops.test(_zero_diagonal, 0)
    with ops as (a,):
        ops.run(recursive.trtri, leaf_sizes(ops.ex.backend, ops.dtype), unit,
                _lower_view(a, lower))
        ops.raise_failure(SingularMatrixError)
    return A


def lauum(A: Array, *, uplo: str = "L") -> Array:
    """Product of a triangle with its conjugate transpose, in place.

    ``L^H L`` for ``uplo='L'``, ``U U^H`` for ``uplo='U'``; the result is written to the same
    triangle.

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> tc.lauum(np.array([[2.0, 0.0], [1.0, 4.0]]))
    array([[ 5.,  0.],
           [ 4., 16.]])
    """
    call = _calls.key("lauum", (A,), (uplo,))
    if _calls.replay(call, (A,)):
        return A
    lower = opt.parse_uplo(uplo)
    ops = Operands(("A", A, True), call=call)
    _square(ops.arrays[0], "A")
    with ops as (a,):
        ops.run(recursive.lauum, leaf_sizes(ops.ex.backend, ops.dtype), _lower_view(a, lower))
    return A


def potri(L: Array, *, uplo: str = "L") -> Array:
    """Inverse of an SPD matrix from its Cholesky factor, in place (TRTRI then LAUUM).

    Parameters
    ----------
    L : (n, n) array
        The factor from :func:`potrf`, overwritten by the ``uplo`` triangle of ``A^-1``.

    Raises
    ------
    SingularMatrixError
        If the factor has a zero diagonal element (L is then unchanged).

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> tc.potri(tc.potrf(np.array([[4.0, 2.0], [2.0, 5.0]])))
    array([[ 0.3125,  2.    ],
           [-0.125 ,  0.25  ]])
    """
    call = _calls.key("potri", (L,), (uplo,))
    if _calls.replay(call, (L,)):
        return L
    lower = opt.parse_uplo(uplo)
    ops = Operands(("L", L, True), call=call, checked="potri")
    _square(ops.arrays[0], "L")
    ops.test(_zero_diagonal, 0)
    with ops as (a,):
        _potri_views(ops, _lower_view(a, lower))
    return L


def poti(A: Array, *, uplo: str = "L") -> Array:
    """Inverse of a symmetric (Hermitian) positive definite matrix in place: POTRF then POTRI.

    Raises
    ------
    NotPositiveDefiniteError
        As :func:`potrf`.

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> tc.poti(np.array([[4.0, 2.0], [2.0, 5.0]]))
    array([[ 0.3125,  2.    ],
           [-0.125 ,  0.25  ]])
    """
    call = _calls.key("poti", (A,), (uplo,))
    if _calls.replay(call, (A,)):
        return A
    lower = opt.parse_uplo(uplo)
    ops = Operands(("A", A, True), call=call, checked="poti")
    _square(ops.arrays[0], "A")
    with ops as (a,):
        a = _lower_view(a, lower)
        _potrf_views(ops, a)
        _potri_views(ops, a)
    return A


def _potrs_views(ops: Operands, l_view: Mat, b: Mat, lower: bool) -> None:
    """The two solves with the factor: one recursion where neither needs B conjugated around
    it (:func:`_triangular`), else one after the other."""
    first, second = (opt.N, opt.C) if lower else (opt.C, opt.N)
    solves = tuple(_triangle(l_view, lower, op) for op in (first, second))
    if all(trxm_ops_ok(tri, b, ops.complex) for tri, _ in solves):
        ops.run(recursive.potrs, leaf_sizes(ops.ex.backend, ops.dtype),
                tuple((tri_lower, tri) for tri, tri_lower in solves), b)
        return
    for op in (first, second):
        _triangular(ops, recursive.trsm, l_view, b, 1, left=True, lower=lower, op=op,
                    unit=False, alpha=1.0)


def _check_rhs(n: int, b_arr: Any, name: str) -> None:
    if b_arr.shape[0] != n:
        raise ValueError(f"{name} must have {n} rows to match the {n}x{n} matrix, "
                         f"got shape {tuple(b_arr.shape)}")


def potrs(L: Array, B: Array, *, uplo: str = "L") -> Array:
    """Solve ``A X = B`` from the Cholesky factor of A, X over B.

    Parameters
    ----------
    L : (n, n) array
        Factor from :func:`potrf` (``uplo`` triangle read).
    B : (n, nrhs) or (n,) array
        Overwritten by the solution.

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> L = tc.potrf(np.array([[4.0, 2.0], [2.0, 5.0]]))
    >>> tc.potrs(L, np.array([[6.0], [7.0]]))
    array([[1.],
           [1.]])
    >>> tc.potrs(L, np.array([6.0, 7.0]))  # a vector: one right-hand side
    array([1., 1.])
    """
    X = as_matrix(B, "B")
    call = _calls.key("potrs", (L, X), (uplo,))
    if _calls.replay(call, (L, X)):
        return B
    lower = opt.parse_uplo(uplo)
    ops = Operands(("L", L, False), ("B", X, True), call=call)
    l_arr, b_arr = ops.arrays
    _check_rhs(_square(l_arr, "L"), b_arr, "B")
    if b_arr.size == 0:
        return B
    with ops as (lv, b):
        _potrs_views(ops, lv, b, lower)
    return B


def posv(A: Array, B: Array, *, uplo: str = "L") -> Array:
    """Solve ``A X = B`` for SPD A: A is overwritten by its Cholesky factor, B by X.

    Parameters
    ----------
    A : (n, n) array
        Hermitian positive definite (``uplo`` triangle read), overwritten by its factor.
    B : (n, nrhs) or (n,) array
        Overwritten by the solution.
    uplo : {'L', 'U'}

    Raises
    ------
    NotPositiveDefiniteError
        As :func:`potrf`; B is then unchanged.

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> tc.posv(np.array([[4.0, 2.0], [2.0, 5.0]]), np.array([[6.0], [7.0]]))
    array([[1.],
           [1.]])
    """
    X = as_matrix(B, "B")
    call = _calls.key("posv", (A, X), (uplo,))
    if _calls.replay(call, (A, X)):
        return B
    lower = opt.parse_uplo(uplo)
    ops = Operands(("A", A, True), ("B", X, True), call=call, checked="posv")
    a_arr, b_arr = ops.arrays
    _check_rhs(_square(a_arr, "A"), b_arr, "B")
    with ops as (a, b):
        _potrf_views(ops, _lower_view(a, lower))
        if b_arr.size:
            _potrs_views(ops, a, b, lower)
    return B
