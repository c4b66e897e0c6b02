"""The steps of ``potrf_tiles``' chain of diagonal tiles alone, in one block: cycles of
``chol32`` (and of a reordered one that was not kept), ``solve_tile`` and ``sub_product`` on
one 32 x 32 tile, each checked against NumPy.

    PYTHONPATH=src python3 benchmarks/gpu_potrf_steps.py [--source DIR] [--reps 200]

``--source`` is a ``kernels/cuda`` directory (default the tree's), e.g. of a checkout of an
earlier commit for a before/after (``git worktree add /tmp/old REV``; ``--source
/tmp/old/src/tricov/kernels/cuda``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import cupy as cp
import numpy as np

from tricov.kernels import nvrtc

STEPS = {0: "chol32", 1: "chol32 reordered", 2: "solve_tile", 3: "sub_product"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", default=str(nvrtc.SOURCE_DIR))
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args()
    code = (Path(__file__).parent / "gpu_potrf_steps.cu").read_text()
    for ctype, dt in (("double", np.float64), ("float", np.float32)):
        g = np.random.default_rng(0).standard_normal((32, 32))
        a = (g @ g.T / 32 + np.eye(32)).astype(dt)
        ref = np.linalg.cholesky(a.astype(np.float64))
        exprs = {s: f"tricov::steps<{ctype}, {s}>" for s in STEPS}
        module = cp.RawModule(code=code, options=("-std=c++17", f"-I{args.source}"),
                              name_expressions=tuple(exprs.values()))
        for step, expr in exprs.items():
            out, cyc = cp.zeros((32, 32), dt, order="F"), cp.zeros(1, np.int64)
            module.get_function(expr)((1,), (256,), (cp.asarray(a, order="F"), out, cyc,
                                                     np.int32(args.reps)),
                                      shared_mem=2 * 32 * 36 * np.dtype(dt).itemsize)
            o = cp.asnumpy(out).astype(np.float64)
            a64 = a.astype(np.float64)
            low = np.tril(a64)  # the tile the product reads (its lower triangle)
            if step <= 1:
                err = np.tril(o) - ref
            elif step == 2:  # X L^H = A
                err = o @ ref.T - a64
            else:
                err = o - (a64 - low @ low.T)
            rel = np.abs(err).max() / np.abs(a64).max() / np.finfo(dt).eps
            print(f"{ctype:>7} {STEPS[step]:>17} {int(cyc.get()[0]):7d} cycles  "
                  f"error {rel:.1f} eps", flush=True)


if __name__ == "__main__":
    main()
