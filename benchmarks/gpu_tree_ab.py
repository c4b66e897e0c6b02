"""Device time of batched operations with whichever tricov is on ``PYTHONPATH``: one side of an
A/B run of two source trees (a change to a kernel *and* its launcher, which ``gpu_batched_ab.py
source`` cannot swap alone).

Run on the GPU machine from the repository root, once per tree, alternating::

    git archive BASE src | tar -x -C /tmp/base          # the tree before, beside the working one
    for r in 1 2; do
        PYTHONPATH=/tmp/base/src python3 benchmarks/gpu_tree_ab.py before
        PYTHONPATH=src python3 benchmarks/gpu_tree_ab.py after
    done

Each line is one case (``OP:DTYPE:N``, default the Cholesky family's grid-kernel orders): µs of
one call at batch 10240 on C-ordered stacks, queued behind a spinning kernel with its restoring
copy subtracted (``gpu_batched_ab.timed``). The kernels compile first, ``--jobs`` at a time.
"""

from __future__ import annotations

import argparse
import multiprocessing

import numpy as np
from gpu_batched_ab import Case, timed

import tricov as tc
import tricov.backends.batched_cuda as bc
from tricov.batched.bench_gpu import _Queue
from tricov.kernels import nvrtc

CASES = ("potrf:float64:32", "trtri:float64:32", "poti:float64:32", "potrf:float64:24",
         "potrf:float32:32", "potri:float32:32", "poti:float32:32", "potrf:float32:16",
         "poti:float64:8")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("label", help="the tree's name on each line")
    ap.add_argument("cases", nargs="*", default=list(CASES), help="OP:DTYPE:N")
    ap.add_argument("--jobs", type=int, default=16)
    args = ap.parse_args(argv)
    cases = [(op, np.dtype(dt), int(n)) for op, dt, n in (c.split(":") for c in args.cases)]
    kernels = {bc._small_kernel(nvrtc.CTYPE[dt], dt.char, *bc.group_shape(n, dt, op, 10240), op)
               for op, dt, n in cases}
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        pool.starmap(bc._compile, sorted(kernels))
    import cupy

    queue = _Queue(8)
    tc.set_cuda_graphs(False)
    stacks: dict[tuple[np.dtype, int], Case] = {}
    for op, dt, n in cases:
        stack = stacks.setdefault((dt, n), Case(cupy, dt, n))
        print(f"{args.label:8} {op:6} {dt.name:8} n={n:3d} {timed(queue, stack, op) * 1e3:8.2f} us",
              flush=True)


if __name__ == "__main__":
    main()
