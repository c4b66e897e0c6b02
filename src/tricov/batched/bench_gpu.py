"""GPU timing of the batched operations against torch.linalg on the same device data.

Each :class:`~tricov.batched.bench.BatchedCase` runs on C-ordered CuPy stacks made on the
device (:func:`~tricov.batched.bench.make_inputs`); the torch peers read the very same memory
(DLPack views, no copy):

===========  ===================================================================
potrf        ``torch.linalg.cholesky`` (which checks for errors) and ``cholesky_ex``
potrs        ``torch.cholesky_solve``
posv         ``cholesky_ex`` then ``cholesky_solve``
trsm         ``torch.linalg.solve_triangular``
trmm, lauum  ``torch.matmul`` (a full product: torch has no triangular one)
syrk         ``torch.baddbmm(C, A, A^H)``
trtri        ``solve_triangular`` against the identity
potri        ``torch.cholesky_inverse``
poti         ``cholesky_ex`` then ``cholesky_inverse``
===========  ===================================================================

Two times per contender, both with CUDA events on the current stream, after one warm-up call
of every contender (kernels compiled), outputs restored from pristine copies before each call:

* *call*: events around one call, as a user makes it (tricov with ``check=True``, which reads
  the per-member info back; torch as listed): the host's work and waits are included, so for
  small batches this is mostly Python and launch overhead; median of ``repeats``.
* *device*: ``queued`` calls (tricov with ``check=False``, which does not wait) enqueued behind a
  kernel that keeps the GPU busy until they are all queued, so that the events time the GPU's
  own work; the time of the restoring copies, measured the same way, is subtracted. A peer that
  waits for the GPU inside its call (``torch.linalg.cholesky`` checks for errors,
  ``cholesky_inverse`` too) cannot be queued: its device time is instead the sum of the
  durations of the kernels and copies its calls run (torch's profiler), marked ``k`` in the
  table: the GPU's busy time, without the gaps where it waits for the host.

Rates (GFLOP/s, GB/s, fraction of the copy bandwidth of :func:`copy_bandwidth`) are those of
the device time, with the flop and byte counts of :mod:`tricov.batched.bench`. The copy
bandwidth is that of a large copy (1 GiB); a batch of small members moves far fewer bytes, and
a copy of only that many bytes is slower per byte (launch, ramp and drain). So the table also
gives the fraction of the rate of a copy of the case's own byte count (:func:`same_size_copy`,
timed as the device time is): the ceiling a kernel that only moved its bytes would reach. The
device moves whole 32-byte sectors, though, and a triangle's rows end inside them; the last
column (*ceiling*) is the fraction of the copy bandwidth, in the table's byte count, of a copy
of the bytes of the sectors the case must read and write
(:func:`~tricov.batched.bench.sector_bytes`): the most that any kernel moving them at a copy's
speed could show.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..bench.devices import event_seconds
from .bench import (
    _OUTPUTS,
    BatchedCase,
    Result,
    _tricov_call,
    bench_cases,
    bytes_moved,
    make_inputs,
    sector_bytes,
)

__all__ = ["copy_bandwidth", "kernel_seconds", "peers", "run_table", "same_size_copy",
           "time_case"]


def copy_bandwidth(nbytes: int = 1 << 30, repeats: int = 10) -> float:
    """GB/s of a device-to-device copy of ``nbytes`` with CuPy (bytes read plus written)."""
    import cupy

    src = cupy.ones(nbytes // 8)
    dst = cupy.empty_like(src)
    times = event_seconds(lambda: cupy.copyto(dst, src), repeats=repeats, warmup=1)
    return 2 * nbytes / statistics.median(times) / 1e9


def same_size_copy(nbytes: int, queued: int = 8, repeats: int = 5) -> float:
    """Device seconds of one copy that reads and writes ``nbytes`` in all (``nbytes / 2`` each
    way), queued as :func:`time_case` queues its calls (best of ``repeats`` queues)."""
    import cupy

    src = cupy.ones(max(nbytes // 8, 1), dtype=np.float32)
    dst = cupy.empty_like(src)

    def copy() -> None:
        cupy.copyto(dst, src)

    queue = _Queue(queued)
    for _ in range(3):
        copy()
    best = min(queue.seconds(copy, 2e-5) or np.inf for _ in range(repeats))
    return best / queued


def peers(case: BatchedCase) -> dict[str, Callable[[dict[str, Any]], Any]]:
    """The torch.linalg calls that compute what ``case`` does (on torch tensors)."""
    import torch

    op = case.op

    def chol(x: dict[str, Any]) -> Any:
        return torch.linalg.cholesky_ex(x["A"])[0]

    if op == "potrf":
        return {"cholesky": lambda x: torch.linalg.cholesky(x["A"]), "cholesky_ex": chol}
    if op == "potrs":
        return {"cholesky_solve": lambda x: torch.cholesky_solve(x["B"], x["L"])}
    if op == "posv":
        return {"cholesky_ex+solve": lambda x: torch.cholesky_solve(x["B"], chol(x))}
    if op == "trsm":
        return {"solve_triangular": lambda x: torch.linalg.solve_triangular(
            x["A"], x["B"], upper=False)}
    if op == "trmm":
        return {"matmul": lambda x: torch.matmul(x["A"], x["B"])}
    if op == "syrk":
        return {"baddbmm": lambda x: torch.baddbmm(x["C"], x["A"], x["A"].mH)}
    if op == "trtri":
        return {"solve_triangular(I)": lambda x: torch.linalg.solve_triangular(
            x["A"], x["I"], upper=False)}
    if op == "lauum":
        return {"matmul": lambda x: torch.matmul(x["A"].mH, x["A"])}
    if op == "potri":
        return {"cholesky_inverse": lambda x: torch.cholesky_inverse(x["A"])}
    return {"cholesky_ex+inverse": lambda x: torch.cholesky_inverse(chol(x))}


_SPIN = r"""
extern "C" __global__ void tricov_bench_spin(long long cycles) {
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}
"""


class _Queue:
    """Device time of calls queued behind a spinning kernel (see the module notes)."""

    def __init__(self, queued: int) -> None:
        import cupy

        self.cupy = cupy
        self.queued = queued
        self.kernel = cupy.RawKernel(_SPIN, "tricov_bench_spin")
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        self.hz = props["clockRate"] * 1e3
        self.start, self.end = cupy.cuda.Event(), cupy.cuda.Event()

    def seconds(self, fn: Callable[[], Any], host: float) -> float | None:
        """GPU seconds of ``queued`` calls of ``fn``, which takes about ``host`` seconds of the
        host's time per call; None if they could not be queued in time."""
        cupy = self.cupy
        for attempt in range(2):
            cupy.cuda.Device().synchronize()
            spin = (4 * self.queued * host + 2e-3) * 8**attempt
            self.kernel((1,), (1,), (np.int64(spin * self.hz),))
            self.start.record()
            for _ in range(self.queued):
                fn()
            self.end.record()
            queued_in_time = not self.start.done
            self.end.synchronize()
            if queued_in_time:
                return cupy.cuda.get_elapsed_time(self.start, self.end) / 1e3
        return None


#: Peers that wait for the GPU inside their call: device time from the profiler only.
_WAITING = ("torch cholesky",)


def kernel_seconds(fn: Callable[[], Any], calls: int) -> float | None:
    """GPU seconds of the kernels and copies that ``calls`` calls of ``fn`` run, summed from
    torch's profiler (None without torch or a CUDA profiler)."""
    import cupy

    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        return None
    try:
        cupy.cuda.Device().synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
        cuda = torch.autograd.DeviceType.CUDA
        total = sum(e.time_range.elapsed_us() for e in prof.events() if e.device_type == cuda)
    except RuntimeError:
        return None
    return total / 1e6 if total > 0 else None


def time_case(case: BatchedCase, *, repeats: int = 5, queued: int = 4,
              seed: int = 0) -> Result:
    """Time tricov and its torch peers (if torch is installed) on ``case``, on the GPU.

    ``Result.seconds`` has the call time of each contender under its name ("tricov",
    "torch cholesky", ...) and its device time under the name plus "@device" (for peers that
    cannot be queued, their kernels' busy time under the name plus "@kernels").
    """
    import cupy

    pristine = make_inputs(case, cupy.random.RandomState(seed), cupy)
    work = {k: v.copy() for k, v in pristine.items()}
    outputs = _OUTPUTS[case.op]

    def restore() -> None:
        for k in outputs:
            cupy.copyto(work[k], pristine[k])

    ours, ours_queued = _tricov_call(case), _tricov_call(case, check=False)
    calls: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
        "tricov": (lambda: ours(work), lambda: ours_queued(work))}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        views = {k: torch.from_dlpack(v) for k, v in work.items()}
        if case.op == "trtri":
            views["I"] = torch.eye(case.n, dtype=views["A"].dtype,
                                   device=views["A"].device).expand(case.batch, -1, -1)
        for name, fn in peers(case).items():
            calls[f"torch {name}"] = (lambda fn=fn: fn(views),) * 2
    host: dict[str, float] = {}
    for name, (call, queued_call) in calls.items():  # warm-up: kernels compiled, caches full
        restore()
        call()
        restore()
        t0 = time.perf_counter()
        queued_call()
        host[name] = time.perf_counter() - t0
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    samples: dict[str, list[float]] = {k: [] for k in calls}
    for r in range(repeats):
        names = list(calls)
        for name in names[r % len(names):] + names[:r % len(names)]:
            restore()
            start.record()
            calls[name][0]()
            end.record()
            end.synchronize()
            samples[name].append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    seconds = {k: statistics.median(v) for k, v in samples.items()}
    queue = _Queue(queued)
    copies = queue.seconds(restore, 2e-5)
    for name, (call, queued_call) in calls.items():
        both = None
        if name not in _WAITING and copies is not None:
            both = queue.seconds(lambda queued_call=queued_call: (restore(), queued_call()),
                                 host[name] + 2e-5)
        if both is not None:
            seconds[name + "@device"] = max(both - copies, 0.0) / queued
        elif name.startswith("torch "):  # out of place: the inputs stay as restored
            restore()
            busy = kernel_seconds(call, queued)
            if busy is not None:
                seconds[name + "@kernels"] = busy / queued
    return Result(case, seconds)


def run_table(ops: Sequence[str], sizes: Sequence[int], batch: int, dtypes: Sequence[str],
              repeats: int, jobs: int) -> None:
    """Print one row per case: tricov's call and device times, the device rates, and the
    speed-up over each peer (call time / call time, device time / device time)."""
    import cupy

    from ..backends.batched_cuda import compile_kernels

    try:
        import torch
    except ImportError:
        torch = None
    compile_kernels(dtypes, jobs)
    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    copy = copy_bandwidth()
    print(f"device {name.decode() if isinstance(name, bytes) else name}, "
          f"copy bandwidth {copy:.0f} GB/s")
    print(f"{'case':30} {'call ms':>8} {'dev ms':>8} {'GFLOP/s':>8} {'GB/s':>7} {'of copy':>7}"
          f" {'of same':>7} {'ceiling':>7}  speed-up over torch: call x / device x")
    copies: dict[int, float] = {}
    for case in bench_cases(ops, sizes, batch, dtypes):
        r = time_case(case, repeats=repeats)
        dev = r.seconds.get("tricov@device")
        others = []
        for k in r.seconds:
            if k.startswith("torch ") and "@" not in k:
                on_device = r.seconds.get(k + "@device")
                busy = r.seconds.get(k + "@kernels")
                ratio = (f"{on_device / dev:.2f}" if dev and on_device else
                         f"{busy / dev:.2f}k" if dev and busy else "-")
                others.append(f"{k.removeprefix('torch ')} {r.speedup(k):.2f}/{ratio}")
        nbytes, sectors = bytes_moved(case), sector_bytes(case)
        for size in (nbytes, sectors):
            if size not in copies:
                copies[size] = same_size_copy(size)
        ceiling = nbytes / copies[sectors] / 1e9 / copy
        rates = (f"{dev * 1e3:8.3f} {case.flops() / dev / 1e9:8.1f} {nbytes / dev / 1e9:7.1f} "
                 f"{nbytes / dev / 1e9 / copy:7.2f} {copies[nbytes] / dev:7.2f}"
                 if dev else f"{'-':>8} {'-':>8} {'-':>7} {'-':>7} {'-':>7}")
        print(f"{case.label():30} {r.seconds['tricov'] * 1e3:8.3f} {rates} {ceiling:7.2f}  "
              f"{'  '.join(others)}",
              flush=True)
        cupy.get_default_memory_pool().free_all_blocks()
        if torch is not None:
            torch.cuda.empty_cache()
