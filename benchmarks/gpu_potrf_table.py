"""DPOTRF against torch.linalg.cholesky in the gpu_dense table's own harness
(``tricov.bench.runner.measure``: the contenders' calls interleaved, median of 9), with CUDA
graphs on and off, with and without the GEMM contender, at n = 1024 and 2048.

    PYTHONPATH=src python3 benchmarks/gpu_potrf_table.py

Run for two trees in one device call (the older from ``git archive``) to compare the front
ends; ``benchmarks/README.md`` cites the results.
"""

from __future__ import annotations

import numpy as np

import tricov as tc
from tricov.bench.cases import CASES
from tricov.bench.devices import GPUDevice
from tricov.bench.runner import Job, measure

dev = GPUDevice()
dt = np.dtype(np.float64)
for n in (1024, 2048):
    for graphs in (True, False, True, False):
        tc.set_cuda_graphs(graphs)
        for gemm in (True, False):
            r = measure(dev, Job(CASES["potrf"], (n,), dt), repeat=9, gemm=gemm)
            t_torch = r.peers["torch"][0]
            print(f"n={n} graphs={graphs} gemm={gemm}: tricov {r.tricov_s * 1e6:.0f} native "
                  f"{r.native_s * 1e6:.0f} torch {t_torch * 1e6:.0f} us  tricov/torch "
                  f"{t_torch / r.tricov_s:.3f}", flush=True)
