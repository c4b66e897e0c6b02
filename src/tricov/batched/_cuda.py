"""The GPU engine of the batched operations: register kernels for small matrices, and the
recursions over a batched cuBLAS executor for larger ones.

Each method receives the canonical logical views of :mod:`tricov.batched._api` (as
:class:`~tricov.batched._cpu.CPUEngine` does) and the addresses of the members
(:class:`~tricov.batched._operands.Group`), and enqueues its work on the current CuPy stream
without waiting for the device; operations that can fail return their per-member info as a
device array, which the front end reads once, at the end of the call.

* Order ``n`` at most :func:`~tricov.backends.batched_cuda.small_max` (32; 16 for
  complex128): one launch of the register kernel of ``kernels/cuda/batched_small.cu``, a group
  of lanes of one warp per member, every operation in one canonical variant, the others reached
  through how operands are read (transposed, conjugated, reversed), POSV/POTRS/POTRI/POTI fused
  (TRMM, HERK and LAUUM of real types from order 17 on: one launch of a tile kernel of
  ``kernels/cuda/batched_tile.cu`` with tiles of 32, where the register kernels' shuffles cost
  more than the data they move; POTI and POSV run as POTRF then POTRI or POTRS where that was
  measured faster, see :func:`~tricov.backends.batched_cuda.split_small`).
* Larger: :class:`~tricov.backends.batched_cuda.BatchedCUDAExecutor` under the recursions of
  :mod:`tricov.recursive` (the same code as the dense path): cuBLAS batched GEMM in the middle,
  the register kernels at the leaves (``leaf_sizes('batched_gpu', dtype)``, at most the
  kernels' largest order; larger TRMM, HERK and LAUUM leaves of real types on the tile
  kernels, see :func:`~tricov.backends.batched_cuda.leaf_max`). Failing members are skipped
  from their failure on.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from .. import recursive
from .._policy import LeafSizes, leaf_sizes
from .._views import Mat
from ..backends.base import herk_ops_ok, trxm_ops_ok
from ..backends.batched_cuda import (
    BatchedCUDAExecutor,
    leaf_max,
    small_max,
    split_small,
)
from ._operands import Group

__all__ = ["CUDAEngine"]


class CUDAEngine:
    """Batched operations on the members of one group, on their GPU.

    Parameters
    ----------
    dtype : numpy.dtype
    group : Group
        Device members (the current device is theirs).
    """

    def __init__(self, dtype: np.dtype, group: Group) -> None:
        import cupy

        self.dtype = np.dtype(dtype)
        self.complex = self.dtype.kind == "c"
        self.group = group
        self.xp = cupy
        self.limit = small_max(self.dtype)

    # ------------------------------------------------------------------ helpers
    def replayable(self, op: str, n: int, m: int = 0) -> bool:
        """Whether ``op`` of order ``n`` runs as register or tile kernels alone with the
        members' addresses in their parameters (what a replay repeats,
        :mod:`tricov.batched._replay`)."""
        return self.group.ptrs is None and n <= self.limit

    def _executor(self, track: bool = False, fresh: bool = False) -> BatchedCUDAExecutor:
        """An executor; with ``track``, recording failures in an info array, cleared unless
        ``fresh`` (a single kernel writes every member's info itself)."""
        info = None
        if track:
            info = (self.xp.empty if fresh else self.xp.zeros)(self.group.size, dtype=np.int64)
        return BatchedCUDAExecutor(self.dtype, self.group, info)

    def _nb(self) -> LeafSizes:
        """Leaf sizes in force, each at most what the executor's leaf kernels take."""
        nb = leaf_sizes("batched_gpu", self.dtype)
        return replace(nb, **{name: min(getattr(nb, name), leaf_max(self.dtype, name))
                              for name in ("trsm", "trmm", "syrk", "potrf", "trtri", "lauum")})

    def _trxm(self, ex: BatchedCUDAExecutor, rec, tri: Mat, lower: bool, unit: bool,
              alpha: complex, b: Mat) -> None:
        """A triangular recursion; B conjugated around it where cuBLAS cannot express it."""
        flip = not trxm_ops_ok(tri, b, self.complex)
        if flip:
            ex.conjugate(b)
            b = b.conj
        rec(ex, self._nb(), lower, unit, alpha, tri, b)
        if flip:
            ex.conjugate(b)

    def _inverse(self, ex: BatchedCUDAExecutor, a: Mat) -> None:
        """TRTRI then LAUUM of the lower factor ``a`` (members failed so far are skipped)."""
        recursive.trtri(ex, self._nb(), False, a)
        recursive.lauum(ex, self._nb(), a)

    def _solves(self, ex: BatchedCUDAExecutor, lv: Mat, b: Mat) -> None:
        self._trxm(ex, recursive.trsm, lv, True, False, 1.0, b)
        self._trxm(ex, recursive.trsm, lv.H, False, False, 1.0, b)

    # --------------------------------------------------------------- operations
    def trsm(self, tri: Mat, lower: bool, unit: bool, alpha: complex, b: Mat) -> None:
        """Solve ``tri X = alpha B`` for every member, X over B (tri lower or upper)."""
        ex = self._executor()
        if b.rows <= self.limit:
            ex.trsm(lower, unit, alpha, tri, b)
            return
        self._trxm(ex, recursive.trsm, tri, lower, unit, alpha, b)

    def trmm(self, tri: Mat, lower: bool, unit: bool, alpha: complex, b: Mat) -> None:
        """``B <- alpha tri B`` for every member."""
        ex = self._executor()
        if b.rows <= self.limit:
            ex.trmm(lower, unit, alpha, tri, b)
            return
        self._trxm(ex, recursive.trmm, tri, lower, unit, alpha, b)

    def herk(self, alpha: float, a: Mat, beta: float, c: Mat) -> None:
        """Lower triangle of ``C <- alpha A A^H + beta C`` for every member."""
        ex = self._executor()
        if c.rows <= self.limit:
            ex.herk(alpha, a, beta, c)
            return
        flip = not herk_ops_ok(a, c, self.complex)
        if flip:  # the referenced triangle only: the other one is left exactly as it was
            ex.conjugate(c, lower=True)
            c = c.conj
        recursive.herk(ex, self._nb(), alpha, a, beta, c)
        if flip:
            ex.conjugate(c, lower=True)

    def potrf(self, a: Mat) -> Any:
        """Lower Cholesky factor of every member in place; per-member info (device)."""
        if a.rows <= self.limit:
            ex = self._executor(track=True, fresh=True)
            ex.small("potrf", a, n=a.rows, fresh=True)
            return ex.info
        ex = self._executor(track=True)
        recursive.potrf(ex, self._nb(), a)
        return ex.info

    def trtri(self, a: Mat, unit: bool) -> Any:
        """Inverse of every member's lower triangle; members with a zero pivot unchanged."""
        if a.rows <= self.limit:
            ex = self._executor(track=True, fresh=True)
            ex.small("trtri", a, n=a.rows, unit=unit, fresh=True)
            return ex.info
        ex = self._executor(track=True)
        if not unit:
            ex.zero_pivots(a)
        recursive.trtri(ex, self._nb(), unit, a)
        return ex.info

    def lauum(self, a: Mat) -> None:
        """``L^H L`` into every member's lower triangle."""
        ex = self._executor()
        if a.rows <= self.limit:
            ex.lauum(a)
            return
        recursive.lauum(ex, self._nb(), a)

    def potri(self, a: Mat) -> Any:
        """Inverse from the lower Cholesky factor (TRTRI then LAUUM), fused where small."""
        if a.rows <= self.limit:
            ex = self._executor(track=True, fresh=True)
            ex.small("potri", a, n=a.rows, fresh=True)
            return ex.info
        ex = self._executor(track=True)
        ex.zero_pivots(a)
        self._inverse(ex, a)
        return ex.info

    def poti(self, a: Mat) -> Any:
        """Inverse of SPD members (POTRF, TRTRI, LAUUM), fused where small; a failing member
        keeps its partial factorization."""
        if a.rows <= self.limit:
            ex = self._executor(track=True, fresh=True)
            if split_small(self.dtype, "poti", a.rows):
                ex.small("potrf", a, n=a.rows, fresh=True)
                ex.small("potri", a, n=a.rows)  # skips the failed members
            else:
                ex.small("poti", a, n=a.rows, fresh=True)
            return ex.info
        ex = self._executor(track=True)
        recursive.potrf(ex, self._nb(), a)
        self._inverse(ex, a)
        return ex.info

    def potrs(self, lv: Mat, b: Mat) -> None:
        """Solve ``L L^H X = B`` for every member, X over B."""
        ex = self._executor()
        if b.rows <= self.limit:
            ex.small("potrs", lv, r=b, n=b.rows, m=b.cols)
            return
        self._solves(ex, lv, b)

    def posv(self, a: Mat, b: Mat) -> Any:
        """Factor and solve, fused where small; failing members keep B unchanged."""
        n = a.rows
        if n <= self.limit:
            ex = self._executor(track=True, fresh=True)
            if split_small(self.dtype, "posv", n):
                ex.small("potrf", a, n=n, fresh=True)
                if b.cols:
                    ex.small("potrs", a, r=b, n=n, m=b.cols)  # skips the failed members
            else:
                ex.small("posv", a, r=b, n=n, m=b.cols, fresh=True)
            return ex.info
        ex = self._executor(track=True)
        recursive.potrf(ex, self._nb(), a)
        if b.cols:
            self._solves(ex, a, b)
        return ex.info
