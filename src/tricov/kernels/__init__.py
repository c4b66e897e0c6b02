"""Kernels: CUDA templates (``cuda/*.cu``, compiled at run time) and Numba CPU kernels.

The sizes below are shared by the CUDA sources and the executor that launches them: the order
of the diagonal blocks the shared-memory kernels hold, the shapes of the triangular leaf kernel
and the shared memory each launch takes.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["BATCHED_BLOCKS", "BATCHED_GRID", "BATCHED_HEAVY", "BATCHED_LANES",
           "BATCHED_LANES_LARGE", "GRID_OPS", "MMA_MEMBERS", "MMA_SOLVES", "SHARED_MAX",
           "THREADS", "TILE_BLOCKS", "TILE_ORDERS", "TILE_POTRF", "LeafShape", "batched_grid",
           "batched_lanes", "batched_mma", "batched_small", "batched_tile", "block_order",
           "cond_split", "definitions", "instantiations", "leaf_shape", "leaf_smem",
           "mma_shared", "square_smem", "tile_groups", "tile_kernels", "tile_order",
           "tile_shared", "tile_smem", "tile_threads", "wide_tiles"]

_TYPES = {"float": 4, "double": 8, "tricov::cplx<float>": 8, "tricov::cplx<double>": 16}
_REAL = {"float": "float", "double": "double", "tricov::cplx<float>": "float",
         "tricov::cplx<double>": "double"}

_TAGS = {"float": "s", "double": "d", "tricov::cplx<float>": "c", "tricov::cplx<double>": "z"}
#: NumPy's character of each scalar type (the keys of the tables below).
_CHARS = {"float": "f", "double": "d", "tricov::cplx<float>": "F", "tricov::cplx<double>": "D"}

#: Operations of ``batched_small.cu`` whose widest instantiation holds the most registers
#: (two full tiles, or one triangle of several lines per lane): with every operation at order
#: 4 and the kernels of several lines per lane, what the CI compile check builds (every code
#: path, spills where they would be, at a CI-sized compile time).
BATCHED_HEAVY = (0, 3, 6, 8, 9)  # TRSM, POTRF, POTRI, POTRS, POSV

#: Lanes per member of the register kernels of ``batched_small.cu``, by dtype character, padded
#: order and operation code (TRSM 0, POTRF 3, TRTRI 4, POTRI 6, POTI 7, POTRS 8, POSV 9), where not
#: the order itself (one line per lane). Measured at batch 10240 on an H200 (each the fastest of
#: the lanes tried, benchmarks/exp_batched_small.py; gpu_batched_lanes_h200.txt): two lines per
#: lane (one shuffle feeds two FMAs) for the factorization and the inverse from order 12 on and for
#: the solves at order 16; four for float32 POTRF at 32 (1.3x there). Wider lanes lose elsewhere:
#: too few members in flight at small orders, spilled registers with two tiles of order 32 (float64
#: TRSM/POTRS at 16 lanes run 1.15x faster but spill, so they stay at 32).
#: Measured again on an H100 after past() in batched_small.cu (the sweep of
#: benchmarks/gpu_batched_ab.py lanes, 2026-11-22, every operation listed at 8 / 16 / 32): TRTRI
#: (code 4) and POTI (7) moved to two lines per lane at 16 (ms at 4 / 8 / 16 lanes: TRTRI float64
#: 0.014 / 0.013 / 0.016, float32 0.012 / 0.008 / 0.011; POTI 0.020 / 0.021 / 0.032 and 0.016 /
#: 0.013 / 0.019), TRTRI to two at 32 (8 / 16 / 32 lanes: float64 0.077 / 0.070 / 0.086, float32
#: 0.044 / 0.038 / 0.050), and float64 POTI to two at 8 (2 / 4 / 8 lanes: 0.010 / 0.007 / 0.008);
#: the others were kept. Complex dtypes and the operations not listed keep one line per lane (not
#: measured). POTI of order 8 and float32's Cholesky family of order 16 have since moved to the
#: grid kernels (:data:`BATCHED_GRID`).
BATCHED_LANES: dict[tuple[str, int, int], int] = {
    **{("d", 8, op): 4 for op in (3, 6, 9)},
    **{("d", 16, op): 8 for op in (0, 3, 4, 6, 7, 8, 9)},
    **{("f", 16, op): 8 for op in (0, 8, 9)},
    ("d", 32, 3): 16, ("d", 32, 6): 16, ("f", 32, 3): 8, ("f", 32, 6): 16,
    ("d", 32, 4): 16, ("f", 32, 4): 16,
}


#: Lanes per member of the register kernels for large batches: by dtype character, padded order
#: and operation code, (fewest members, lanes). A batch of 10240 members of order 8 or 16 is one
#: wave of warps, which each member's chain of dependent steps paces (so more lanes, or fewer
#: lines, per member); batches several waves long are paced by the instructions they issue and
#: by occupancy, and there other shapes win. On one H100 (2026-11-27, device ms,
#: ``benchmarks/gpu_batched_ab.py lanes --batch B``, ``gpu_batched_lanes_large_h100.txt``, at
#: 20480 / 40960 / 102400 members):
#:
#: - float64 POTRF 16 on 8 / 16 lanes 0.0290 / 0.0330, 0.0636 / 0.0584, 0.1542 / 0.1324; TRTRI
#:   16 0.0289 / 0.0309, 0.0615 / 0.0552, 0.1482 / 0.1260;
#: - float64 POTI 16 on 8 / 4 lanes 0.0455 / 0.0423, 0.0796 / 0.0742, 0.1774 / 0.1626 (at 10240
#:   0.0207 / 0.0204);
#: - float64 POTRF 8 on 4 / 8 lanes 0.0074 / 0.0084, 0.0128 / 0.0147, 0.0432 / 0.0378; POTRI 8
#:   0.0080 / 0.0092, 0.0141 / 0.0163, 0.0439 / 0.0378;
#: - float32 POTRF 8 on 8 / 4 lanes 0.0068 / 0.0061, 0.0100 / 0.0097, 0.0228 / 0.0218; POTRI 8
#:   0.0069 / 0.0065, 0.0109 / 0.0099, 0.0246 / 0.0229; POTI 8 0.0095 / 0.0078, 0.0156 /
#:   0.0120, 0.0362 / 0.0270.
#:
#: The solves, POSV and float32 of order 16 kept their lanes at 102400 members (POTI 8 and
#: float32 POTRF / TRTRI / POTRI / POTI 16 now run on the grid kernels, :data:`BATCHED_GRID`).
#: With the table, the batched bench at 102400 members took float64 POTRF 8 / 16 and POTRI 8
#: from 0.043 / 0.151 and 0.044 ms to 0.038 / 0.133 and 0.038 ms (0.47 / 0.50 / 0.45 -> 0.53 /
#: 0.58 / 0.54 of the copy bandwidth).
BATCHED_LANES_LARGE: dict[tuple[str, int, int], tuple[int, int]] = {
    ("d", 16, 3): (40960, 16), ("d", 16, 4): (40960, 16), ("d", 16, 7): (20480, 4),
    ("d", 8, 3): (102400, 8), ("d", 8, 6): (102400, 8),
    **{("f", 8, op): (20480, 4) for op in (3, 6)},
}


def batched_lanes(char: str, order: int, op: int, members: int = 0) -> int:
    """Lanes per member of the register kernel of operation code ``op`` at (padded) ``order``
    for the dtype of character ``char`` in a launch over ``members`` members (see
    :data:`BATCHED_LANES` and :data:`BATCHED_LANES_LARGE`)."""
    large = BATCHED_LANES_LARGE.get((char, order, op))
    if large is not None and members >= large[0]:
        return large[1]
    return BATCHED_LANES.get((char, order, op), order)


#: Fewest resident blocks per multiprocessor asked of ptxas (the second argument of
#: ``__launch_bounds__``) for a register kernel, by dtype character, padded order, lanes per member
#: and operation code; 0 where not listed (ptxas chooses the registers). Measured at batch 10240
#: on an H100 (``benchmarks/gpu_batched_ab.py blocks`` at orders 4, 8, 16 and 32 with 0 and 2-16
#: blocks, 2026-11-26), two kernels gain:
#:
#: - float32 POSV of order 16 on 8 lanes: 5 blocks hold it at 96 registers (ptxas alone takes
#:   152), without spills; 0.0159 against 0.0206 ms;
#: - float32 POTRS of order 32 on 32 lanes: left alone, ptxas stops at 96 registers and spills 24
#:   bytes; asked for 5 blocks it takes the same 96 and spills nothing, at the same speed (0.0759
#:   against 0.0765 ms; asked for 2 or 3 it takes 141 and runs 12% slower).
#:
#: Everywhere else ptxas's own choice was the fastest or within 5%, or the faster choice spills.
BATCHED_BLOCKS: dict[tuple[str, int, int, int], int] = {("f", 16, 8, 9): 5, ("f", 32, 32, 8): 5}


def batched_small(ctype: str, order: int, lanes: int, op: int) -> tuple[str, str]:
    """Name and defining line of the register kernel of ``batched_small.cu`` for a scalar type,
    a (padded) order, lanes per member and an operation code (``TRICOV_BATCHED_SMALL``, a
    C-linkage kernel, with its blocks of :data:`BATCHED_BLOCKS`)."""
    name = f"tricov_batched_small_{_TAGS[ctype]}{order}x{lanes}_{op}"
    blocks = BATCHED_BLOCKS.get((_CHARS[ctype], order, lanes, op), 0)
    return name, f"TRICOV_BATCHED_SMALL({name}, {ctype}, {order}, {lanes}, {op}, {blocks})"


#: Operation codes the grid kernels implement (POTRF, TRTRI, POTRI, POTI).
GRID_OPS = (3, 4, 6, 7)
#: The Cholesky family of the register kernels (POTRF, TRTRI, POTRI, POTI) on a grid of R x R
#: lanes per member (the grid kernels of batched_small.cu) rather than on lines, by dtype
#: character, padded order and operation code: R. On one H100 (batch 10240, C order, device
#: time, ``benchmarks/gpu_batched_ab.py grid``, 2026-11-26; ``gpu_batched_grid_h100.txt``), ms on
#: lines against a grid of 4 x 4 at orders 17 / 24 / 32:
#:
#: - POTRF float64 0.0367 / 0.0489 / 0.0674 against 0.0294 / 0.0393 / 0.0558, float32 0.0166 /
#:   0.0213 / 0.0391 against 0.0172 / 0.0215 / 0.0326;
#: - TRTRI float64 0.0398 / 0.0516 / 0.0656 against 0.0313 / 0.0463 / 0.0661, float32 0.0226 /
#:   0.0261 / 0.0375 against 0.0160 / 0.0206 / 0.0377;
#: - POTRI float64 0.0469 / 0.0597 / 0.0887 against 0.0349 / 0.0530 / 0.0884, float32 0.0276 /
#:   0.0324 / 0.0494 against 0.0213 / 0.0282 / 0.0465;
#: - POTI fused on the grid against POTRF then POTRI (both on the grid): see ``_SPLIT_FROM``.
#:
#: The grid's POTRI has since become one pass (TRTRI and LAUUM together, ``grid_inverse``): float64
#: 0.0349 / 0.0529 / 0.0869 -> 0.0330 / 0.0488 / 0.0848, float32 0.0214 / 0.0279 / 0.0467 -> 0.0181
#: / 0.0249 / 0.0452 (``gpu_batched_onepass_h100.txt``).
#:
#: Loads and stores by address increments (``grid_move``, 2026-11-27; 11-13% fewer instructions
#: and 119 -> 85 / 146 -> 128 registers for float32 / float64 POTRF of order 32;
#: ``gpu_batched_grid_move_h100.txt``), ms before -> after at batch 10240 / 102400: float64 POTI
#: 32 0.142 -> 0.098 / 1.333 -> 0.786, POTRF 32 0.059 -> 0.056 / 0.453 -> 0.481, TRTRI 32 0.065 ->
#: 0.059 / 0.476 -> 0.488; order 24 (float64 and float32, every operation) 4-24% faster at both
#: batches, 20 and 28 5-36% faster but float64 POTRI 28 (2% slower); float32 POTRF 32 0.0325 ->
#: 0.0356 / 0.254 -> 0.303 (six blocks of threads per multiprocessor instead of four; capping
#: them at four by shared memory gave back half of it at 32 and lost at 24).
#:
#: At orders 8 and 16 the lines stayed faster (float64 16: POTRF 0.0127 against 0.0132 on 4 x 4
#: and 0.0225 on 2 x 2, POTRI 0.0149 against 0.0186 and 0.0244). Asking ptxas for 4 blocks (128
#: registers instead of 150 for float64 POTRF) changed nothing beyond noise. POTRS on the grid
#: lost at every order (the table's appendix).
#:
#: With those addresses, smaller grids measured again (``gpu_batched_ab.py grid --orders 5 6 7 8
#: 10 12 13 15 16 --sides 2 4``, batch 10240 / 102400, ``gpu_batched_grid_small_h100.txt``), ms on
#: lines against the grid:
#:
#: - POTI of order 8 on 2 x 2 lanes, faster at every order 5-8 in both dtypes: float64 n = 8
#:   0.0077 -> 0.0067 / 0.0444 -> 0.0437, n = 5 0.0065 -> 0.0055 / 0.0267 -> 0.0212; float32 n = 8
#:   0.0063 -> 0.0054 / 0.0272 -> 0.0226. The other operations of order 8 lost at 102400 members
#:   (float64 POTRF 8 0.0379 -> 0.0444).
#: - float32 POTRF / TRTRI / POTRI / POTI of order 16 on 4 x 4 lanes: n = 16 0.0083 / 0.0085 /
#:   0.0096 / 0.0133 -> 0.0077 / 0.0079 / 0.0092 / 0.0125 at 10240 members, 0.0767 / 0.0771 /
#:   0.0836 / 0.1018 -> 0.0700 / 0.0713 / 0.0702 / 0.0929 at 102400; n = 13 / 15 10-22% faster at
#:   10240; at n = 10 / 12, 102400 members, TRTRI and POTRI 2-10% slower (POTRF and POTI faster
#:   at every order measured). Float64 of order 16 stays on lines (the grid 6-13% slower at
#:   10240 members, faster at 102400 for POTRI 16 and POTRF / TRTRI 12).
BATCHED_GRID: dict[tuple[str, int, int], int] = {
    **{(ch, 32, op): 4 for ch in "fd" for op in GRID_OPS},
    **{("f", 16, op): 4 for op in GRID_OPS},
    **{(ch, 8, 7): 2 for ch in "fd"},
}


def batched_grid(ctype: str, order: int, side: int, op: int) -> tuple[str, str]:
    """Name and defining line of the grid kernel of operation code ``op`` (one of
    :data:`GRID_OPS`) of ``batched_small.cu`` for a scalar type, a (padded) order and ``side`` x
    ``side`` lanes per member (``TRICOV_BATCHED_GRID``)."""
    name = f"tricov_batched_grid_{_TAGS[ctype]}{order}x{side}_{op}"
    return name, f"TRICOV_BATCHED_GRID({name}, {ctype}, {order}, {side}, {op}, 0)"


#: Operations run on the tensor-core kernel of ``batched_small.cu`` (``TRICOV_BATCHED_MMA``: a
#: warp per member in shared memory, products of blocks of 8 on FP64 MMA) where the device has
#: FP64 MMA, rather than on the register kernels: by dtype character, operation code (TRSM 0,
#: POTRI 6, POTRS 8) and the lowest order it takes (up to 32). On one H100 (batch 10240, C order,
#: as many right-hand sides as the order, device time, ``benchmarks/gpu_batched_mma.py``,
#: 2026-11-27), µs on the register kernels against this one: float64 TRSM 32 102.9 -> 94.3,
#: POTRS 32 138.5 -> 111.0 (64 right-hand sides: 169.2 -> 153.4 and 240.4 -> 189.3), at 25 82.2
#: -> 77.1 and 103.5 -> 99.4, at 24 level (75.1 -> 75.4, 94.4 -> 95.0), at 17 slower in an earlier
#: run (59.3 -> 68.2, 70.8 -> 90.0: the kernel's work is that of order 32 whatever n); POTRI
#: (in place, ``--force --ops potri``) 32 / 28 / 26 / 24 / 20 85.0 / 65.1 / 59.4 / 49.2 / 39.9 ->
#: 63.7 / 58.8 / 56.4 / 55.0 / 51.8. Float32 ran 2x slower on it than on its register kernels
#: (TRSM 32 59.9 -> 129.5, POTRI 32 45.2 -> 77.1), so it keeps them. POTRF (and POSV fused) by
#: panels of 8 columns in shared memory was slower than the grid kernel (POTRF 32 60.1 -> 76.2,
#: and 59.3 -> 62.2 in place with 9.5 KB per member; POSV 32 fused 182.8 against 172-178 for the
#: grid's POTRF then this POTRS), and was not kept. Nor was a copy of the kernel for orders up to
#: 16 (leading dimension 21, 2026-11-27): POTRI 16 / 12 / 9 took 26.3 / 21.9 / 27.5 µs against
#: the register kernels' 14.8 / 18.7 / 26.6, TRSM and POTRS 16 2-2.4x theirs (a warp per member
#: makes four waves of warps where the register kernels' groups of lanes make one).
MMA_SOLVES: dict[str, dict[int, int]] = {"d": {0: 25, 8: 25, 6: 26}}
#: Members (warps) per block of the tensor-core kernel. One or two members per block ran within
#: 2% of each other; four ran 10-15% slower (fewer blocks resident).
MMA_MEMBERS = 2


def mma_shared(op: int) -> int:
    """Bytes of shared memory of one member of the tensor-core kernel of operation code ``op``
    (``mma_doubles`` in ``batched_small.cu``): the triangle and a tile of 32 columns as doubles
    (leading dimension 37) and the 32 reciprocals of the diagonal; POTRI (in place) the triangle
    and three blocks of 8 x 8 (leading dimension 9). Each kernel's definition
    (:func:`batched_mma`) asserts it."""
    return (32 * 37 + 3 * 8 * 9 if op == 6 else 2 * 32 * 37 + 32) * 8


def batched_mma(ctype: str, op: int) -> tuple[str, str]:
    """Name and defining line of the tensor-core kernel of operation code ``op`` (see
    :data:`MMA_SOLVES`) of ``batched_small.cu`` for a real scalar type (``TRICOV_BATCHED_MMA``)."""
    name = f"tricov_batched_mma_{_TAGS[ctype]}32_{op}"
    return name, (f"TRICOV_BATCHED_MMA({name}, {ctype}, {op}) static_assert("
                  f"tricov::batched::mma_doubles<{op}>() * 8 == {mma_shared(op)});")


#: Orders of the output tiles of the kernels of ``batched_tile.cu`` (``Shape<T, TILE>``): 32 for
#: outputs of up to 32 rows, else 64, or 128 for float64 TRMM on the tensor cores
#: (:func:`tile_order`).
TILE_ORDERS = (32, 64, 128)


def wide_tiles(mode: int, mma: bool, itemsize: int) -> bool:
    """Whether the tile kernel of ``mode`` (0 TRMM, 1 HERK, 2 LAUUM) has tiles of 128: float64
    TRMM on the tensor cores (see :func:`tile_order`)."""
    return mode == 0 and mma and itemsize == 8


def tile_kernels(ctype: str) -> list[tuple[int, bool, int]]:
    """(operation, tensor cores, order) of every tile kernel of ``batched_tile.cu`` for the real
    scalar type ``ctype``: tiles of 32 and 64 for every operation (0 TRMM, 1 HERK, 2 LAUUM), by
    FMAs and on the tensor cores, and tiles of 128 where :func:`wide_tiles` says so."""
    return [(mode, mma, order) for order in TILE_ORDERS for mode in range(3)
            for mma in (False, True)
            if order < 128 or wide_tiles(mode, mma, _TYPES[ctype])]


def tile_order(rows: int, cols: int = 0, wide: bool = False) -> int:
    """Order of the tiles of a tile kernel for an output of ``rows`` x ``cols``: 32 up to 32
    rows, else 64; with ``wide`` (:func:`wide_tiles`), 128 for outputs of at
    least 128 x 128 that tiles of 128 pad no further than tiles of 64 do.

    On one H100 (batch 10240, device time, ``benchmarks/gpu_batched_ab.py wide``, after the
    kernel's one barrier per chunk), tiles of 128 against 64 took float64 TRMM of order 128
    from 1.358 to 1.263 ms, 200 from 6.157 to 5.772 and 256 from 7.336 to 6.752 (square), but
    100 from 0.961 to 1.052, 192 from 3.618 to 5.590, and order 256 with 32 columns from 1.812
    to 3.264. Float32 TRMM, widened to float64 products, lost with them (before the one barrier:
    1.034 -> 1.250 ms at order 128, 6.61 -> 6.99 at 256)."""
    if rows <= TILE_ORDERS[0]:
        return TILE_ORDERS[0]
    if wide and min(rows, cols) >= 128 and all(-(-x // 128) * 2 == -(-x // 64)
                                               for x in (rows, cols)):
        return 128
    return 64


def tile_groups(order: int, mma: bool, mode: int, itemsize: int) -> int:
    """8-column groups of a warp's piece of a tile of a ``batched_tile.cu`` kernel (``WN``) for
    an operation (0 TRMM, 1 HERK, 2 LAUUM): 4 (a 32 x 32 piece: fewer shared-memory reads per
    product, half the warps) for the tensor-core HERK and float32 TRMM with tiles of 64, 8 (32 x
    64, eight warps) for tiles of 128, else 2 (32 x 16; the FMA version's lanes own 4 x 4
    elements of a 32 x 16 piece).

    On one H100 (batch 10240, device time), 32 x 32 pieces took float64 SYRK 128 / 256 from
    1.527 / 7.942 to 1.432 / 7.538 ms and float32 TRMM 128 / 256 from 1.096 / 6.868 to
    1.011 / 6.509, but LAUUM 64 / 128 from 0.160 / 0.901 to 0.171 / 0.943 (float64) and
    float64 TRMM not at all."""
    if order == 128:
        return 8
    return 4 if mma and order == 64 and (mode == 1 or (mode == 0 and itemsize == 4)) else 2


def tile_threads(order: int, mma: bool, mode: int, itemsize: int) -> int:
    """Threads per block of a tile kernel: a warp per 32 x 8 ``tile_groups`` piece."""
    return order * order // (8 * tile_groups(order, mma, mode, itemsize))


def tile_shared(order: int, itemsize: int) -> int:
    """Bytes of dynamic shared memory of a tile kernel of tiles of ``order`` and elements of
    ``itemsize`` bytes (``Shape<T, TILE>::RING`` elements: a ring of 4 chunks for tiles of 64
    and 128, 2 for tiles of 32, each 2 x 16 rows of ``order`` elements and 32 bytes); each kernel's
    definition asserts it."""
    return (2 if order == 32 else 4) * 2 * 16 * (order * itemsize + 32)


def batched_tile(ctype: str, mode: int, mma: bool, order: int) -> tuple[str, str]:
    """Name and defining line of a tile kernel of ``batched_tile.cu`` (``TRICOV_BATCHED_TILE``)
    for a real scalar type, an operation (0 TRMM, 1 HERK, 2 LAUUM), whether its products run
    on the (FP64) tensor cores and the order of its tiles."""
    name = f"tricov_batched_tile{order}_{_TAGS[ctype]}{mode}{'m' if mma else ''}"
    groups = tile_groups(order, mma, mode, _TYPES[ctype])
    shape = f"tricov::tile::Shape<{ctype}, {order}, {groups}>"
    return name, (f"TRICOV_BATCHED_TILE({name}, {ctype}, {mode}, {'true' if mma else 'false'}, "
                  f"{order}, {groups}) static_assert({shape}::RING * sizeof({ctype}) == "
                  f"{tile_shared(order, _TYPES[ctype])} && "
                  f"{shape}::THREADS == {tile_threads(order, mma, mode, _TYPES[ctype])});")


def definitions(source: str) -> dict[str, list[str]]:
    """Kernel-defining lines the executors append to ``source``, for the CI compile check.

    Grouped by scalar type. For ``batched_small.cu``, what the launcher takes: every operation
    at order 4 (every code path), :data:`BATCHED_HEAVY` at the largest order (where registers
    run short), every kernel of several lines per lane at orders 8 and 16
    (:data:`BATCHED_LANES`) and those of large batches (:data:`BATCHED_LANES_LARGE`), the grid
    kernels at the largest order and those of :data:`BATCHED_GRID`, and, for real types, the
    tensor-core kernels (:data:`MMA_SOLVES`). For ``batched_tile.cu``: every tile kernel.
    """
    if source == "batched_tile.cu":
        return {t: [batched_tile(t, mode, mma, order)[1] for mode, mma, order in tile_kernels(t)]
                for t in ("float", "double")}
    if source != "batched_small.cu":
        return {}
    out: dict[str, list[str]] = {}
    for t in _TYPES:
        widest = 16 if "cplx" in t else 32
        kernels = [(4, op) for op in range(10)] + [(widest, op) for op in BATCHED_HEAVY]
        kernels += [(order, op) for (ch, order, op) in BATCHED_LANES
                    if ch == _CHARS[t] and order < widest]
        out[t] = [batched_small(t, order, batched_lanes(_CHARS[t], order, op), op)[1]
                  for order, op in dict.fromkeys(kernels)]
        out[t] += [batched_small(t, order, lanes, op)[1]
                   for (ch, order, op), (_, lanes) in BATCHED_LANES_LARGE.items()
                   if ch == _CHARS[t]]
        grids = [(widest, 4, op) for op in GRID_OPS]  # used or not
        grids += [(order, side, op) for (ch, order, op), side in BATCHED_GRID.items()
                  if ch == _CHARS[t]]
        out[t] += [batched_grid(t, order, side, op)[1] for order, side, op in dict.fromkeys(grids)]
        out[t] += [batched_mma(t, op)[1] for op in MMA_SOLVES.get(_CHARS[t], ())]
    return out


#: Threads per block of every leaf kernel (``THREADS`` in ``cuda/leaves.cu``).
THREADS = 256
#: Shared memory one block may take on the GPUs tricov targets (sm_90: 227 KiB).
SHARED_MAX = 227 * 1024


def block_order(itemsize: int) -> int:
    """Largest diagonal block the shared-memory kernels hold (POTRF, TRTRI and LAUUM leaves,
    inverted diagonal blocks of TRSM): 128, or 64 for 16-byte elements (a square of 128 would
    not fit)."""
    return 128 if itemsize <= 8 else 64


class LeafShape(NamedTuple):
    """Shape of one block of ``tri_leaf``: columns of B per thread (``cpt``), columns of the
    triangle staged per panel (``kp``) and columns of B per block of threads (``cols``)."""

    cpt: int
    kp: int
    cols: int


def leaf_shape(itemsize: int, wide: bool) -> LeafShape:
    """The ``tri_leaf`` configuration for an item size: few columns per block (and long panels,
    fewer round trips to memory) for narrow B, many (fewer shared-memory reads per
    multiply-add) for wide B."""
    sb = block_order(itemsize)
    groups = THREADS // (sb // 4)
    cpt = (4 if itemsize <= 8 else 2) if wide else 1
    return LeafShape(cpt, 16 if wide else 32, groups * cpt)


def leaf_smem(n: int, itemsize: int, wide: bool) -> int:
    """Bytes of shared memory ``tri_leaf`` takes for a triangle of order ``n``."""
    sb = block_order(itemsize)
    shape = leaf_shape(itemsize, wide)
    return ((sb + 1) * shape.kp + sb + (n | 1) * shape.cols) * itemsize


#: Blocks of threads of ``potrf_tiles`` resident on a multiprocessor, by element size (its
#: ``__launch_bounds__``).
TILE_BLOCKS = {4: 2, 8: 1}

#: The dtypes ``potrf_tiles`` serves, by character, and the rows up to which it factors their
#: POTRF leaves (larger leaves go to cuSOLVER). complex128 has no tiles: one block per
#: multiprocessor with four times the flops of float64 ran at 0.43-0.69x the speed of
#: cuSOLVER's POTRF. On one H100 (benchmarks/gpu_potrf_tiles_h100.txt, 2026-11-27, session 24)
#: the tiles took 0.65 / 0.73 / 0.89 of cuSOLVER's time at 1024 / 2048 / 2560 rows in float32
#: (1.13 at 3072), 0.62 / 0.65 / 0.81 in float64 (1.02 at 3072), and in complex64 0.83 at 1536,
#: 0.94 at 1792 and 1.08 at 2048. Float32 products on the TF32 tensor cores at float32 accuracy
#: (split TF32, each tile split once per term; 2026-11-27, ``benchmarks/gpu_potrf_tiles.py``)
#: took float32 tiles of 2048 / 3072 / 4096 rows from 498 / 1172 / 2410 to 495 / 1089 / 2256 µs,
#: still behind cuSOLVER's 1021-1033 at 3072 and changing no default path; not kept. With the
#: products skipped (a timing probe) the tiles took 365 / 626 µs at 2048 / 3072.
TILE_POTRF = {"f": 2560, "d": 2560, "F": 1792}


def tile_smem(itemsize: int) -> int:
    """Bytes of dynamic shared memory of ``potrf_tiles``: five tiles of 32 x 32 (leading
    dimension 36)."""
    return 5 * 32 * 36 * itemsize


def square_smem(itemsize: int) -> int:
    """Bytes of shared memory of the diagonal-block kernels (tri_inv, potrf_leaf, lauum_leaf)."""
    sb = block_order(itemsize)
    return (sb * (sb + 1) + sb) * itemsize + sb * 8  # the square, a column, row sums


def cond_split(order: int) -> int:
    """Blocks of threads that share one diagonal block of ``order`` rows in ``tri_cond``: one per
    slice of 64 rows (a row for every 4 of the :data:`THREADS` threads)."""
    return order // min(order, 64)


#: Tilings of the fused split-TF32 kernel for narrow float32 products (``tf32_narrow.cu``):
#: columns of C per block -> stages of its pipeline (each stage a slab of A, 8 KiB, and B's two
#: parts, 256 bytes per column).
TF32_NARROW = {64: 4, 128: 3, 256: 3}


def tf32_narrow_smem(bn: int, stages: int) -> int:
    """Bytes of dynamic shared memory of the fused split-TF32 kernel: per stage, a slab of A
    (64 rows x 32 depths) and B's two parts (32 depths x ``bn`` columns each)."""
    return stages * (32 * 64 + 2 * 32 * bn) * 4


def tf32_narrow_tiling(m: int, n: int, k: int, sms: int, smem: int) -> tuple[int, int, int]:
    """(columns of C per block, stages, parts of the depth) of the fused split-TF32 kernel for
    C of ``m x n`` (``n`` a multiple of 64) and depth ``k``, on ``sms`` multiprocessors of
    ``smem`` bytes of shared memory: the widest blocks that divide ``n`` (A is split once per
    block column), and the depth cut into parts until the blocks fill the multiprocessors as
    many times as their shared memory lets them share one, each part keeping 8 slabs of 32 or
    more."""
    bn = next(w for w in (256, 128, 64) if n % w == 0)
    stages = TF32_NARROW[bn]
    per_sm = max(1, smem // (tf32_narrow_smem(bn, stages) + 1024))
    tiles = (n // bn) * -(-m // 64)
    return bn, stages, max(1, min(sms * per_sm // tiles, k // 256))


def instantiations(source: str) -> dict[str, list[str]]:
    """Explicit-instantiation declarations of what the executors launch from ``source``.

    Grouped by scalar type, for the CI compile check. For ``batched_small.cu``: its helper
    kernels (the register kernels themselves are C-linkage definitions, see
    :func:`definitions`).
    """
    out: dict[str, list[str]] = {}
    if source == "matern.cu":
        args = ("int, int, long long, long long, double*, " + ", ".join(["const double*"] * 6)
                + ", bool")
        out["double"] = [f"__global__ void tricov::matern_block<{nf}>({args})" for nf in (1, 2)]
        args = ("int, int, int, const double*, long long, long long, const double*, long long, "
                "long long, double*, long long, long long, double, double, double, double, "
                + ", ".join(["const double*"] * 6) + ", bool")
        out["double"] += [f"__global__ void tricov::covariance_block<{f}, {g}, {nf}>({args})"
                          for f in range(7) for g in ("false", "true")
                          for nf in ((1, 2) if f == 6 else (1,))]
        return out
    if source == "gram.cu":
        for t in ("float", "double"):
            out[t] = [f"__global__ void tricov::gram_basis<{t}, {w}>(int, const {t}*, "
                      f"const {t}*, {t}, {t}, {t}*, {t}*, long long)" for w in (32, 64)]
            out[t].append(f"__global__ void tricov::live_by_norm<{t}>(long long, const {t}*, "
                          f"{t}, {t}*)")
        return out
    if source == "tf32_split.cu":
        return {"float": []}  # one kernel, not a template
    if source == "tf32_narrow.cu":
        return {"float": [
            *(f"__global__ void tricov::tf32_narrow<{bn}, {stages}>(int, int, int, float, "
              "const float*, long long, const float*, float, const float*, long long, float*, "
              "long long, int, float*)"
              for bn, stages in TF32_NARROW.items()),
            *(f"__global__ void tricov::tf32_narrow_parts<{bn}>(int, int, const float*, "
              "long long, int, float*)" for bn in TF32_NARROW)]}
    if source == "batched_small.cu":
        for t in _TYPES:
            out[t] = [f"__global__ void tricov::batched::zero_pivots<{t}>(long long, long long, "
                      "int, const long long*, long long, long long, long long, long long, "
                      "long long*)",
                      f"__global__ void tricov::batched::conjugate<{t}>(long long, long long, "
                      "int, int, int, const long long*, long long, long long, long long, "
                      "long long, const long long*)"]
        return out
    for t, size in _TYPES.items():
        decls = out.setdefault(t, [])
        if source == "triangular.cu":
            for lower in ("false", "true"):
                for zero in ("false", "true"):
                    decls.append(f"__global__ void tricov::tri_copy<{t}, {lower}, {zero}>(int, "
                                 f"const {t}*, long long, {t}*, long long, long long, "
                                 "long long, int)")
                decls.append(f"__global__ void tricov::tri_update<{t}, {lower}>(int, {t}, "
                             f"const {t}*, long long, {t}, {t}*, long long, int)")
            for zero in ("false", "true"):
                decls.append(f"__global__ void tricov::diag_find<{t}, {zero}>(int, const {t}*, "
                             "long long, int*)")
            decls.append(f"__global__ void tricov::transpose_square<{t}>(int, {t}*, long long)")
        elif source == "leaves.cu":
            sb = block_order(size)
            real = "float" if size == 4 or t == "tricov::cplx<float>" else "double"
            for wide in (False, True):
                cpt, kp, _ = leaf_shape(size, wide)
                for solve in ("false", "true"):
                    for lower in ("false", "true"):
                        decls.append(
                            f"__global__ void tricov::tri_leaf<{t}, {sb}, {cpt}, {kp}, {solve}, "
                            f"{lower}>(int, int, int, {t}, const {t}*, long long, int, {t}*, "
                            f"long long, int, int, const {t}*, const int*, const int*)")
            for inplace in ("false", "true"):
                decls.append(f"__global__ void tricov::tri_inv<{t}, {sb}, {inplace}>(int, int, "
                             f"{t}*, long long, int, int, int, {t}*, int*, int*, {real})")
            decls.append(f"__global__ void tricov::tri_rows<{t}>(int, const {t}*, long long, "
                         f"int, int, int, {real}*)")
            decls.append(f"__global__ void tricov::tri_cond<{t}>(int, int, {t}*, int*, "
                         f"const {real}*, {real}, int)")
            decls.append(f"__global__ void tricov::potrf_leaf<{t}, {sb}>(int, {t}*, long long, "
                         "int, int*)")
            decls.append(f"__global__ void tricov::lauum_leaf<{t}, {sb}>(int, {t}*, long long, "
                         "int)")
            if _CHARS[t] in TILE_POTRF:
                decls.append(f"__global__ void tricov::potrf_tiles<{t}>(int, int, {t}*, "
                             "long long, int, int, int*, int*)")
    return out
