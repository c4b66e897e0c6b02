"""Recursive Cholesky family: POTRF, TRTRI and LAUUM on a logical lower triangle.

POTRI is TRTRI then LAUUM, POTI is POTRF then POTRI and POSV is POTRF then two TRSMs: the front
end composes them. Upper triangles arrive here as the lower triangle of the transposed view.
"""

from __future__ import annotations

from .._policy import LeafSizes
from .._views import Mat
from ..backends.base import Executor
from .blas3 import herk, split, trmm, trsm

__all__ = ["lauum", "potrf", "potrf_split", "potrs", "trtri"]


def potrf(ex: Executor, nb: LeafSizes, a: Mat, offset: int = 0) -> bool:
    """Lower Cholesky factor in place; False once a leaf failed (see ``Executor.info``), A11
    of :func:`potrf_split` rows::

        L11 <- potrf(A11)
        L21 <- A21 L11^-H                 TRSM (as conj(L11) L21^T = A21^T)
                                          (both in one kernel where the executor has one
                                          and A11 has at most nb.potrf_panel rows:
                                          Executor.potrf_panel)
        A22 <- A22 - L21 L21^H            HERK
        L22 <- potrf(A22)

    A matrix of at most ``nb.potrf_whole`` rows is one leaf (the native routine is faster on
    it than the recursion).
    """
    if a.rows <= nb.potrf_whole:
        return ex.potrf(a, offset)
    return _potrf(ex, nb, a, offset)


def potrf_split(n: int, leaf: int, panel: int = 0) -> int:
    """Rows of A11 in POTRF's recursion over ``n > leaf`` rows with leaves of ``leaf``.

    The largest power of two below ``n``, except where two leaves hold the matrix: then A22 is
    a whole leaf and A11 the smaller rest, so that the TRSM solves with the smaller triangle and
    the HERK, which runs faster per flop, takes the larger block. On one H100 (leaves of 2048;
    ``benchmarks/gpu_potrf_split.py``, two rounds against the power-of-two split): DPOTRF of
    2600 / 3072 / 3584 / 4000 rows 1023-1049 / 1183-1205 / 1414-1429 / 1694-1708 -> 922-953 /
    1114-1175 / 1345-1369 / 1647-1655 µs (1.29-1.35x -> 1.33-1.46x torch), SPOTRF of 3700 /
    4000 1467-1475 / 1651-1670 -> 1384-1418 / 1584-1607 µs. On 2 CPU cores (leaves of 256;
    ``benchmarks/cpu_potrf_split.py``) 300 / 384 / 448 / 511 rows 396-402 / 637-640 / 874-882 /
    1209-1210 -> 352-356 / 592-593 / 846-853 / 1164-1169 µs.

    With ``panel`` (leaf sizes' ``potrf_panel``, for executors that factor a leaf and solve the
    rows below it in one kernel, :meth:`Executor.potrf_panel`), the rows above the last leaf
    are cut in the fewest steps of at most ``panel`` rows, as equal as they come, and A11 is
    the first: the recursion runs right-looking, a panel at a time, down to the last leaf.
    """
    if n > 2 * leaf:
        return split(n)
    if not panel:
        return n - leaf
    steps = -(-(n - leaf) // panel)  # A11 of equal rows, so that no step is a sliver
    return -(-(n - leaf) // steps)


def _potrf(ex: Executor, nb: LeafSizes, a: Mat, offset: int) -> bool:
    n = a.rows
    if n <= nb.potrf:
        return ex.potrf(a, offset)
    k = potrf_split(n, nb.potrf, nb.potrf_panel)
    a11, a21, _, a22 = a.quad(k)
    done = ex.potrf_panel(a.block(0, n, 0, k), offset) if k <= nb.potrf_panel else None
    if done is None:
        done = _potrf(ex, nb, a11, offset)
        if done:
            trsm(ex, nb, True, False, 1.0, a11.conj, a21.T)
    if not done:
        return False
    herk(ex, nb, -1.0, a21, 1.0, a22)
    return _potrf(ex, nb, a22, offset + k)


def potrs(ex: Executor, nb: LeafSizes, solves: tuple[tuple[bool, Mat], ...], b: Mat) -> None:
    """``B <- A^-1 B`` from a Cholesky factor: the triangular solves ``solves`` in a row, each
    ``(lower, triangle)`` as :func:`~.blas3.trsm` takes them (``L`` then ``L^H``), as one
    recursion (on the GPU one captured plan, launched once)."""
    for lower, tri in solves:
        trsm(ex, nb, lower, False, 1.0, tri, b)


def trtri(ex: Executor, nb: LeafSizes, unit: bool, a: Mat, offset: int = 0) -> bool:
    """Inverse of a lower triangle in place; False once a leaf failed::

        X11 <- L11^-1                     recursive
        A21 <- -A21 X11                   TRMM (as -X11^T A21^T)
        X22 <- L22^-1                     recursive
        A21 <- X22 A21                    TRMM
    """
    n = a.rows
    if n <= nb.trtri:
        return ex.trtri(unit, a, offset)
    k = split(n)
    a11, a21, _, a22 = a.quad(k)
    if not trtri(ex, nb, unit, a11, offset):
        return False
    trmm(ex, nb, False, unit, -1.0, a11.T, a21.T)
    if not trtri(ex, nb, unit, a22, offset + k):
        return False
    trmm(ex, nb, True, unit, 1.0, a22, a21)
    return True


def lauum(ex: Executor, nb: LeafSizes, a: Mat) -> None:
    """``L^H L`` into the lower triangle, in place::

        A11 <- L11^H L11                  recursive
        A11 <- A11 + L21^H L21            HERK
        A21 <- L22^H L21                  TRMM
        A22 <- L22^H L22                  recursive
    """
    n = a.rows
    if n <= nb.lauum:
        ex.lauum(a)
        return
    k = split(n)
    a11, a21, _, a22 = a.quad(k)
    lauum(ex, nb, a11)
    herk(ex, nb, 1.0, a21.H, 1.0, a11)
    trmm(ex, nb, False, False, 1.0, a22.H, a21)
    lauum(ex, nb, a22)
