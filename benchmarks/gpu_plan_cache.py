"""Callers cycling through more large operands than the plan cache keeps (tricov._plans).

    PYTHONPATH=src python3 benchmarks/gpu_plan_cache.py [--op trtri] [--n 16384]
        [--dtype float32] [--callers 4] [--rounds 6]

``--callers`` matrices of the same shape are inverted in turn (TRTRI by default), each call on
its own matrix: a plan per matrix, more plans than the cache's workspace budget keeps (about
1.5 GiB each at 16384 rows in float32 against 4 GiB). Three settings, each on fresh plans:

* ``payback``: the cache as it is (a plan dropped before it paid makes its key run eagerly);
* ``always``: ``PAYBACK = 0``, every key captured again whenever its plan was dropped (what the
  cache did before);
* ``eager``: CUDA graphs off.

For each, the TFLOP/s of every call after the first round (in call order), their mean, and the
number of captures.
"""

from __future__ import annotations

import argparse
import statistics

import cupy as cp
import numpy as np

import tricov as tc
from tricov import _plans
from tricov.bench.cases import CASES
from tricov.bench.devices import GPUDevice


def run(setting: str, op: str, n: int, dtype: np.dtype, callers: int,
        rounds: int) -> tuple[list[float], int]:
    """TFLOP/s of the calls after the first round, and the captures, under ``setting``."""
    device = GPUDevice()
    case = CASES[op]
    pristine = case.make(device.generator(0), (n,), dtype, cp)
    work = [{k: v.copy(order="F") for k, v in pristine.items()} for _ in range(callers)]
    tc.set_cuda_graphs(setting != "eager")  # also forgets every plan
    payback, capture = _plans.PAYBACK, _plans._capture
    captures = []
    _plans.PAYBACK = 0 if setting == "always" else payback
    _plans._capture = lambda *args: captures.append(1) or capture(*args)
    rates = []
    try:
        for r in range(rounds):
            for x in work:
                for k in case.outputs:
                    cp.copyto(x[k], pristine[k])
                seconds = device.time(case.run, x)
                if r:
                    rates.append(case.flops((n,), dtype) / seconds / 1e12)
    finally:
        _plans.PAYBACK, _plans._capture = payback, capture
        tc.set_cuda_graphs(True)
    return rates, len(captures)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--op", default="trtri")
    p.add_argument("--n", type=int, default=16384)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--callers", type=int, default=4)
    p.add_argument("--rounds", type=int, default=6)
    args = p.parse_args()
    dtype = np.dtype(args.dtype)
    print(f"{GPUDevice().label()}: {args.op} n={args.n} {dtype.name}, {args.callers} callers "
          f"in turn, {args.rounds} rounds; plan workspace budget {_plans.WORKSPACE >> 20} MiB")
    for setting in ("payback", "always", "eager"):
        rates, captures = run(setting, args.op, args.n, dtype, args.callers, args.rounds)
        print(f"{setting:8s} mean {statistics.mean(rates):5.1f} TFLOP/s, {captures:2d} captures;"
              f" calls: {' '.join(f'{r:.0f}' for r in rates)}", flush=True)


if __name__ == "__main__":
    main()
