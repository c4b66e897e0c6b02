"""The GPU executor: cuBLAS, cuSOLVER and tricov's CUDA kernels on CuPy memory.

Every primitive is enqueued on the caller's current CuPy stream and nothing waits for the
device inside an operation: leaf failures (cuSOLVER's ``devInfo``) land in device memory and
are read once, when the front end asks for :attr:`CUDAExecutor.info`.

Leaves: triangular leaves up to the kernel's largest order go to tricov's warp-per-column kernel
(``kernels/cuda/triangular.cu``), where cuBLAS TRSM/TRMM run at a fraction of GEMM speed;
larger leaves, or more than :data:`NARROW` right-hand sides, to cuBLAS. POTRF and TRTRI leaves
are cuSOLVER's; the LAUUM leaf (which cuSOLVER lacks) is a cuBLAS TRMM on a zero-padded copy of
the triangle.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .. import _options as opt
from .._views import Mat
from ..kernels import nvrtc, tri_columns, tri_orders
from . import cuda_libs as lib
from .base import Executor

__all__ = ["CUDAExecutor", "NARROW"]

#: Right-hand sides at or below which triangular leaves use tricov's own kernel (all, by
#: default: its thousands of warps beat cuBLAS's TRSM/TRMM on leaf-sized triangles).
NARROW = 1 << 30


def _scalar_buffer(dtype: np.dtype, *values: complex, real: bool = False) -> np.ndarray:
    kind = np.dtype(dtype)
    if real:
        kind = np.dtype(np.float32 if kind in (np.float32, np.complex64) else np.float64)
    return np.array(values, dtype=kind)


class CUDAExecutor(Executor):
    """Primitives on CuPy memory of the current device, on the current stream."""

    backend = "gpu"
    #: Right-hand sides at or below which triangular leaves use tricov's own kernel.
    narrow = NARROW
    #: HERK leaves with ``k >= herk_by_gemm * n`` run as a GEMM plus a triangle update.
    herk_by_gemm = 1

    def __init__(self, dtype: np.dtype, blas_handle: int | None = None) -> None:
        import cupy

        super().__init__(dtype)
        self.xp = cupy
        self._stream = cupy.cuda.get_current_stream().ptr
        self._hb = lib.bind_blas(self._stream, blas_handle)
        self._solver: int | None = None  # bound on first use: only Cholesky leaves need it
        self._statuses: list[tuple[Any, int]] = []
        self._keep: list[Any] = []  # workspaces alive until the stream has used them

    # ------------------------------------------------------------ failures
    def _record(self, status: Any, offset: int) -> bool:
        self._statuses.append((status, offset))
        return True

    @property
    def info(self) -> int:
        if not self._statuses:
            return 0
        flags = self.xp.concatenate([s for s, _ in self._statuses]).get()
        for value, (_, offset) in zip(flags, self._statuses, strict=True):
            if value:
                return offset + int(value)
        return 0

    # ------------------------------------------------------------- helpers
    @property
    def _hs(self) -> int:
        if self._solver is None:
            self._solver = lib.bind_solver(self._stream)
        return self._solver

    def _s(self, *values: complex, real: bool = False) -> int:
        buf = _scalar_buffer(self.dtype, *values, real=real)
        self._keep.append(buf)
        return buf.ctypes.data

    # ------------------------------------------------------- narrow leaves
    def _narrow(self, mult: bool, lower: bool, unit: bool, alpha: complex, a: Mat,
                b: Mat) -> bool:
        """Run the warp-per-column kernel on logical views if the shape suits it."""
        n, ncols = b.rows, b.cols
        orders = tri_orders(self.dtype.itemsize)
        if ncols > self.narrow or n > orders[-1]:
            return False
        order = next(k for k in orders if k >= n)
        cols = tri_columns(order, self.dtype.itemsize, mult)
        opa = a.op if self.complex else a.op & opt.T
        opb = b.op if self.complex else b.op & opt.T
        expr = (f"tricov::tri_small<{nvrtc.CTYPE[self.dtype]}, {order}, {cols}, "
                f"{nvrtc.cbool(mult)}, {nvrtc.cbool(lower)}>")
        kernel = nvrtc.function("triangular.cu", expr)
        warps = -(-ncols // cols)
        threads = 128
        blocks = -(-warps * 32 // threads)
        kernel((blocks,), (threads,), (np.int32(n), np.int32(ncols), self.dtype.type(alpha),
                                       np.uint64(a.ptr), np.int64(a.ld), np.int32(opa),
                                       np.uint64(b.ptr), np.int64(b.ld), np.int32(opb),
                                       np.int32(unit)))
        return True

    def trsm(self, lower: bool, unit: bool, alpha: complex, a: Mat, b: Mat) -> None:
        if b.rows and b.cols and not self._narrow(False, lower, unit, alpha, a, b):
            super().trsm(lower, unit, alpha, a, b)

    def trmm(self, lower: bool, unit: bool, alpha: complex, a: Mat, b: Mat) -> None:
        if b.rows and b.cols and not self._narrow(True, lower, unit, alpha, a, b):
            super().trmm(lower, unit, alpha, a, b)

    # ---------------------------------------------------------------- raw
    def raw_gemm(self, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        lib.check(lib.blas("gemm_v2", self.dtype)(
            self._hb, lib.OP[ta], lib.OP[tb], m, n, k, self._s(alpha), a, lda, b, ldb,
            self._s(beta), c, ldc), "gemm")

    def raw_trsm(self, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb):
        lib.check(lib.blas("trsm_v2", self.dtype)(
            self._hb, lib.SIDE[side], lib.FILL[uplo], lib.OP[trans], lib.DIAG[diag], m, n,
            self._s(alpha), a, lda, b, ldb), "trsm")

    def raw_trmm(self, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb):
        lib.check(lib.blas("trmm_v2", self.dtype)(
            self._hb, lib.SIDE[side], lib.FILL[uplo], lib.OP[trans], lib.DIAG[diag], m, n,
            self._s(alpha), a, lda, b, ldb, b, ldb), "trmm")

    def raw_herk(self, uplo, trans, n, k, alpha, a, lda, beta, c, ldc):
        if k >= self.herk_by_gemm * n:
            # cuBLAS SYRK/HERK run far below GEMM speed: form the whole block A A^H with GEMM
            # (twice the flops) and update the referenced triangle from it.
            work = self.xp.empty((n, n), dtype=self.dtype, order="F")
            self._keep.append(work)
            other = b"N" if trans != b"N" else (b"C" if self.complex else b"T")
            self.raw_gemm(trans, other, n, n, k, 1.0, a, lda, a, lda, 0.0, work.data.ptr, n)
            expr = f"tricov::tri_update<{nvrtc.CTYPE[self.dtype]}, {nvrtc.cbool(uplo == b'L')}>"
            kernel = nvrtc.function("triangular.cu", expr)
            kernel((-(-n // 32), -(-n // 8)), (32, 8),
                   (np.int32(n), self.dtype.type(alpha), np.uint64(work.data.ptr), np.int64(n),
                    self.dtype.type(beta), np.uint64(c), np.int64(ldc), np.int32(beta == 0)))
            return
        name = "herk_v2" if self.complex else "syrk_v2"
        if self.complex:
            scalars = (self._s(alpha, real=True), self._s(beta, real=True))
        else:
            scalars = (self._s(alpha), self._s(beta))
        lib.check(lib.blas(name, self.dtype)(
            self._hb, lib.FILL[uplo], lib.OP[trans], n, k, scalars[0], a, lda, scalars[1],
            c, ldc), name)

    def raw_potrf(self, uplo, n, a, lda):
        lwork = ctypes.c_int(0)
        lib.check(lib.solver("potrf_bufferSize", self.dtype)(
            self._hs, lib.FILL[uplo], n, a, lda, ctypes.byref(lwork)), "potrf_bufferSize")
        work = self.xp.empty(max(1, lwork.value), dtype=self.dtype)
        status = self.xp.empty(1, dtype=np.int32)
        self._keep.append(work)
        lib.check(lib.solver("potrf", self.dtype)(
            self._hs, lib.FILL[uplo], n, a, lda, work.data.ptr, lwork.value,
            status.data.ptr), "potrf")
        return status

    def raw_trtri(self, uplo, diag, n, a, lda):
        dev_bytes, host_bytes = ctypes.c_size_t(0), ctypes.c_size_t(0)
        ctype = lib.CUDA_TYPE[self.dtype]
        lib.check(lib.solver("cusolverDnXtrtri_bufferSize")(
            self._hs, lib.FILL[uplo], lib.DIAG[diag], n, ctype, a, lda,
            ctypes.byref(dev_bytes), ctypes.byref(host_bytes)), "trtri_bufferSize")
        work = self.xp.empty(max(1, dev_bytes.value), dtype=np.uint8)
        host = np.empty(max(1, host_bytes.value), dtype=np.uint8)
        status = self.xp.empty(1, dtype=np.int32)
        self._keep += [work, host]
        lib.check(lib.solver("cusolverDnXtrtri")(
            self._hs, lib.FILL[uplo], lib.DIAG[diag], n, ctype, a, lda, work.data.ptr,
            dev_bytes.value, host.ctypes.data, host_bytes.value, status.data.ptr), "trtri")
        return status

    def raw_lauum(self, uplo, n, a, lda):
        lower = uplo == b"L"
        work = self.xp.empty((n, n), dtype=self.dtype, order="F")
        self._keep.append(work)
        self._tri_copy(n, a, lda, work.data.ptr, n, lower, zero=True)
        # L^H L = L^H (zero-padded L); U U^H = (zero-padded U) U^H.
        side = b"L" if lower else b"R"
        self.raw_trmm(side, uplo, b"C" if self.complex else b"T", b"N", n, n, 1.0, a, lda,
                      work.data.ptr, n)
        self._tri_copy(n, work.data.ptr, n, a, lda, lower, zero=False)

    def _tri_copy(self, n: int, src: int, lds: int, dst: int, ldd: int, lower: bool,
                  zero: bool) -> None:
        expr = (f"tricov::tri_copy<{nvrtc.CTYPE[self.dtype]}, {nvrtc.cbool(lower)}, "
                f"{nvrtc.cbool(zero)}>")
        kernel = nvrtc.function("triangular.cu", expr)
        grid = (-(-n // 32), -(-n // 8))
        kernel(grid, (32, 8), (np.int32(n), np.uint64(src), np.int64(lds), np.uint64(dst),
                               np.int64(ldd)))
