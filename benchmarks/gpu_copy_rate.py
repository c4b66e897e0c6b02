"""Rate of the copy of a workspace: cudaMemcpy2DAsync against CuPy's elementwise copy (what
``CUDAExecutor.copy_into`` uses), on the same buffers in the same run.

    python3 benchmarks/gpu_copy_rate.py > benchmarks/gpu_copy_rate_h100.txt
"""

from __future__ import annotations

from collections.abc import Callable

import cupy as cp
import numpy as np

from tricov.bench.devices import event_seconds


def timeit(fn: Callable[[], object]) -> float:
    """Median milliseconds of ``fn`` by CUDA events (two warm-up calls)."""
    return float(np.median(event_seconds(fn, repeats=10))) * 1e3


def measure(rows: int, cols: int, ld: int) -> str:
    """Both copies of a ``rows x cols`` column-major block of leading dimension ``ld``."""
    rt = cp.cuda.runtime
    src = cp.ones((cols, ld), dtype=np.float64)
    dst = cp.empty((cols, rows), dtype=np.float64)
    view = src[:, :rows]
    stream = cp.cuda.get_current_stream().ptr
    t_memcpy = timeit(lambda: rt.memcpy2DAsync(
        dst.data.ptr, rows * 8, src.data.ptr, ld * 8, rows * 8, cols, rt.memcpyDeviceToDevice,
        stream))
    t_copyto = timeit(lambda: cp.copyto(dst, view))
    gb = rows * cols * 8 / 1e9
    return (f"{rows}x{cols} ld {ld}: memcpy2D {t_memcpy * 1000:.0f} us "
            f"({gb / t_memcpy * 1e3:.0f} GB/s once), copyto {t_copyto * 1000:.0f} us "
            f"({gb / t_copyto * 1e3:.0f}), ratio {t_memcpy / t_copyto:.2f}")


def main() -> None:
    for rows, cols, ld in ((8192, 4096, 8192), (16384, 256, 16384), (8192, 4096, 8200)):
        print(measure(rows, cols, ld), flush=True)

if __name__ == "__main__":
    main()
