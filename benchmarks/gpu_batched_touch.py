"""How fast an in-place batched triangle operation could be at small orders: a kernel that only
reads each element of every member's lower triangle and writes it back (one element per
thread, coalesced, no arithmetic), against tricov's POTRF, POTRI and POTI on the same C-ordered
float64 stacks (batch 10240), and against the same kernel over the whole members.

    PYTHONPATH=src python3 benchmarks/gpu_batched_touch.py

Device time per call as ``python -m tricov.batched.bench --device gpu`` takes it (calls
queued behind a spinning kernel; tricov's restoring copies timed alone and subtracted), median
of five queues of eight. Rates are in the bench's byte count (the triangle read and written,
``tricov.batched.bench.bytes_moved``), as a fraction of a 1 GiB copy's bandwidth.
"""

from __future__ import annotations

import statistics

import cupy as cp
import numpy as np

import tricov as tc
from tricov.batched.bench import BatchedCase, bytes_moved
from tricov.batched.bench_gpu import _Queue, copy_bandwidth

SOURCE = r"""
extern "C" __global__ void touch(double* a, const int* offsets, int per, int size,
                                 long long total, double one) {
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (t >= total) return;
    const long long m = t / per;
    double* p = a + m * size + offsets[t - m * per];
    *p = *p * one;
}
"""
BATCH, QUEUED = 10240, 8


def device_seconds(queue: _Queue, call, restore=None) -> float:
    """Median over five queues of the device seconds of one call (restore's time taken off)."""
    times = []
    for _ in range(5):
        both = queue.seconds(lambda: (restore and restore(), call()), 3e-5)
        alone = queue.seconds(restore, 3e-5) if restore else 0.0
        times.append((both - alone) / QUEUED)
    return statistics.median(times)


def order_times(kernel: cp.RawKernel, queue: _Queue, n: int) -> dict[str, float]:
    """Device seconds per call of the touch kernels and tricov's operations at order ``n``."""
    rng = cp.random.default_rng(0)
    g = rng.standard_normal((BATCH, n, n))
    spd = g @ g.transpose(0, 2, 1) + n * cp.eye(n)
    low = cp.linalg.cholesky(spd)
    work = spd.copy()
    rows, cols = np.tril_indices(n)
    times = {}
    for name, offsets in (("touch triangle", rows * n + cols),
                          ("touch members", np.arange(n * n))):
        offs = cp.asarray(offsets, dtype=cp.int32)
        total = BATCH * offs.size
        args = (work, offs, np.int32(offs.size), np.int32(n * n), np.int64(total),
                np.float64(1.0))
        times[name] = device_seconds(
            queue, lambda args=args, total=total: kernel((-(-total // 256),), (256,), args))
    for op, source in (("potrf", spd), ("potri", low), ("poti", spd)):
        call = getattr(tc.batched, op)
        cp.copyto(work, source)
        call(work, check=False)
        times[f"tricov {op}"] = device_seconds(
            queue, lambda call=call: call(work, check=False),
            lambda source=source: cp.copyto(work, source))
    return times


def main() -> None:
    kernel = cp.RawKernel(SOURCE, "touch")
    bandwidth = copy_bandwidth()
    queue = _Queue(QUEUED)
    print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, batch {BATCH}, float64,"
          f" copy bandwidth {bandwidth:.0f} GB/s")
    print(f"{'n':>3} {'case':18} {'us':>8} {'GB/s':>7} {'of copy':>8}")
    for n in (8, 16, 32):
        nbytes = bytes_moved(BatchedCase("potrf", n, BATCH))
        for name, t in order_times(kernel, queue, n).items():
            rate = nbytes / t / 1e9
            print(f"{n:3d} {name:18} {t * 1e6:8.2f} {rate:7.0f} {rate / bandwidth:8.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
