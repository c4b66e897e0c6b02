"""What a plain device copy of a batched case's bytes reaches at batch 10240, against the 1 GiB
copy rate of the batched table: the ceiling of the "of copy" column at small orders.

    PYTHONPATH=src python3 benchmarks/gpu_copy_same_size.py

For POTRF, POTRS, POSV and POTRI at n = 8, 16, 32 (float64, float32) it times one copy of
``bytes_moved(case)`` bytes in all (half read, half written), queued as the table's device time
is (``tricov.batched.bench_gpu.same_size_copy``), and prints its rate as a fraction of the 1 GiB
copy's and the time a kernel would need for 60% of the 1 GiB rate.
"""

from __future__ import annotations

from tricov.batched.bench import BatchedCase, bytes_moved
from tricov.batched.bench_gpu import copy_bandwidth, same_size_copy


def main() -> None:
    bw = copy_bandwidth()
    print(f"copy bandwidth (1 GiB) {bw:.0f} GB/s")
    for dt in ("float64", "float32"):
        for n in (8, 16, 32):
            for op in ("potrf", "potrs", "posv", "potri"):
                nbytes = bytes_moved(BatchedCase(op, n, 10240, 0, dt))
                t = same_size_copy(nbytes)
                rate = nbytes / t / 1e9
                print(f"{dt} {op:6s} n={n:2d} bytes {nbytes / 1e6:6.2f} MB copy {t * 1e6:6.2f} us "
                      f"{rate:7.0f} GB/s = {rate / bw:.2f} of 1 GiB copy; 60% needs "
                      f"{nbytes / (0.6 * bw * 1e9) * 1e6:6.2f} us", flush=True)


if __name__ == "__main__":
    main()
