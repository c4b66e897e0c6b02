"""tricov.potrf on the GPU against torch.linalg.cholesky, the peer issue 3 names, per call.

    PYTHONPATH=src python benchmarks/gpu_potrf_torch.py 1024 2048 3000 4096 6000 10000 16384 32768

For each n: a random SPD float64 matrix (column-major). Each contender is called once untimed,
then timed on fresh copies with CUDA events around the call as a user makes it (the median is
kept: 30 calls up to n = 4096, 5 above): ``raw``: cuSOLVER's ``cusolverDnDpotrf`` alone (no
status read: it cannot raise); ``raw+info``: the same and a read of its status, as a call that
raises must do; ``tricov``: ``tricov.potrf`` (cuSOLVER or tricov's recursion as the policy
says, a NaN-pivot test, the status read); ``torch``: ``torch.linalg.cholesky`` (which reads
its status too) and ``torch_ex``: ``torch.linalg.cholesky_ex`` (which does not), on the same
memory through DLPack. Prints microseconds and tricov's speed-up over torch and over raw.
"""

from __future__ import annotations

import argparse

import cupy as cp
import numpy as np
import torch
from gpu_potrf_sizes import _cusolver as _raw
from gpu_potrf_sizes import timed

from tricov import dense


def _median_ms(f, a0: cp.ndarray, repeats: int) -> float:
    return float(np.median(timed(f, a0, repeats))) * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("sizes", type=int, nargs="+")
    args = p.parse_args()
    print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, torch {torch.__version__}"
          "; median microseconds per call")
    for n in args.sizes:
        g = cp.random.default_rng(0).standard_normal((n, n))
        a0 = cp.asfortranarray(g @ g.T / n + cp.eye(n))
        del g
        reps = 30 if n <= 4096 else 5
        t = {"raw": _median_ms(_raw, a0, reps),
             "raw+info": _median_ms(lambda a: _raw(a, True), a0, reps),
             "tricov": _median_ms(dense.potrf, a0, reps),
             "torch": _median_ms(lambda a: torch.linalg.cholesky(torch.from_dlpack(a)), a0,
                                 reps),
             "torch_ex": _median_ms(lambda a: torch.linalg.cholesky_ex(torch.from_dlpack(a)),
                                    a0, reps)}
        print(f"n={n:6d}  " + "  ".join(f"{k} {v * 1e3:9.0f}" for k, v in t.items())
              + f"   tricov/torch {t['torch'] / t['tricov']:.3f}  tricov/torch_ex "
              f"{t['torch_ex'] / t['tricov']:.3f}  tricov/raw {t['raw'] / t['tricov']:.3f}",
              flush=True)
        del a0
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
