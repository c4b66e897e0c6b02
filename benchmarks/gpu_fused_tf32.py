"""tricov's fused split-TF32 kernel of narrow float32 products against cuBLAS's SGEMM.

    PYTHONPATH=src python3 benchmarks/gpu_fused_tf32.py

``C <- C - A B`` with A of m x k (leading dimension lda: a TRSM's blocks of L sit in L, of
16384 rows in the issue's cases) and B of k x n, through ``CUDAExecutor.raw_gemm`` with
``fused_tf32`` at 1 (``kernels/cuda/tf32_narrow.cu`` at every shape here, below the default's
threshold too) and at 0 (cuBLAS's SGEMM): 20 calls captured in a CUDA graph per contender (as
tricov's plans replay them: no Python in the times), replays alternated, best of 7,
microseconds per call. Output: ``gpu_fused_tf32_h100.txt``.
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from tricov.backends import cuda_libs as lib
from tricov.backends.cuda import CUDAExecutor

SHAPES = [(m, n, m) for n in (256, 128, 64) for m in (8192, 4096, 2048, 1024)]
LDA = 16384
REPS = 20


def graph(ex: CUDAExecutor, stream: cp.cuda.Stream, fused: int, args: tuple):
    """``REPS`` calls of ``ex.raw_gemm(*args)`` with ``fused_tf32 = fused``, captured."""
    CUDAExecutor.fused_tf32 = fused
    ex.raw_gemm(*args)  # compiles, allocates the workspace
    stream.synchronize()
    stream.begin_capture()
    for _ in range(REPS):
        ex.raw_gemm(*args)
    return stream.end_capture()


def main() -> None:
    default = CUDAExecutor.fused_tf32
    rng = cp.random.default_rng(0)
    print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, lda {LDA}")
    print("m x n x k | SGEMM us | fused us | SGEMM / fused")
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        ex = CUDAExecutor(np.dtype(np.float32), lib.own_handle("capture"))
        for m, n, k in SHAPES:
            a = cp.asfortranarray(rng.standard_normal((LDA, k), dtype=np.float32))
            b = cp.asfortranarray(rng.standard_normal((k, n), dtype=np.float32))
            c = cp.zeros((m, n), dtype=np.float32, order="F")
            args = (b"N", b"N", m, n, k, -1.0, a.data.ptr, LDA, b.data.ptr, k, 1.0, c.data.ptr,
                    m)
            graphs = {fused: graph(ex, stream, fused, args) for fused in (0, 1)}
            best = dict.fromkeys(graphs, float("inf"))
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            for _ in range(7):
                for fused, g in graphs.items():
                    start.record(stream)
                    g.launch(stream)
                    stop.record(stream)
                    stop.synchronize()
                    best[fused] = min(best[fused],
                                      cp.cuda.get_elapsed_time(start, stop) * 1e3 / REPS)
            print(f"{m}x{n}x{k} | {best[0]:8.1f} | {best[1]:8.1f} | {best[0] / best[1]:4.2f}")
    CUDAExecutor.fused_tf32 = default


if __name__ == "__main__":
    main()
