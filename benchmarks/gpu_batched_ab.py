"""A/B timings behind the batched GPU engine's choices, through the library's own launch path.

Each mode times ``tricov.batched`` calls on C-ordered stacks (batch 10240, device time: calls
queued behind a spinning kernel as ``tricov.batched.bench_gpu`` does, the restoring copy
subtracted) while changing one choice between candidates, and prints one line per case:

    python benchmarks/gpu_batched_ab.py lanes --order 32 --lanes 8 16 32
        lanes per member of the register kernels (``tricov.kernels.BATCHED_LANES``, and
        ``BATCHED_LANES_LARGE`` for large ``--batch``)
    python benchmarks/gpu_batched_ab.py blocks --order 32 --blocks 0 3 4 5
        fewest blocks per multiprocessor asked of ptxas for the register kernels at the lanes
        in force (``tricov.kernels.BATCHED_BLOCKS``; 0: ptxas chooses)
    python benchmarks/gpu_batched_ab.py split --orders 16 17 20 24 28 32
        POTI or POSV (``--ops``) of order <= 32 fused, or as two kernels (``_SPLIT_FROM``)
    python benchmarks/gpu_batched_ab.py tiles --orders 17 20 24 28 32
        TRMM / SYRK (beta 1) / LAUUM on the register kernels, on tiles of 32 or of 64
        (``_TILE_FROM``)
    python benchmarks/gpu_batched_ab.py wide --orders 128 192 256 --rhs 0 32
        TRMM on the tile kernel's tiles of 64 or 128 (above order 64), against the policy
        (``tricov.kernels.tile_order``), with ``--rhs`` columns of B (0: square) and the leaf
        sizes in force (``--leaf`` sets TRMM's)
    python benchmarks/gpu_batched_ab.py leaves --orders 128 256 --ops trmm syrk --leaf 64 128
        leaf sizes of the recursions above the kernels (``tricov.set_leaf_size``)
    python benchmarks/gpu_batched_ab.py grid --orders 8 16 32 --sides 2 4 --ops potrf potri
        an operation of the Cholesky family (``--ops``: potrf, trtri, potri, poti) on lines, or
        on a grid of side x side lanes per member (``tricov.kernels.BATCHED_GRID``); the largest
        relative difference of the results is printed
    python benchmarks/gpu_batched_ab.py source OLD.cu --orders 8 16 32
        a variant of a kernel source (``--file``, default ``batched_small.cu``) against the
        tree's, launched by the tree's launcher; the largest relative difference of the
        results is printed

Every mode takes ``--dtype`` (float64 float32 by default), ``--ops`` and ``--batch`` (members
per call, 10240 by default). Run on the GPU machine from the repository root with
``PYTHONPATH=src``; the kernels compile on first use (``--jobs`` processes compile them first).
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import tricov as tc
import tricov.backends.batched_cuda as bc
import tricov.kernels as tk
from tricov.batched.bench_gpu import _Queue
from tricov.kernels import nvrtc

BATCH = 10240
SOURCE = nvrtc.SOURCE_DIR
#: Operations whose square operand is the factor L (the others take the SPD matrix A).
ON_FACTOR = {"trtri", "potri", "lauum", "potrs", "trsm", "trmm"}


class Case:
    """One dtype and order: SPD stack A, its factor L, right-hand sides R, and work arrays."""

    def __init__(self, cp: Any, dtype: np.dtype, n: int) -> None:
        rng = cp.random.default_rng(n)
        x = rng.standard_normal((BATCH, n, n), dtype=dtype)
        self.a = x @ x.transpose(0, 2, 1) + n * cp.eye(n, dtype=dtype)
        self.l = cp.linalg.cholesky(self.a)
        self.r = rng.standard_normal((BATCH, n, n), dtype=dtype)
        self.w, self.x = cp.empty_like(self.a), cp.empty_like(self.r)

    def call(self, op: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
        """The call of ``op`` with its restoring copies, and those copies alone."""
        a, fac, r, w, x = self.a, self.l, self.r, self.w, self.x
        src = fac if op in ON_FACTOR else a

        def restore() -> None:
            if op in ("potrs", "trsm", "trmm", "posv"):
                x[...] = r
            if op not in ("potrs", "trsm", "trmm"):
                w[...] = src

        def run() -> None:
            restore()
            if op in ("potrs", "trsm", "trmm"):
                getattr(tc.batched, op)(fac, x)
            elif op == "syrk":
                tc.batched.syrk(r, w, beta=1.0)
            elif op == "posv":
                tc.batched.posv(w, x, check=False)
            elif op == "lauum":
                tc.batched.lauum(w)
            else:
                getattr(tc.batched, op)(w, check=False)

        return run, restore

    def result(self, op: str) -> Any:
        return (self.x if op in ("potrs", "trsm", "trmm", "posv") else self.w).copy()


def milliseconds(queue: _Queue, fn: Callable[[], Any], reps: int = 3) -> float:
    """Best device time of one call of ``fn`` over ``reps`` queues, in ms."""
    for _ in range(2):
        fn()
    best = min(queue.seconds(fn, 0.3e-3) or np.inf for _ in range(reps))
    return best / queue.queued * 1e3


def timed(queue: _Queue, case: Case, op: str) -> float:
    """Device ms of ``op`` less that of its restoring copies."""
    fn, restore = case.call(op)
    return milliseconds(queue, fn) - milliseconds(queue, restore)


def sweep(queue: _Queue, case: Case, op: str, table: dict, key: Any,
          values: list[Any]) -> list[float]:
    """Device ms of ``op`` with ``table[key]`` set to each of ``values`` in turn; the table is
    restored after."""
    saved = dict(table)
    times = []
    try:
        for value in values:
            table[key] = value
            times.append(timed(queue, case, op))
    finally:
        table.clear()
        table.update(saved)
    return times


def _use_source(directory: Path) -> None:
    nvrtc.SOURCE_DIR = directory
    nvrtc.kernel.cache_clear()


def _compile(directory: Path, items: list[tuple[str, str]], jobs: int) -> None:
    with multiprocessing.get_context("spawn").Pool(jobs, _use_source, (directory,)) as pool:
        pool.starmap(bc._compile, items)


def _small_kernels(dtypes: list[np.dtype], orders: list[int], ops: list[str],
                   lanes: list[int] | None = None) -> list[tuple[str, str]]:
    items = []
    for dt in dtypes:
        for n in orders:
            for op in ops:
                order, g = bc.group_shape(n, dt, op, BATCH)
                for width in lanes or [g]:
                    items.append(tk.batched_small(nvrtc.CTYPE[dt], order, width, bc.OPS[op]))
    return items


def _small_key(dtype: np.dtype, n: int, op: str) -> tuple[str, int, int, int]:
    """The :data:`tricov.kernels.BATCHED_BLOCKS` key of the register kernel of ``op`` at order
    ``n``, with the lanes in force."""
    order, lanes = bc.group_shape(n, dtype, op, BATCH)
    return (dtype.char, order, lanes, bc.OPS[op])


def main(argv: list[str] | None = None) -> None:
    import cupy as cp

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=("lanes", "blocks", "split", "tiles", "wide", "leaves",
                                     "grid", "source"))
    ap.add_argument("variant", nargs="?", help="source: the variant of the kernel source")
    ap.add_argument("--file", default="batched_small.cu", help="source: the file it replaces")
    ap.add_argument("--leaf", type=int, nargs="+", default=[64, 128, 256])
    ap.add_argument("--rhs", type=int, nargs="+", default=[0])
    ap.add_argument("--order", type=int, default=32, help="lanes: the padded order")
    ap.add_argument("--lanes", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--blocks", type=int, nargs="+", default=[0, 3, 4, 5])
    ap.add_argument("--sides", type=int, nargs="+", default=[4])
    ap.add_argument("--orders", type=int, nargs="+", default=[16, 17, 20, 24, 28, 32])
    ap.add_argument("--ops", nargs="+")
    ap.add_argument("--dtype", nargs="+", default=["float64", "float32"])
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--batch", type=int, default=10240, help="members per call")
    args = ap.parse_args(argv)
    global BATCH
    BATCH = args.batch
    dtypes = [np.dtype(d) for d in args.dtype]
    queue = _Queue(8)
    tc.set_cuda_graphs(False)  # the tables change between calls: nothing recorded is replayed

    if args.mode == "lanes":
        ops = args.ops or ["potrf", "trtri", "potri", "poti", "potrs", "posv", "trsm"]
        _compile(SOURCE, _small_kernels(dtypes, [args.order], ops, args.lanes), args.jobs)
        for dt in dtypes:
            case = Case(cp, dt, args.order)
            for op in ops:
                key = (dt.char, args.order, bc.OPS[op])
                now = tk.batched_lanes(dt.char, args.order, bc.OPS[op], BATCH)
                large = tk.BATCHED_LANES_LARGE.pop(key, None)  # the sweep's lanes at any batch
                times = sweep(queue, case, op, tk.BATCHED_LANES, key, args.lanes)
                if large is not None:
                    tk.BATCHED_LANES_LARGE[key] = large
                print(f"{dt.name} n={args.order} {op:6s} ms at lanes "
                      + " / ".join(f"{w}: {t:.4f}" for w, t in zip(args.lanes, times, strict=True))
                      + f"  (now {now})", flush=True)
    elif args.mode == "blocks":
        # the fused kernels the engine runs at this order (not POSV / POTI where they split)
        ops = {dt: [op for op in args.ops or ["potrf", "trtri", "potri", "potrs", "posv", "trsm"]
                    if not bc.split_small(dt, op, args.order)] for dt in dtypes}
        table = dict(tk.BATCHED_BLOCKS)
        items = []
        for blocks in args.blocks:
            for dt in dtypes:
                tk.BATCHED_BLOCKS.update(dict.fromkeys(
                    (_small_key(dt, args.order, op) for op in ops[dt]), blocks))
                items += _small_kernels([dt], [args.order], ops[dt])
        tk.BATCHED_BLOCKS.clear()
        tk.BATCHED_BLOCKS.update(table)
        _compile(SOURCE, items, args.jobs)
        for dt in dtypes:
            case = Case(cp, dt, args.order)
            for op in ops[dt]:
                key = _small_key(dt, args.order, op)
                times = sweep(queue, case, op, tk.BATCHED_BLOCKS, key, args.blocks)
                print(f"{dt.name} n={args.order} {op:6s} ms at blocks "
                      + " / ".join(f"{b}: {t:.4f}" for b, t in zip(args.blocks, times, strict=True))
                      + f"  (now {table.get(key, 0)}, lanes {key[2]})", flush=True)
    elif args.mode == "split":
        for dt in dtypes:
            for n in args.orders:
                case = Case(cp, dt, n)
                line = []
                for op in args.ops or ["poti"]:  # POTRI is always fused
                    times = sweep(queue, case, op, bc._SPLIT_FROM, (dt.name, op),
                                  [n + 1, 1])  # fused, then split
                    line.append(f"{op} fused {times[0]:.4f} split {times[1]:.4f}")
                print(f"{dt.name} n={n:3d} " + " | ".join(line), flush=True)
    elif args.mode == "tiles":
        table, order = dict(bc._TILE_FROM), bc.tile_order
        modes = {"register": (1 << 30, order), "tile": (1, order), "tile64": (1, lambda n, *_: 64)}
        for dt in dtypes:
            for n in args.orders:
                case = Case(cp, dt, n)
                for op in args.ops or ["trmm", "syrk", "lauum"]:
                    times = []
                    for first, tile in modes.values():
                        bc._TILE_FROM[(dt.name, "herk" if op == "syrk" else op)] = first
                        bc.tile_order = tile
                        times.append(timed(queue, case, op))
                    bc._TILE_FROM.clear()
                    bc._TILE_FROM.update(table)
                    bc.tile_order = order
                    print(f"{dt.name} n={n:3d} {op:6s} ms " + " / ".join(
                        f"{m} {t:.4f}" for m, t in zip(modes, times, strict=True)), flush=True)
    elif args.mode == "wide":
        order = bc.tile_order
        modes = {"policy": order, "64": lambda r, c=0, w=False: order(r, c, False),
                 "128": lambda r, c=0, w=False: 128 if r > 64 else order(r, c, False)}
        for dt in dtypes:
            if args.leaf != ap.get_default("leaf"):
                tc.set_leaf_size("batched_gpu", "trmm", dt, args.leaf[0])
            for n in args.orders:
                case = Case(cp, dt, n)
                for rhs in args.rhs:
                    if rhs:
                        case.r = case.r[..., :rhs].copy()
                        case.x = cp.empty_like(case.r)
                    times, results = [], []
                    for tile in modes.values():
                        bc.tile_order = tile
                        times.append(timed(queue, case, "trmm"))
                        case.call("trmm")[0]()
                        results.append(case.result("trmm"))
                    bc.tile_order = order
                    ref = float(cp.abs(results[0]).max())
                    diff = max(float(cp.abs(r - results[0]).max()) for r in results) / ref
                    print(f"{dt.name} n={n:3d} m={case.r.shape[-1]:3d} trmm ms on tiles of "
                          + " / ".join(f"{m}: {t:.4f}" for m, t in zip(modes, times, strict=True))
                          + f"  rel. diff {diff:.1e}", flush=True)
            tc.set_leaf_size("batched_gpu", "trmm", dt, None)
    elif args.mode == "grid":
        table = dict(tk.BATCHED_GRID)
        for dt in dtypes:
            for n in args.orders:
                case, order = Case(cp, dt, n), bc.padded_order(n)
                for op in args.ops or ["potrf"]:
                    key = (dt.char, order, bc.OPS[op])
                    times, results = [], []
                    for side in [0, *args.sides]:
                        tk.BATCHED_GRID.pop(key, None)
                        if side:
                            tk.BATCHED_GRID[key] = side
                        times.append(timed(queue, case, op))
                        case.call(op)[0]()
                        results.append(case.result(op))
                    tk.BATCHED_GRID.clear()
                    tk.BATCHED_GRID.update(table)
                    ref = float(cp.abs(results[0]).max())
                    diff = max(float(cp.abs(r - results[0]).max()) for r in results) / ref
                    print(f"{dt.name} n={n:3d} {op:6s} ms on lines {times[0]:.4f}, grids "
                          + " / ".join(f"{s}x{s}: {t:.4f}" for s, t in
                                       zip(args.sides, times[1:], strict=True))
                          + f"  rel. diff {diff:.1e}", flush=True)
    elif args.mode == "leaves":
        for dt in dtypes:
            for n in args.orders:
                case = Case(cp, dt, n)
                for op in args.ops or ["trmm", "syrk", "lauum"]:
                    times = []
                    for leaf in args.leaf:
                        tc.set_leaf_size("batched_gpu", op, dt, leaf)
                        times.append(timed(queue, case, op))
                    tc.set_leaf_size("batched_gpu", op, dt, None)
                    print(f"{dt.name} n={n:3d} {op:6s} ms at leaves " + " / ".join(
                        f"{f}: {t:.4f}" for f, t in zip(args.leaf, times, strict=True)),
                        flush=True)
    else:
        if not args.variant:
            ap.error("source: name the variant of the kernel source")
        other = Path(tempfile.mkdtemp())
        shutil.copytree(SOURCE, other, dirs_exist_ok=True)
        shutil.copy(args.variant, other / args.file)
        ops = args.ops or ["potrf", "trtri", "potri", "poti", "posv", "potrs", "trsm"]
        if args.file == "batched_small.cu":  # others compile on first use
            items = _small_kernels(dtypes, args.orders, ops)
            for directory in (SOURCE, other):
                _compile(directory, items, args.jobs)
        for dt in dtypes:
            for n in args.orders:
                case = Case(cp, dt, n)
                for op in ops:
                    times, results = [], []
                    for directory in (other, SOURCE):
                        _use_source(directory)
                        times.append(timed(queue, case, op))
                        case.call(op)[0]()
                        results.append(case.result(op))
                    ref = float(cp.abs(results[1]).max())
                    diff = float(cp.abs(results[0] - results[1]).max()) / ref
                    print(f"{dt.name} n={n:2d} {op:6s} ms variant {times[0]:.4f} tree "
                          f"{times[1]:.4f} (x{times[0] / times[1]:.2f})  rel. diff {diff:.1e}",
                          flush=True)


if __name__ == "__main__":
    main()
