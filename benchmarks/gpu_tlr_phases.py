"""Where the time of the GPU TLR Cholesky (mode DL, tricov.tlr._panels) goes, by phase.

    python benchmarks/gpu_tlr_phases.py --n 100000 --tile 4096 [--tol 1e-8]

Runs potrf_from_kernel once to compile and warm up, once plain (the wall time), then once
with the device synchronised around each phase (generation of the panels, the factors of
the Schur updates, diagonal factorizations, compression, the column TRSMs): a phase's time
includes its launches and waits, so the phases add up to slightly more than the plain run.
Matérn nu = 0.5, beta = 0.1 on a jittered grid in Morton order, as benchmarks/gpu_geostat.py.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import cupy as cp
import numpy as np

from tricov.bench.devices import kernel_times
from tricov.geostat import jittered_grid, matern
from tricov.tlr import _panels, cholesky, morton_order, potrf_from_kernel
from tricov.tlr.sources import KernelSource


def _sync_timer(table: dict, name: str, f):
    def wrapped(*args, **kwargs):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        out = f(*args, **kwargs)
        cp.cuda.Device().synchronize()
        table[name] += time.perf_counter() - t0
        return out
    return wrapped


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=100000)
    p.add_argument("--tile", type=int, nargs="+", default=[4096])
    p.add_argument("--tol", type=float, default=1e-8)
    p.add_argument("--kernels", action="store_true",
                   help="also a run under torch.profiler: GPU time per kernel (top 25) and "
                        "the GPU's busy time against the wall time")
    p.add_argument("--host", action="store_true", help="also a cProfile of one run (top 25)")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    x = jittered_grid(args.n, 2, rng)
    x = cp.asarray(np.ascontiguousarray(x[morton_order(x)]))
    kern = matern(1.0, 0.1, 0.5)
    for tile in args.tile:
        potrf_from_kernel(kern, x[:3 * tile], tile_size=tile, tol=args.tol)
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        F = potrf_from_kernel(kern, x, tile_size=tile, tol=args.tol)
        cp.cuda.Device().synchronize()
        wall = time.perf_counter() - t0
        del F
        table: dict = defaultdict(float)
        saved = (KernelSource.panel, KernelSource.diag, _panels._Columns.correction,
                 _panels.compress_stack, cholesky._factor_diag, _panels._Columns.add,
                 _panels._Columns.store)
        KernelSource.panel = _sync_timer(table, "generate panels", saved[0])
        KernelSource.diag = _sync_timer(table, "generate diagonal", saved[1])
        _panels._Columns.correction = _sync_timer(table, "schur factors", saved[2])
        _panels.compress_stack = _sync_timer(table, "compress", saved[3])
        cholesky._factor_diag = _sync_timer(table, "potrf diagonal", saved[4])
        _panels._Columns.add = _sync_timer(table, "column trsm", saved[5])
        _panels._Columns.store = _sync_timer(table, "copy out", saved[6])
        try:
            t0 = time.perf_counter()
            F = potrf_from_kernel(kern, x, tile_size=tile, tol=args.tol)
            phased = time.perf_counter() - t0
        finally:
            (KernelSource.panel, KernelSource.diag, _panels._Columns.correction,
             _panels.compress_stack, cholesky._factor_diag, _panels._Columns.add,
             _panels._Columns.store) = saved
        print(f"n={args.n} tile={tile} tol={args.tol}: wall {wall:.3f} s, phased run "
              f"{phased:.3f} s, max rank {F.max_rank}, mean rank {F.mean_rank:.1f}")
        for name, t in sorted(table.items(), key=lambda kv: -kv[1]):
            print(f"  {name:20s} {t:8.3f} s")
        print(f"  {'other':20s} {phased - sum(table.values()):8.3f} s", flush=True)
        del F
        cp.get_default_memory_pool().free_all_blocks()
        if args.kernels:
            _kernel_profile(kern, x, tile, args.tol)
        if args.host:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.enable()
            potrf_from_kernel(kern, x, tile_size=tile, tol=args.tol)
            cp.cuda.Device().synchronize()
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def _kernel_profile(kern, x, tile: int, tol: float) -> None:
    """GPU time per kernel of one factorization (torch.profiler sees every CUDA kernel of
    the process, CuPy's and cuBLAS's included)."""
    t0 = time.perf_counter()
    rows = kernel_times(lambda: potrf_from_kernel(kern, x, tile_size=tile, tol=tol))
    wall = time.perf_counter() - t0
    busy = sum(us for _, us, _ in rows) / 1e6
    print(f"  profiled run {wall:.3f} s, GPU busy {busy:.3f} s (kernels and copies)")
    for name, us, count in rows[:25]:
        print(f"    {us / 1e3:9.1f} ms {count:6d}x  {name[:90]}")


if __name__ == "__main__":
    main()
