"""The CPU executor: BLAS/LAPACK of SciPy, called in place by address."""

from __future__ import annotations

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

    def raw_lauum(self, uplo, n, a, lda):
        info = blas.lauum(self.dtype, uplo, n, a, lda)
        if info:
            raise AssertionError(f"lauum returned info={info}")
