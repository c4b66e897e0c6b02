"""TRSM leaves of 256 against 512 rows on the GPU over shapes between few right-hand sides and
square (lower triangle, left side, F order): the rule behind ``LeafSizes.trsm_narrow``.

    PYTHONPATH=src python3 benchmarks/gpu_trsm_leaf_shapes.py

Each line gives TFLOP/s at both leaves (best of two rounds of five calls each, B restored
between calls, CUDA events) and their ratio (above 1: 512 is faster). The leaf is forced with
``tricov.set_leaf_size``, which also drops the narrow-B leaf.
"""

from __future__ import annotations

import cupy as cp
import numpy as np

import tricov as tc
from tricov.bench.devices import event_seconds

SHAPES = ((4096, 64), (4096, 256), (4096, 1024), (8192, 256), (8192, 1024), (8192, 2048),
          (16384, 512), (16384, 1024), (16384, 2048), (16384, 4096))
LEAVES = (256, 512)


def best_seconds(dt: type, n: int, m: int) -> dict[int, float]:
    """Best seconds of a TRSM of ``n`` rows and ``m`` columns at each of :data:`LEAVES`."""
    rng = cp.random.default_rng(0)
    t = cp.tril(rng.standard_normal((n, n), dtype=dt)) / np.sqrt(n)
    t += cp.eye(n, dtype=dt) * 2
    t = cp.asfortranarray(t)
    b0 = cp.asfortranarray(rng.standard_normal((n, m), dtype=dt))
    b = b0.copy(order="F")
    best = dict.fromkeys(LEAVES, np.inf)
    for _ in range(2):
        for leaf in LEAVES:
            tc.set_leaf_size("gpu", "trsm", dt, leaf)
            ts = event_seconds(lambda: tc.trsm(t, b), lambda: b.__setitem__(Ellipsis, b0),
                               repeats=5)
            best[leaf] = min(best[leaf], min(ts))
        tc.set_leaf_size("gpu", "trsm", dt, None)
    return best


def main() -> None:
    for dt in (np.float64, np.float32):
        for n, m in SHAPES:
            best = best_seconds(dt, n, m)
            rates = "  ".join(f"leaf {k}: {n * n * m / v / 1e12:.2f} TF/s" for k, v in best.items())
            print(f"{np.dtype(dt).name} {n}x{m} {rates}  512/256 = {best[256] / best[512]:.3f}",
                  flush=True)
            cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
