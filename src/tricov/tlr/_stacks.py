"""Products of stacks of matrices in place, without copies of transposed or strided operands.

``numpy.matmul`` and CuPy's ``@`` make their operands contiguous first: a transposed stack
(``U^T`` of a column of tiles) is copied, every time. :func:`bmm` reads the operands through
their strides and transposes them in the product (one cuBLAS ``gemmStridedBatched`` on CuPy
arrays), and writes into a given output, which may be a slice of a larger stack.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

import numpy as np

from ._array import array_module

__all__ = ["bmm"]


def bmm(A: Any, B: Any, out: Any, *, ta: bool = False, tb: bool = False, alpha: float = 1.0,
        beta: float = 0.0) -> Any:
    """``out_b = alpha op(A_b) op(B_b) + beta out_b`` for every member ``b``; returns ``out``.

    Parameters
    ----------
    A, B : (batch, rows, cols) or (rows, cols) arrays
        Real, of ``out``'s dtype, with unit stride along the last axis (any row and batch
        strides); a 2-D operand is the same matrix for every member. ``op`` transposes where
        ``ta`` / ``tb``.
    out : (batch, rows, cols) array
        Unit stride along the last axis; it must not overlap ``A`` or ``B``.
    beta : float
        ``out`` is not read when 0.
    """
    xp = array_module(out)
    if xp is np:
        a = A.swapaxes(-1, -2) if ta else A
        b = B.swapaxes(-1, -2) if tb else B
        if beta == 0:
            out[...] = alpha * (a @ b)
        else:
            out *= beta
            out += alpha * (a @ b)
        return out
    batch, rows, cols = out.shape
    inner = A.shape[-2] if ta else A.shape[-1]
    if batch == 0 or rows == 0 or cols == 0:
        return out
    if inner == 0:
        out *= beta
        return out
    gemm, scalar, handle = _cublas(out.dtype)
    pa, lda, sa = _geometry(A, out.dtype)
    pb, ldb, sb = _geometry(B, out.dtype)
    pc, ldc, sc = _geometry(out, out.dtype)
    # Row-major products are column-major products of the transposes: out^T = op(B)^T op(A)^T.
    status = gemm(handle(), int(tb), int(ta), cols, rows, inner, ctypes.byref(scalar(alpha)),
                  pb, ldb, sb, pa, lda, sa, ctypes.byref(scalar(beta)), pc, ldc, sc, batch)
    if status:
        raise RuntimeError(f"cublas gemmStridedBatched failed with status {status}")
    return out


def _geometry(X: Any, dtype: np.dtype) -> tuple[int, int, int]:
    """Address, leading dimension and batch stride (0 for a matrix) of a row-major operand."""
    isz = dtype.itemsize
    if X.dtype != dtype or (X.strides[-1] != isz and X.shape[-1] > 1):
        raise ValueError(f"bmm takes {dtype} operands with unit stride along the last axis")
    return (X.data.ptr, max(X.strides[-2] // isz, X.shape[-1], 1),
            X.strides[0] // isz if X.ndim == 3 else 0)


#: The stream each of tricov's handles was last bound to.
_BOUND: dict[int, int] = {}


@functools.cache
def _cublas(dtype: np.dtype) -> tuple[Any, Any, Any]:
    """cuBLAS's strided-batched GEMM for ``dtype``, its scalar type, and a function giving
    tricov's handle for it bound to the current stream (rebound only when that changes)."""
    import cupy

    from ..backends import cuda_libs as lib

    def handle() -> int:
        h = lib.own_handle("stacks")
        stream = cupy.cuda.get_current_stream().ptr
        if _BOUND.get(h) != stream:
            lib.bind_blas(stream, h)
            _BOUND[h] = stream
        return h

    scalar = ctypes.c_double if dtype == np.float64 else ctypes.c_float
    return lib.blas("gemmStridedBatched", dtype), scalar, handle
