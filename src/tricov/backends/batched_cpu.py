"""The batched CPU executor: every primitive of the recursions, once per batch member.

:class:`BatchedCPUExecutor` is an :class:`~tricov.backends.base.Executor`, so the recursions of
:mod:`tricov.recursive` run on it unchanged. The views it receives describe *one* member:
a view's ``ptr`` is ``slot << SLOT_BITS | offset`` (see :mod:`tricov.batched._operands`), the
byte offset of the block inside a member of operand ``slot``; the executor adds it to each
member's address and calls SciPy's BLAS/LAPACK routine for every member in one parallel
Numba loop
(:func:`tricov.kernels.numba.calls.for_members`). A member stays in cache for the whole call.

Failures are per member: the raw POTRF and TRTRI leaves return every member's status, and
:meth:`BatchedCPUExecutor._record` notes each failing member's info (plus the offset of the
leaf, so it is the order within the whole matrix, as LAPACK reports it), marks the member
inactive so that later primitives skip it, and lets the recursion go on with the others.
"""

from __future__ import annotations

import numpy as np

from ..batched._operands import SLOT_BITS
from ..kernels.numba import calls
from .base import Executor
from .cpu_blas import prefix

__all__ = ["BatchedCPUExecutor"]

class _Args:
    """The arguments of one call: fixed values in small buffers, or member offsets."""

    def __init__(self, dtype: np.dtype) -> None:
        self.dtype = dtype
        self.values: list[int] = []
        self.kinds: list[int] = []
        self._keep: list[np.ndarray] = []

    def _fixed(self, buf: np.ndarray) -> None:
        self._keep.append(buf)
        self.values.append(buf.ctypes.data)
        self.kinds.append(calls.FIXED)

    def letter(self, ch: bytes) -> None:
        self._fixed(np.frombuffer(ch + b"\0", np.uint8).copy())

    def int(self, value: int) -> None:
        self._fixed(np.array([value], np.int32))

    def scalar(self, value: complex, real: bool = False) -> None:
        dt = np.dtype(self.dtype.char.lower()) if real and self.dtype.kind == "c" else self.dtype
        self._fixed(np.array([value.real if real or dt.kind != "c" else value], dt))

    def member(self, ptr: int) -> None:
        self.values.append(ptr & ((1 << SLOT_BITS) - 1))
        self.kinds.append(ptr >> SLOT_BITS)

    def info(self) -> None:
        self.values.append(0)
        self.kinds.append(calls.INFO)


class BatchedCPUExecutor(Executor):
    """Primitives over every active member of a batch, BLAS/LAPACK by function pointer.

    Parameters
    ----------
    dtype : numpy.dtype
    ptrs : int64 array (slots, members)
        Address of memory element (0, 0) of each member of each operand.
    threads : int
        Threads of the parallel loops.

    Attributes
    ----------
    active : uint8 array (members)
        Members still being computed (cleared by a failure).
    """

    backend = "batched_cpu"
    xp = np

    def __init__(self, dtype: np.dtype, ptrs: np.ndarray, threads: int) -> None:
        super().__init__(dtype)
        self.ptrs = np.ascontiguousarray(ptrs, dtype=np.int64)
        members = self.ptrs.shape[1]
        self.threads = threads
        self._infos = np.zeros(members, np.int64)
        self.active = np.ones(members, np.uint8)
        self._cell = np.zeros(members, np.int32)

    @property
    def info(self) -> np.ndarray:
        """Per member: 0, or the LAPACK info of its first failure."""
        return self._infos

    def fail(self, members: np.ndarray, info: np.ndarray) -> None:
        """Record failures found outside the leaves (``info`` per member of ``members``)."""
        self._infos[members] = info
        self.active[members] = 0

    def _record(self, status: np.ndarray, offset: int) -> bool:
        """Note the failing members of a leaf; the recursion always goes on with the others."""
        failed = np.flatnonzero(status)
        if failed.size:
            self.fail(failed, status[failed] + offset)
        return True

    def _run(self, name: str, args: _Args) -> np.ndarray:
        self._cell[:] = 0
        calls.for_members(calls.address(name), np.array(args.values, np.int64),
                          np.array(args.kinds, np.int64), self.ptrs, self.active, self._cell,
                          self.threads)
        return self._cell

    def raw_gemm(self, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        args = _Args(self.dtype)
        args.letter(ta)
        args.letter(tb)
        for v in (m, n, k):
            args.int(v)
        args.scalar(alpha)
        args.member(a)
        args.int(lda)
        args.member(b)
        args.int(ldb)
        args.scalar(beta)
        args.member(c)
        args.int(ldc)
        self._run(prefix(self.dtype) + "gemm", args)

    def _call_trxm(self, kind, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb):
        args = _Args(self.dtype)
        for ch in (side, uplo, trans, diag):
            args.letter(ch)
        args.int(m)
        args.int(n)
        args.scalar(alpha)
        args.member(a)
        args.int(lda)
        args.member(b)
        args.int(ldb)
        self._run(prefix(self.dtype) + kind, args)

    def raw_trsm(self, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb):
        self._call_trxm("trsm", side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb)

    def raw_trmm(self, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb):
        self._call_trxm("trmm", side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb)

    def raw_herk(self, uplo, trans, n, k, alpha, a, lda, beta, c, ldc):
        args = _Args(self.dtype)
        args.letter(uplo)
        args.letter(trans)
        args.int(n)
        args.int(k)
        args.scalar(alpha, real=True)
        args.member(a)
        args.int(lda)
        args.scalar(beta, real=True)
        args.member(c)
        args.int(ldc)
        self._run(prefix(self.dtype) + ("herk" if self.complex else "syrk"), args)

    def _lapack(self, name, letters, n, a, lda):
        args = _Args(self.dtype)
        for ch in letters:
            args.letter(ch)
        args.int(n)
        args.member(a)
        args.int(lda)
        args.info()
        return self._run(prefix(self.dtype) + name, args).copy()

    def raw_potrf(self, uplo, n, a, lda):
        return self._lapack("potrf", (uplo,), n, a, lda)

    def raw_trtri(self, uplo, diag, n, a, lda):
        return self._lapack("trtri", (uplo, diag), n, a, lda)

    def raw_lauum(self, uplo, n, a, lda):
        self._lapack("lauum", (uplo,), n, a, lda)
