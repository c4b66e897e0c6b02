"""GPU dense benchmark: tricov vs cuBLAS/cuSOLVER (by pointer) and PyTorch, one run, one GPU.

Usage (on a machine with an NVIDIA GPU and CuPy):

    PYTHONPATH=src python benchmarks/gpu_dense.py [--quick] [--json OUT.json] [--sweep]

Prints one table of TFLOP/s with the ratios the issue names; ``--sweep`` also tries several
leaf sizes and reports the best (what the GPU defaults in ``tricov._policy`` come from).
Timing: CUDA events, warm-up first, median of repeats, fresh random inputs restored outside
the timed region.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import json
import math
import pstats
import time

import cupy as cp
import numpy as np

import tricov as tc
from tricov.backends import cuda_libs as lib

ROWS: list[dict] = []


def timed(fn, restore=None, reps=5, warm=2):
    """Median seconds of ``fn`` over ``reps`` runs (CUDA events), ``restore`` run before each."""
    for _ in range(warm):
        if restore:
            restore()
        fn()
    times = []
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(reps):
        if restore:
            restore()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return float(np.median(times))


def rand(shape, dt, order="F"):
    x = cp.random.standard_normal(shape, dtype=np.float64)
    return cp.asarray(x.astype(dt), order=order)


def tri(n, dt):
    a = cp.tril(rand((n, n), dt)) / math.sqrt(n)
    a[cp.arange(n), cp.arange(n)] = 1.0 + cp.abs(a[cp.arange(n), cp.arange(n)])
    return cp.asfortranarray(a)


def spd(n, dt):
    x = rand((n, n), dt)
    s = x @ x.T / n
    s[cp.arange(n), cp.arange(n)] += 1.0
    return cp.asfortranarray(s)


def gemm_rate(m, n, k, dt):
    a, b = rand((m, k), dt), rand((k, n), dt)
    c = cp.empty((m, n), dt, order="F")
    h = lib.cublas_handle()
    one, zero = np.ones(1, dt), np.zeros(1, dt)

    def run():
        lib.check(lib.blas("gemm_v2", dt)(h, 0, 0, m, n, k, one.ctypes.data, a.data.ptr, m,
                                          b.data.ptr, k, zero.ctypes.data, c.data.ptr, m), "g")
    return 2 * m * n * k / timed(run) / 1e12


def copy_bandwidth() -> float:
    """Device-to-device copy bandwidth in GB/s (bytes read plus bytes written)."""
    src = cp.ones(2**28, dtype=cp.float64)
    dst = cp.empty_like(src)
    return 2 * src.nbytes / timed(lambda: cp.copyto(dst, src)) / 1e9


def record(op, dtype, shape, tricov_tf, peers: dict, gemm_tf=None, extra=None):
    row = {"op": op, "dtype": np.dtype(dtype).name, "shape": shape, "tricov_TFs": tricov_tf}
    row.update({f"{k}_TFs": v for k, v in peers.items()})
    if gemm_tf:
        row["gemm_TFs"] = gemm_tf
        row["tricov/gemm"] = tricov_tf / gemm_tf
    for k, v in peers.items():
        row[f"tricov/{k}"] = tricov_tf / v
    if extra:
        row.update(extra)
    ROWS.append(row)
    print(json.dumps(row), flush=True)


def best_leaf(op, dt, sizes, run):
    """Try leaf sizes; keep the fastest in force and return (leaf, seconds)."""
    results = {}
    for nb in sizes:
        tc.set_leaf_size("gpu", op, dt, nb)
        results[nb] = run()
    nb = min(results, key=results.get)
    tc.set_leaf_size("gpu", op, dt, nb)
    return nb, results[nb], results


def bench_trxm(kind, m, n, dt, sweep):
    a, b0 = tri(m, dt), rand((m, n), dt)
    b = b0.copy(order="F")
    restore = lambda: cp.copyto(b, b0)  # noqa: E731
    fn = getattr(tc, kind)
    flops = m * m * n
    run = lambda: timed(lambda: fn(a, b), restore)  # noqa: E731
    if sweep:
        nb, t, allr = best_leaf(kind, dt, (128, 256, 512, 1024), run)
    else:
        nb, t, allr = tc.leaf_sizes("gpu", dt).trsm, run(), {}
    h = lib.cublas_handle()
    one = np.ones(1, dt)
    if kind == "trsm":
        native = lambda: lib.blas("trsm_v2", dt)(h, 0, 0, 0, 0, m, n, one.ctypes.data,  # noqa
                                                 a.data.ptr, m, b.data.ptr, m)
    else:
        native = lambda: lib.blas("trmm_v2", dt)(h, 0, 0, 0, 0, m, n, one.ctypes.data,  # noqa
                                                 a.data.ptr, m, b.data.ptr, m, b.data.ptr, m)
    tn = timed(native, restore)
    extra_rates = {}
    if sweep:
        from tricov.backends.cuda import CUDAExecutor

        saved = CUDAExecutor.narrow
        CUDAExecutor.narrow = 0
        extra_rates["cublas_leaves_TFs"] = flops / run() / 1e12
        CUDAExecutor.narrow = saved
        tc.set_cuda_graphs(False)
        extra_rates["eager_TFs"] = flops / run() / 1e12
        tc.set_cuda_graphs(True)
    record(kind, dt, f"{m}x{n}", flops / t / 1e12, {"cublas": flops / tn / 1e12},
           gemm_rate(m, n, m, dt), {**extra_rates, "leaf": nb, "sweep": {str(k): flops / v / 1e12
                                                              for k, v in allr.items()}})


def bench_chol(op, n, dt, sweep, torch):
    s = spd(n, dt)
    a = s.copy(order="F")
    restore = lambda: cp.copyto(a, s)  # noqa: E731
    flops = {"potrf": n**3 / 3, "potri": 2 * n**3 / 3, "poti": n**3}[op]
    if op == "potri":
        tc.potrf(s)  # s now holds the factor in its lower triangle
        s[:] = cp.tril(s) + cp.tril(s, -1).T
    fn = getattr(tc, op)
    run = lambda: timed(lambda: fn(a), restore, reps=3)  # noqa: E731
    if sweep:
        leaf_op = "potrf" if op == "potrf" else "trtri"
        nb, t, allr = best_leaf(leaf_op, dt, (256, 512, 1024), run)
        if op != "potrf":
            tc.set_leaf_size("gpu", "lauum", dt, nb)
            t = run()
        if n <= 16384:
            syrk_nb, t_syrk, syrk_all = best_leaf("syrk", dt, (128, 256, 512, 1024), run)
            allr.update({f"syrk{k}": v for k, v in syrk_all.items()})
            t = min(t, t_syrk)
    else:
        nb, t, allr = None, run(), {}
    peers = {}
    ts = torch.as_tensor(s, device="cuda")
    if op == "potrf":
        peers["torch"] = flops / timed(lambda: torch.linalg.cholesky(ts), reps=3) / 1e12
    elif op == "potri":
        peers["torch"] = flops / timed(lambda: torch.cholesky_inverse(ts), reps=3) / 1e12
    else:
        peers["torch"] = flops / timed(
            lambda: torch.cholesky_inverse(torch.linalg.cholesky(ts)), reps=3) / 1e12
    record(op, dt, str(n), flops / t / 1e12, peers, None,
           {"leaf": nb, "sweep": {str(k): flops / v / 1e12 for k, v in allr.items()}})


def overhead(profile: bool):
    """Host time per call of a one-leaf trsm and of a potrf with 7 primitives."""
    a, b = tri(64, np.float64), rand((64, 8), np.float64)
    s = spd(256, np.float64)
    tc.set_leaf_size("gpu", "potrf", np.float64, 64)
    cases = {"trsm64x8": lambda: tc.trsm(a, b),
             "potrf256_leaf64": lambda: tc.potrf(s.copy(order="F"))}
    for name, fn in cases.items():
        fn()
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(200):
            fn()
        t1 = time.perf_counter()
        cp.cuda.Device().synchronize()
        t2 = time.perf_counter()
        print(json.dumps({"case": name, "host_us_per_call": (t1 - t0) / 200 * 1e6,
                          "wall_us_per_call": (t2 - t0) / 200 * 1e6}), flush=True)
        if profile:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(100):
                fn()
            prof.disable()
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
            print(out.getvalue()[-3000:], flush=True)
    tc.set_leaf_size("gpu", "potrf", np.float64, None)


def primitive_times(kind, m, n, dt, leaf):
    """GPU time per primitive kind inside one call (CUDA events around each raw call)."""
    from tricov.backends.cuda import CUDAExecutor

    totals: dict[str, float] = collections.defaultdict(float)
    counts: dict[str, int] = collections.defaultdict(int)
    names = ["raw_gemm", "raw_trsm", "raw_trmm", "raw_herk", "raw_potrf", "raw_trtri",
             "raw_lauum", "_narrow"]
    saved = {name: getattr(CUDAExecutor, name) for name in names}

    def wrap(name, fn):
        def timed_call(self, *args):
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record()
            out = fn(self, *args)
            e1.record()
            e1.synchronize()
            totals[name] += cp.cuda.get_elapsed_time(e0, e1)
            counts[name] += 1
            return out
        return timed_call

    for name, fn in saved.items():
        setattr(CUDAExecutor, name, wrap(name, fn))
    try:
        tc.set_leaf_size("gpu", kind, dt, leaf)
        if kind == "potrf":
            x = spd(m, dt)
            tc.potrf(x)
        else:
            a, b = tri(m, dt), rand((m, n), dt)
            getattr(tc, kind)(a, b)
    finally:
        for name, fn in saved.items():
            setattr(CUDAExecutor, name, fn)
        tc.set_leaf_size("gpu", kind, dt, None)
    print(json.dumps({"primitives": f"{kind} {m}x{n} leaf {leaf}",
                      **{k: f"{counts[k]} calls {v:.2f} ms" for k, v in totals.items()}}),
          flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--sweep", action="store_true")
    p.add_argument("--json")
    p.add_argument("--dtypes", default="float64,float32")
    p.add_argument("--profile", action="store_true", help="host profile and GPU time by "
                   "primitive for a few cases")
    args = p.parse_args()
    import torch

    print(json.dumps({"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                      "copy_GBps": copy_bandwidth(),
                      "dgemm8192_TFs": gemm_rate(8192, 8192, 8192, np.float64)}), flush=True)
    overhead(args.profile)
    if args.profile:
        for case in [("trsm", 16384, 64, 128), ("trsm", 16384, 64, 256), ("trsm", 8192, 8192, 256),
                     ("trsm", 8192, 8192, 1024), ("potrf", 8192, 0, 1024)]:
            primitive_times(case[0], case[1], case[2], np.float64, case[3])
    for dt in [np.dtype(d) for d in args.dtypes.split(",")]:
        squares = (4096, 8192) if args.quick else (4096, 8192, 16384)
        for kind in ("trsm", "trmm"):
            for n in (64, 128, 256):
                bench_trxm(kind, 16384, n, dt, args.sweep)
            for n in squares:
                bench_trxm(kind, n, n, dt, args.sweep)
        sizes = (1024, 4096, 16384) if args.quick else (1024, 2048, 4096, 8192, 16384, 32768)
        for n in sizes:
            if dt.itemsize * n * n * 3 < 60e9:
                bench_chol("potrf", n, dt, args.sweep, torch)
        for op in ("potri", "poti"):
            bench_chol(op, 16384 if not args.quick else 8192, dt, args.sweep, torch)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(ROWS, f, indent=1)


if __name__ == "__main__":
    main()
