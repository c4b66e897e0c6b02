"""GPU log-likelihood benchmarks of tricov.geostat (issue 6) and TLR Cholesky (issue 5).

    python benchmarks/gpu_geostat.py dense --n 80000
        One dense Matérn log-likelihood on the GPU: assembly, tricov.potrf, tricov.trsm; then
        the same matrix assembled again and factored in place by cuSOLVER's potrf (the peer).
    python benchmarks/gpu_geostat.py tlr --n 500000 --tol 1e-8 --tile 2048 [--dense]
        One TLR log-likelihood on the GPU (compression, TLR Cholesky, solve); with --dense (and
        where n^2 doubles fit) the dense cuSOLVER potrf of the same matrix as the peer.
    python benchmarks/gpu_geostat.py tlr --n 50000 --tile 4096 --storage host device
                                         [--device-memory 2e9]
        The same with the tiles in host memory (tricov.tlr.stream), computed on the GPU within
        --device-memory (bytes, or a fraction of the free memory if <= 1; default 0.8 of it),
        beside device storage: times, host<->device traffic, the factorization's accounted
        peak and the CuPy pool's high-water mark (pool_peak_bytes: blocks are kept until
        freed, so the pool's size after a phase is the most it held).

    python benchmarks/gpu_geostat.py tlr --n 100000 --tile 4096 --mode dl ll --dense
        Mode dl: potrf_from_kernel, compression while factoring (factor_s); mode ll (the
        default): TLRMatrix.from_kernel then potrf (factor_s = compress_s + potrf_s).
        --repeats R times the factorization R times: factor_s is the median, factor_runs_s
        every run.

Prints one table and, with --json FILE, writes the numbers. Locations: a jittered grid in the
unit square, Morton order; Matérn (sigma2=1, beta=0.1, nu); observations standard normal.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import math
import pstats
import time

import cupy as cp
import numpy as np
from cupy.cuda import cusolver
from cupy_backends.cuda.libs import cublas

from tricov import dense, leaf_sizes
from tricov.geostat import jittered_grid, matern
from tricov.geostat.covariance import covariance
from tricov.geostat.likelihood import GPU_TILE, Terms
from tricov.tlr import TLRMatrix, morton_order, potrf, potrf_from_kernel


def _timed(record: dict, key: str, f, *args, **kwargs):
    """``f(*args, **kwargs)``, its wall time (device synchronised) stored as ``record[key]``."""
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    value = f(*args, **kwargs)
    cp.cuda.Device().synchronize()
    record[key] = time.perf_counter() - t0
    return value


def _data(n: int, seed: int) -> tuple[cp.ndarray, cp.ndarray]:
    rng = np.random.default_rng(seed)
    x = jittered_grid(n, 2, rng)
    x = np.ascontiguousarray(x[morton_order(x)])
    return cp.asarray(x), cp.asarray(rng.standard_normal(n))


def _cusolver_potrf(a: cp.ndarray) -> int:
    """cuSOLVER's potrf of the lower triangle of the F-ordered ``a``, in place; its info."""
    handle = cp.cuda.device.get_cusolver_handle()
    n = a.shape[0]
    lwork = cusolver.dpotrf_bufferSize(handle, cublas.CUBLAS_FILL_MODE_LOWER, n, a.data.ptr, n)
    work = cp.empty(lwork, dtype=cp.float64)
    info = cp.zeros(1, dtype=cp.int32)
    cusolver.dpotrf(handle, cublas.CUBLAS_FILL_MODE_LOWER, n, a.data.ptr, n, work.data.ptr,
                    lwork, info.data.ptr)
    return int(info.get()[0])


def _dense_peer(kern, x: cp.ndarray, out: dict) -> float:
    """Assemble again and factor with cuSOLVER; its log-determinant."""
    n = x.shape[0]
    a = _timed(out, "peer_assembly_s", lambda: covariance(kern, x, lower=True,
                                                           tile_size=GPU_TILE))
    info = _timed(out, "cusolver_potrf_s", _cusolver_potrf, a)
    if info:
        raise RuntimeError(f"cuSOLVER potrf failed at order {info}")
    logdet = 2.0 * float(cp.log(cp.diagonal(a)).sum())
    del a
    cp.get_default_memory_pool().free_all_blocks()
    out["cusolver_potrf_tflops"] = n**3 / 3 / out["cusolver_potrf_s"] / 1e12
    return logdet


def run_dense(n: int, nu: float, seed: int) -> dict:
    x, z = _data(n, seed)
    kern = matern(1.0, 0.1, nu)
    # compile the kernels outside the timings: a matrix past two POTRF leaves meets every
    # kernel of the recursion (TRSM and HERK between the leaves), and the solve's
    m = min(n, 2 * leaf_sizes("gpu", np.float64).potrf + 1)
    warm = dense.potrf(covariance(kern, x[:m], lower=True, tile_size=GPU_TILE))
    dense.trsm(warm, z[:m].reshape(-1, 1).copy(order="F"))
    del warm
    out: dict = {"what": "dense", "n": n, "nu": nu, "device": cp.cuda.runtime.getDeviceProperties(
        0)["name"].decode()}
    t0 = time.perf_counter()
    a = _timed(out, "assembly_s", lambda: covariance(kern, x, lower=True, tile_size=GPU_TILE))
    _timed(out, "potrf_s", dense.potrf, a)
    w = z.reshape(-1, 1).copy(order="F")
    _timed(out, "trsm_s", dense.trsm, a, w)
    logdet = 2.0 * float(cp.log(cp.diagonal(a)).sum())
    out["loglik"] = Terms(float((w * w).sum()), logdet, n).loglik()
    out["total_s"] = time.perf_counter() - t0
    out["potrf_tflops"] = n**3 / 3 / out["potrf_s"] / 1e12
    del a
    cp.get_default_memory_pool().free_all_blocks()
    peer_logdet = _dense_peer(kern, x, out)
    out["logdet_rel_diff"] = abs(peer_logdet - logdet) / abs(logdet)
    out["potrf_speedup_vs_cusolver"] = out["cusolver_potrf_s"] / out["potrf_s"]
    return out


def run_tlr(n: int, tol: float, tile: int, nu: float, seed: int, peer: bool,
            storage: str = "device", device_memory: float | None = None,
            mode: str = "ll", repeats: int = 1) -> dict:
    x, z = _data(n, seed)
    kern = matern(1.0, 0.1, nu)
    # compile every kernel of the timed stages outside the timings (the solve's TRSM leaves
    # too): the same tile size on six tiles and a short one, so that every kernel and branch
    # is met (a fresh machine compiles CuPy's kernels too)
    m = min(n, 6 * tile + tile // 5)
    warm = TLRMatrix.from_kernel(kern, x[:m], tile_size=tile, tol=tol, storage=storage)
    potrf(warm)
    warm.solve(z[:m])
    potrf_from_kernel(kern, x[:m], tile_size=tile, tol=tol, storage=storage).solve(z[:m])
    del warm
    out: dict = {"what": "tlr", "mode": mode, "n": n, "tol": tol, "tile_size": tile, "nu": nu,
                 "storage": storage,
                 "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode()}
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    base = pool.total_bytes()
    kw = {}
    if storage == "host" and device_memory is not None:
        kw["device_memory"] = int(device_memory) if device_memory > 1 else float(device_memory)
    runs = []
    for _ in range(repeats):  # the factor of the last run is kept
        T = None
        pool.free_all_blocks()
        t0 = time.perf_counter()
        if mode == "dl":  # compression and factorization in one pass
            T = _timed(out, "factor_s", lambda: potrf_from_kernel(
                kern, x, tile_size=tile, tol=tol, storage=storage, **kw))
            before: dict = {"d2h_bytes": 0}
        else:
            T = _timed(out, "compress_s", lambda: TLRMatrix.from_kernel(
                kern, x, tile_size=tile, tol=tol, storage=storage))
            out["nbytes_compressed"] = T.nbytes
            out["compress_pool_peak_bytes"] = pool.total_bytes() - base
            pool.free_all_blocks()
            before = dict(T.transfer_stats or {})
            _timed(out, "potrf_s", potrf, T, **kw)
            out["factor_s"] = out["compress_s"] + out["potrf_s"]
        runs.append(out["factor_s"])
    if repeats > 1:  # the median run (its phases are those of the last run)
        out["factor_runs_s"] = runs
        out["factor_s"] = float(np.median(runs))
    out["pool_peak_bytes"] = pool.total_bytes() - base
    if storage == "host":
        st = T.transfer_stats
        for key in ("h2d_bytes", "d2h_bytes", "h2d_copies", "d2h_copies"):
            out[f"potrf_{key}"] = st[key] - before.get(key, 0)
        if mode == "ll":
            out["compress_d2h_bytes"] = before["d2h_bytes"]
        out["potrf_cache_hits"] = st["cache_hits"]
        out["potrf_device_memory"] = st["device_memory"]
        out["potrf_accounted_peak_bytes"] = st["device_peak_bytes"]
        out["potrf_h2d_GBps"] = out["potrf_h2d_bytes"] / out.get("potrf_s",
                                                                 out["factor_s"]) / 1e9
    sol = _timed(out, "solve_s", T.solve, z)
    out["total_s"] = time.perf_counter() - t0
    logdet = T.logdet()
    out["loglik"] = Terms(float(z @ sol), logdet, n).loglik()
    out["max_rank"], out["mean_rank"], out["nbytes_factor"] = T.max_rank, T.mean_rank, T.nbytes
    out["dense_nbytes"] = n * n * 8
    out["memory_ratio"] = T.nbytes / out["dense_nbytes"]
    del T, sol
    cp.get_default_memory_pool().free_all_blocks()
    free = cp.cuda.runtime.memGetInfo()[0]
    if peer and out["dense_nbytes"] + (1 << 30) < free:  # a GiB for cuSOLVER's workspace
        peer_logdet = _dense_peer(kern, x, out)
        out["logdet_rel_diff"] = abs(peer_logdet - logdet) / abs(peer_logdet)
        out["speedup_vs_cusolver_potrf"] = out["cusolver_potrf_s"] / out["factor_s"]
    elif peer:
        out["peer"] = f"dense needs {out['dense_nbytes'] / 2**30:.0f} GiB, {free / 2**30:.0f} free"
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("what", choices=("dense", "tlr"))
    p.add_argument("--n", type=int, nargs="+", default=[20000])
    p.add_argument("--tol", type=float, default=1e-8)
    p.add_argument("--tile", type=int, default=2048)
    p.add_argument("--nu", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dense", action="store_true", help="TLR: also the dense cuSOLVER peer")
    p.add_argument("--storage", nargs="+", choices=("device", "host"), default=["device"],
                   help="TLR: where the tiles live (each one given is run)")
    p.add_argument("--device-memory", type=float, default=None,
                   help="TLR, host storage: budget in bytes, or a fraction of the free memory "
                        "if <= 1")
    p.add_argument("--mode", nargs="+", choices=("ll", "dl"), default=["ll"],
                   help="TLR: ll = TLRMatrix.from_kernel then potrf; dl = potrf_from_kernel "
                        "(compression while factoring); each one given is run")
    p.add_argument("--repeats", type=int, default=1,
                   help="TLR: factorizations timed; factor_s is their median")
    p.add_argument("--profile", action="store_true", help="cProfile each run (top 30)")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    rows = []
    tlr = args.what == "tlr"
    runs = [(n, s, m) for n in args.n for s in (args.storage if tlr else [None])
            for m in (args.mode if tlr else [None])]
    for n, storage, mode in runs:
        prof = cProfile.Profile() if args.profile else None
        if prof:
            prof.enable()
        r = run_dense(n, args.nu, args.seed) if args.what == "dense" else \
            run_tlr(n, args.tol, args.tile, args.nu, args.seed, args.dense, storage,
                    args.device_memory, mode, args.repeats)
        if prof:
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        rows.append(r)
        print(json.dumps(r), flush=True)
    keys = sorted({k for r in rows for k in r})
    print("\n" + " | ".join(["key"] + [f"n={r['n']}" + "".join(f" {r[k]}" for k in (
        "storage", "mode") if k in r) for r in rows]))
    for k in keys:
        vals = [r.get(k) for r in rows]
        print(" | ".join([k] + [f"{v:.4g}" if isinstance(v, float) and math.isfinite(v)
                                else str(v) for v in vals]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
