"""Experiment (not used by tricov): split-TF32 products fused into one kernel, narrow shapes.

    PYTHONPATH=src python3 benchmarks/exp_narrow_fused_tf32.py

The products of a float32 TRSM with 256 right-hand sides, ``C += alpha A B`` with A m x m and
B m x 256 for m = 8192 ... 512, are the floor of tricov's STRSM 16384x256
(``gpu_trsm_narrow_floor.py``): as cuBLAS SGEMMs they take exactly a third of cuBLAS's STRSM.
``exp_narrow_split_tf32.py`` showed that splitting A into TF32 parts in memory costs more than
the tensor cores save. ``exp_narrow_fused_tf32.cu`` splits in registers instead, in a
``mma.sync`` kernel of a few tilings. Printed: the tensor cores' TF32 rate alone (``peak``),
each tiling's error against float64 (in units of 2^-24 times ``(|A| |B|)_ij``, worst element)
and its time per call against cuBLAS SGEMM's and cuBLAS's one-pass TF32 GEMM's (50 calls in one
CUDA graph, best of 3 replays; ``gpu_small_gemm_algos.per_call``), microseconds.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import cupy as cp
import numpy as np
from gpu_small_gemm_algos import per_call

from tricov.backends import cuda_libs as lib

SOURCE = Path(__file__).with_suffix(".cu")
#: ("gemm", BM, BN, WM, WN, STAGES) or ("gemm2", BM, BN, WN, STAGES, BLOCKS): the kernel, the
#: block's and the warp's tile of C (gemm2's warps hold 64 rows), the pipeline's depth, and the
#: blocks per multiprocessor gemm2's registers are fitted to
TILINGS = (("gemm", 128, 128, 64, 32, 3), ("gemm2", 128, 128, 32, 4, 1),
           ("gemm2", 64, 128, 32, 3, 2), ("gemm2", 64, 128, 32, 2, 3),
           ("gemm2", 128, 128, 64, 4, 1), ("gemm2", 64, 128, 64, 3, 2))
SHAPES = ((8192, 256, 8192), (4096, 256, 4096), (2048, 256, 2048), (1024, 256, 1024),
          (512, 256, 512))
F32 = np.float32


def name(tiling: tuple, terms: int) -> str:
    shape = tiling[1:6] if tiling[0] == "gemm" else tiling[1:5]
    rest = (terms,) if tiling[0] == "gemm" else (terms, tiling[5])
    return f"exp3::{tiling[0]}<{','.join(map(str, shape + rest))}>"


def label(tiling: tuple) -> str:
    tail = tiling[3:] if tiling[0] == "gemm" else (64, *tiling[3:])
    return f"{tiling[0]} {tiling[1]}x{tiling[2]}/{tail[0]}x{tail[1]}/{'/'.join(map(str, tail[2:]))}"


#: (BN, STAGES) of gemm3, the wgmma kernel
WGMMA = ((128, 4), (256, 3), (64, 4))


@functools.cache
def module() -> cp.RawModule:
    names = [name(t, terms) for t in TILINGS for terms in (1, 3)] + ["exp3::peak"]
    return cp.RawModule(code=SOURCE.read_text(), options=("-std=c++17",), name_expressions=names)


@functools.cache
def wgmma_functions() -> dict:
    """gemm3 and split_b, built by NVRTC for sm_90a (wgmma needs the "a" target)."""
    from cupy.cuda import nvrtc as nv

    names = ([f"exp3::gemm3<{bn},{stages}>" for bn, stages in WGMMA]
             + [f"exp3::split_b<{bn}>" for bn, _ in WGMMA])
    prog = nv.createProgram(SOURCE.read_text(), "exp3.cu", [], [])
    for n in names:
        nv.addNameExpression(prog, n)
    try:
        nv.compileProgram(prog, ["-std=c++17", "-arch=sm_90a"])
    except Exception:
        print(nv.getProgramLog(prog))
        raise
    path = Path("/tmp/exp_narrow_fused_tf32.cubin")
    path.write_bytes(nv.getCUBIN(prog))
    mod = cp.RawModule(path=str(path))
    return {n: mod.get_function(nv.getLoweredName(prog, n)) for n in names}


def wgmma_smem(bn: int, stages: int) -> int:
    return stages * (32 * 64 + 2 * 8 * bn * 4) * 4


def split_b(bn: int, b: cp.ndarray, parts: cp.ndarray, stream=None) -> None:
    """B's TF32 parts in gemm3's order, into ``parts`` (2 k n floats), on the current stream."""
    k, n = b.shape
    f = wgmma_functions()[f"exp3::split_b<{bn}>"]
    f(((n * (k // 4) + 255) // 256,), (256,), (np.int32(n), np.int32(k), b, np.int64(k), parts))


def fused3(bn: int, stages: int, strides: tuple, m: int, n: int, k: int, alpha: float,
           a: cp.ndarray, parts: cp.ndarray, c: cp.ndarray, stream=None) -> None:
    """``c += alpha a b`` by gemm3 from B's parts (``split_b``) on the current stream."""
    assert m % 64 == 0 and n % bn == 0 and k % 32 == 0
    f = wgmma_functions()[f"exp3::gemm3<{bn},{stages}>"]
    f.max_dynamic_shared_size_bytes = wgmma_smem(bn, stages)
    f((n // bn, m // 64), (128,),
      (np.int32(m), np.int32(n), np.int32(k), F32(alpha), a, np.int64(a.shape[0]), parts, c,
       np.int64(c.shape[0]), np.uint32(strides[0]), np.uint32(strides[1])),
      shared_mem=wgmma_smem(bn, stages))


def wgmma_table(rng, handle: int) -> None:
    """gemm3's error, then its times. Its descriptors' strides: ``lbo``, between core
    matrices along the depth (BN * 16 bytes apart in split_b's order), and ``sbo``, between
    core matrices along the columns (128 bytes apart); the swapped reading (lbo 128) reads out
    of shared memory and faults (session 37)."""
    one, minus = np.ones(1, F32), -np.ones(1, F32)
    a = cp.asfortranarray(rng.standard_normal((1024, 1024), dtype=F32))
    b = cp.asfortranarray(rng.standard_normal((1024, 256), dtype=F32))
    parts = cp.empty(2 * 1024 * 256, dtype=F32)
    good = {}
    for bn, stages in WGMMA:
        split_b(bn, b, parts)
        strides = (bn * 16, 128)
        c = cp.zeros((1024, 256), dtype=F32, order="F")
        fused3(bn, stages, strides, 1024, 256, 1024, 1.0, a, parts, c)
        err = error(c, a, b)
        print(f"gemm3 BN {bn} stages {stages}: error {err:.2f}, 2^-24 |A||B| at 1024x256x1024")
        if err < 100:
            good[bn, stages] = strides
    print("m x n x k | SGEMM | split B | gemm3 per (BN, stages) | best / SGEMM")
    for m, n, k in SHAPES:
        a = cp.asfortranarray(rng.standard_normal((m, k), dtype=F32))
        b = cp.asfortranarray(rng.standard_normal((k, n), dtype=F32))
        c = cp.zeros((m, n), dtype=F32, order="F")
        parts = cp.empty(2 * k * n, dtype=F32)
        sgemm = per_call(functools.partial(cublas, handle, 68, m, n, k, (one, minus, a, b, c)))
        cells, best = [], float("inf")
        for (bn, stages), strides in good.items():
            t_split = per_call(functools.partial(split_b, bn, b, parts))
            t_gemm = per_call(functools.partial(fused3, bn, stages, strides, m, n, k, -1.0, a,
                                                parts, c))
            best = min(best, t_split + t_gemm)
            cells.append(f"{bn}/{stages}: {t_gemm:7.1f}")
        print(f"{m}x{n}x{k} | {sgemm:7.1f} | {t_split:5.1f} | {' | '.join(cells)} | "
              f"{sgemm / best:4.2f}")


def geometry(tiling: tuple) -> tuple[int, int, int, int]:
    """Rows and columns of C per block, threads per block, bytes of shared memory."""
    if tiling[0] == "gemm":
        _, bm, bn, wm, wn, stages = tiling
        return bm, bn, (bm // wm) * (bn // wn) * 32, stages * (32 * (bm + 8) + bn * 36) * 4
    _, bm, bn, wn, stages, _ = tiling
    return bm, bn, (bm // 64) * (bn // wn) * 32, stages * (32 * bm + bn * 36) * 4


def fused(tiling: tuple, terms: int, m: int, n: int, k: int, alpha: float, a: cp.ndarray,
          b: cp.ndarray, c: cp.ndarray, stream=None) -> None:
    """``c += alpha a b`` by the kernel of ``tiling`` on the current stream (``stream``, the
    pointer ``per_call`` passes, is that stream)."""
    bm, bn, threads, smem = geometry(tiling)
    assert m % bm == 0 and n % bn == 0 and k % 32 == 0
    f = module().get_function(name(tiling, terms))
    f.max_dynamic_shared_size_bytes = smem
    f((n // bn, m // bm), (threads,),
      (np.int32(m), np.int32(n), np.int32(k), F32(alpha), a, np.int64(a.shape[0]), b,
       np.int64(b.shape[0]), c, np.int64(c.shape[0])), shared_mem=smem)


def peak() -> float:
    """TFLOP/s of back-to-back independent TF32 mma.sync on every multiprocessor."""
    f, out = module().get_function("exp3::peak"), cp.zeros(256, dtype=F32)
    blocks, iters = cp.cuda.Device().attributes["MultiProcessorCount"] * 8, 4096
    f((blocks,), (256,), (out, np.int32(iters)))
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    f((blocks,), (256,), (out, np.int32(iters)))
    stop.record()
    stop.synchronize()
    flops = blocks * 8 * iters * 8 * 2 * 16 * 8 * 8
    return flops / cp.cuda.get_elapsed_time(start, stop) / 1e9


def cublas(handle: int, compute: int, m: int, n: int, k: int, ops: tuple, stream: int) -> None:
    """cuBLAS ``C += -A B`` in float32 with the compute type ``compute`` (68: FP32, 77: TF32)."""
    one, minus, a, b, c = ops
    lib.bind_blas(stream, handle)
    gemm_ex = lib.blas("cublasGemmEx")
    lib.check(gemm_ex(handle, 0, 0, m, n, k, minus.ctypes.data, a.data.ptr, 0, m, b.data.ptr, 0, k,
                      one.ctypes.data, c.data.ptr, 0, m, compute, -1), "gemmEx")


def error(c: cp.ndarray, a: cp.ndarray, b: cp.ndarray) -> float:
    """Worst ``|c - a b|_ij / (|a| |b|)_ij`` in units of 2^-24, the product in float64."""
    a64, b64 = a.astype(cp.float64), b.astype(cp.float64)
    return float(cp.max(cp.abs(c - a64 @ b64) / (cp.abs(a64) @ cp.abs(b64)))) * 2.0**24


def main() -> None:
    print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    print(f"TF32 mma.sync alone: {peak():.0f} TFLOP/s")
    rng = cp.random.default_rng(0)
    handle = lib.own_handle("capture")  # its own workspace: capturable
    one, minus = np.ones(1, F32), -np.ones(1, F32)
    print("error, 2^-24 |A||B| at 1024x256x1024 (one-pass / split) | tiling")
    a = cp.asfortranarray(rng.standard_normal((1024, 1024), dtype=F32))
    b = cp.asfortranarray(rng.standard_normal((1024, 256), dtype=F32))
    for tiling in TILINGS:
        errs = []
        for terms in (1, 3):
            c = cp.zeros((1024, 256), dtype=F32, order="F")
            fused(tiling, terms, 1024, 256, 1024, 1.0, a, b, c)
            errs.append(error(c, a, b))
        print(f"{errs[0]:9.1f} / {errs[1]:6.2f} | {label(tiling)}")
    c = cp.zeros((1024, 256), dtype=F32, order="F")
    cublas(handle, 68, 1024, 256, 1024, (one, minus, a, b, c), cp.cuda.get_current_stream().ptr)
    print(f"{error(-c, a, b):9.2f} cuBLAS SGEMM")
    head = " | ".join(label(t) for t in TILINGS)
    print(f"m x n x k | SGEMM | TF32 | split, one-pass per tiling: {head} | best split / SGEMM")
    for m, n, k in SHAPES:
        a = cp.asfortranarray(rng.standard_normal((m, k), dtype=F32))
        b = cp.asfortranarray(rng.standard_normal((k, n), dtype=F32))
        c = cp.zeros((m, n), dtype=F32, order="F")
        ops = (one, minus, a, b, c)
        sgemm = per_call(functools.partial(cublas, handle, 68, m, n, k, ops))
        tf32 = per_call(functools.partial(cublas, handle, 77, m, n, k, ops))
        cells, best = [], float("inf")
        for tiling in TILINGS:
            split, single = (per_call(functools.partial(fused, tiling, terms, m, n, k, -1.0, a, b,
                                                        c)) for terms in (3, 1))
            best = min(best, split)
            cells.append(f"{split:7.1f}, {single:6.1f}")
        print(f"{m}x{n}x{k} | {sgemm:7.1f} | {tf32:6.1f} | {' | '.join(cells)} | "
              f"{sgemm / best:4.2f}")


def profile() -> None:
    """One call of each kernel on the top product, for Nsight Compute:

        ncu --section SpeedOfLight --section WarpStateStats --section Occupancy \\
            python3 exp_narrow_fused_tf32.py --profile
    """
    m, n, k = SHAPES[0]
    rng = cp.random.default_rng(0)
    a = cp.asfortranarray(rng.standard_normal((m, k), dtype=F32))
    b = cp.asfortranarray(rng.standard_normal((k, n), dtype=F32))
    c = cp.zeros((m, n), dtype=F32, order="F")
    for tiling in TILINGS:
        for terms in (1, 3):
            fused(tiling, terms, m, n, k, 1.0, a, b, c)
    cp.cuda.Device().synchronize()


if __name__ == "__main__":
    if sys.argv[1:] == ["--profile"]:
        profile()
    elif sys.argv[1:] == ["--wgmma"]:
        wgmma_table(cp.random.default_rng(0), lib.own_handle("capture"))
    else:
        main()
