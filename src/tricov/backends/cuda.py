"""The GPU executor: cuBLAS, cuSOLVER and tricov's CUDA kernels on CuPy memory.

Every primitive is enqueued on the caller's current CuPy stream and nothing waits for the
device inside an operation: leaf failures land in device memory and are read once, when the
front end asks for :attr:`CUDAExecutor.info`.

GEMMs and HERKs are cuBLAS's. The leaves are tricov's own kernels (``kernels/cuda/leaves.cu``)
wherever they fit, since cuBLAS TRSM/TRMM and cuSOLVER's POTRF/TRTRI run far below GEMM speed
on leaf-sized blocks:

* TRSM/TRMM leaves (triangles up to a few hundred rows, any number of right-hand sides):
  ``tri_leaf``, a band of columns of B per block of threads in shared memory. Before a
  recursive TRSM, :meth:`CUDAExecutor.prepare_trsm` inverts the diagonal blocks of the triangle
  in one launch (``tri_inv``) and flags the blocks whose Skeel condition number is at most
  :attr:`CUDAExecutor.inverse_cond`. Where the leaves are those blocks, the solve runs into a
  workspace (:func:`tricov.backends.staged.solve`) and each leaf is a GEMM with the inverse,
  preceded by ``tri_leaf`` gated on the block's flag: it substitutes in place where the block
  failed the test (its stored inverse is then the identity) and returns at once elsewhere, so
  ill-conditioned triangles keep the backward error of substitution. Other leaves run
  ``tri_leaf`` in place, multiplying by the inverses of the blocks that passed.
* Staged TRMMs (:mod:`tricov.backends.staged`) run their leaves as one batched GEMM.
* POTRF, TRTRI and LAUUM leaves up to :func:`tricov.kernels.block_order` (128, or 64 for
  complex128): one block of threads on the whole leaf in shared memory.
* POTRF leaves from there up to :attr:`CUDAExecutor.tile_potrf` rows (1792 to 2560 by dtype,
  :data:`tricov.kernels.TILE_POTRF`):
  ``potrf_tiles``, tiles of 32 x 32 taken by as many blocks of threads as fit on the device,
  in one launch. cuSOLVER's POTRF runs column by column at order <= 4096 (about 0.43 us a
  column on an H100 at every order, benchmarks/gpu_potrf_apis_h100.txt); the tiles' chain of
  diagonal tiles takes about 0.24 us a column. The same launch takes a panel of POTRF's
  recursion (:meth:`CUDAExecutor.potrf_panel`): the leaf and the rows below it, whose tiles
  fill the multiprocessors the chain leaves idle, so that the panel's TRSM costs little more
  than the leaf (leaf sizes' ``potrf_panel``; float32 from 2305 rows).

Larger leaves (leaf sizes set above those limits) go to cuBLAS and cuSOLVER.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _options as opt
from .. import _precision
from .._views import Mat
from ..kernels import (
    THREADS,
    TILE_BLOCKS,
    TILE_POTRF,
    block_order,
    cond_split,
    leaf_shape,
    leaf_smem,
    nvrtc,
    square_smem,
    tf32_narrow_smem,
    tf32_narrow_tiling,
    tile_smem,
)
from . import cuda_libs as lib
from . import staged
from .base import Executor

__all__ = ["CUDAExecutor", "NARROW", "zero_pivot"]

#: Right-hand sides at or below which triangular leaves use tricov's own kernel (all, by
#: default).
NARROW = 1 << 30
#: Most blocks along z of one launch (CUDA's grid limit).
_GRID_Z = 65535
#: Largest depth of one split-TF32 GEMM of a product whose split operands exceed the budget
#: (CUDAExecutor.split_bytes): such products run in blocks of rows, columns and depth.
_SPLIT_DEPTH = 4096
#: Leaf statuses per device allocation (read back with one copy each).
_STATUS_SLOTS = 64


def _diag_find(dtype: np.dtype, n: int, a: int, step: int, status: int, zero: bool) -> None:
    """Queue ``diag_find`` (triangular.cu): the 1-based index of the first NaN (or, with
    ``zero``, exactly zero) of the ``n`` elements ``step`` elements apart from address ``a``,
    else 0, into the int32 at ``status``."""
    expr = f"tricov::diag_find<{nvrtc.CTYPE[np.dtype(dtype)]}, {'true' if zero else 'false'}>"
    nvrtc.function("triangular.cu", expr)((1,), (256,), (
        np.int32(n), np.uint64(a), np.int64(step), np.uint64(status)))


def zero_pivot(arr: Any) -> int:
    """The 1-based index of the first exact zero on the diagonal of the square CuPy array
    ``arr`` (any strides), else 0: one kernel and one read of its result, where CuPy's
    ``flatnonzero(diagonal(arr) == 0)`` took about 100 microseconds of launches and copies."""
    import cupy

    n, size = arr.shape[0], arr.dtype.itemsize
    step, rem = divmod(arr.strides[0] + arr.strides[1], size)
    if rem:  # strides that are not whole elements apart
        zeros = cupy.flatnonzero(cupy.diagonal(arr) == 0)
        return int(zeros[0]) + 1 if zeros.size else 0
    if not n:
        return 0
    status = cupy.empty(1, np.int32)
    _diag_find(arr.dtype, n, arr.data.ptr, step, status.data.ptr, zero=True)
    return int(lib.read_small(status)[0])


def _scalar_buffer(dtype: np.dtype, *values: complex, real: bool = False) -> np.ndarray:
    kind = np.dtype(dtype)
    if real:
        kind = np.dtype(np.float32 if kind in (np.float32, np.complex64) else np.float64)
    return np.array(values, dtype=kind)


class _Inverses:
    """The inverted diagonal blocks of one TRSM's triangle (see ``prepare_trsm``).

    ``blocks`` and ``flags``: every diagonal block of ``block`` rows (the last one shorter),
    tri_leaf's sub-blocks. ``leaves`` and ``leaf_flags``: the first ``complete`` diagonal
    blocks of ``leaf`` rows, a multiple of ``block`` (the same arrays where they are equal).
    """

    __slots__ = ("block", "blocks", "complete", "flags", "key", "leaf", "leaf_flags", "leaves",
                 "ptr", "rows", "step")

    def __init__(self, a: Mat, op: int, lower: bool, unit: bool, rows: int, block: int,
                 blocks: Any, flags: Any) -> None:
        self.ptr, self.rows, self.block = a.ptr, rows, block
        self.key = (a.ld, op, lower, unit, a.itemsize)
        self.step = (a.ld + 1) * a.itemsize  # bytes from one diagonal element to the next
        self.blocks, self.flags = blocks, flags
        self.leaf, self.leaves, self.leaf_flags = block, blocks, flags
        self.complete = -(-rows // block)

    def _first(self, a: Mat, op: int, lower: bool, unit: bool, rows: int,
               block: int) -> int | None:
        """Index of the diagonal block of ``block`` rows where the block ``a`` starts."""
        if (a.ld, op, lower, unit, a.itemsize) != self.key:
            return None
        first, rem = divmod(a.ptr - self.ptr, self.step)
        if rem or first < 0 or first % block or first + rows > self.rows:
            return None
        return first // block

    def find(self, a: Mat, op: int, lower: bool, unit: bool, rows: int) -> tuple[int, int] | None:
        """Addresses of the inverse and flag of the first block of the diagonal block ``a``."""
        q = self._first(a, op, lower, unit, rows, self.block)
        if q is None:
            return None
        return (self.blocks.data.ptr + q * self.block * self.block * a.itemsize,
                self.flags.data.ptr + 4 * q)

    def find_leaf(self, a: Mat, op: int, lower: bool, unit: bool,
                  rows: int) -> tuple[int, int] | None:
        """Addresses of the inverse (leading dimension :attr:`leaf`) and flag of the diagonal
        block ``a`` of at most :attr:`leaf` rows, if it has one."""
        q = self._first(a, op, lower, unit, rows, self.leaf)
        if q is None or rows > self.leaf or q >= self.complete:
            return None
        return (self.leaves.data.ptr + q * self.leaf * self.leaf * a.itemsize,
                self.leaf_flags.data.ptr + 4 * q)


def _hopper() -> bool:
    """Whether the current device is a Hopper GPU (compute capability 9.0), the only one whose
    code may use sm_90a's instructions (:data:`tricov.kernels.nvrtc.ARCH`)."""
    return nvrtc.capability() == "90"


def _whole_tiles(extent: int) -> int:
    """``extent`` rounded down to a multiple of 256 (cuBLAS's tiles), where it is that long."""
    return extent // 256 * 256 if extent >= 256 else max(extent, 1)


class CUDAExecutor(Executor):
    """Primitives on CuPy memory of the current device, on the current stream."""

    backend = "gpu"
    nan_pivots_reported = True  # tricov's leaf tests them; cuSOLVER's get a test kernel
    #: Right-hand sides at or below which triangular leaves use tricov's own kernel.
    narrow = NARROW
    #: Right-hand sides from which the triangular leaf kernel takes its wide configuration.
    wide = 2048
    #: Skeel condition number ``|| |T^-1| |T| ||_inf`` up to which a TRSM leaf multiplies by
    #: the inverse of a diagonal block rather than substituting. Measured normwise backward
    #: errors of inverse-based solves grow like ``1e-3 * cond * eps`` on adversarial right-hand
    #: sides: at 1024 they stay at the level of substitution (about one eps).
    inverse_cond = 1024.0
    #: Largest TRSM leaf whose inverse is assembled from those of its diagonal blocks (the
    #: leaf is then one GEMM); longer leaves substitute block by block in ``tri_leaf``.
    inverse_leaf = 1024
    #: HERK leaves with ``k >= herk_by_gemm * n`` and fewer than ``herk_native`` rows run as a
    #: GEMM plus a triangle update; the others on cuBLAS SYRK/HERK, which is the faster from
    #: about 2048 rows (real dtypes on one H100; the recursion hands such C over whole up to
    #: ``LeafSizes.syrk_split`` rows, see ``_policy``).
    herk_by_gemm = 1
    herk_native = 2048
    #: Bytes of the copy of B a staged TRMM, or of the workspace a TRSM solves into, takes at
    #: most (wider B goes in panels). 512 MiB rather than 256: float64 TRSM of 8192² (whole)
    #: and 16384² (panels of 4096 columns) ran 1.03 / 1.02x as fast, its leaves' GEMMs twice
    #: as wide; TRMM and float32 within 1% (one H100, benchmarks/gpu_stage_bytes_h100.txt).
    stage_bytes = 1 << 29
    #: POTRF leaves of more than the shared-memory kernel's block and at most this many rows
    #: are factored by tiles (``potrf_tiles``, not complex128); larger ones by cuSOLVER. None:
    #: the measured limit of the dtype (:data:`tricov.kernels.TILE_POTRF`), beyond which the
    #: tiles' products, not their chain of diagonal tiles, set the pace.
    tile_potrf: int | None = None
    #: In :meth:`potrf_panel`'s launch, the tiles below the leaf trail the leaf's own by this
    #: many columns of tiles.
    panel_lag = 8
    #: float32 GEMMs of ``m x n x k`` with ``m n >= split_rows (m + n)`` and
    #: ``2 k >= split_rows`` run as one split-TF32 GEMM (:mod:`tricov._precision`) while that is
    #: enabled: splitting the operands reads ``(m + n) k`` elements and writes three times as
    #: many, which pays where the product's ``m n k`` is large against them. 384 rather than 512
    #: splits the products of 512 rows against 4096 and more columns too (TRSM's lowest levels
    #: and leaves): STRSM 4096² / 8192² 1.15 / 1.08x as fast, POTRS 4096² 1.17x, the rest within
    #: noise (benchmarks/gpu_split_rows_h200.txt).
    split_rows = 384
    #: Bytes of device memory the split operands of one GEMM may take at most (larger ones run
    #: on FP32, as do those whose workspace cannot be allocated).
    split_bytes = 1 << 30
    #: float32 GEMMs too narrow for a split-TF32 GEMM (``m n < split_rows (m + n)``: few
    #: columns, as in a TRSM or TRMM with few right-hand sides) whose rows and depth are both at
    #: least ``fused_tf32`` run, on Hopper GPUs (sm_90) and where op(A) is A, as one fused
    #: split-TF32 kernel (``kernels/cuda/tf32_narrow.cu``: A split in registers, B's parts
    #: written once). Against cuBLAS's SGEMM on one H100, with 256 / 128 / 64 columns: 1.41 /
    #: 1.31 / 1.21x as fast at 2048 rows and depth, 1.22-1.75x from 4096 to 8192, 0.79-0.96x at
    #: 1024 (``benchmarks/gpu_fused_tf32_h100.txt``). 0 turns it off.
    fused_tf32 = 2048
    #: float32 SYRKs ``C = alpha A A^T + beta C`` of at least this many rows (A not
    #: transposed) run as the same fused kernel on C's triangle (its blocks wholly outside it
    #: skipped, the diagonal's elements masked) where it can, instead of cuBLAS's SSYRK on the
    #: FP32 units: 4096 x 512 35.7-37.7 against 29.1-32.0 TFLOP/s on one H100, SPOTRF 4096 /
    #: 8192 (its trailing matrices' SYRKs) 14.7-15.0 -> 15.3 and 29.6-29.8 -> 33.3-33.5
    #: (``benchmarks/gpu_fused_syrk_h100.txt``). 0 turns it off.
    fused_syrk = 2048

    def __init__(self, dtype: np.dtype, blas_handle: int | None = None) -> None:
        import cupy

        super().__init__(dtype)
        self.xp = cupy
        self._stream = cupy.cuda.get_current_stream().ptr
        self._hb = lib.bind_blas(self._stream, blas_handle)
        self._solver: int | None = None  # bound on first use: only cuSOLVER leaves need it
        self._statuses: list[tuple[int, int, int]] = []  # (chunk, slot, offset) per leaf
        self._chunks: list[Any] = []  # device words the leaves write their statuses to
        self._used = _STATUS_SLOTS
        self._keep: list[Any] = []  # workspaces alive until the stream has used them
        self._inverses: _Inverses | None = None
        self._stage: Any = None  # B's copy for staged TRMMs
        self._splits: Any = None  # split operands of split-TF32 GEMMs, reused product to product
        self._ctype = nvrtc.CTYPE[self.dtype]
        self._sb = block_order(self.dtype.itemsize)

    @classmethod
    def settings(cls) -> tuple:
        return (cls.narrow, cls.wide, cls.inverse_cond, cls.inverse_leaf, cls.herk_by_gemm,
                cls.herk_native, cls.stage_bytes, cls.tile_potrf, cls.panel_lag, cls.split_rows,
                cls.split_bytes, cls.fused_tf32, cls.fused_syrk, _precision.split_tf32_enabled())

    # ------------------------------------------------------------ failures
    def _record(self, status: tuple[int, int], offset: int) -> bool:
        self._statuses.append((*status, offset))
        return True

    @property
    def info(self) -> int:
        if not self._statuses:
            return 0
        words = self._chunks[0] if len(self._chunks) == 1 else self.xp.concatenate(self._chunks)
        words = lib.read_small(words)  # one read of every status
        for chunk, slot, offset in self._statuses:
            value = int(words[chunk * _STATUS_SLOTS + slot])
            if value:
                return offset + value
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

    def _launch(self, expr: str, grid: int, args: tuple, smem: int) -> None:
        kernel = nvrtc.function("leaves.cu", expr)
        nvrtc.allow_shared(kernel, smem)
        kernel((grid,), (THREADS,), args, shared_mem=smem)

    def _status(self) -> tuple[int, int]:
        """A device word for a leaf's status: (chunk, slot) of :attr:`_chunks`."""
        if self._used == _STATUS_SLOTS:
            self._chunks.append(self.xp.empty(_STATUS_SLOTS, dtype=np.int32))
            self._used = 0
        self._used += 1
        return len(self._chunks) - 1, self._used - 1

    def _status_ptr(self, status: tuple[int, int]) -> int:
        chunk, slot = status
        return self._chunks[chunk].data.ptr + 4 * slot

    def status_words(self, *statuses: tuple[int, int]) -> Any:
        """The device words of statuses this executor handed out (:meth:`raw_potrf`,
        :meth:`nan_pivot`), as one int32 array."""
        return self.xp.concatenate([self._chunks[c][s:s + 1] for c, s in statuses])

    # ------------------------------------------------------- triangular leaves
    def prepare_trsm(self, lower: bool, unit: bool, a: Mat, b: Mat, block: int) -> None:
        """Invert the diagonal blocks of ``a`` for a TRSM on ``b`` whose leaves have ``block``
        rows (:class:`_Inverses`): the kernel's blocks (``tri_inv``, each flagged by its
        condition number), and where a leaf spans several of them, the leaves' inverses
        assembled from theirs (:meth:`_double`) and tested again (``tri_cond``, on the row sums
        of ``tri_rows``)."""
        self._inverses = None
        m = b.rows
        if m <= block or not b.cols or b.cols > self.narrow:
            return  # one leaf: it substitutes
        bs = min(self._sb, block)
        count = -(-m // bs)
        blocks = self.xp.empty(count * bs * bs, dtype=self.dtype)
        flags = self.xp.empty(count, dtype=np.int32)
        self._keep += [blocks, flags]
        op = self._op(a)
        real = np.float32 if self.dtype in (np.float32, np.complex64) else np.float64
        expr = f"tricov::tri_inv<{self._ctype}, {self._sb}, false>"
        self._launch(expr, count, (
            np.int32(m), np.int32(bs), np.uint64(a.ptr), np.int64(a.ld), np.int32(op),
            np.int32(lower), np.int32(unit), np.uint64(blocks.data.ptr),
            np.uint64(flags.data.ptr), np.uint64(0), real(self.inverse_cond)),
            square_smem(self.dtype.itemsize))
        inv = self._inverses = _Inverses(a, op, lower, unit, m, bs, blocks, flags)
        wide = b.cols >= self.wide
        if (block == bs or block > self.inverse_leaf
                or leaf_smem(block, self.dtype.itemsize, wide) > nvrtc.shared_max()):
            return  # one block per leaf, or leaves tri_leaf could not substitute if need be
        # Leaves of several blocks: their inverses from the blocks', doubling the order, for
        # the leaves that are whole (the last leaf may be shorter), then tri_inv's test.
        complete = m // block
        leaves, leaf_flags, order = blocks, flags, bs
        while order < block:
            leaves, leaf_flags = self._double(a, lower, order, complete * block // order,
                                              leaves, leaf_flags)
            self._keep += [leaves, leaf_flags]
            order *= 2
        sums = self.xp.empty(complete * block, dtype=real)
        self._keep.append(sums)
        self._launch(f"tricov::tri_rows<{self._ctype}>", complete * block // 32, (
            np.int32(block), np.uint64(a.ptr), np.int64(a.ld), np.int32(op), np.int32(lower),
            np.int32(unit), np.uint64(sums.data.ptr)), 0)
        split = cond_split(block)
        self._launch(f"tricov::tri_cond<{self._ctype}>", complete * split, (
            np.int32(block), np.int32(lower), np.uint64(leaves.data.ptr),
            np.uint64(leaf_flags.data.ptr), np.uint64(sums.data.ptr), real(self.inverse_cond),
            np.int32(split)), 0)
        inv.leaf, inv.leaves, inv.leaf_flags, inv.complete = block, leaves, leaf_flags, complete

    def _double(self, a: Mat, lower: bool, order: int, count: int, blocks: Any,
                flags: Any) -> tuple[Any, Any]:
        """Inverses of the first ``count / 2`` diagonal blocks of ``2 order`` rows of the
        triangle ``a``, from those of its first ``count`` blocks of ``order`` rows (``blocks``,
        ``flags``): ``[[X11, 0], [-X22 A21 X11, X22]]`` for a lower triangle,
        ``[[X11, -X11 A12 X22], [0, X22]]`` for an upper one, in two strided-batched GEMMs.
        The flags are those of both halves; the inverses are not yet tested."""
        s, pairs, size = order, count // 2, self.dtype.itemsize
        out = self.xp.empty((pairs, 2 * s, 2 * s), dtype=self.dtype)  # [p, column, row]
        first = blocks[:count * s * s].reshape(count, s, s)
        step = 2 * s * (a.ld + 1) * size  # from one pair's diagonal block to the next
        steps_x, steps_w = 2 * s * s * size, 4 * s * s * size
        # the product with the first inverse goes to the quadrant that ends up zero, stored
        # conjugate-transposed where A's off-diagonal block is only conjugated (BLAS could
        # not take it)
        scratch_op = opt.C if self._op(a) == opt.R else opt.N
        base = out.data.ptr
        x11 = Mat(blocks.data.ptr, s, s, s, opt.N, size)
        x22 = Mat(blocks.data.ptr + s * s * size, s, s, s, opt.N, size)
        lower_left, upper_right = base + s * size, base + 2 * s * s * size
        if lower:  # W = A21 X11 (upper right), then X21 = -X22 W
            off, first_x, last_x = a.block(s, 2 * s, 0, s), x11, x22
            work, target = upper_right, lower_left
        else:  # W = A12 X22 (lower left), then X12 = -X11 W
            off, first_x, last_x = a.block(0, s, s, 2 * s), x22, x11
            work, target = lower_left, upper_right
        w = Mat(work, s, s, 2 * s, scratch_op, size)
        self.gemm(1.0, off, first_x, 0.0, w, pairs, (step, steps_x, steps_w))
        self.gemm(-1.0, last_x, w, 0.0, Mat(target, s, s, 2 * s, opt.N, size), pairs,
                  (steps_x, steps_w, steps_w))
        if lower:
            out[:, s:, :s] = 0
        else:
            out[:, :s, s:] = 0
        out[:, :s, :s] = first[0::2]
        out[:, s:, s:] = first[1::2]
        both = flags[0:count:2] * flags[1:count:2]
        return out.reshape(-1), both

    def _tri_leaf(self, solve: bool, lower: bool, unit: bool, alpha: complex, a: Mat,
                  b: Mat, gate: int = 0) -> bool:
        """Run ``tri_leaf`` on logical views if the shape suits it (doing nothing if ``gate``
        is the address of a non-zero flag)."""
        n, ncols = b.rows, b.cols
        if ncols > self.narrow:
            return False
        wide = ncols >= self.wide
        smem = leaf_smem(n, self.dtype.itemsize, wide)
        if smem > nvrtc.shared_max():
            return False
        opa = self._op(a)
        found = None
        if solve and self._inverses is not None:
            found = self._inverses.find(a, opa, lower, unit, n)
        inv, flags = found if found else (0, 0)
        sb = self._inverses.block if found else self._sb
        shape = leaf_shape(self.dtype.itemsize, wide)
        expr = (f"tricov::tri_leaf<{self._ctype}, {self._sb}, {shape.cpt}, {shape.kp}, "
                f"{nvrtc.cbool(solve)}, {nvrtc.cbool(lower)}>")
        self._launch(expr, -(-ncols // shape.cols), (
            np.int32(n), np.int32(ncols), np.int32(sb), self.dtype.type(alpha),
            np.uint64(a.ptr), np.int64(a.ld), np.int32(opa), np.uint64(b.ptr), np.int64(b.ld),
            np.int32(self._op(b)), np.int32(unit), np.uint64(inv), np.uint64(flags),
            np.uint64(gate)), smem)
        return True

    def trsm(self, lower: bool, unit: bool, alpha: complex, a: Mat, b: Mat) -> None:
        if b.rows and b.cols and not self._tri_leaf(True, lower, unit, alpha, a, b):
            super().trsm(lower, unit, alpha, a, b)

    def trmm(self, lower: bool, unit: bool, alpha: complex, a: Mat, b: Mat) -> None:
        if b.rows and b.cols and not self._tri_leaf(False, lower, unit, alpha, a, b):
            super().trmm(lower, unit, alpha, a, b)

    def run_trsm(self, lower: bool, unit: bool, a: Mat, b: Mat, block: int,
                 body: Callable[[Executor, Mat], None]) -> None:
        """Invert the diagonal blocks of ``a`` (:meth:`prepare_trsm`); where each leaf is one
        of them, solve out of place between B and a workspace
        (:func:`~tricov.backends.staged.solve`, within :attr:`stage_bytes` per panel), so that
        leaves are GEMMs with the inverses."""
        self.prepare_trsm(lower, unit, a, b, block)
        if self._inverses is None or self._inverses.leaf != block:
            body(self, b)
        else:
            staged.solve(self, b, body, self.stage_bytes)

    def trsm_into(self, lower: bool, unit: bool, alpha: complex, a: Mat, src: Mat,
                  dst: Mat) -> None:
        """``dst <- alpha A^-1 src`` as a GEMM with the inverse of ``A`` from
        :meth:`prepare_trsm`. Where that inverse failed its condition test it is the identity,
        and ``tri_leaf``, gated on the test's flag, solves ``src`` in place by substitution
        first; else it returns at once."""
        n, inverses = src.rows, self._inverses
        found = None
        if inverses is not None and self._op(src) != opt.R:
            found = inverses.find_leaf(a, self._op(a), lower, unit, n)
        if found is None:  # a last leaf of other rows, or a conjugated B GEMM cannot take
            super().trsm_into(lower, unit, alpha, a, src, dst)
            return
        inverse, flag = found
        if not self._tri_leaf(True, lower, unit, 1.0, a, src, gate=flag):
            raise AssertionError("an inverted diagonal block's leaf does not fit tri_leaf")
        size = self.dtype.itemsize
        self.gemm(alpha, Mat(inverse, n, n, inverses.leaf, opt.N, size), src, 0.0, dst)

    def trmm_from(self, lower: bool, unit: bool, alpha: complex, a: Mat, src: Mat, dst: Mat,
                  count: int = 1, steps: tuple[int, int, int] = (0, 0, 0)) -> None:
        """The leaves of a staged TRMM as one strided-batched GEMM: the triangles copied with
        zeros (and ones on a unit diagonal) into a workspace, then ``dst <- alpha tri src``
        (twice the leaves' flops at GEMM speed, far above the leaf kernel's on many blocks)."""
        n, size = a.rows, self.dtype.itemsize
        work = self.xp.empty(max(1, count * n * n), dtype=self.dtype)
        self._keep.append(work)
        self._tri_copy(n, a.ptr, a.ld, work.data.ptr, n, lower != a.t, True, unit, count,
                       (steps[0], n * n * size))
        tri = Mat(work.data.ptr, n, n, n, a.op, size)
        self.gemm(alpha, tri, src, 0.0, dst, count, (n * n * size, steps[1], steps[2]))

    def run_trmm(self, b: Mat, body: Callable[[Executor, Mat], None]) -> None:
        """Record the recursion on each panel of B and run it in batches
        (:class:`~tricov.backends.staged.StagedTrmm`), B's copy within :attr:`stage_bytes`."""
        staged.run(self, b, body, self.stage_bytes)

    def stage_block(self, view: Mat, copy: bool) -> Mat:
        """The memory block of ``view`` in the stage buffer (copied if ``copy``, on the
        stream), as the same logical view with leading dimension its rows."""
        need = view.mrows * view.mcols
        if self._stage is None or self._stage.size < need:  # one buffer serves every stage:
            self._stage = self.xp.empty(max(1, need), dtype=self.dtype)  # the stream orders
            self._keep.append(self._stage)  # its uses
        work = Mat(self._stage.data.ptr, view.mrows, view.mcols, max(1, view.mrows), view.op,
                   view.itemsize)
        if copy:
            self.copy_into(view, work)
        return work

    def copy_into(self, src: Mat, dst: Mat) -> None:
        """Copy the memory block of ``src`` over that of ``dst``, on the stream (an elementwise
        kernel: 1.6 times the rate of cudaMemcpy2DAsync on 256 MiB on an H100)."""
        if src.mrows and src.mcols:
            self.xp.copyto(self._array(dst), self._array(src))

    def _array(self, view: Mat) -> Any:
        """The memory block of ``view`` as a CuPy array (its columns along the first axis),
        without a copy."""
        cuda, size = self.xp.cuda, view.itemsize
        nbytes = ((view.mcols - 1) * view.ld + view.mrows) * size
        memory = cuda.UnownedMemory(view.ptr, nbytes, None, cuda.Device().id)
        return self.xp.ndarray((view.mcols, view.mrows), self.dtype,
                               cuda.MemoryPointer(memory, 0), (view.ld * size, size))

    # -------------------------------------------------------- Cholesky leaves
    def _by_tiles(self, n: int) -> bool:
        """Whether a POTRF leaf of ``n`` rows is factored by tiles."""
        char = self.dtype.char
        tiles = TILE_POTRF.get(char, 0) if self.tile_potrf is None else self.tile_potrf
        return self._sb < n <= tiles and char in TILE_POTRF

    def potrf(self, a: Mat, offset: int) -> bool:
        self._inverses = None
        n = a.rows
        if self._by_tiles(n):
            return self._potrf_tiles(a, n, offset)
        if not n or n > self._sb:
            ok = super().potrf(a, offset)
            if n:  # a second status, read after cuSOLVER's own
                self._record(self.nan_pivot(n, a.ptr, a.ld), offset)
            return ok
        status = self._status()
        self._launch(f"tricov::potrf_leaf<{self._ctype}, {self._sb}>", 1, (
            np.int32(n), np.uint64(a.ptr), np.int64(a.ld), np.int32(self._op(a)),
            np.uint64(self._status_ptr(status))), square_smem(self.dtype.itemsize))
        return self._record(status, offset)

    def _transpose_square(self, n: int, a: int, lda: int) -> None:
        """The ``n x n`` block at ``a`` (leading dimension ``lda``) transposed in place, on the
        stream (``transpose_square`` in triangular.cu)."""
        tiles = -(-n // 32)
        nvrtc.function("triangular.cu", f"tricov::transpose_square<{self._ctype}>")(
            (tiles, tiles), (32, 8), (np.int32(n), np.uint64(a), np.int64(lda)))

    def potrf_panel(self, a: Mat, offset: int) -> bool | None:
        n = a.cols
        if not self._by_tiles(n):
            return None
        self._inverses = None
        return self._potrf_tiles(a, n, offset)

    def _potrf_tiles(self, a: Mat, n: int, offset: int) -> bool:
        """The POTRF leaf of the first ``n`` rows of ``a`` and the solve of the rows below it
        by tiles of 32 in one launch (``potrf_tiles``): as many blocks of threads as it has
        work items or as fit on the device at once, and its flags zeroed before it on the
        stream."""
        m, status = a.rows, self._status()
        t = -(-n // 32)
        rt = t - (-(m - n) // 32)
        flags = self.xp.zeros(1 + t * rt, dtype=np.int32)
        self._keep.append(flags)
        blocks = TILE_BLOCKS[self.dtype.itemsize] * nvrtc.device_attribute("MultiProcessorCount")
        grid = min(1 + t * (t - 1) // 2 + t * (rt - t), blocks)
        self._launch(f"tricov::potrf_tiles<{self._ctype}>", grid, (
            np.int32(m), np.int32(n), np.uint64(a.ptr), np.int64(a.ld), np.int32(self._op(a)),
            np.int32(self.panel_lag), np.uint64(flags.data.ptr),
            np.uint64(self._status_ptr(status))), tile_smem(self.dtype.itemsize))
        return self._record(status, offset)

    def nan_pivot(self, n: int, a: int, lda: int) -> tuple[int, int]:
        """The device status (see :meth:`_status`) of cuSOLVER's POTRF of the ``n x n`` block
        at ``a`` (either triangle) that it does not give: the order of its first NaN pivot
        (LAPACK's info for it), or 0. A NaN anywhere in the triangle reaches the diagonal in
        its own row."""
        status = self._status()
        _diag_find(self.dtype, n, a, lda + 1, self._status_ptr(status), zero=False)
        return status

    def trtri(self, unit: bool, a: Mat, offset: int) -> bool:
        self._inverses = None
        n = a.rows
        if not n or n > self._sb:
            return super().trtri(unit, a, offset)
        status = self._status()
        real = np.float32 if self.dtype in (np.float32, np.complex64) else np.float64
        self._launch(f"tricov::tri_inv<{self._ctype}, {self._sb}, true>", 1, (
            np.int32(n), np.int32(n), np.uint64(a.ptr), np.int64(a.ld), np.int32(self._op(a)),
            np.int32(1), np.int32(unit), np.uint64(0), np.uint64(0),
            np.uint64(self._status_ptr(status)), real(0)), square_smem(self.dtype.itemsize))
        return self._record(status, offset)

    def lauum(self, a: Mat) -> None:
        self._inverses = None
        n = a.rows
        if not n or n > self._sb:
            super().lauum(a)
            return
        self._launch(f"tricov::lauum_leaf<{self._ctype}, {self._sb}>", 1, (
            np.int32(n), np.uint64(a.ptr), np.int64(a.ld), np.int32(self._op(a))),
            square_smem(self.dtype.itemsize))

    # ---------------------------------------------------------------- raw
    def raw_gemm(self, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        self._product(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)

    def raw_gemm_into(self, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, d, ldd):
        self._product(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, (d, ldd))

    def raw_gemm_strided(self, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, count,
                         sa, sb, sc):
        self._product(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, None, count,
                      (sa, sb, sc))

    # ------------------------------------------------------------- products
    def _product(self, ta: bytes, tb: bytes, m: int, n: int, k: int, alpha: complex, a: int,
                 lda: int, b: int, ldb: int, beta: complex, c: int, ldc: int,
                 out: tuple[int, int] | None = None, count: int = 1,
                 steps: tuple[int, int, int] = (0, 0, 0)) -> None:
        """``C <- alpha op(A) op(B) + beta C`` (into ``out = (D, ldd)`` where given; ``count``
        products ``steps`` bytes apart): split-TF32 GEMMs where they pay (:attr:`split_rows`),
        within :attr:`split_bytes` of split operands at a time (groups of members, or blocks
        of one product: rows and columns of C, and depth), else cuBLAS's FP32 GEMMs."""
        if (self.dtype.char != "f" or not _precision.split_tf32_enabled()
                or m * n < self.split_rows * (m + n) or 2 * k < self.split_rows):
            if not (count == 1 and self.fused_tf32 and min(m, k) >= self.fused_tf32
                    and self._fused(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, out)):
                self._gemm(False, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, out,
                           count, steps)
            return
        args = (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
        # the split operands take 12 bytes (three float32 parts) per element of A and B
        group = min(count, self.split_bytes // (12 * (m + n) * k), lib.GEMM_CHUNK)
        for first in range(0, count if group else 0, max(group, 1)):
            shifted = [p + first * s for p, s in zip((a, b, c), steps, strict=True)]
            self._split_gemm(*args[:6], shifted[0], lda, shifted[1], ldb, beta, shifted[2],
                             ldc, out, min(group, count - first), steps)
        if group:
            return
        depth = min(k, _SPLIT_DEPTH)
        budget = self.split_bytes // (12 * depth)  # rows plus columns of a block
        rows = min(m, _whole_tiles(budget // 2))
        cols = min(n, _whole_tiles(budget - rows))
        size = self.dtype.itemsize
        for member in range(count):
            for i, j, p in itertools.product(range(0, m, rows), range(0, n, cols),
                                             range(0, k, depth)):
                # element (i, p) of op(A), (p, j) of op(B), (i, j) of C
                ai = a + member * steps[0] + size * (i * (lda if ta != b"N" else 1)
                                                     + p * (1 if ta != b"N" else lda))
                bj = b + member * steps[1] + size * (j * (1 if tb != b"N" else ldb)
                                                     + p * (ldb if tb != b"N" else 1))
                cij = c + member * steps[2] + size * (i + j * ldc)
                into = None if out is None else (out[0] + size * (i + j * out[1]), out[1])
                if p and into is not None:  # later depths add to D in place
                    cij, ldc_, into = into[0], into[1], None
                else:
                    ldc_ = ldc
                self._split_gemm(ta, tb, min(rows, m - i), min(cols, n - j),
                                 min(depth, k - p), alpha, ai, lda, bj, ldb,
                                 1.0 if p else beta, cij, ldc_, into)

    def _split_gemm(self, ta: bytes, tb: bytes, m: int, n: int, k: int, alpha: complex, a: int,
                    lda: int, b: int, ldb: int, beta: complex, c: int, ldc: int,
                    out: tuple[int, int] | None, count: int = 1,
                    steps: tuple[int, int, int] = (0, 0, 0)) -> None:
        """One split-TF32 call on ``count`` products (FP32 where the split operands cannot
        be allocated): ``A3 = [lo_A, hi_A, hi_A]`` and ``B3 = [hi_B; lo_B; hi_B]`` along the
        depth, and one TF32 GEMM of depth ``3 k``."""
        a3 = self._split_space(12 * (m + n) * k * count)
        if a3 is None:
            self._gemm(False, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, out, count,
                       steps)
            return
        b3 = a3 + 12 * m * k * count
        # A's depth runs down its stored rows where op(A) transposes; B's where op(B) does not.
        lda3, sa3 = self._split_into((k, m) if ta != b"N" else (m, k), ta != b"N", a, lda,
                                     steps[0], a3, count, 0b001)
        ldb3, sb3 = self._split_into((k, n) if tb == b"N" else (n, k), tb == b"N", b, ldb,
                                     steps[1], b3, count, 0b010)
        self._gemm(True, ta, tb, m, n, 3 * k, alpha, a3, lda3, b3, ldb3, beta, c, ldc, out,
                   count, (sa3, sb3, steps[2]))

    def _split_space(self, nbytes: int) -> int | None:
        """The address of ``nbytes`` of workspace for split operands (reused product to
        product; kept alive until the stream has used it), or None where it cannot be
        allocated."""
        if self._splits is None or self._splits.nbytes < nbytes:
            import cupy

            try:
                self._splits = self.xp.empty(nbytes, dtype=np.uint8)
            except cupy.cuda.memory.OutOfMemoryError:
                return None
            self._keep.append(self._splits)
        return self._splits.data.ptr

    def _fused(self, ta: bytes, tb: bytes, m: int, n: int, k: int, alpha: complex, a: int,
               lda: int, b: int, ldb: int, beta: complex, c: int, ldc: int,
               out: tuple[int, int] | None, fill: int = 0) -> bool:
        """``C <- alpha A op(B) + beta C`` (into ``out = (D, ldd)`` where given; only its lower
        triangle for ``fill`` 1, its upper for 2) by the fused split-TF32 kernel where it can
        run (float32 with split TF32 on, a Hopper GPU, the alignments of ``tf32_narrow.cu``;
        the callers judge where it pays): returns whether it ran. B's parts go first into the
        split workspace."""
        d, ldd = (c, ldc) if out is None else out
        if (self.dtype.char != "f" or not _precision.split_tf32_enabled() or ta != b"N"
                or n % 64 or k % 32 or m % 4 or lda % 4 or a % 16 or (ldc | ldd) % 2
                or (c | d) % 8 or not _hopper()):
            return False
        bn, stages, splits = tf32_narrow_tiling(
            m, n, k, nvrtc.device_attribute("MultiProcessorCount"),
            nvrtc.device_attribute("MaxSharedMemoryPerMultiprocessor"))
        parts = self._split_space(8 * k * n + (4 * splits * m * n if splits > 1 else 0))
        if parts is None:
            return False
        sums = parts + 8 * k * n  # the depth's parts' sums, where split
        nvrtc.function("tf32_narrow.cu", f"tricov::tf32_narrow_parts<{bn}>")(
            (-(-n * (k // 4) // 256),), (256,), (np.int32(n), np.int32(k), np.uint64(b),
                                                 np.int64(ldb), np.int32(tb != b"N"),
                                                 np.uint64(parts)))
        kernel = nvrtc.function("tf32_narrow.cu", f"tricov::tf32_narrow<{bn}, {stages}>")
        smem = tf32_narrow_smem(bn, stages)
        nvrtc.allow_shared(kernel, smem)
        alpha, beta = np.float32(np.real(alpha)), np.float32(np.real(beta))
        kernel((n // bn, -(-m // 64), splits), (128,), (
            np.int32(m), np.int32(n), np.int32(k), alpha, np.uint64(a), np.int64(lda),
            np.uint64(parts), beta, np.uint64(c), np.int64(ldc), np.uint64(d), np.int64(ldd),
            np.int32(fill), np.uint64(sums)), shared_mem=smem)
        if splits > 1:
            nvrtc.function("tf32_narrow.cu", "tricov::tf32_narrow_sum")(
                (-(-m * n // 256),), (256,), (np.int32(m), np.int32(n), np.int32(splits),
                                              np.uint64(sums), alpha, beta, np.uint64(c),
                                              np.int64(ldc), np.uint64(d), np.int64(ldd),
                                              np.int32(fill)))
        return True

    def _split_into(self, shape: tuple[int, int], down: bool, src: int, lds: int, step: int,
                    dst: int, count: int, lo_parts: int) -> tuple[int, int]:
        """Split ``count`` stored float32 blocks of ``shape`` (``step`` bytes apart) into three
        parts each, stacked down the rows (``down``) or across the columns, at ``dst``:
        returns the parts' leading dimension and the bytes from one member's parts to the
        next's."""
        rows, cols = shape
        ld3, part = (3 * rows, rows) if down else (rows, rows * cols)
        member = 3 * rows * cols
        kernel = nvrtc.function("tf32_split.cu", "tricov::tf32_split")
        for first in range(0, count, _GRID_Z):
            grid = (-(-rows // 32), -(-cols // 8), min(_GRID_Z, count - first))
            kernel(grid, (32, 8), (
                np.int32(rows), np.int32(cols), np.uint64(src + first * step), np.int64(lds),
                np.uint64(dst + first * member * 4), np.int64(ld3), np.int64(part),
                np.int32(lo_parts), np.int64(step // 4), np.int64(member)))
        return ld3, member * 4

    def _gemm(self, tf32: bool, ta: bytes, tb: bytes, m: int, n: int, k: int, alpha: complex,
              a: int, lda: int, b: int, ldb: int, beta: complex, c: int, ldc: int,
              out: tuple[int, int] | None, count: int, steps: tuple[int, int, int]) -> None:
        """One cuBLAS call per :data:`~tricov.backends.cuda_libs.GEMM_CHUNK` products, on the
        TF32 tensor cores (``tf32``) or in the dtype's own arithmetic."""
        opa, opb, kind = lib.OP[ta], lib.OP[tb], lib.CUDA_TYPE[self.dtype]
        if out is not None:
            plan = lib.matmul_plan(self.dtype, opa, opb, m, n, k, lda, ldb, ldc, out[1], tf32)
            work = self.xp.empty(plan.workspace, dtype=np.uint8)
            self._keep.append(work)
            lib.matmul_into(self._hb, self._stream, plan, self._s(alpha), a, b, self._s(beta),
                            c, out[0], work.data.ptr)
            return
        if count == 1 and not tf32:
            lib.check(lib.blas("gemm_v2", self.dtype)(
                self._hb, opa, opb, m, n, k, self._s(alpha), a, lda, b, ldb, self._s(beta), c,
                ldc), "gemm")
            return
        if count == 1:
            lib.check(lib.blas("cublasGemmEx")(
                self._hb, opa, opb, m, n, k, self._s(alpha), a, kind, lda, b, kind, ldb,
                self._s(beta), c, kind, ldc, lib.COMPUTE_TF32, lib.GEMM_DEFAULT), "gemmEx")
            return
        size = self.dtype.itemsize
        sa, sb, sc = steps
        for first in range(0, count, lib.GEMM_CHUNK):
            chunk = min(lib.GEMM_CHUNK, count - first)
            pa, pb, pc = a + first * sa, b + first * sb, c + first * sc
            if tf32:
                lib.check(lib.blas("cublasGemmStridedBatchedEx")(
                    self._hb, opa, opb, m, n, k, self._s(alpha), pa, kind, lda, sa // size, pb,
                    kind, ldb, sb // size, self._s(beta), pc, kind, ldc, sc // size, chunk,
                    lib.COMPUTE_TF32, lib.GEMM_DEFAULT), "gemmStridedBatchedEx")
            else:
                lib.check(lib.blas("gemmStridedBatched", self.dtype)(
                    self._hb, opa, opb, m, n, k, self._s(alpha), pa, lda, sa // size, pb, ldb,
                    sb // size, self._s(beta), pc, ldc, sc // size, chunk),
                    "gemmStridedBatched")

    def raw_trsm(self, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb):
        lib.check(lib.blas("trsm_v2", self.dtype)(
            self._hb, lib.SIDE[side], lib.FILL[uplo], lib.OP[trans], lib.DIAG[diag], m, n,
            self._s(alpha), a, lda, b, ldb), "trsm")

    def raw_trmm(self, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb):
        lib.check(lib.blas("trmm_v2", self.dtype)(
            self._hb, lib.SIDE[side], lib.FILL[uplo], lib.OP[trans], lib.DIAG[diag], m, n,
            self._s(alpha), a, lda, b, ldb, b, ldb), "trmm")

    def raw_herk(self, uplo, trans, n, k, alpha, a, lda, beta, c, ldc):
        if (trans == b"N" and self.fused_syrk and n >= self.fused_syrk
                and self._fused(b"N", b"T", n, n, k, alpha, a, lda, a, lda, beta, c, ldc, None,
                                1 if uplo == b"L" else 2)):
            return  # float32 on Hopper: the fused split-TF32 kernel on the triangle
        if k >= self.herk_by_gemm * n and n < self.herk_native:
            # cuBLAS SYRK/HERK run far below GEMM speed on small C: form the whole block A A^H
            # with GEMM (twice the flops) and update the referenced triangle from it.
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
        if uplo == b"U" and n:
            # cuSOLVER's upper POTRF ran 2.5-3x slower than its lower on an H100
            # (benchmarks/gpu_potrf_order.py): the lower one, between two in-place transposes
            # of the block (the other triangle comes back bitwise)
            self._transpose_square(n, a, lda)
            status = self.raw_potrf(b"L", n, a, lda)
            self._transpose_square(n, a, lda)
            return status
        lwork = ctypes.c_int(0)
        lib.check(lib.solver("potrf_bufferSize", self.dtype)(
            self._hs, lib.FILL[uplo], n, a, lda, ctypes.byref(lwork)), "potrf_bufferSize")
        work = self.xp.empty(max(1, lwork.value), dtype=self.dtype)
        status = self._status()
        self._keep.append(work)
        lib.check(lib.solver("potrf", self.dtype)(
            self._hs, lib.FILL[uplo], n, a, lda, work.data.ptr, lwork.value,
            self._status_ptr(status)), "potrf")
        return status

    def raw_trtri(self, uplo, diag, n, a, lda):
        dev_bytes, host_bytes = ctypes.c_size_t(0), ctypes.c_size_t(0)
        ctype = lib.CUDA_TYPE[self.dtype]
        lib.check(lib.solver("cusolverDnXtrtri_bufferSize")(
            self._hs, lib.FILL[uplo], lib.DIAG[diag], n, ctype, a, lda,
            ctypes.byref(dev_bytes), ctypes.byref(host_bytes)), "trtri_bufferSize")
        work = self.xp.empty(max(1, dev_bytes.value), dtype=np.uint8)
        host = np.empty(max(1, host_bytes.value), dtype=np.uint8)
        status = self._status()
        self._keep += [work, host]
        lib.check(lib.solver("cusolverDnXtrtri")(
            self._hs, lib.FILL[uplo], lib.DIAG[diag], n, ctype, a, lda, work.data.ptr,
            dev_bytes.value, host.ctypes.data, host_bytes.value, self._status_ptr(status)),
            "trtri")
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
                  zero: bool, unit: bool = False, count: int = 1,
                  steps: tuple[int, int] = (0, 0)) -> None:
        """tri_copy of ``count`` pairs of ``n x n`` blocks, the ``i``-th ``i * steps`` bytes
        after ``src`` and ``dst``."""
        expr = (f"tricov::tri_copy<{nvrtc.CTYPE[self.dtype]}, {nvrtc.cbool(lower)}, "
                f"{nvrtc.cbool(zero)}>")
        kernel = nvrtc.function("triangular.cu", expr)
        size = self.dtype.itemsize
        for first in range(0, count, _GRID_Z):
            grid = (-(-n // 32), -(-n // 8), min(_GRID_Z, count - first))
            kernel(grid, (32, 8), (np.int32(n), np.uint64(src + first * steps[0]),
                                   np.int64(lds), np.uint64(dst + first * steps[1]),
                                   np.int64(ldd), np.int64(steps[0] // size),
                                   np.int64(steps[1] // size), np.int32(unit)))
