"""``potrf_tiles`` alone from several sources of ``leaves.cu``, interleaved: square leaves and
panels (a leaf with rows below it), float32 and float64.

    PYTHONPATH=src python3 benchmarks/gpu_potrf_tiles_ab.py NAME=PATH [NAME=PATH ...]

Each source is compiled with NVRTC (the tree's headers) and launched directly on an SPD matrix
of ``m`` rows in F order whose first ``n`` columns it factors (``n`` = ``m``: a whole leaf;
``n`` < ``m``: a panel, ``panel_lag`` 8), on as many blocks as ``CUDAExecutor`` gives it. Printed
per dtype and ``m x n``: per source the median µs of 15 launches (CUDA events) in each of three
rounds, the sources alternating, and the largest difference of its result from the first
source's (0 where a change keeps the arithmetic). A variant for an A/B: copy
``src/tricov/kernels/cuda/leaves.cu``, edit the copy, pass both (session 34's runs:
``benchmarks/gpu_potrf_panels_h100.txt``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import cupy as cp
import numpy as np
from gpu_potrf_trace import build, spd

from tricov.kernels import TILE_BLOCKS, nvrtc, tile_smem

SHAPES = ((1024, 1024), (2048, 2048), (4096, 512), (2048, 512))


def main(specs: list[str]) -> None:
    sources = {name: Path(path).read_text() for name, path in (s.split("=", 1) for s in specs)}
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    for ctype, dt in (("float", np.float32), ("double", np.float64)):
        kernels = {name: build(text, ctype)[1] for name, text in sources.items()}
        for m, n in SHAPES:
            a0 = spd(m, dt)
            t, rt = -(-n // 32), -(-n // 32) - (-(m - n) // 32)
            grid = min(1 + t * (t - 1) // 2 + t * (rt - t), TILE_BLOCKS[dt().itemsize] * sms)
            info = cp.zeros(1, np.int32)
            times: dict[str, list[float]] = {name: [] for name in kernels}
            diffs = dict.fromkeys(kernels, 0.0)
            ref = None
            for _ in range(3):
                for name, kernel in kernels.items():
                    ts = []
                    for _ in range(15):
                        a = a0.copy(order="F")
                        flags = cp.zeros(1 + t * rt, np.int32)
                        start, end = cp.cuda.Event(), cp.cuda.Event()
                        start.record()
                        kernel((grid,), (256,), (np.int32(m), np.int32(n), a, np.int64(m),
                                                 np.int32(0), np.int32(8), flags, info),
                               shared_mem=tile_smem(a.itemsize))
                        end.record()
                        end.synchronize()
                        ts.append(cp.cuda.get_elapsed_time(start, end) * 1e3)
                    out = cp.tril(a[:, :n])
                    ref = out if ref is None else ref
                    diffs[name] = max(diffs[name], float(cp.abs(out - ref).max()))
                    times[name].append(float(np.median(ts)))
            print(ctype, f"{m}x{n}", "  ".join(
                f"{name} " + "/".join(f"{v:.0f}" for v in vs) + f" d{diffs[name]:.0e}"
                for name, vs in times.items()), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or [f"tree={nvrtc.SOURCE_DIR / 'leaves.cu'}"])
