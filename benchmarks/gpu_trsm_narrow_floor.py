"""The floor of tricov's TRSM with few right-hand sides: its products alone, against cuBLAS.

    PYTHONPATH=src python3 benchmarks/gpu_trsm_narrow_floor.py

For ``L X = B`` with L lower of order M = 16384 and B of N columns, tricov's recursion
(:func:`tricov.recursive.trsm`: splits at powers of two down to leaves of
:func:`tricov._policy.trsm_leaf` rows, each leaf one product of its inverted diagonal block with
B) performs one product of ``M/2 x N x M/2``, two of ``M/4 x N x M/4`` and so on down to the
leaves, and one ``leaf x N x leaf`` product per leaf. This script times each distinct product
alone as cuBLAS's GEMM of the dtype (50 calls in one CUDA graph, best of 3 replays;
``gpu_small_gemm_algos.per_call``) and adds them up with their counts: what the recursion would
take if inverting the diagonal blocks and every kernel other than these GEMM calls (cuBLAS's
split-depth sums included) cost nothing. cuBLAS's own TRSM runs on the same machine in the
same run (5 calls per graph). Printed per case: cuBLAS TRSM, the floor, the largest ratio the
recursion can reach (cuBLAS / floor) and the share of a 3x budget (cuBLAS / 3) that the
products alone take.
Output: ``gpu_trsm_narrow_floor_h100.txt``.
"""

from __future__ import annotations

import collections
import functools

import cupy as cp
import numpy as np
from gpu_small_gemm_algos import per_call

from tricov._policy import leaf_sizes, trsm_leaf
from tricov.backends import cuda_libs as lib
from tricov.recursive.blas3 import split

M = 16384


def products(m: int, leaf: int, counts: collections.Counter) -> None:
    """Count the (rows, depth) of every product of the recursion over ``m`` rows."""
    if m <= leaf:
        counts[m, m] += 1
        return
    top = split(m)
    products(top, leaf, counts)
    counts[m - top, top] += 1
    products(m - top, leaf, counts)


def gemm(handle: int, dtype: np.dtype, m: int, n: int, k: int, ops: tuple, stream: int) -> None:
    """``C = A B`` (``ops``: one, zero, A, B, C) on ``stream``."""
    one, zero, a, b, c = ops
    lib.bind_blas(stream, handle)
    lib.check(lib.blas("gemm_v2", dtype)(handle, 0, 0, m, n, k, one.ctypes.data, a.data.ptr, m,
                                         b.data.ptr, k, zero.ctypes.data, c.data.ptr, m), "gemm")


def trsm(handle: int, dtype: np.dtype, n: int, ops: tuple, stream: int) -> None:
    """cuBLAS's ``L X = B`` (``ops``: one, L, B) on ``stream``."""
    one, a, b = ops
    lib.bind_blas(stream, handle)
    lib.check(lib.blas("trsm_v2", dtype)(handle, 0, 0, 0, 0, M, n, one.ctypes.data, a.data.ptr,
                                         M, b.data.ptr, M), "trsm")


def row(handle: int, dtype: np.dtype, n: int) -> str:
    """One line of the table: ``n`` right-hand sides."""
    counts: collections.Counter = collections.Counter()
    products(M, trsm_leaf(leaf_sizes("gpu", dtype), M, n), counts)
    one, zero = np.ones(1, dtype), np.zeros(1, dtype)
    floor = 0.0
    for (m, k), count in counts.items():
        ops = (one, zero, cp.ones((m, k), dtype=dtype, order="F"),
               cp.ones((k, n), dtype=dtype, order="F"), cp.zeros((m, n), dtype=dtype, order="F"))
        floor += count * per_call(functools.partial(gemm, handle, dtype, m, n, k, ops))
    lower = cp.tril(cp.random.standard_normal((M, M), dtype=dtype)) / M
    lower[cp.arange(M), cp.arange(M)] = 1
    ops = (one, cp.asfortranarray(lower), cp.ones((M, n), dtype=dtype, order="F"))
    native = per_call(functools.partial(trsm, handle, dtype, n, ops), reps=5)
    return (f"{np.dtype(dtype).name:8} {M}x{n:<4} {len(counts):3} {sum(counts.values()):4} "
            f"{native:9.0f} {floor:8.0f} {native / floor:8.2f}x {floor / (native / 3):9.2f}")


def main() -> None:
    handle = lib.own_handle("capture")
    name = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"].decode()
    print(f"{name}: microseconds; shapes, products; cuBLAS TRSM; products alone (floor); "
          "cuBLAS / floor; floor / (cuBLAS / 3)")
    print("dtype    case       shp prod  cuBLAS us  floor us  max ratio  of 3x budget")
    for dtype in (np.float32, np.float64):
        for n in (64, 128, 256):
            print(row(handle, np.dtype(dtype), n), flush=True)


if __name__ == "__main__":
    main()
