"""The CPU engine of the batched operations: SIMD lane kernels for small matrices, and the
recursions over a per-member BLAS executor for larger ones.

Each method receives canonical logical views (see :mod:`tricov.batched._api`): a triangle
that is lower or upper, a lower factor, a lower triangle of C, operands that may be
transposed or conjugated views of memory, and the addresses of the members of each operand
(:class:`~tricov.batched._operands.Group`). Which path runs is decided per call:

* order ``n`` at most :data:`LANES_MAX` of the operation (:data:`LANES_MAX_FEW_RHS` with few
  right-hand sides) and a scratch of at most :data:`SCRATCH_BYTES` per thread: the lane
  kernels of :mod:`tricov.kernels.numba.small`,
  one canonical variant per operation, every other variant reached through the pack
  descriptors below, POSV/POTRS/POTRI/POTI fused;
* larger: :class:`~tricov.backends.batched_cpu.BatchedCPUExecutor` under the recursions of
  :mod:`tricov.recursive` (the same code as the dense path), each primitive one parallel loop
  over the members calling SciPy's BLAS/LAPACK, each member in cache for its whole call. With
  the default leaf size (``leaf_sizes('batched_cpu', dtype)``, 128) a member of order up to
  128 is one native call.

The crossover orders were measured on one core of an AVX-512 machine (Zen 4), batches of
1024, float32 to complex128 (the lane kernels win by 1.5-4x below them): the Cholesky family
runs its lane kernels (unblocked, dot-product form, SIMD across members) past OpenBLAS's
per-member calls, while TRMM, SYRK and LAUUM, whose per-member BLAS are GEMM-like, hand over
earlier. Since real POTRF runs by panels of four columns (session 35), POTRF, POSV, POTI and
TRTRI keep the lane kernels up to order 256 (64-128 members, one thread,
``benchmarks/cpu_batched_crossover.txt``): float64 / float32 POTRF 256 2.1 / 2.4x the executor's
speed, POSV 256 with 4 right-hand sides 2.3 / 2.7x, POTI 1.05 / 1.4x, TRTRI 1.02x, complex128
POTRF 160 1.4x. The scratch limit (:data:`SCRATCH_BYTES`: orders up to 256 with a few
right-hand sides) hands many right-hand sides to the executor, whose per-member TRSM gains
there (float64 POTRS of 160 with 160 right-hand sides 0.85x on the lanes, POSV of 256 with 256
0.78x). POTRS stays at 128 (with as
many right-hand sides as the order, 0.98x there, 0.85x at 160), POTRI too (1.24x at 160, 0.75x
at 256).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numba
import numpy as np

from .. import _options as opt
from .. import recursive
from .._policy import leaf_sizes
from .._views import Mat
from ..backends.base import herk_ops_ok, trxm_ops_ok
from ..backends.batched_cpu import BatchedCPUExecutor
from ..backends.cpu_blas import one_thread
from ..kernels.numba import members, small
from ._operands import Group, slot_of

__all__ = ["FEW_RHS", "LANES_MAX", "LANES_MAX_FEW_RHS", "SCRATCH_BYTES", "CPUEngine"]

#: Largest order run by the lane kernels, per operation (the executor runs above).
LANES_MAX = {"trsm": 96, "trmm": 32, "herk": 64, "potrf": 256, "trtri": 256, "lauum": 80,
             "potri": 128, "poti": 256, "potrs": 128, "posv": 256}
#: Right-hand sides up to which :data:`LANES_MAX_FEW_RHS` applies.
FEW_RHS = 8
#: Largest order run by the lane kernels with at most :data:`FEW_RHS` right-hand sides, where
#: it is above :data:`LANES_MAX`: there the executor's per-member solves are matrix-vector
#: work, and the lanes ran 1.1-2.3x faster up to 256 in every dtype (one thread,
#: ``benchmarks/cpu_batched_crossover.txt``: float64 TRSM 256 x 4 1.49x, POTRS 256 x 1 1.63x,
#: 256 x 8 1.28x / 1.59x); with 16 or more the executor catches up (float32 TRSM 256 x 16
#: 0.93x, float64 256 x 32 0.89x).
LANES_MAX_FEW_RHS = {"trsm": 256, "potrs": 256}
#: Largest scratch of the lane kernels per thread (bytes, twice as many for complex data),
#: beyond which the executor runs. Complex data of order 256 with few right-hand sides ran on
#: the lanes at 1.2-2.3x the executor's speed (POTRF, POSV, POTRS, TRSM, TRTRI and POTI in
#: complex64; complex128 TRTRI 0.95x and POTI 0.99x, the rest 1.2-1.7x).
SCRATCH_BYTES = 5 << 20


@contextlib.contextmanager
def _one_blas_thread(threads: int) -> Iterator[None]:
    """Keep BLAS single-threaded inside the parallel member loops."""
    if threads <= 1:
        yield
        return
    with one_thread():
        yield


class CPUEngine:
    """Batched operations on the members of one group, on the CPU.

    Parameters
    ----------
    dtype : numpy.dtype
    group : Group
    """

    def __init__(self, dtype: np.dtype, group: Group) -> None:
        self.dtype = np.dtype(dtype)
        self.complex = self.dtype.kind == "c"
        self.group = group
        self.zero = self.dtype.type(0)
        self.threads = numba.get_num_threads()
        self._lanes = small.lanes_for(self.dtype)

    # ------------------------------------------------------------------ helpers
    def _small(self, op: str, n: int, m: int = 0) -> bool:
        """Whether the lane kernels run ``op`` on order ``n`` with ``m`` right-hand sides."""
        real = self.dtype.itemsize // (2 if self.dtype.kind == "c" else 1)
        scratch = (n + 1) * (n + m + 1) * self._lanes * real
        largest = LANES_MAX[op]
        if m <= FEW_RHS:
            largest = max(largest, LANES_MAX_FEW_RHS.get(op, 0))
        return n <= largest and scratch <= SCRATCH_BYTES

    def replayable(self, op: str, n: int, m: int = 0) -> bool:
        """Whether ``op`` of order ``n`` runs as lane kernels alone (what a replay repeats,
        :mod:`tricov.batched._replay`)."""
        return self._small(op, n, m)

    def _addrs(self, view: Mat) -> np.ndarray:
        slot, offset = slot_of(view)
        return self.group.ptrs[slot] + offset if offset else self.group.ptrs[slot]

    def _desc(self, view: Mat, rev: bool) -> tuple:
        """Pack descriptor of a canonical view: addresses, ld, transposed, reversed, conj."""
        return (self._addrs(view), view.ld, view.t, rev, self.complex and opt.has_c(view.op))

    def _run(self, op: int, t: Mat, *, r: Mat | None = None, n: int, m: int = 0,
             rev: bool = False, unit: bool = False, alpha: complex = 1.0,
             beta: float = 0.0) -> np.ndarray:
        info = np.zeros(self.group.size, np.int64)
        tdesc = self._desc(t, rev)
        rdesc = self._desc(r, rev) if r is not None else tdesc
        small.run(op, self.dtype, n, m, unit, alpha, beta, tdesc, rdesc, info, self.threads)
        return info

    def _executor(self) -> BatchedCPUExecutor:
        return BatchedCPUExecutor(self.dtype, self.group.ptrs, self.threads)

    def _nb(self):
        return leaf_sizes("batched_cpu", self.dtype)

    def _conj(self, ex: BatchedCPUExecutor, view: Mat) -> None:
        """Conjugate every active member's memory block of ``view`` in place."""
        members.conj_members(self._addrs(view), ex.active, view.mrows, view.mcols, view.ld,
                             self.zero, self.threads)

    def _trxm(self, ex: BatchedCPUExecutor, rec, tri: Mat, lower: bool, unit: bool,
              alpha: complex, b: Mat) -> None:
        """A triangular recursion; B conjugated around it where BLAS cannot express the op."""
        flip = not trxm_ops_ok(tri, b, self.complex)
        if flip:
            self._conj(ex, b)
            b = b.conj
        try:
            rec(ex, self._nb(), lower, unit, alpha, tri, b)
        finally:
            if flip:
                self._conj(ex, b)

    def _scan(self, ex: BatchedCPUExecutor, a: Mat, nan: bool) -> None:
        """Fail the active members whose diagonal has a NaN (``nan``) or an exact zero.

        Before TRTRI, a zero pivot (LAPACK would stop there, leaving the member changed); after
        POTRF, a NaN pivot, which OpenBLAS does not test (a NaN anywhere in the triangle
        reaches the diagonal of the factor in its own row, where reference LAPACK stops).
        """
        info = np.zeros(self.group.size, np.int64)
        members.scan_diagonals(self._addrs(a), ex.active, a.rows,
                               (a.ld + 1) * self.dtype.itemsize, nan, self.zero, info,
                               self.threads)
        failed = np.flatnonzero(info)
        if failed.size:
            ex.fail(failed, info[failed])

    def _potrf(self, ex: BatchedCPUExecutor, a: Mat) -> None:
        recursive.potrf(ex, self._nb(), a)
        self._scan(ex, a, True)

    # --------------------------------------------------------------- operations
    def trsm(self, tri: Mat, lower: bool, unit: bool, alpha: complex, b: Mat) -> None:
        """Solve ``tri X = alpha B`` for every member, X over B (tri lower or upper)."""
        n, m = b.rows, b.cols
        if self._small("trsm", n, m):
            self._run(small.TRSM, tri, r=b, n=n, m=m, rev=not lower, unit=unit, alpha=alpha)
            return
        ex = self._executor()
        with _one_blas_thread(self.threads):
            self._trxm(ex, recursive.trsm, tri, lower, unit, alpha, b)

    def trmm(self, tri: Mat, lower: bool, unit: bool, alpha: complex, b: Mat) -> None:
        """``B <- alpha tri B`` for every member."""
        n, m = b.rows, b.cols
        if self._small("trmm", n, m):
            self._run(small.TRMM, tri, r=b, n=n, m=m, rev=not lower, unit=unit, alpha=alpha)
            return
        ex = self._executor()
        with _one_blas_thread(self.threads):
            self._trxm(ex, recursive.trmm, tri, lower, unit, alpha, b)

    def herk(self, alpha: float, a: Mat, beta: float, c: Mat) -> None:
        """Lower triangle of ``C <- alpha A A^H + beta C`` for every member."""
        n, k = c.rows, a.cols
        if self._small("herk", n, k):
            self._run(small.HERK, c, r=a, n=n, m=k, alpha=alpha, beta=beta)
            return
        ex = self._executor()
        flip = not herk_ops_ok(a, c, self.complex)
        with _one_blas_thread(self.threads):
            if flip:
                self._conj(ex, c)
                c = c.conj
            try:
                recursive.herk(ex, self._nb(), alpha, a, beta, c)
            finally:
                if flip:
                    self._conj(ex, c)

    def potrf(self, a: Mat) -> np.ndarray:
        """Lower Cholesky factor of every member in place; per-member info."""
        n = a.rows
        if self._small("potrf", n):
            return self._run(small.POTRF, a, n=n)
        ex = self._executor()
        with _one_blas_thread(self.threads):
            self._potrf(ex, a)
        return ex.info

    def trtri(self, a: Mat, unit: bool) -> np.ndarray:
        """Inverse of every member's lower triangle; members with a zero pivot unchanged."""
        n = a.rows
        if self._small("trtri", n):
            return self._run(small.TRTRI, a, n=n, unit=unit)
        ex = self._executor()
        if not unit:
            self._scan(ex, a, False)
        with _one_blas_thread(self.threads):
            recursive.trtri(ex, self._nb(), unit, a)
        return ex.info

    def lauum(self, a: Mat) -> None:
        """``L^H L`` into every member's lower triangle."""
        n = a.rows
        if self._small("lauum", n):
            self._run(small.LAUUM, a, n=n)
            return
        ex = self._executor()
        with _one_blas_thread(self.threads):
            recursive.lauum(ex, self._nb(), a)

    def potri(self, a: Mat) -> np.ndarray:
        """Inverse from the lower Cholesky factor (TRTRI then LAUUM), fused where small."""
        n = a.rows
        if self._small("potri", n):
            return self._run(small.POTRI, a, n=n)
        ex = self._executor()
        self._scan(ex, a, False)
        with _one_blas_thread(self.threads):
            recursive.trtri(ex, self._nb(), False, a)
            recursive.lauum(ex, self._nb(), a)
        return ex.info

    def poti(self, a: Mat) -> np.ndarray:
        """Inverse of SPD members (POTRF, TRTRI, LAUUM), fused where small."""
        n = a.rows
        if self._small("poti", n):
            return self._run(small.POTI, a, n=n)
        ex = self._executor()
        with _one_blas_thread(self.threads):
            self._potrf(ex, a)
            recursive.trtri(ex, self._nb(), False, a)
            recursive.lauum(ex, self._nb(), a)
        return ex.info

    def _solves(self, ex: BatchedCPUExecutor, lv: Mat, b: Mat) -> None:
        self._trxm(ex, recursive.trsm, lv, True, False, 1.0, b)
        self._trxm(ex, recursive.trsm, lv.H, False, False, 1.0, b)

    def potrs(self, lv: Mat, b: Mat) -> None:
        """Solve ``L L^H X = B`` for every member, X over B."""
        n, m = b.rows, b.cols
        if self._small("potrs", n, m):
            self._run(small.POTRS, lv, r=b, n=n, m=m)
            return
        ex = self._executor()
        with _one_blas_thread(self.threads):
            self._solves(ex, lv, b)

    def posv(self, a: Mat, b: Mat) -> np.ndarray:
        """Factor and solve, fused where small; failing members keep B unchanged."""
        n, m = b.rows, b.cols
        if self._small("posv", n, m):
            return self._run(small.POSV, a, r=b, n=n, m=m)
        ex = self._executor()
        with _one_blas_thread(self.threads):
            self._potrf(ex, a)
            self._solves(ex, a, b)
        return ex.info
