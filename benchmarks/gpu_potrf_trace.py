"""Where the time of ``potrf_tiles`` goes: the kernel alone, and a timeline from inside it.

For each source of ``leaves.cu`` given (default: the tree's), the kernel is compiled twice:
as it is, and with ``%globaltimer`` stamps at the steps of its work items (thread 0 of each
block writes them to a buffer of its own, so no stamp waits on another block). It is launched
directly on an SPD matrix (F order, and C order as the transposed view), timed with CUDA
events (median of 21), checked against NumPy, and the stamps of the last traced launch give
the mean time of each step on the chain of diagonal tiles, per column of 32 tiles:

    seen-T   from the previous diagonal tile's flag to this item seeing it
    terms-T  from that flag to the end of this item's own terms (> 0: the products set the pace)
    load, solve, product, chol32, sync, pub   the steps after it, in order

    PYTHONPATH=src python3 benchmarks/gpu_potrf_trace.py [--sources NAME=PATH ...]
        [--sizes 1024 2048] [--dtypes double float] [--out DIR]

An earlier version of the kernel for an A/B: ``git show REV:src/tricov/kernels/cuda/leaves.cu
> /tmp/old.cu`` and ``--sources old=/tmp/old.cu new=src/tricov/kernels/cuda/leaves.cu`` (the
headers are the tree's). The stamps' JSON (time, block, code, row, column) goes to --out.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
from pathlib import Path

import cupy as cp
import numpy as np

from tricov.kernels import nvrtc

TRACE = r'''
constexpr int TRACE_PER = 8192;
extern "C" { __device__ unsigned long long g_trace[264 * TRACE_PER * 2]; }
__shared__ int tnum;
__device__ __forceinline__ void trace(int code, int i, int c) {
    if (threadIdx.x == 0) {
        unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        int k = tnum;
        if (k < TRACE_PER) {
            unsigned long long* p = g_trace + 2 * ((long long)blockIdx.x * TRACE_PER + k);
            p[0] = t; p[1] = ((unsigned long long)code << 32) | ((unsigned)i << 16) | (unsigned)c;
        }
        tnum = k + 1;
    }
}
'''
BLOCKS, PER = 264, 8192

# (anchor, replacement): each anchor must occur once in leaves.cu. Codes: 1 / 11 a solved-alone
# tile / a pair P_j starts, 2 / 12 its terms done, 3 the flag of the diagonal tile it solves
# against seen, 21 that tile loaded, 22 solved, 14 product into the diagonal tile done, 23
# chol32 done (warp 0), 15 the block past it, 4 / 6 / 16 solved / flagged, 7 a run of terms.
EDITS = [
    ("// ------------------------------------------------------------------------ POTRF by tiles\n",
     TRACE),
    ("        if (f > k0) return f;\n", "        if (f > k0) { trace(7, f, k0); return f; }\n"),
    ("    const int result = wait_flag(done + p.flag(c, c), state);\n",
     "    const int result = wait_flag(done + p.flag(c, c), state);\n    trace(3, c, 0);\n"),
    ("        load_tile(Lf, A, lda, opa, p.n, p.n, c * TILE, c * TILE, true);\n"
     "        __syncthreads();\n",
     "        load_tile(Lf, A, lda, opa, p.n, p.n, c * TILE, c * TILE, true);\n"
     "        __syncthreads();\n        trace(21, c, 0);\n"),
    ("        solve_tile(C, Lf, dinv);\n        __syncthreads();\n",
     "        solve_tile(C, Lf, dinv);\n        __syncthreads();\n        trace(22, c, 0);\n"),
    ("            const int i = j;\n",
     "            const int i = j;\n            trace(1, i, c);\n"),
    ("                                  done, &first, &failed);\n"
     "            if (result == DONE) result",
     "                                  done, &first, &failed);\n            trace(2, i, c);\n"
     "            if (result == DONE) result"),
    ("            if (result == DONE) store_tile(Cs, A, lda, opa, p.end(i), n, p.row(i), c * TILE, "
     "false);\n            publish(done + p.flag(i, c), result);\n",
     "            trace(4, i, c);\n"
     "            if (result == DONE) store_tile(Cs, A, lda, opa, p.end(i), n, p.row(i), c * TILE, "
     "false);\n            publish(done + p.flag(i, c), result);\n            trace(6, i, c);\n"),
    ("        const int j0 = j * TILE;\n",
     "        const int j0 = j * TILE;\n        trace(11, j, j);\n"),
    ("                              &failed);\n        if (j > 0) {\n",
     "                              &failed);\n        trace(12, j, j);\n        if (j > 0) {\n"),
    ("                sub_product(Cd, Cs, Cs);\n                __syncthreads();\n            }\n",
     "                sub_product(Cd, Cs, Cs);\n                __syncthreads();\n            }\n"
     "            trace(14, j, j);\n"),
    ("            const int b = chol32(Cd, TLD, 0, dinv);\n",
     "            const int b = chol32(Cd, TLD, 0, dinv);\n            trace(23, j, j);\n"),
    ("            if (tid == 0) bad = b;\n        }\n        __syncthreads();\n",
     "            if (tid == 0) bad = b;\n        }\n        __syncthreads();\n"
     "        trace(15, j, j);\n"),
    ("        publish(done + p.flag(j, j), result);\n    }\n}\n",
     "        publish(done + p.flag(j, j), result);\n        trace(16, j, j);\n    }\n}\n"),
    ("    volatile int* done = flags + 1;\n    for (;;) {\n",
     "    volatile int* done = flags + 1;\n    if (tid == 0) tnum = 0;\n    __syncthreads();\n"
     "    for (;;) {\n"),
]


def traced(source: str) -> str:
    """``leaves.cu`` with the stamps in."""
    for old, new in EDITS:
        assert source.count(old) == 1, (old, source.count(old))
        source = source.replace(old, new)
    return source


def build(code: str, ctype: str):
    expr = f"tricov::potrf_tiles<{ctype}>"
    module = cp.RawModule(code=code, options=("-std=c++17", f"-I{nvrtc.SOURCE_DIR}"),
                          name_expressions=(expr,))
    return module, module.get_function(expr)


def spd(n: int, dt) -> cp.ndarray:
    g = np.random.default_rng(0).standard_normal((n, n))
    return cp.asarray((g @ g.T / n + np.eye(n)).astype(dt), order="F")


def events(buf: np.ndarray, grid: int) -> list[tuple[int, int, int, int, int]]:
    """(time, block, code, row, column) of the last launch: each block's stamps up to the first
    step back in time (later entries are left from earlier launches)."""
    out = []
    for b in range(grid):
        last = 0
        for k in range(PER):
            t, v = int(buf[b, k, 0]), int(buf[b, k, 1])
            if t == 0 or t < last:
                break
            last = t
            out.append((t, b, v >> 32, (v >> 16) & 0xFFFF, v & 0xFFFF))
    return out


def chain(ev: list[tuple[int, int, int, int, int]]) -> dict[str, float]:
    """Mean µs of each step of the pairs P_j (j >= 2) on the chain of diagonal tiles."""
    t0 = min(e[0] for e in ev)
    pairs: dict[int, dict[int, int]] = {}
    items = collections.defaultdict(list)
    for t, b, code, i, c in ev:
        items[b].append((t - t0, code, i, c))
    for seq in items.values():
        cur: dict[int, int] | None = None
        for t, code, i, _ in seq:
            if code == 11:
                cur = pairs.setdefault(i, {})
            elif code == 1:
                cur = None
            elif cur is not None and code != 7:
                cur[code] = t
    rows = []
    for j in sorted(pairs)[2:]:
        p, flag = pairs[j], pairs[j - 1][16]
        rows.append([p[16] - flag, p[12] - flag, p[3] - flag, p[21] - p[3], p[22] - p[21],
                     p[14] - p[22], p[23] - p[14], p[15] - p[23], p[16] - p[15]])
    names = ("step", "terms-T", "seen-T", "load", "solve", "product", "chol32", "sync", "pub")
    return dict(zip(names, np.mean(rows, axis=0) / 1e3, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", nargs="+",
                        default=[f"tree={nvrtc.SOURCE_DIR / 'leaves.cu'}"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048])
    parser.add_argument("--dtypes", nargs="+", default=["double", "float"])
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    sources = dict(s.split("=", 1) for s in args.sources)
    table = []
    for ctype in args.dtypes:
        dt = np.dtype({"double": np.float64, "float": np.float32}[ctype])
        per_sm = 1 if dt.itemsize == 8 else 2
        for name, path in sources.items():
            text = Path(path).read_text()
            tld = re.search(r"constexpr int TILE = 32, TLD = ([^;]+);", text).group(1)
            tld = 33 if tld == "TILE + 1" else int(tld)  # before 8f9cdd9: TILE + 1
            smem = 5 * 32 * tld * dt.itemsize
            _, plain = build(text, ctype)
            module, stamped = build(traced(text), ctype)
            stamps = module.get_global("g_trace")
            for n in args.sizes:
                a0, t = spd(n, dt), -(-n // 32)
                grid = min(1 + t * (t - 1) // 2, per_sm * cp.cuda.Device().attributes[
                    "MultiProcessorCount"])
                info = cp.zeros(1, np.int32)
                us, err = {}, 0.0
                for case, kernel, opa in (("F", plain, 0), ("C", plain, 1), ("traced", stamped, 0)):
                    ts = []
                    for rep in range(21):
                        a, flags = a0.copy(order="F"), cp.zeros(1 + t * t, np.int32)
                        if case == "traced":
                            stamps.memset_async(0, BLOCKS * PER * 16)
                        start, end = cp.cuda.Event(), cp.cuda.Event()
                        start.record()
                        kernel((grid,), (256,), (np.int32(n), np.int32(n), a, np.int64(n),
                                                 np.int32(opa), np.int32(0), flags, info),
                               shared_mem=smem)
                        end.record()
                        end.synchronize()
                        ts.append(cp.cuda.get_elapsed_time(start, end) * 1e3)
                        if case != "traced" and rep == 0:
                            assert int(info.get()[0]) == 0
                            ref = np.linalg.cholesky(cp.asnumpy(a0).astype(np.float64))
                            got = cp.asnumpy(a)
                            got = np.tril(got) if opa == 0 else np.triu(got).T
                            err = max(err, np.abs(got - ref).max() / np.finfo(dt).eps / n)
                    us[case] = float(np.median(ts))
                ev = events(cp.ndarray((BLOCKS, PER, 2), np.uint64, stamps).get(), grid)
                key = f"{name}_{ctype}_{n}"
                Path(args.out, f"trace_{key}.json").write_text(json.dumps(ev))
                steps = "  ".join(f"{k} {v:.2f}" for k, v in chain(ev).items())
                table.append(f"{key:>20}  F {us['F']:7.1f} us  C {us['C']:7.1f}  traced "
                             f"{us['traced']:7.1f}  err/(n eps) {err:.1e}\n{'':>22}{steps}")
                print(table[-1], flush=True)
    print("\n".join(table))


if __name__ == "__main__":
    main()
