"""Host time of reading a GPU executor's status words: CuPy's ``get`` against
``tricov.backends.cuda_libs.read_small`` (one copy into a reused page-locked buffer).

    PYTHONPATH=src python benchmarks/gpu_status_read.py

A 64-word int32 chunk, as ``CUDAExecutor`` allocates for its statuses, already computed; each
way is called 3000 times in a row and the mean host time per read is printed (microseconds).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import cupy as cp
import numpy as np

from tricov.backends.cuda_libs import read_small


def _us(f: Callable[[], object], k: int = 3000) -> float:
    f()
    t = time.perf_counter()
    for _ in range(k):
        f()
    return (time.perf_counter() - t) / k * 1e6


def main() -> None:
    chunk = cp.zeros(64, dtype=np.int32)
    cp.cuda.Device().synchronize()
    print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; us per read")
    print(f"cupy get    {_us(lambda: int(chunk.get()[0])):6.1f}")
    print(f"read_small  {_us(lambda: int(read_small(chunk)[0])):6.1f}")


if __name__ == "__main__":
    main()
