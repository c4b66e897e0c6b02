"""Recursive triangular BLAS-3: TRSM, TRMM and SYRK/HERK.

Each recursion splits the rows of its output at the largest power of two below their count
(``n = n1 + n2``), so that the GEMM in the middle gets large, well-aligned operands, and stops
at the leaf size, where the executor's native routine takes over (TRSM/TRMM hand over at once
when B is wide enough that the native routine is already GEMM-bound: ``LeafSizes.trsm_rhs``).
The triangle ``A`` is a logical view; ``lower`` says which triangle of that view is referenced.
Upper triangles (and, through the variant identities, transposed and right-side operations) run
the backward recursion; lower ones the forward recursion. These two shapes cover all eight
BLAS variants.
"""

from __future__ import annotations

from .._policy import LeafSizes, trsm_leaf
from .._views import Mat
from ..backends.base import Executor

__all__ = ["herk", "leaf_rows", "split", "trmm", "trsm"]


def split(n: int) -> int:
    """The largest power of two strictly below ``n`` (``n >= 2``)."""
    return 1 << ((n - 1).bit_length() - 1)


def leaf_rows(n: int, leaf: int) -> int:
    """Rows of the leaves of a recursion over ``n`` rows that stops at ``leaf``.

    The splits are powers of two, so every leaf but the last has this many rows and starts at
    a multiple of it; the last has what remains (at most ``leaf`` rows, more than the others
    when ``leaf`` is not a power of two).
    """
    while n > leaf:
        n = split(n)
    return n


def trsm(ex: Executor, nb: LeafSizes, lower: bool, unit: bool, alpha: complex, a: Mat,
         b: Mat) -> None:
    """Solve ``A X = alpha B`` for X, in place of B.

    Forward (A lower)::

        X1 <- A11^-1 (alpha B1)           recursive
        B2 <- alpha B2 - A21 X1           GEMM
        X2 <- A22^-1 B2                   recursive

    Backward (A upper): the same from the bottom block up. The executor runs the recursion
    (:meth:`~tricov.backends.base.Executor.run_trsm`), told which diagonal blocks of A the
    leaves will solve with: in place, or into a workspace (the GPU, whose leaves multiply by
    inverted diagonal blocks, :mod:`tricov.backends.staged`).
    """
    leaf = trsm_leaf(nb, b.rows, b.cols)
    ex.run_trsm(lower, unit, a, b, leaf_rows(b.rows, leaf),
                lambda stage, panel: _trsm(stage, leaf, lower, unit, alpha, a, panel))


def _trsm(ex: Executor, leaf: int, lower: bool, unit: bool, alpha: complex, a: Mat,
          b: Mat) -> None:
    m = b.rows
    if m <= leaf:
        ex.trsm(lower, unit, alpha, a, b)
        return
    k = split(m)
    a11, a21, a12, a22 = a.quad(k)
    b1, b2 = b.rowsplit(k)
    if lower:
        _trsm(ex, leaf, lower, unit, alpha, a11, b1)
        ex.gemm(-1.0, a21, b1, alpha, b2)
        _trsm(ex, leaf, lower, unit, 1.0, a22, b2)
    else:
        _trsm(ex, leaf, lower, unit, alpha, a22, b2)
        ex.gemm(-1.0, a12, b2, alpha, b1)
        _trsm(ex, leaf, lower, unit, 1.0, a11, b1)


def trmm(ex: Executor, nb: LeafSizes, lower: bool, unit: bool, alpha: complex, a: Mat,
         b: Mat) -> None:
    """``B <- alpha A B`` in place.

    Lower A::

        B2 <- alpha A22 B2                recursive
        B2 <- B2 + alpha A21 B1           GEMM (B1 still holds its input)
        B1 <- alpha A11 B1                recursive

    Upper A: ``B1 <- alpha A11 B1 + alpha A12 B2`` first, then ``B2``. The executor runs the
    recursion (:meth:`~tricov.backends.base.Executor.run_trmm`): in this order, or its leaves
    and products batched (the GPU, :mod:`tricov.backends.staged`).
    """
    if b.rows <= nb.trmm or b.cols >= nb.trmm_rhs:
        ex.trmm(lower, unit, alpha, a, b)
        return
    ex.run_trmm(b, lambda stage, panel: _trmm(stage, nb.trmm, lower, unit, alpha, a, panel))


def _trmm(ex: Executor, leaf: int, lower: bool, unit: bool, alpha: complex, a: Mat,
          b: Mat) -> None:
    m = b.rows
    if m <= leaf:
        ex.trmm(lower, unit, alpha, a, b)
        return
    k = split(m)
    a11, a21, a12, a22 = a.quad(k)
    b1, b2 = b.rowsplit(k)
    if lower:
        _trmm(ex, leaf, lower, unit, alpha, a22, b2)
        ex.gemm(alpha, a21, b1, 1.0, b2)
        _trmm(ex, leaf, lower, unit, alpha, a11, b1)
    else:
        _trmm(ex, leaf, lower, unit, alpha, a11, b1)
        ex.gemm(alpha, a12, b2, 1.0, b1)
        _trmm(ex, leaf, lower, unit, alpha, a22, b2)


def herk(ex: Executor, nb: LeafSizes, alpha: float, a: Mat, beta: float, c: Mat) -> None:
    """Lower triangle of ``C <- alpha A A^H + beta C`` (A is ``n x k``; syrk for real data)::

        C11 <- alpha A1 A1^H + beta C11   recursive
        C21 <- alpha A2 A1^H + beta C21   GEMM
        C22 <- alpha A2 A2^H + beta C22   recursive

    C of at least ``nb.syrk_whole`` and fewer than ``nb.syrk_split`` rows is one leaf.
    """
    n = c.rows
    if n <= nb.syrk or nb.syrk_whole <= n < nb.syrk_split:
        ex.herk(alpha, a, beta, c)
        return
    k = split(n)
    c11, c21, _, c22 = c.quad(k)
    a1, a2 = a.rowsplit(k)
    herk(ex, nb, alpha, a1, beta, c11)
    ex.gemm(alpha, a2, a1.H, beta, c21)
    herk(ex, nb, alpha, a2, beta, c22)
