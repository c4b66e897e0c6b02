"""What every executor shares: turning logical views into BLAS-shaped calls.

The recursions speak in logical views (:class:`tricov._views.Mat`) and a handful of primitives
(GEMM, HERK/SYRK, and the triangular and Cholesky leaves). This base class normalises each call
once, for every backend, by the two identities of the design:

* an output stored transposed is handled by transposing the whole equation
  (``C^T = B^T A^T``; a left-side solve on ``B^T`` becomes a right-side one on ``B``);
* an output stored conjugated is handled by conjugating the whole equation.

After that every operand is a column-major block with a BLAS letter N, T or C, and a backend
only supplies the ``raw_*`` methods, which take BLAS arguments (letters, sizes, addresses,
leading dimensions). A new executor is those few methods.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _options as opt
from .._views import Mat

__all__ = ["Executor", "herk_ops_ok", "trxm_ops_ok"]


def trxm_ops_ok(tri: Mat, b: Mat, complex_: bool) -> bool:
    """Whether ``tri X = B`` (or ``B = tri B``) maps to BLAS without conjugating B first."""
    return not complex_ or (tri.op ^ b.op) != opt.R


def herk_ops_ok(a: Mat, c: Mat, complex_: bool) -> bool:
    """Whether ``C = a a^H + C`` maps to BLAS herk without conjugating C first."""
    final = a.op ^ (opt.R if c.t else 0) ^ (c.op & opt.R)
    return not complex_ or opt.has_t(final) == opt.has_c(final)


class Executor:
    """Logical primitives over raw BLAS-shaped ones, for one dtype on one device.

    Parameters
    ----------
    dtype : numpy.dtype
        float32, float64, complex64 or complex128.
    """

    #: Name of the backend, used for leaf-size policies ("cpu", "gpu").
    backend: str = ""
    #: The array module of the backend (numpy or cupy).
    xp: Any = np
    #: Whether POTRF's statuses report NaN pivots (LAPACK's info): else the caller scans the
    #: factor's diagonal (OpenBLAS does not test pivots for NaN).
    nan_pivots_reported: bool = False

    def __init__(self, dtype: np.dtype) -> None:
        self.dtype = np.dtype(dtype)
        self.complex = self.dtype.kind == "c"
        self._info = 0

    # ------------------------------------------------------------ failures
    def _record(self, status: Any, offset: int) -> bool:
        """Note a leaf's LAPACK status; return whether the recursion should go on.

        ``status`` is what the raw leaf returned: here an int (0 or the 1-based failing index
        inside the leaf), so a failure stops the recursion as LAPACK does. Asynchronous
        backends override this and :attr:`info` to collect statuses on the device instead.
        """
        if status and not self._info:
            self._info = offset + int(status)
        return not status

    @property
    def info(self) -> int:
        """LAPACK's info for the whole call: 0, or the 1-based index of the first failure."""
        return self._info

    # ------------------------------------------------------------------ helpers
    def _op(self, m: Mat) -> int:
        return m.op if self.complex else m.op & opt.T

    def _letter(self, m: Mat) -> bytes:
        return opt.blas_letter(self._op(m), self.complex)

    def _cj(self, x: complex) -> complex:
        return x.conjugate() if self.complex else x

    @classmethod
    def settings(cls) -> tuple:
        """Class-level settings that change which kernels run (part of a captured plan's key)."""
        return ()

    # ------------------------------------------------------------- primitives
    def gemm(self, alpha: complex, a: Mat, b: Mat, beta: complex, c: Mat, count: int = 1,
             steps: tuple[int, int, int] = (0, 0, 0), out: Mat | None = None) -> None:
        """``C = alpha A B + beta C`` on logical views.

        With ``count > 1``, the same product on ``count`` triples of blocks: the ``i``-th
        ``i * steps`` bytes after ``a``, ``b`` and ``c`` (:meth:`raw_gemm_strided`). With
        ``out`` (one product; a view of the shape and layout of ``c``), the result goes there
        and ``c`` is only read (:meth:`raw_gemm_into`).
        """
        if out is not None and count != 1:
            raise ValueError("a GEMM into another output takes one product")
        sa, sb, sc = steps
        if c.t:
            a, b, c = b.T, a.T, c.T
            out = out.T if out is not None else None
            sa, sb = sb, sa
        if self.complex and opt.has_c(c.op):
            a, b, c = a.conj, b.conj, c.conj
            out = out.conj if out is not None else None
            alpha, beta = self._cj(alpha), self._cj(beta)
        m, n, k = c.mrows, c.mcols, a.cols
        if m == 0 or n == 0:
            return
        args = (self._letter(a), self._letter(b), m, n, k, alpha, a.ptr, a.ld, b.ptr, b.ld,
                beta, c.ptr, c.ld)
        if out is not None:
            self.raw_gemm_into(*args, out.ptr, out.ld)
        elif count == 1:
            self.raw_gemm(*args)
        else:
            self.raw_gemm_strided(*args, count, sa, sb, sc)

    def _trxm(self, lower: bool, unit: bool, alpha: complex, a: Mat, b: Mat):
        side = b"L"
        if b.t:
            side, a, b, lower = b"R", a.T, b.T, not lower
        if self.complex and opt.has_c(b.op):
            a, b, alpha = a.conj, b.conj, self._cj(alpha)
        uplo = b"L" if lower != a.t else b"U"
        return (side, uplo, self._letter(a), b"U" if unit else b"N", b.mrows, b.mcols, alpha,
                a.ptr, a.ld, b.ptr, b.ld)

    def run_trsm(self, lower: bool, unit: bool, a: Mat, b: Mat, block: int,
                 body: Callable[[Executor, Mat], None]) -> None:
        """Run the recursion of a TRSM with triangle ``a`` on ``b``: ``body(executor, b)``
        issues its leaves (:meth:`trsm`) and products (:meth:`gemm`).

        The leaves solve with the diagonal blocks of ``a`` of ``block`` rows starting at
        multiples of ``block``, but the last, which has the remaining rows
        (:func:`tricov.recursive.leaf_rows`). Here the recursion runs in place. An executor may
        prepare what its leaves need and run them out of place (the GPU inverts the diagonal
        blocks and solves into a workspace, see :mod:`tricov.backends.staged`).
        """
        body(self, b)

    def trsm(self, lower: bool, unit: bool, alpha: complex, a: Mat, b: Mat) -> None:
        """Solve ``A X = alpha B`` in place of B; A is a logical lower or upper triangle."""
        if b.rows and b.cols:
            self.raw_trsm(*self._trxm(lower, unit, alpha, a, b))

    def trmm(self, lower: bool, unit: bool, alpha: complex, a: Mat, b: Mat) -> None:
        """``B = alpha A B`` in place; A is a logical lower or upper triangle."""
        if b.rows and b.cols:
            self.raw_trmm(*self._trxm(lower, unit, alpha, a, b))

    def trmm_from(self, lower: bool, unit: bool, alpha: complex, a: Mat, src: Mat, dst: Mat,
                  count: int = 1, steps: tuple[int, int, int] = (0, 0, 0)) -> None:
        """``dst <- alpha A src``, ``src`` unchanged (the leaves of a staged TRMM): on
        ``count`` triples of blocks, the ``i``-th ``i * steps`` bytes after the first. Here a
        copy and one :meth:`trmm` in place on each ``dst``."""
        for i in range(count):
            dst_i = dst._replace(ptr=dst.ptr + i * steps[2])
            self.copy_into(src._replace(ptr=src.ptr + i * steps[1]), dst_i)
            self.trmm(lower, unit, alpha, a._replace(ptr=a.ptr + i * steps[0]), dst_i)

    def trsm_into(self, lower: bool, unit: bool, alpha: complex, a: Mat, src: Mat,
                  dst: Mat) -> None:
        """``dst <- alpha A^-1 src``, ``src`` left undefined (the leaves of an out-of-place
        TRSM). Here a solve in place on ``src`` and a copy."""
        self.trsm(lower, unit, alpha, a, src)
        self.copy_into(src, dst)

    def stage_block(self, view: Mat, copy: bool) -> Mat:
        """The memory block of ``view`` in a workspace (a copy if ``copy``), as the same
        logical view with its rows as leading dimension, alive until the work queued so far
        is done (executors that stage TRMMs and TRSMs)."""
        raise NotImplementedError

    def copy_into(self, src: Mat, dst: Mat) -> None:
        """Copy the memory block of ``src`` over that of ``dst`` (same shape and layout)."""
        raise NotImplementedError

    def run_trmm(self, b: Mat, body: Callable[[Executor, Mat], None]) -> None:
        """Run the recursion of a TRMM on ``b``: ``body(executor, b)`` issues its leaves
        (:meth:`trmm`) and products (:meth:`gemm`).

        Here they run at once, in the recursion's order, in place. An executor may record
        them instead and run them in an order of its own (the GPU's batches them, see
        :mod:`tricov.backends.staged`).
        """
        body(self, b)

    def herk(self, alpha: float, a: Mat, beta: float, c: Mat) -> None:
        """Lower triangle of ``C = alpha A A^H + beta C`` (syrk for real dtypes)."""
        lower = True
        if c.t:  # C^T = conj(C) for a Hermitian C
            c, a, lower = c.T, a.conj, False
        if self.complex and opt.has_c(c.op):
            c, a = c.conj, a.conj
        if c.mrows == 0:
            return
        op = self._op(a)
        if op in (opt.T, opt.R) and self.complex:
            raise AssertionError("herk reached with a transpose-only operand")
        trans = b"N" if not opt.has_t(op) else (b"C" if self.complex else b"T")
        self.raw_herk(b"L" if lower else b"U", trans, c.mrows, a.cols, alpha.real
                      if isinstance(alpha, complex) else alpha, a.ptr, a.ld, beta, c.ptr, c.ld)

    def _uplo(self, a: Mat) -> bytes:
        return b"U" if a.t else b"L"

    def potrf(self, a: Mat, offset: int) -> bool:
        """Lower Cholesky factor of a logical view in place (rows ``offset:`` of the whole).

        Returns whether the recursion should go on; failures are gathered in :attr:`info`.
        """
        if not a.rows:
            return True
        return self._record(self.raw_potrf(self._uplo(a), a.rows, a.ptr, a.ld), offset)

    def potrf_panel(self, a: Mat, offset: int) -> bool | None:
        """The first step of POTRF's recursion in one go, where the executor has a kernel for
        it: the top square of the column panel ``a`` (``a.cols`` rows, a leaf) <- its lower
        Cholesky factor L11, the rows below it <- themselves times ``L11^-H``. Returns as
        :meth:`potrf` does, or None where it has no such kernel (the recursion then calls
        :meth:`potrf` and a TRSM)."""
        return None

    def trtri(self, unit: bool, a: Mat, offset: int) -> bool:
        """Inverse of a logical lower triangle in place; as :meth:`potrf` for failures."""
        if not a.rows:
            return True
        diag = b"U" if unit else b"N"
        return self._record(self.raw_trtri(self._uplo(a), diag, a.rows, a.ptr, a.ld), offset)

    def lauum(self, a: Mat) -> None:
        """``L^H L`` into the lower triangle of a logical view."""
        if a.rows:
            self.raw_lauum(self._uplo(a), a.rows, a.ptr, a.ld)

    # ------------------------------------------------- raw, backend-specific
    def raw_gemm(self, ta: bytes, tb: bytes, m: int, n: int, k: int, alpha: complex, a: int,
                 lda: int, b: int, ldb: int, beta: complex, c: int, ldc: int) -> None:
        raise NotImplementedError

    def raw_gemm_into(self, ta: bytes, tb: bytes, m: int, n: int, k: int, alpha: complex,
                      a: int, lda: int, b: int, ldb: int, beta: complex, c: int, ldc: int,
                      d: int, ldd: int) -> None:
        """:meth:`raw_gemm` with the result in ``d`` (leading dimension ``ldd``); C is read."""
        raise NotImplementedError

    def raw_gemm_strided(self, ta: bytes, tb: bytes, m: int, n: int, k: int, alpha: complex,
                         a: int, lda: int, b: int, ldb: int, beta: complex, c: int, ldc: int,
                         count: int, sa: int, sb: int, sc: int) -> None:
        """:meth:`raw_gemm` on ``count`` triples of blocks, the ``i``-th ``i * (sa, sb, sc)``
        bytes after the first (here one call after the other)."""
        for i in range(count):
            self.raw_gemm(ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb, beta,
                          c + i * sc, ldc)

    def raw_trsm(self, side: bytes, uplo: bytes, trans: bytes, diag: bytes, m: int, n: int,
                 alpha: complex, a: int, lda: int, b: int, ldb: int) -> None:
        raise NotImplementedError

    def raw_trmm(self, side: bytes, uplo: bytes, trans: bytes, diag: bytes, m: int, n: int,
                 alpha: complex, a: int, lda: int, b: int, ldb: int) -> None:
        raise NotImplementedError

    def raw_herk(self, uplo: bytes, trans: bytes, n: int, k: int, alpha: float, a: int,
                 lda: int, beta: float, c: int, ldc: int) -> None:
        raise NotImplementedError

    def raw_potrf(self, uplo: bytes, n: int, a: int, lda: int) -> Any:
        raise NotImplementedError

    def raw_trtri(self, uplo: bytes, diag: bytes, n: int, a: int, lda: int) -> Any:
        raise NotImplementedError

    def raw_lauum(self, uplo: bytes, n: int, a: int, lda: int) -> None:
        raise NotImplementedError
