"""The batched GPU executor: every primitive of the recursions over all members at once.

:class:`BatchedCUDAExecutor` is an :class:`~tricov.backends.base.Executor`, so the recursions of
:mod:`tricov.recursive` run on it unchanged. As for the batched CPU executor, the views it
receives describe *one* member: a view's ``ptr`` is ``slot << SLOT_BITS | offset`` (see
:mod:`tricov.batched._operands`), the byte offset of a block inside a member of operand
``slot``. Each primitive is one launch over the whole batch, on the current stream:

* GEMM: cuBLAS ``gemmStridedBatched`` where every operand's members are one stride apart, else
  ``gemmBatched`` on device arrays of addresses (computed on the device);
* the leaves (TRSM, TRMM, HERK, POTRF, TRTRI, LAUUM, order at most :data:`SMALL_MAX`): the
  register kernels of ``kernels/cuda/batched_small.cu``, on any logical view directly (they
  read and write transposed, conjugated and reversed operands themselves);
* larger TRMM, HERK and LAUUM leaves of real types (orders up to :func:`leaf_max`, where the
  leaf-size policy sends them), and those from the orders of ``_TILE_FROM`` up to 32: the tile
  kernels of ``kernels/cuda/batched_tile.cu`` (tiles of 32 up to order 32, else of 64, or
  128 for large float64 TRMM: :func:`~tricov.kernels.tile_order`), one
  launch per leaf instead of a recursion down to order 32; products on the FP64 tensor cores
  (float32 elements widened).

Failures (with an ``info`` array): a leaf records each failing member's LAPACK info (plus the
leaf's offset, so it is the order within the whole matrix) in device memory; from then on the
leaves skip that member and GEMMs write its blocks to a scratch buffer instead, so its memory
keeps what it held at the failure, as with the CPU executor's inactive members. Nothing waits
for the device.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _options as opt
from .._views import Mat
from ..batched._operands import SLOT_BITS, Group
from ..kernels import (
    BATCHED_GRID,
    MMA_MEMBERS,
    MMA_SOLVES,
    TILE_ORDERS,
    batched_grid,
    batched_lanes,
    batched_mma,
    batched_small,
    batched_tile,
    mma_shared,
    nvrtc,
    tile_kernels,
    tile_order,
    tile_shared,
    tile_threads,
    wide_tiles,
)
from . import cuda_libs as lib
from .base import Executor
from .cuda_libs import GEMM_CHUNK

__all__ = ["BLOCK", "GEMM_CHUNK", "MAX_BLOCKS", "OPS", "SMALL_MAX", "TILE_MODES",
           "BatchedCUDAExecutor", "compile_kernels", "group_shape", "leaf_max", "padded_order",
           "small_max", "split_small"]

#: Operation codes of the register kernel (``enum Op`` of batched_small.cu).
OPS = {"trsm": 0, "trmm": 1, "herk": 2, "potrf": 3, "trtri": 4, "lauum": 5, "potri": 6,
       "poti": 7, "potrs": 8, "posv": 9}
#: Largest order of the register kernels (a group of up to 32 lanes keeps a row each).
SMALL_MAX = 32
#: Threads per block of the register kernels.
BLOCK = 128
#: Most blocks per launch (the grid's x limit); larger batches take several launches.
MAX_BLOCKS = 2**31 - 1
#: Operation codes of the tile kernels (``enum Mode`` of batched_tile.cu).
TILE_MODES = {"trmm": 0, "herk": 1, "lauum": 2}
#: Largest leaf of the tile kernels, by leaf-size name: TRMM and HERK take any order (tiles
#: of 64), LAUUM one tile.
_TILE_MAX = {"trmm": 1 << 30, "lauum": TILE_ORDERS[1], "syrk": 1 << 30}
#: Smallest order of a TRMM, HERK or LAUUM leaf of a real dtype that the tile kernels take below
#: the register kernels' largest (tiles of 32 up to order 32); smaller orders run on the register
#: kernels. Each is where the tile kernel became the faster one on an H100 (batch 10240, C order,
#: device time, benchmarks/gpu_batched_ab.py tiles, 2026-11-22, after past() in batched_small.cu),
#: register kernel against tiles of 32, ms at orders 17 / 20 / 24 / 28 / 32: float64 TRMM 0.051 /
#: 0.055 / 0.065 / 0.078 / 0.093 against 0.043 / 0.038 / 0.047 / 0.063 / 0.079, HERK (beta 1) 0.113
#: / 0.133 / 0.191 / 0.259 / 0.355 against 0.049 / 0.048 / 0.052 / 0.059 / 0.069, LAUUM 0.032 /
#: 0.035 / 0.045 / 0.055 / 0.066 against 0.031 / 0.029 / 0.031 / 0.036 / 0.042; float32 HERK 0.070
#: / 0.085 / 0.103 / 0.125 / 0.151 against 0.049 / 0.050 / 0.048 / 0.048 / 0.051, LAUUM 0.019 /
#: 0.020 / 0.024 / 0.030 / 0.039 against 0.029 / 0.029 / 0.028 / 0.032 / 0.033 (orders 29-31 take
#: the register kernel's padded work of order 32), TRMM 0.032 / 0.035 / 0.039 / 0.046 / 0.054
#: against 0.037 / 0.037 / 0.036 / 0.038 / 0.044.
_TILE_FROM = {("float64", "trmm"): 17, ("float64", "herk"): 17, ("float64", "lauum"): 17,
              ("float32", "trmm"): 24, ("float32", "herk"): 17, ("float32", "lauum"): 29}


#: Smallest order of at most SMALL_MAX at which POTI and POSV run as two register kernels (POTRF,
#: then the fused POTRI or POTRS on the members that did not fail) rather than as one fused kernel;
#: absent: always fused (POTRI is, at every order: on lines, float64 0.090 ms against 0.119 for
#: TRTRI then a LAUUM tile at 32, float32 0.050 against 0.069; 2026-11-22). Fused POSV of order
#: 17-32 holds two 32 x 32 tiles per member, too many registers for enough warps (2026-11-26, orders
#: 17 / 24 / 32): float64 fused 0.252 / 0.339 / 0.417 (0.189 / 0.257 / 0.469 held at 168 registers
#: by 3 blocks of ``tricov.kernels.BATCHED_BLOCKS``) against 0.119 / 0.162 / 0.232 split; float32
#: 0.085 / 0.097 / 0.121 against 0.068 / 0.081 / 0.120. POTI of order 17-32 runs on the grid kernels
#: (``tricov.kernels.BATCHED_GRID``), fused or as the grid POTRF and POTRI; since the grid's POTRI
#: is one pass (TRTRI and LAUUM together), fused wins at every order: on one H100 (batch 10240,
#: device time, benchmarks/gpu_batched_ab.py split, 2026-11-26, gpu_batched_onepass_h100.txt), ms
#: fused against split at orders 17 / 20 / 24 / 26 / 28 / 29 / 30 / 31 / 32: float64 0.049 / 0.058 /
#: 0.072 / 0.083 / 0.100 / 0.129 / 0.138 / 0.147 / 0.142 against 0.063 / 0.075 / 0.094 / 0.107 /
#: 0.118 / 0.138 / 0.146 / 0.159 / 0.150; float32 at 17 / 20 / 26 / 30 / 31 / 32 0.029 / 0.033 /
#: 0.044 / 0.055 / 0.059 / 0.058 against 0.035 / 0.039 / 0.053 / 0.071 / 0.079 / 0.077. Below 17
#: (the line kernels) fused was faster too (2026-11-22, orders 8 / 16: float64 0.008 / 0.021
#: against 0.012 / 0.027, float32 0.006 / 0.013 against 0.009 / 0.018).
_SPLIT_FROM = {("float64", "posv"): 17, ("float32", "posv"): 17}


def split_small(dtype: np.dtype, op: str, n: int) -> bool:
    """Whether ``op`` (``"poti"`` or ``"posv"``) of order ``n`` (at most :func:`small_max`)
    runs as two register kernels instead of its fused one (see ``_SPLIT_FROM``)."""
    return n >= _SPLIT_FROM.get((_name(dtype), op), n + 1)


@functools.cache
def _dmma_on(device: int) -> bool:
    import cupy

    return int(cupy.cuda.Device(device).compute_capability) >= 90


#: Dtypes whose tile kernels multiply on the FP64 tensor cores where the device has them.
_MMA_DTYPES = {"float64", "float32"}


def _tile_mma(dtype: np.dtype) -> bool:
    """Whether the tile kernels of ``dtype`` multiply on the current device's tensor cores
    (FP64 MMA in the kernels' shape, m16n8k4: compute capability 9.0 and later), unless
    :attr:`BatchedCUDAExecutor.mma` is off."""
    import cupy

    return (BatchedCUDAExecutor.mma and _name(dtype) in _MMA_DTYPES
            and _dmma_on(cupy.cuda.Device().id))


@functools.lru_cache(maxsize=16)
def _name(dtype: np.dtype) -> str:
    """``dtype``'s name, which NumPy builds anew on every access of ``dtype.name`` (keyed by
    it, the tables below cost a batched TRMM call of order 8 51.6 -> 46.9 us on an H100 host,
    ``benchmarks/gpu_batched_call_h100.txt``)."""
    return np.dtype(dtype).name


def small_max(dtype: np.dtype) -> int:
    """Largest order the register kernels take for ``dtype``: 32 for real dtypes, 16 for
    complex ones (two 32 x 32 complex tiles and the temporaries of complex arithmetic do not
    fit in a thread's 255 registers: they would spill to local memory)."""
    return 16 if np.dtype(dtype).kind == "c" else SMALL_MAX


def leaf_max(dtype: np.dtype, op: str) -> int:
    """Largest leaf the executor takes for leaf-size name ``op`` (``"trmm"``, ``"syrk"``, ...):
    the tile kernels' for TRMM, SYRK/HERK and LAUUM of real types, else the register kernels'
    (:func:`small_max`)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" and op in _TILE_MAX:
        return _TILE_MAX[op]
    return small_max(dtype)


def padded_order(n: int) -> int:
    """Order of the register kernel that takes order ``n``: the smallest of 4, 8, 16, 32 that
    holds it."""
    order = 4
    while order < n:
        order *= 2
    return order


def group_shape(n: int, dtype: np.dtype, op: str, members: int = 0) -> tuple[int, int]:
    """(padded order, lanes per member) of the register kernel of ``op`` for order ``n`` in a
    launch over ``members`` members (for a grid kernel, its side squared)."""
    order = padded_order(n)
    char = np.dtype(dtype).char
    side = BATCHED_GRID.get((char, order, OPS[op]))
    return order, side * side if side else batched_lanes(char, order, OPS[op], members)


def _small_kernel(ctype: str, char: str, order: int, lanes: int, op: str) -> tuple[str, str]:
    """Name and definition of the register kernel of ``op`` at ``order`` on ``lanes`` lanes: the
    grid kernel where :data:`~tricov.kernels.BATCHED_GRID` has one, else the line kernel."""
    side = BATCHED_GRID.get((char, order, OPS[op]))
    if side:
        return batched_grid(ctype, order, side, OPS[op])
    return batched_small(ctype, order, lanes, OPS[op])


def _compile(name: str, definition: str) -> None:
    source = "batched_tile.cu" if name.startswith("tricov_batched_tile") else "batched_small.cu"
    nvrtc.kernel(source, name, definition)


def compile_kernels(dtypes: Sequence[Any], jobs: int = 1) -> int:
    """Compile every register kernel of ``dtypes`` (all widths and operations) into CuPy's
    disk cache, where later calls, in any process, find them; return how many.

    A kernel of width 32 takes seconds to compile, so a process that would otherwise compile
    dozens as it meets them (a benchmark, a test session) may prepare them all at once here,
    ``jobs`` processes at a time.
    """
    todo = []
    for dtype in dtypes:
        dtype = np.dtype(dtype)
        orders = [w for w in (32, 16, 8, 4) if w <= small_max(dtype)]
        todo += [_small_kernel(nvrtc.CTYPE[dtype], dtype.char,
                               *group_shape(order, dtype, op, members), op)
                 for order in orders for op in OPS
                 for members in (0, 1 << 62)]  # small and large batches (BATCHED_LANES_LARGE)
        if _tile_mma(dtype):
            todo += [batched_mma(nvrtc.CTYPE[dtype], op) for op in MMA_SOLVES.get(dtype.char, ())]
        if dtype.kind == "f":
            mma = _tile_mma(dtype)
            todo += [batched_tile(nvrtc.CTYPE[dtype], mode, mma, order)
                     for mode, on_cores, order in tile_kernels(nvrtc.CTYPE[dtype])
                     if on_cores == mma]
    todo = list(dict.fromkeys(todo))
    if jobs <= 1:
        for item in todo:
            _compile(*item)
    else:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            pool.starmap(_compile, todo)
    return len(todo)


def _value(dtype: np.dtype, x: complex) -> Any:
    """``x`` as a scalar of ``dtype`` (real dtypes take the real part; the front ends have
    checked that it is real)."""
    return dtype.type(x if dtype.kind == "c" else complex(x).real)


def _parts(dtype: np.dtype, x: complex) -> tuple[float, ...]:
    """``x`` rounded to ``dtype`` as :func:`~tricov.kernels.nvrtc.launch` packs a parameter of
    that type: its real part, and its imaginary part for a complex dtype."""
    v = complex(_value(dtype, x))
    return (v.real, v.imag) if dtype.kind == "c" else (v.real,)


#: Type codes (see :func:`tricov.kernels.nvrtc.launch`) of an operand's kernel parameters:
#: addresses, base, stride, offset, ld, flags.
_OPERAND = "Qqqqqi"


class BatchedCUDAExecutor(Executor):
    """Primitives over every member of a group of device members, on the current stream.

    Parameters
    ----------
    dtype : numpy.dtype
    group : Group
        The members (``ptrs`` a CuPy array, or ``affine``).
    info : CuPy int32 array (members), optional
        Where failures are recorded and read (see the module notes); None: no failures are
        tracked (operations that cannot fail).
    """

    backend = "batched_gpu"
    #: Tile kernels multiply on the tensor cores (FP64 MMA of 16 x 8 x 4, sm_90 and later;
    #: float32 elements widened) rather than by FMAs, and float64 TRSM, POTRS and POTRI of
    #: orders near 32 run on the tensor-core kernel (``kernels.MMA_SOLVES``) rather than on the
    #: register kernels.
    mma = True

    def __init__(self, dtype: np.dtype, group: Group, info: Any = None) -> None:
        import cupy

        super().__init__(dtype)
        self.xp = cupy
        self.group = group
        self.members = group.size
        self.infos = info
        self._ctype = nvrtc.CTYPE[self.dtype]
        self._stream = cupy.cuda.get_current_stream().ptr
        # Type codes of the parameters of the register and tile kernels (alpha T, beta real).
        t = self.dtype.char
        self._small_codes = f"qqiii{t}{t.lower()}{_OPERAND * 2}Qii"
        self._tile_codes = f"qqiiiii{t * 2}{_OPERAND * 2}Qi"
        self._hb: int | None = None
        self._keep: list[Any] = []

    # ------------------------------------------------------------ failures
    def _record(self, status: Any, offset: int) -> bool:
        return True  # the leaves write failures to ``infos`` themselves

    @property
    def info(self) -> Any:
        """Per member: 0, or the LAPACK info of its first failure (a device array)."""
        return self.infos

    # ------------------------------------------------------------- addresses
    def _where(self, slot: int) -> tuple[int, int, int]:
        """(device array of member addresses or 0, base, stride) of operand ``slot``."""
        g = self.group
        if g.ptrs is None:
            base, stride = g.affine[slot]
            return 0, base, stride
        return g.ptrs[slot].data.ptr, 0, 0

    def operand(self, view: Mat, rev_rows: bool = False, rev_cols: bool = False) -> tuple:
        """Kernel arguments of a canonical view: addresses, base, stride, offset, ld, flags."""
        slot, offset = view.ptr >> SLOT_BITS, view.ptr & ((1 << SLOT_BITS) - 1)
        ptrs, base, stride = self._where(slot)
        flags = (1 if view.t else 0) | (2 if self.complex and opt.has_c(view.op) else 0) \
            | (4 if rev_rows else 0) | (8 if rev_cols else 0)
        return ptrs, base, stride, offset, view.ld, flags

    @classmethod
    def settings(cls) -> tuple:
        return (cls.mma,)

    def _info_ptr(self) -> int:
        return 0 if self.infos is None else self.infos.data.ptr

    # ------------------------------------------------------------- kernels
    def small(self, op: str, t: Mat, *, r: Mat | None = None, n: int, m: int = 0,
              rev: bool = False, unit: bool = False, alpha: complex = 1.0, beta: float = 0.0,
              order0: int = 0, fresh: bool = False) -> None:
        """One register kernel over every member (canonical operands, see batched_small.cu).

        ``t`` is the square operand (order ``n``; reversed rows and columns if ``rev``), ``r``
        the ``n x m`` one (rows reversed if ``rev``); ``order0`` is added to recorded infos.
        With ``fresh``, the kernel writes every member's info (the array may hold anything
        before); without, it skips members already failed and records only failures.
        """
        order, lanes = group_shape(n, self.dtype, op, self.members)
        if (n >= MMA_SOLVES.get(self.dtype.char, {}).get(OPS[op], SMALL_MAX + 1)
                and _tile_mma(self.dtype)):  # a warp per member, in shared memory
            kernel = nvrtc.kernel("batched_small.cu", *batched_mma(self._ctype, OPS[op]))
            per_block, threads = MMA_MEMBERS, 32 * MMA_MEMBERS
            shared = MMA_MEMBERS * mma_shared(OPS[op])
        else:
            kernel = nvrtc.kernel("batched_small.cu",
                                  *_small_kernel(self._ctype, self.dtype.char, order, lanes, op))
            per_block, threads, shared = BLOCK // lanes, BLOCK, 0
        targs = self.operand(t, rev, rev)
        rargs = self.operand(r, rev, False) if r is not None else targs
        fixed = (n, m, int(unit), *_parts(self.dtype, alpha), float(beta), *targs, *rargs,
                 self._info_ptr(), order0, int(self.infos is not None and not fresh))
        step = MAX_BLOCKS * per_block
        for first in range(0, self.members, step):
            count = min(step, self.members - first)
            nvrtc.launch(kernel, -(-count // per_block), threads, self._stream,
                         self._small_codes, first, count, *fixed, shared=shared)

    def zero_pivots(self, a: Mat) -> None:
        """Record, for members not failed yet, the first exactly zero diagonal element of the
        lower-triangular view ``a``."""
        slot, offset = a.ptr >> SLOT_BITS, a.ptr & ((1 << SLOT_BITS) - 1)
        ptrs, base, stride = self._where(slot)
        kernel = nvrtc.function("batched_small.cu",
                                f"tricov::batched::zero_pivots<{self._ctype}>")
        self._per_member(kernel, 256, "iQqqqqQ",
                         (a.rows, ptrs, base, stride, offset, a.ld, self._info_ptr()))

    def conjugate(self, view: Mat, lower: bool = False) -> None:
        """Conjugate in place every member's memory of ``view`` (members not failed): the whole
        block, or with ``lower`` the lower triangle of the logical view only."""
        slot, offset = view.ptr >> SLOT_BITS, view.ptr & ((1 << SLOT_BITS) - 1)
        ptrs, base, stride = self._where(slot)
        kernel = nvrtc.function("batched_small.cu", f"tricov::batched::conjugate<{self._ctype}>")
        region = (2 if view.t else 1) if lower else 0
        args = (np.int32(view.mrows), np.int32(view.mcols), np.int32(region), np.uint64(ptrs),
                np.int64(base), np.int64(stride), np.int64(offset), np.int64(view.ld),
                np.uint64(self._info_ptr()))
        step = 65535 * 65535  # one block per member, on a 2-D grid
        for first in range(0, self.members, step):
            count = min(step, self.members - first)
            x = min(count, 65535)
            kernel((x, -(-count // x)), (128,), (np.int64(first), np.int64(count)) + args)

    def _per_member(self, kernel: Any, threads: int, codes: str, args: tuple) -> None:
        step = MAX_BLOCKS * threads
        for first in range(0, self.members, step):
            count = min(step, self.members - first)
            nvrtc.launch(kernel, -(-count // threads), threads, self._stream, "qq" + codes,
                         first, count, *args)

    def tile(self, mode: str, x: Mat, o: Mat, *, n: int, m: int = 0, k: int = 0,
             rev: bool = False, unit: bool = False, alpha: complex = 1.0,
             beta: float = 0.0) -> None:
        """One tile kernel over every member (real types; see batched_tile.cu).

        TRMM: ``o`` (n x m, rows reversed if ``rev``) <- alpha x o, ``x`` the triangle (rows
        and columns reversed if ``rev``). HERK: lower triangle of ``o`` (n x n) <- alpha x x^T
        + beta o, ``x`` n x k. LAUUM: lower triangle of ``o`` <- o^T o (``x`` unused).
        Members already failed are skipped.
        """
        mma = _tile_mma(self.dtype)
        order = tile_order(n, m, wide_tiles(TILE_MODES[mode], mma, self.dtype.itemsize))
        if mode == "trmm":
            tiles = -(-m // order)
        elif mode == "herk":
            t = -(-n // order)
            tiles = t * (t + 1) // 2
        else:
            tiles = 1
        kernel = nvrtc.kernel("batched_tile.cu", *batched_tile(
            self._ctype, TILE_MODES[mode], mma, order))
        xargs = self.operand(x, rev, rev)
        oargs = self.operand(o, rev, False)
        fixed = (tiles, n, m, k, int(unit), *_parts(self.dtype, alpha), float(beta), *xargs,
                 *oargs, self._info_ptr(), int(self.infos is not None))
        step = MAX_BLOCKS // tiles
        for first in range(0, self.members, step):
            count = min(step, self.members - first)
            nvrtc.launch(kernel, count * tiles,
                         tile_threads(order, mma, TILE_MODES[mode], self.dtype.itemsize),
                         self._stream,
                         self._tile_codes, first, count, *fixed,
                         shared=tile_shared(order, self.dtype.itemsize))

    # ------------------------------------------------------------- leaves
    def _on_tiles(self, op: str, n: int) -> bool:
        """Whether a TRMM, HERK or LAUUM leaf of order ``n`` runs on the tile kernels."""
        return n > small_max(self.dtype) or n >= _TILE_FROM.get((_name(self.dtype), op), n + 1)

    def trsm(self, lower: bool, unit: bool, alpha: complex, a: Mat, b: Mat) -> None:
        if b.rows and b.cols:
            self.small("trsm", a, r=b, n=b.rows, m=b.cols, rev=not lower, unit=unit,
                       alpha=alpha)

    def trmm(self, lower: bool, unit: bool, alpha: complex, a: Mat, b: Mat) -> None:
        if not (b.rows and b.cols):
            return
        if self._on_tiles("trmm", b.rows):
            self.tile("trmm", a, b, n=b.rows, m=b.cols, rev=not lower, unit=unit, alpha=alpha)
        else:
            self.small("trmm", a, r=b, n=b.rows, m=b.cols, rev=not lower, unit=unit,
                       alpha=alpha)

    def herk(self, alpha: float, a: Mat, beta: float, c: Mat) -> None:
        if not c.rows:
            return
        if self._on_tiles("herk", c.rows):
            self.tile("herk", a, c, n=c.rows, k=a.cols, alpha=alpha, beta=beta)
        else:
            self.small("herk", c, r=a, n=c.rows, m=a.cols, alpha=alpha, beta=beta)

    def potrf(self, a: Mat, offset: int) -> bool:
        if a.rows:
            self.small("potrf", a, n=a.rows, order0=offset)
        return True

    def trtri(self, unit: bool, a: Mat, offset: int) -> bool:
        if a.rows:
            self.small("trtri", a, n=a.rows, unit=unit, order0=offset)
        return True

    def lauum(self, a: Mat) -> None:
        if not a.rows:
            return
        if self._on_tiles("lauum", a.rows):
            self.tile("lauum", a, a, n=a.rows)
        else:
            self.small("lauum", a, n=a.rows)

    # ---------------------------------------------------------------- GEMM
    def _addresses(self, slot: int, offset: int, first: int, count: int, dummy: int) -> Any:
        """Device array of the addresses of a block of members ``first ..`` (failed members:
        ``dummy``, when it is not 0)."""
        ptrs, base, stride = self._where(slot)
        out = self.xp.empty(count, dtype=np.int64)
        self._keep.append(out)
        kernel = nvrtc.function("batched_small.cu", "tricov::batched::addresses")
        info = self._info_ptr() if dummy else 0
        nvrtc.launch(kernel, -(-count // 256), 256, self._stream, "qqQqqqQqQ",
                     first, count, ptrs, base, stride, offset, info, dummy, out.data.ptr)
        return out

    def _scalar(self, value: complex) -> int:
        buf = np.array([_value(self.dtype, value)], dtype=self.dtype)
        self._keep.append(buf)
        return buf.ctypes.data

    def raw_gemm(self, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        if self._hb is None:
            self._hb = lib.bind_blas(self._stream)
        mask = (1 << SLOT_BITS) - 1
        (sa, oa), (sb, ob), (sc, oc) = ((p >> SLOT_BITS, p & mask) for p in (a, b, c))
        alpha_p, beta_p = self._scalar(alpha), self._scalar(beta)
        # Strided batches where cuBLAS takes them: every operand one non-negative stride (in
        # elements) from member to member, and no failed member to keep out.
        isz = self.dtype.itemsize
        strided = self.group.ptrs is None and self.infos is None and all(
            self.group.affine[s][1] >= 0 and self.group.affine[s][1] % isz == 0
            for s in (sa, sb, sc))
        dummy = 0
        if self.infos is not None:
            scratch = self.xp.empty(((n - 1) * ldc + m) * self.dtype.itemsize, dtype=np.uint8)
            self._keep.append(scratch)
            dummy = scratch.data.ptr
        for first in range(0, self.members, GEMM_CHUNK):
            count = min(GEMM_CHUNK, self.members - first)
            if strided:
                (ba, xa), (bb, xb), (bc, xc) = (self.group.affine[s] for s in (sa, sb, sc))
                lib.check(lib.blas("gemmStridedBatched", self.dtype)(
                    self._hb, lib.OP[ta], lib.OP[tb], m, n, k, alpha_p,
                    ba + first * xa + oa, lda, xa // isz, bb + first * xb + ob, ldb, xb // isz,
                    beta_p, bc + first * xc + oc, ldc, xc // isz, count), "gemmStridedBatched")
                continue
            pa = self._addresses(sa, oa, first, count, 0)
            pb = self._addresses(sb, ob, first, count, 0)
            pc = self._addresses(sc, oc, first, count, dummy)
            lib.check(lib.blas("gemmBatched", self.dtype)(
                self._hb, lib.OP[ta], lib.OP[tb], m, n, k, alpha_p, pa.data.ptr, lda,
                pb.data.ptr, ldb, beta_p, pc.data.ptr, ldc, count), "gemmBatched")
