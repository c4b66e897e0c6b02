"""The GEMMs of a narrow TRSM's lower levels under cuBLAS's algorithm choices.

    PYTHONPATH=src python3 benchmarks/gpu_small_gemm_algos.py

For each shape m x n x k (column-major, no transposes) and dtype: cuBLAS's ``gemm`` as the
recursion calls it, and cuBLASLt's matmul with its heuristic's first algorithm under three
reduction-scheme masks (any: the default; in place: split depth summed in the output by the
same kernel; none: no split depth), and the fastest of the heuristic's first 16 algorithms.
Each is timed as 50 calls captured in one CUDA graph (best of 3 replays), microseconds per
call. A float32 TRSM of 16384 x 256 spends about a third of its time in products of 512 and
1024 rows whose cuBLAS kernel splits the depth and sums the parts in a second kernel; this
measures whether another algorithm would do better (benchmarks/README.md).
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

import cupy as cp
import numpy as np

from tricov.backends import cuda_libs as lib

SHAPES = ((512, 256, 512), (1024, 256, 1024), (2048, 256, 2048), (512, 128, 512),
          (1024, 128, 1024), (512, 64, 512), (8192, 256, 8192))
#: cublasLtMatmulPreference_t attribute REDUCTION_SCHEME_MASK and its values.
_REDUCTION_MASK, ANY, IN_PLACE, NONE = 3, None, 1, 0


def algorithms(dtype: np.dtype, m: int, n: int, k: int, mask: int | None, count: int):
    """cuBLASLt's descriptors of the product and up to ``count`` algorithms of its heuristic."""
    kind = lib.CUDA_TYPE[dtype]
    desc, layouts = ctypes.c_void_p(), []
    lib.check(lib._lt("cublasLtMatmulDescCreate")(ctypes.byref(desc), lib._LT_COMPUTE[dtype],
                                                  kind), "cublasLtMatmulDescCreate")
    for rows, cols, ld in ((m, k, m), (k, n, k), (m, n, m), (m, n, m)):
        layout = ctypes.c_void_p()
        lib.check(lib._lt("cublasLtMatrixLayoutCreate")(ctypes.byref(layout), kind, rows, cols,
                                                        ld), "cublasLtMatrixLayoutCreate")
        layouts.append(layout)
    pref = ctypes.c_void_p()
    lib.check(lib._lt("cublasLtMatmulPreferenceCreate")(ctypes.byref(pref)), "preference")
    most = ctypes.c_uint64(lib.CAPTURE_WORKSPACE)
    lib.check(lib._lt("cublasLtMatmulPreferenceSetAttribute")(
        pref, lib._LT_MAX_WORKSPACE, ctypes.byref(most), 8), "workspace")
    if mask is not None:
        value = ctypes.c_uint32(mask)
        lib.check(lib._lt("cublasLtMatmulPreferenceSetAttribute")(
            pref, _REDUCTION_MASK, ctypes.byref(value), 4), "reduction mask")
    size = lib._LT_RESULT
    results = ctypes.create_string_buffer(size * count)
    found = ctypes.c_int(0)
    lib.check(lib._lt("cublasLtMatmulAlgoGetHeuristic")(
        lib.cublas_handle(), desc, *layouts, pref, count, results, ctypes.byref(found)),
        "heuristic")
    lib._lt("cublasLtMatmulPreferenceDestroy")(pref)
    return desc, layouts, [ctypes.create_string_buffer(results.raw[i * size:(i + 1) * size],
                                                       size) for i in range(found.value)]


def per_call(call, reps: int = 50) -> float:
    """Microseconds per call of ``call(stream_ptr)``, ``reps`` calls in one CUDA graph."""
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        call(stream.ptr)
        stream.synchronize()
        stream.begin_capture()
        for _ in range(reps):
            call(stream.ptr)
        graph = stream.end_capture()
        graph.launch(stream)
        start, stop, best = cp.cuda.Event(), cp.cuda.Event(), float("inf")
        for _ in range(3):
            start.record(stream)
            graph.launch(stream)
            stop.record(stream)
            stop.synchronize()
            best = min(best, cp.cuda.get_elapsed_time(start, stop) * 1e3 / reps)
    return best


def gemm(handle: int, dtype: np.dtype, shape: tuple, ops: tuple, stream: int) -> None:
    """cuBLAS's gemm of ``shape`` on the operands ``ops = (one, zero, a, b, c)``."""
    (m, n, k), (one, zero, a, b, c) = shape, ops
    lib.bind_blas(stream, handle)
    lib.check(lib.blas("gemm_v2", dtype)(handle, 0, 0, m, n, k, one.ctypes.data, a.data.ptr, m,
                                         b.data.ptr, k, zero.ctypes.data, c.data.ptr, m), "gemm")


def matmul(handle: int, desc: Any, layouts: list, algo: Any, ops: tuple, work: Any,
           stream: int) -> None:
    """cuBLASLt's matmul with ``algo`` on the operands ``ops = (one, zero, a, b, c)``."""
    one, zero, a, b, c = ops
    lib.check(lib._lt("cublasLtMatmul")(
        handle, desc, one.ctypes.data, a.data.ptr, layouts[0], b.data.ptr, layouts[1],
        zero.ctypes.data, c.data.ptr, layouts[2], c.data.ptr, layouts[3], algo, work.data.ptr,
        lib.CAPTURE_WORKSPACE, stream), "cublasLtMatmul")


def main() -> None:
    handle = lib.own_handle("capture")  # owns its workspace: the calls can be captured
    work = cp.empty(lib.CAPTURE_WORKSPACE, dtype=np.uint8)
    print(cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
          "| us per call: cuBLAS gemm | cuBLASLt first algorithm, reduction any / in place / "
          "none | best of 16")
    for dtype in (np.dtype(np.float32), np.dtype(np.float64)):
        for m, n, k in SHAPES:
            ops = (np.ones(1, dtype), np.zeros(1, dtype),
                   cp.asfortranarray(cp.random.standard_normal((m, k)).astype(dtype)),
                   cp.asfortranarray(cp.random.standard_normal((k, n)).astype(dtype)),
                   cp.zeros((m, n), dtype=dtype, order="F"))
            times = [per_call(functools.partial(gemm, handle, dtype, (m, n, k), ops))]
            for mask, count in ((ANY, 1), (IN_PLACE, 1), (NONE, 1), (ANY, 16)):
                desc, layouts, found = algorithms(dtype, m, n, k, mask, count)
                best = float("inf")
                for algo in found:
                    try:
                        best = min(best, per_call(functools.partial(
                            matmul, handle, desc, layouts, algo, ops, work)))
                    except RuntimeError:  # an algorithm the capture or the shape refuses
                        continue
                times.append(best)
                lib._lt("cublasLtMatmulDescDestroy")(desc)
                for layout in layouts:
                    lib._lt("cublasLtMatrixLayoutDestroy")(layout)
            tflops = 2 * m * n * k / min(times) / 1e6
            print(f"{dtype.name} {m}x{n}x{k}: " + " | ".join(f"{t:7.1f}" for t in times)
                  + f"  (best {tflops:.1f} TFLOP/s)")


if __name__ == "__main__":
    main()
