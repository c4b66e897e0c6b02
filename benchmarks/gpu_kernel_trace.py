"""Where a replayed dense GPU call spends its device time, kernel by kernel.

    PYTHONPATH=src python3 benchmarks/gpu_kernel_trace.py CASE [CASE ...] [--set NAME=VALUE ...]
        [--order]

A CASE is ``op:shape[:dtype]`` as in ``gpu_settings_ab.py`` (``trsm:16384x256``,
``potrf:4096:float32``; float32 by default). ``--set`` takes the settings of that script too
(``trsm_narrow=1024``, ``split_rows=512``). Each case's call runs four times (eager, captured,
replayed, replayed; inputs restored before each) and then once under ``torch.profiler`` (CUPTI
sees the kernels of CuPy, cuBLAS and tricov alike, graph nodes included). Printed: the device
span of that replay and its kernels' busy time, then per kernel name its total, count and mean,
largest first; with ``--order``, every kernel in launch order (start, gap after the previous
one, duration, grid, name), which shows which recursion step each launch is.

The profiler slows the host, not the device: the replay launches one graph, so the span is
the call's device time.
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile

import cupy as cp
import numpy as np
from gpu_settings_ab import apply, executor_settings
from torch.profiler import ProfilerActivity, profile

from tricov.bench.cases import CASES
from tricov.bench.devices import GPUDevice
from tricov.bench.runner import Job


def parse_case(spec: str) -> tuple[str, tuple[int, ...], np.dtype]:
    op, shape, *dtype = spec.split(":")
    return op, tuple(int(x) for x in shape.split("x")), np.dtype(dtype[0] if dtype else "float32")


def kernels(run, *args) -> list[dict]:
    """The kernels, copies and fills of one ``run(*args)``, in start order (chrome-trace
    events)."""
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run(*args)
        cp.cuda.Device().synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        prof.export_chrome_trace(out.name)
        events = json.load(open(out.name))["traceEvents"]
    found = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    return sorted(found, key=lambda e: e["ts"])


def short(name: str) -> str:
    return name.split("(")[0].replace("void ", "")[-70:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--set", nargs="*", default=[], dest="settings")
    parser.add_argument("--order", action="store_true", help="list every kernel in order")
    args = parser.parse_args()
    setting = dict((k, int(v)) for k, v in (s.split("=") for s in args.settings))
    names = {"split_rows" if n == "split" else n for n in setting}
    defaults = executor_settings(names)
    device = GPUDevice()
    print(device.label(), setting or "defaults")
    for spec in args.cases:
        op, shape, dtype = parse_case(spec)
        case = CASES[op]
        apply(setting, dtype, defaults)
        try:
            pristine = {k: device.upload(v) for k, v in case.make(
                device.generator(Job(case, shape, dtype).seed(0)), shape, dtype, cp).items()}
            work = {k: v.copy(order="F") for k, v in pristine.items()}

            for turn in range(5):  # the last only restores the inputs
                for name in case.outputs:
                    work[name][...] = pristine[name]
                if turn < 4:
                    case.run(work)
            events = kernels(case.run, work)
        finally:
            apply({}, dtype, defaults)
        start = events[0]["ts"]
        end = max(e["ts"] + e["dur"] for e in events)
        busy = sum(e["dur"] for e in events)
        flops = case.flops(shape, dtype)
        print(f"\n{spec}: {len(events)} kernels, span {end - start:.0f} us "
              f"({flops / (end - start) / 1e6:.1f} TFLOP/s), busy {busy:.0f} us")
        totals: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0])
        for e in events:
            totals[short(e["name"])][0] += e["dur"]
            totals[short(e["name"])][1] += 1
        print(f"{'us':>8} {'count':>5} {'mean':>7}  kernel")
        for name, (us, count) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
            print(f"{us:8.1f} {count:5d} {us / count:7.1f}  {name}")
        if args.order:
            print(f"{'start':>8} {'gap':>6} {'us':>7}  {'grid':14} kernel")
            last = start
            for e in events:
                grid = str(e.get("args", {}).get("grid", ""))
                print(f"{e['ts'] - start:8.1f} {e['ts'] - last:6.1f} {e['dur']:7.1f}  "
                      f"{grid:14} {short(e['name'])}")
                last = e["ts"] + e["dur"]
        del pristine, work
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
