"""Where float32 (or float64) POTRF on the GPU should stop factoring the whole matrix at once.

For each order: tricov's call at the policy in force against cuSOLVER and torch
(``tricov.bench.runner.measure``), then tricov forced onto the recursion with tile leaves of
1024, 1536 and 2048 rows, and onto the whole matrix (``gpu_dense.sweep``: interleaved, best of
3 x 2). TFLOP/s. Run from the repository root on a machine with an NVIDIA GPU:

    PYTHONPATH=src python3 benchmarks/gpu_potrf_cut.py [--dtype float32] [--sizes 3072 3584 4096]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import gpu_dense  # noqa: E402

from tricov.bench.cases import CASES  # noqa: E402
from tricov.bench.devices import GPUDevice  # noqa: E402
from tricov.bench.runner import Job, measure  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtype", default="float32")
    p.add_argument("--sizes", type=int, nargs="+", default=[3072, 3584, 4096])
    args = p.parse_args()
    gpu_dense.CANDIDATES["potrf"] = [{"potrf_whole": 1, "potrf": nb}
                                     for nb in (1024, 1536, 2048)] + [{"potrf": 1 << 20}]
    device = GPUDevice()
    print(device.label())
    for n in args.sizes:
        job = Job(CASES["potrf"], (n,), np.dtype(args.dtype))
        r = gpu_dense.row(measure(device, job, repeat=5, warmup=2))
        print(f"{n} tricov {r['tricov_TFs']:.2f} native {r['native_TFs']:.2f} torch "
              f"{r.get('torch_TFs', 0):.2f} x torch {r.get('tricov/torch', 0):.2f}")
        print(n, {k: round(v, 2) for k, v in gpu_dense.sweep(device, job).items()})


if __name__ == "__main__":
    main()
