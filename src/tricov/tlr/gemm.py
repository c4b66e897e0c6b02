"""``gemm`` on dense, low-rank and TLR operands."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ._array import array_module, herm
from .lowrank import LowRank, lr_product, recompress
from .matrix import TLRMatrix

__all__ = ["gemm"]


def _scalar(value: Any, name: str) -> complex | float:
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return value  # type: ignore[return-value]


def _as_lowrank(P: Any) -> LowRank:
    """A dense product term as low rank: ``A B = A (B^H)^H``."""
    if isinstance(P, LowRank):
        return P
    A, B = P
    return LowRank(A, herm(B))


def _product(A: Any, B: Any) -> Any:
    """``A B`` as a LowRank when either is low rank, else the pair ``(A, B)`` (dense)."""
    a_shape = A.shape
    b_shape = B.shape
    if a_shape[-1] != b_shape[-2]:
        raise ValueError(f"A is {a_shape[-2]}x{a_shape[-1]} but B is {b_shape[-2]}x{b_shape[-1]}"
                         ": inner dimensions differ")
    if isinstance(A, LowRank) and isinstance(B, LowRank):
        return LowRank(*lr_product(A.U, A.V, B.U, B.V))
    if isinstance(A, LowRank):
        return LowRank(A.U, herm(B) @ A.V)  # U_a (V_a^H B) = U_a (B^H V_a)^H
    if isinstance(B, LowRank):
        return LowRank(A @ B.U, B.V)
    return (A, B)


def _dense(P: Any) -> Any:
    return P.to_dense() if isinstance(P, LowRank) else P[0] @ P[1]


def _truncate(P: LowRank, atol: float | None, rank: int | None) -> LowRank:
    if atol is None and rank is None:
        return P
    lead = P.U.shape[:-2]
    U = P.U.reshape((-1, *P.U.shape[-2:]))
    V = P.V.reshape((-1, *P.V.shape[-2:]))
    tol = None if atol is None else np.full(U.shape[0], float(atol))
    Ut, Vt, _ = recompress(U, V, tol, rank)
    return LowRank(Ut.reshape((*lead, *Ut.shape[-2:])), Vt.reshape((*lead, *Vt.shape[-2:])))


def gemm(alpha: Any, A: Any, B: Any, beta: Any, C: Any, *, atol: float | None = None,
         rank: int | None = None) -> Any:
    """``C <- alpha A B + beta C`` where operands may be dense, low rank or TLR.

    Semantics by operand type:

    ======================  =====================  ============================================
    A, B                    C                      result
    ======================  =====================  ============================================
    TLRMatrix, dense        dense (n,) / (n, k)    ``C`` overwritten in place with
                                                   ``alpha M B + beta C``, ``M`` the stored
                                                   matrix (``A``, or ``L`` once factored)
    TLRMatrix, dense        None                   new array ``alpha M B``
    dense or LowRank (any)  dense                  ``C`` overwritten in place (LR x LR into
                                                   dense: one GEMM of rank ``min(k_A, k_B)``)
    dense or LowRank (any)  LowRank                ``C.U, C.V`` replaced by the factors of
                                                   ``alpha A B + beta C`` (exact: the factors
                                                   are concatenated), recompressed by QR + SVD
                                                   to ``atol`` and/or ``rank`` if given
    dense or LowRank (any)  None                   new ``alpha A B``: a LowRank (recompressed
                                                   if asked) if A or B is one, else dense
    ======================  =====================  ============================================

    A TLR Cholesky trailing update is ``gemm(-1, L_ik, L_jk.H, 1, A_ij, atol=...)`` with
    LowRank tiles (:meth:`TLRMatrix.tile`). Dense and LowRank operands may be stacks with
    equal leading (batch) axes: the operation applies to each member.

    Parameters
    ----------
    alpha, beta : scalars
        With ``beta == 0`` the contents of a dense C are ignored (NaN is overwritten).
    A, B : array, LowRank or (A only) TLRMatrix
    C : array, LowRank or None
    atol : float, optional
        Absolute Frobenius accuracy of the recompression (LowRank results only).
    rank : int, optional
        Maximal rank of the recompressed result (LowRank results only).

    Returns
    -------
    C, or the new result when C is None.

    Examples
    --------
    >>> import numpy as np
    >>> from tricov.tlr import LowRank, gemm
    >>> a = LowRank(np.ones((3, 1)), np.ones((2, 1)))
    >>> gemm(2.0, a, np.eye(2), 0.0, np.zeros((3, 2)))
    array([[2., 2.],
           [2., 2.],
           [2., 2.]])
    """
    alpha = _scalar(alpha, "alpha")
    beta = _scalar(beta, "beta")
    if isinstance(B, TLRMatrix):
        raise TypeError("B cannot be a TLRMatrix: products of TLR matrices are not TLR "
                        "matrices in general; multiply a TLRMatrix A by a dense B")
    if isinstance(C, TLRMatrix):
        raise TypeError("C cannot be a TLRMatrix; use a dense array, a LowRank or None")
    if isinstance(A, TLRMatrix):
        if isinstance(B, LowRank) or isinstance(C, LowRank) or atol is not None \
                or rank is not None:
            raise TypeError("with a TLRMatrix A, B and C must be dense arrays (and no atol/rank)")
        P = alpha * A.matvec(B)
        if C is None:
            return P
        if tuple(C.shape) != tuple(P.shape):
            raise ValueError(f"C has shape {tuple(C.shape)}, expected {tuple(P.shape)}")
        C[...] = P if beta == 0 else P + beta * C
        return C
    for name, x in (("A", A), ("B", B)):
        if not isinstance(x, LowRank) and getattr(x, "ndim", 0) < 2:
            raise TypeError(f"{name} must be a 2-D (or stacked) array, a LowRank or, for A, a "
                            f"TLRMatrix; got {type(x).__name__}")
    P = _product(A, B)
    if C is None:
        if isinstance(P, LowRank):
            return _truncate(LowRank(alpha * P.U, P.V), atol, rank)
        return alpha * _dense(P)
    shape = P.shape if isinstance(P, LowRank) else (*np.broadcast_shapes(
        P[0].shape[:-2], P[1].shape[:-2]), P[0].shape[-2], P[1].shape[-1])
    if tuple(C.shape) != tuple(shape):
        raise ValueError(f"C has shape {tuple(C.shape)} but alpha A B has shape {tuple(shape)}")
    if isinstance(C, LowRank):
        L = _as_lowrank(P)
        xp = array_module(C.U)
        cat = LowRank(xp.concatenate([beta * C.U, alpha * L.U.astype(C.dtype)], axis=-1),
                      xp.concatenate([C.V, L.V.astype(C.dtype)], axis=-1))
        out = _truncate(cat, atol, rank)
        C.U, C.V = out.U, out.V
        return C
    if atol is not None or rank is not None:
        raise ValueError("atol and rank apply to LowRank results only")
    D = _dense(P)
    if beta == 0:
        C[...] = alpha * D
    else:
        C *= beta
        C += alpha * D
    return C
