"""Dense GPU operations under several settings, interleaved in one run, against the native
routine (cuBLAS / cuSOLVER) and torch on the same data.

    PYTHONPATH=src python3 benchmarks/gpu_settings_ab.py SETTING [SETTING ...] -- CASE [CASE ...]

A SETTING is comma-separated ``name=value`` pairs: a class attribute of ``CUDAExecutor``
(``split_rows=384``, ``herk_native=4096``; ``split`` is short for ``split_rows``), or else a
leaf size or crossover of ``tricov.set_leaf_size`` (``trsm=256``, ``syrk_whole=4096``, ...); an
empty setting (``''``) is the defaults. A CASE is ``op:shape[:dtype]`` (``trsm:4096x4096``,
``potrf:4096:float64``; float32 by default). Example (the split-TF32 threshold,
benchmarks/README.md):

    PYTHONPATH=src python3 benchmarks/gpu_settings_ab.py split=512 split=384 split=512 \\
        split=384 -- trsm:4096x4096 potrs:4096x4096 trmm:16384x16384

Each setting is a contender with its own outputs, timed in turn with the others (the order
rotating from round to round; median of 7 after 2 warm-up rounds). Every contender keeps its
captured plan (``time_interleaved`` lifts the plan cache's workspace budget while it runs). Printed
per case: TFLOP/s of the native routine and of torch (or the native routine where torch has
none), then per setting its TFLOP/s and its speed-up over torch / over the native routine.
"""

from __future__ import annotations

import sys

import cupy as cp
import numpy as np

import tricov as tc
from tricov.backends.cuda import CUDAExecutor
from tricov.bench.cases import CASES
from tricov.bench.devices import GPUDevice
from tricov.bench.runner import Contender, Job, time_interleaved


def parse(argv: list[str]) -> tuple[list[dict[str, int]], list[tuple[str, tuple, np.dtype]]]:
    """The settings and cases of the command line."""
    if "--" not in argv:
        raise SystemExit(__doc__)
    cut = argv.index("--")
    settings = [dict((k, int(v)) for k, v in (kv.split("=") for kv in s.split(",") if kv))
                for s in argv[:cut]]
    cases = []
    for spec in argv[cut + 1:]:
        op, shape, *dtype = spec.split(":")
        cases.append((op, tuple(int(x) for x in shape.split("x")),
                      np.dtype(dtype[0] if dtype else "float32")))
    return settings, cases


def executor_settings(names: set[str]) -> dict[str, object]:
    """The current values of those ``names`` that are settings of ``CUDAExecutor`` (class
    attributes that are not methods: ``potrf`` or ``trsm`` name its methods, and leaf sizes)."""
    return {n: getattr(CUDAExecutor, n) for n in names
            if hasattr(CUDAExecutor, n) and not callable(getattr(CUDAExecutor, n))}


def apply(setting: dict[str, int], dtype: np.dtype, defaults: dict[str, int]) -> None:
    """Make ``setting`` the current one (``defaults``, the executor's attributes as they were,
    and the default leaf sizes for what it does not name)."""
    tc.set_leaf_size("gpu", "trsm", dtype, None)  # drops every override
    for name, value in defaults.items():
        setattr(CUDAExecutor, name, value)
    for name, value in setting.items():
        name = "split_rows" if name == "split" else name
        if name in defaults:
            setattr(CUDAExecutor, name, value)
        else:
            tc.set_leaf_size("gpu", name, dtype, value)


def main(argv: list[str]) -> None:
    settings, cases = parse(argv)
    device = GPUDevice()
    names = {"split_rows" if n == "split" else n for s in settings for n in s}
    defaults = executor_settings(names)
    print(device.label(), settings)
    try:
        for op, shape, dtype in cases:
            case = CASES[op]
            job = Job(case, shape, dtype)
            pristine = {k: device.upload(v)
                        for k, v in case.make(device.generator(job.seed(0)), shape, dtype,
                                              cp).items()}
            native, name = device.native(op, dtype)
            contenders = [Contender("tricov", case.run, pristine, case.outputs, device)
                          for _ in settings]
            contenders.append(Contender(name, native, pristine, case.outputs, device))
            for label, call, _ in device.peers(op, dtype):
                contenders.append(Contender(label, call, pristine, case.outputs, device))
            count = len(settings)

            def before(i: int, dtype: np.dtype = dtype, count: int = count) -> None:
                apply(settings[i] if i < count else {}, dtype, defaults)

            times = time_interleaved(contenders, 7, 2, before=before)
            apply({}, dtype, defaults)
            flops = case.flops(shape, dtype)
            native_s = times[count]
            peer_s = times[count + 1] if len(times) > count + 1 else native_s
            cells = "  ".join(
                f"[{i}] {flops / t / 1e12:5.1f} {peer_s / t:4.2f}/{native_s / t:4.2f}x"
                for i, t in enumerate(times[:count]))
            print(f"{op:6} {'x'.join(map(str, shape)):>11} {dtype.name}: native "
                  f"{flops / native_s / 1e12:5.1f} peer {flops / peer_s / 1e12:5.1f} | {cells}",
                  flush=True)
            del pristine, contenders
            cp.get_default_memory_pool().free_all_blocks()
    finally:
        for name, value in defaults.items():
            setattr(CUDAExecutor, name, value)
        tc.set_cuda_graphs(True)  # forgets the plans of the run


if __name__ == "__main__":
    main(sys.argv[1:])
