"""Where a DPOTRF of order 1024-4096 spends its time on the GPU: cuSOLVER alone, cuSOLVER in a
CUDA graph with a pinned status read (the least a checked call can do), tricov (replayed and
eager) and torch, on one buffer refilled before each call; then the kernels of one call of
cuSOLVER and of tricov at order 1024 (torch's profiler).

    PYTHONPATH=src python3 benchmarks/gpu_potrf_gap.py

Medians of 30 calls, microseconds, CUDA events around each call (host time in brackets).
"""

from __future__ import annotations

import ctypes
import time

import cupy as cp
import numpy as np
import torch

import tricov as tc
from tricov import dense
from tricov.backends import cuda_libs as lib
from tricov.bench.devices import kernel_times


def _median(f, w, a0, reps=30):
    ts, hs = [], []
    for k in range(reps + 3):
        cp.copyto(w, a0)
        cp.cuda.Device().synchronize()
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        h = time.perf_counter()
        f(w)
        h = time.perf_counter() - h
        stop.record()
        stop.synchronize()
        if k >= 3:
            ts.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
            hs.append(h * 1e6)
    return np.median(ts), np.median(hs)


def main() -> None:
    handle = lib.cusolver_handle()
    potrf = lib.solver("potrf", np.float64)
    for n in (1024, 2048, 4096):
        g = cp.random.default_rng(0).standard_normal((n, n))
        a0 = cp.asfortranarray(g @ g.T / n + cp.eye(n))
        del g
        w = cp.empty_like(a0, order="F")
        lwork = ctypes.c_int()
        lib.check(lib.solver("potrf_bufferSize", np.float64)(
            handle, 0, n, w.data.ptr, n, ctypes.byref(lwork)), "potrf_bufferSize")
        work, info = cp.empty(lwork.value, cp.float64), cp.zeros(1, cp.int32)

        def raw(a, read=False, work=work, info=info, n=n):
            lib.bind_solver(cp.cuda.get_current_stream().ptr)
            lib.check(potrf(handle, 0, n, a.data.ptr, n, work.data.ptr, work.size,
                            info.data.ptr), "potrf")
            if read:
                int(lib.read_small(info)[0])

        capture = cp.cuda.Stream(non_blocking=True)
        lib.bind_solver(capture.ptr)
        with capture:
            capture.begin_capture()
            lib.check(potrf(handle, 0, n, w.data.ptr, n, work.data.ptr, work.size,
                            info.data.ptr), "potrf")
            graph = capture.end_capture()
        lib.bind_solver(cp.cuda.get_current_stream().ptr)

        def graphed(a, graph=graph, info=info):
            graph.launch(stream=cp.cuda.get_current_stream())
            int(lib.read_small(info)[0])

        rows = {"cuSOLVER": _median(raw, w, a0),
                "cuSOLVER+status": _median(lambda a: raw(a, True), w, a0),
                "graph+status": _median(graphed, w, a0),
                "tricov": _median(dense.potrf, w, a0),
                "torch": _median(lambda a: torch.linalg.cholesky(torch.from_dlpack(a)), w, a0)}
        tc.set_cuda_graphs(False)
        rows["tricov eager"] = _median(dense.potrf, w, a0)
        tc.set_cuda_graphs(True)
        print(f"n={n}: " + "  ".join(f"{k} {v[0]:7.1f} ({v[1]:6.1f})" for k, v in rows.items()),
              flush=True)
        if n == 1024:
            for name, f in (("cuSOLVER", lambda w=w: raw(w, True)),
                            ("tricov", lambda w=w: dense.potrf(w))):
                cp.copyto(w, a0)
                print(f"  kernels of {name}:",
                      [(k[:60], round(us, 1), c) for k, us, c in kernel_times(f)][:6])


if __name__ == "__main__":
    main()
