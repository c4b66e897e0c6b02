"""The CPU executor: BLAS/LAPACK of SciPy, called in place by address."""

from __future__ import annotations

import ctypes

import numpy as np

from . import cpu_blas as blas
from .base import Executor

__all__ = ["CPUExecutor"]


class CPUExecutor(Executor):
    """Primitives on NumPy memory through SciPy's BLAS/LAPACK function pointers."""

    backend = "cpu"
    xp = np

    def raw_gemm(self, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        blas.gemm(self.dtype, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)

    def raw_trsm(self, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb):
        blas.trsm(self.dtype, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb)

    def raw_trmm(self, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb):
        blas.trmm(self.dtype, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb)

    def raw_herk(self, uplo, trans, n, k, alpha, a, lda, beta, c, ldc):
        blas.herk(self.dtype, uplo, trans, n, k, alpha, a, lda, beta, c, ldc)

    def raw_potrf(self, uplo, n, a, lda):
        return blas.potrf(self.dtype, uplo, n, a, lda)

    def raw_trtri(self, uplo, diag, n, a, lda):
        return blas.trtri(self.dtype, uplo, diag, n, a, lda)

    def _memory(self, ptr: int, rows: int, cols: int, ld: int) -> np.ndarray:
        """The column-major block at ``ptr`` as a NumPy view (no copy)."""
        size = self.dtype.itemsize
        raw = (ctypes.c_char * (((cols - 1) * ld + rows) * size)).from_address(ptr)
        flat = np.frombuffer(raw, dtype=self.dtype)
        return np.lib.stride_tricks.as_strided(flat, (rows, cols), (size, ld * size))

    def raw_lauum(self, uplo, n, a, lda):
        block = self._memory(a, n, n, lda)
        lower = uplo == b"L"
        if self.complex and np.diagonal(block).imag.any():
            # LAPACK's lauum reads only the real part of the diagonal (it expects a Cholesky
            # factor); for a general triangle, multiply a zero-padded copy with TRMM instead.
            keep = np.tril(np.ones((n, n), dtype=bool)) if lower else np.triu(
                np.ones((n, n), dtype=bool))
            work = np.where(keep, block, 0).astype(self.dtype, order="F")
            self.raw_trmm(b"L" if lower else b"R", uplo, b"C", b"N", n, n, 1.0, a, lda,
                          work.ctypes.data, n)
            block[keep] = work[keep]
            return
        info = blas.lauum(self.dtype, uplo, n, a, lda)
        if info:
            raise AssertionError(f"lauum returned info={info}")
