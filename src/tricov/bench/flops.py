"""Floating-point operation counts of the benchmarked operations.

The counts are the usual ones of the LAPACK working notes (leading terms, real arithmetic); a
complex operation counts four times its real count (one complex multiply-add is four real
multiplies and four real adds, against one multiply and one add).
"""

from __future__ import annotations

import numpy as np

__all__ = ["COMPLEX_FACTOR", "REAL_FLOPS", "flops", "gemm_flops"]

#: Real flops per complex flop of the same operation.
COMPLEX_FACTOR = 4


def _trxm(m: int, n: int, side: str = "L") -> float:
    # Left side: each of the n columns of B meets the m x m triangle, m^2 flops; right: m n^2.
    return float(m) * m * n if side == "L" else float(m) * n * n


def _syrk(n: int, k: int) -> float:
    return float(n) * n * k


def _cube(scale: float):
    def count(n: int) -> float:
        return scale * float(n) ** 3

    return count


def _potrs(n: int, nrhs: int) -> float:
    return 2.0 * n * n * nrhs


def _posv(n: int, nrhs: int) -> float:
    return float(n) ** 3 / 3.0 + _potrs(n, nrhs)


#: Real flop count of each operation, as a function of its dimensions.
REAL_FLOPS = {
    "trsm": _trxm,
    "trmm": _trxm,
    "syrk": _syrk,
    "potrf": _cube(1.0 / 3.0),
    "trtri": _cube(1.0 / 3.0),
    "lauum": _cube(1.0 / 3.0),
    "potri": _cube(2.0 / 3.0),
    "poti": _cube(1.0),
    "potrs": _potrs,
    "posv": _posv,
}


def _factor(dtype: np.dtype) -> int:
    return COMPLEX_FACTOR if np.dtype(dtype).kind == "c" else 1


def flops(op: str, dims: tuple[int, ...], dtype: np.dtype, **options: str) -> float:
    """Flops of ``op`` on ``dims`` in ``dtype``.

    Parameters
    ----------
    op : str
        A key of :data:`REAL_FLOPS`.
    dims : tuple of int
        The operation's dimensions: ``(m, n)`` for trsm/trmm (B is m x n), ``(n, k)`` for syrk
        (C is n x n, A is n x k), ``(n,)`` for potrf, trtri, lauum, potri and poti, ``(n, nrhs)``
        for potrs and posv.
    dtype : dtype
        Complex dtypes count four times the real flops.
    **options
        ``side='R'`` for the right-side trsm/trmm count ``m n^2``.

    Examples
    --------
    >>> flops("potrf", (300,), "float64")
    9000000.0
    >>> flops("trsm", (4, 2), "complex128")
    128.0
    """
    try:
        count = REAL_FLOPS[op]
    except KeyError:
        raise ValueError(f"op must be one of {sorted(REAL_FLOPS)}, got {op!r}") from None
    return count(*dims, **options) * _factor(dtype)


def gemm_flops(m: int, n: int, k: int, dtype: np.dtype) -> float:
    """Flops of ``C (m x n) += A (m x k) B (k x n)``: ``2 m n k``, four times that if complex."""
    return 2.0 * m * n * k * _factor(dtype)
