"""Low-rank matrices ``U V^H`` and the batched kernels that multiply and recompress them.

A low-rank matrix (or a stack of them, with leading batch axes) is stored as two factors
``U`` of shape ``(..., m, k)`` and ``V`` of shape ``(..., n, k)``; it represents ``U @ V^H``
(``V^T`` for real data). Stacks share one ``k``; members of lower rank carry zero columns.

The kernels work on stacks with the array module of their operands (NumPy now, CuPy later):

- :func:`lr_product`: ``(U1 V1^H)(U2 V2^H)`` in low-rank form, rank ``min(k1, k2)``;
- :func:`recompress`: ``L R^H`` (any widths) to a truncated SVD ``U V^H`` with ``U``
  orthonormal, to an absolute Frobenius accuracy and/or a maximal rank, by a QR of each
  factor and an SVD of the small product of the triangular factors (Householder QR: exact up to
  rounding also when the columns are dependent, as they are after an update);
- :func:`truncation_ranks`: the smallest rank whose dropped singular values stay within
  an absolute Frobenius bound.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._array import SUPPORTED, array_module, herm

__all__ = ["LowRank", "lr_product", "recompress", "truncation_ranks"]


class LowRank:
    """A matrix, or a stack of matrices, in low-rank form ``U @ V^H``.

    Parameters
    ----------
    U : (..., m, k) array
    V : (..., n, k) array
        Same leading (batch) shape, ``k`` and dtype as ``U``. ``V^H`` is the conjugate
        transpose (the transpose for real data).

    Examples
    --------
    >>> import numpy as np
    >>> from tricov.tlr import LowRank
    >>> a = LowRank(np.ones((3, 1)), np.arange(2.0)[:, None])
    >>> a.to_dense()
    array([[0., 1.],
           [0., 1.],
           [0., 1.]])
    """

    def __init__(self, U: Any, V: Any) -> None:
        for name, f in (("U", U), ("V", V)):
            if getattr(f, "ndim", 0) < 2:
                raise ValueError(f"{name} must have at least 2 dimensions, got "
                                 f"shape {getattr(f, 'shape', None)}")
            if np.dtype(f.dtype) not in SUPPORTED:
                raise TypeError(f"{name} has dtype {f.dtype}; LowRank supports float32, "
                                "float64, complex64 and complex128")
        if U.shape[:-2] != V.shape[:-2] or U.shape[-1] != V.shape[-1]:
            raise ValueError(f"U {tuple(U.shape)} and V {tuple(V.shape)} must have the same "
                             "batch shape and the same number of columns (the rank)")
        if U.dtype != V.dtype:
            raise TypeError(f"U is {U.dtype} but V is {V.dtype}")
        if array_module(U) is not array_module(V):
            raise TypeError("U and V must both be NumPy or both be CuPy arrays")
        self.U = U
        self.V = V

    @property
    def shape(self) -> tuple[int, ...]:
        """``(..., m, n)``."""
        return (*self.U.shape[:-1], self.V.shape[-2])

    @property
    def rank(self) -> int:
        """The number of columns ``k`` of the factors."""
        return int(self.U.shape[-1])

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.U.dtype)

    @property
    def nbytes(self) -> int:
        """Bytes held by the two factors."""
        return int(self.U.nbytes + self.V.nbytes)

    @property
    def H(self) -> LowRank:  # noqa: N802 - the conventional name of the conjugate transpose
        """The conjugate transpose ``V U^H`` (no copy)."""
        return LowRank(self.V, self.U)

    def to_dense(self) -> Any:
        """The dense matrix (or stack) ``U @ V^H``."""
        return self.U @ herm(self.V)

    def __repr__(self) -> str:
        return f"LowRank(shape={self.shape}, rank={self.rank}, dtype={self.dtype})"


def lr_product(U1: Any, V1: Any, U2: Any, V2: Any) -> tuple[Any, Any]:
    """Low-rank form of ``(U1 V1^H)(U2 V2^H)``, batched over leading axes.

    Returns ``(U, V)`` of rank ``min(k1, k2)``: ``U1 (V1^H U2) V2^H`` keeps ``U1`` when
    ``k1 <= k2`` (and ``V = V2 (U2^H V1)``), else keeps ``V2`` (and ``U = U1 (V1^H U2)``).
    """
    inner = herm(V1) @ U2  # (..., k1, k2)
    if U1.shape[-1] <= V2.shape[-1]:
        return U1, V2 @ herm(inner)
    return U1 @ inner, V2


def truncation_ranks(s: Any, atol: Any = None, rank: int | None = None) -> Any:
    """Smallest ranks whose dropped singular values have Frobenius norm at most ``atol``.

    Parameters
    ----------
    s : (B, K) array
        Singular values of each member, in descending order.
    atol : (B,) array or None
        Absolute bound on ``sqrt(sum of the squares of the dropped values)``; None keeps all.
    rank : int or None
        Maximal rank (applied after ``atol``).

    Returns
    -------
    (B,) integer array
    """
    xp = array_module(s)
    b, k = s.shape
    if atol is None:
        r = xp.full(b, k, dtype=np.int64)
    else:
        s2 = (s * s)[:, ::-1]
        tail = xp.cumsum(s2, axis=1)[:, ::-1]  # tail[:, i] = sum_{l >= i} s_l^2
        thr = xp.asarray(atol, dtype=tail.dtype).reshape(b, 1)
        r = (tail > thr * thr).sum(axis=1).astype(np.int64)
    if rank is not None:
        r = xp.minimum(r, int(rank))
    return r


def recompress(L: Any, R: Any, atol: Any = None, rank: int | None = None) -> tuple[Any, Any, Any]:
    """Truncated SVD of ``L R^H`` for a stack, from QR factorizations of the factors.

    Parameters
    ----------
    L : (B, m, K) array
    R : (B, n, K) array
        The product ``L @ R^H`` is recompressed; columns may be dependent or zero.
    atol : (B,) array or None
        Absolute Frobenius bound on the truncation error of each member.
    rank : int or None
        Maximal rank.

    Returns
    -------
    U : (B, m, r) array
        Orthonormal columns (members of rank below ``r`` have zero columns beyond it).
    V : (B, n, r) array
        Singular values folded in: ``U V^H`` is the truncated product.
    ranks : (B,) integer array
        The rank of each member; ``r = max(ranks)``.

    Notes
    -----
    With ``L = Ql Rl`` and ``R = Qr Rr``, ``L R^H = Ql (Rl Rr^H) Qr^H``; the SVD of the small
    core ``X S Y^H`` gives ``U = Ql X``, ``V = Qr Y S``. The dropped part is
    ``Ql X2 S2 Y2^H Qr^H``, whose Frobenius norm is that of ``S2``.
    """
    xp = array_module(L)
    b = L.shape[0]
    ql, rl = xp.linalg.qr(L)
    qr_, rr = xp.linalg.qr(R)
    core = rl @ herm(rr)
    x, s, yh = xp.linalg.svd(core, full_matrices=False)
    ranks = truncation_ranks(s, atol, rank)
    r = int(ranks.max()) if b else 0
    keep = (xp.arange(r)[None, :] < ranks[:, None]).astype(s.dtype)  # (B, r)
    U = ql @ (x[..., :r] * keep[:, None, :].astype(x.dtype))
    V = qr_ @ (herm(yh)[..., :r] * (s[:, :r] * keep)[:, None, :].astype(yh.dtype))
    return U, V, ranks
