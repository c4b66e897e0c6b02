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

Timing: CUDA events around each call on the current stream, after one warm-up call of every
contender (kernels compiled); the outputs are restored from pristine copies before every call,
outside the timed region; the median of ``repeats`` rounds in which the contenders take turns.
tricov's time includes reading the per-member info back to the host (POTRF, POSV, ...), as
``torch.linalg.cholesky``'s does. Rates as in :mod:`tricov.batched.bench`, with the ratio to
the device's copy bandwidth (:func:`copy_bandwidth`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from .bench import _OUTPUTS, BatchedCase, Result, _tricov_call, bench_cases, make_inputs

__all__ = ["copy_bandwidth", "peers", "run_table", "time_case"]


def copy_bandwidth(nbytes: int = 1 << 30, repeats: int = 10) -> float:
    """GB/s of a device-to-device copy of ``nbytes`` with CuPy (bytes read plus written)."""
    import cupy

    src = cupy.ones(nbytes // 8)
    dst = cupy.empty_like(src)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(repeats + 1):
        start.record()
        cupy.copyto(dst, src)
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return 2 * nbytes / statistics.median(times[1:]) / 1e9


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


def time_case(case: BatchedCase, *, repeats: int = 20, seed: int = 0) -> Result:
    """Time tricov and its torch peers (if torch is installed) on ``case``, on the GPU."""
    import cupy

    pristine = make_inputs(case, cupy.random.RandomState(seed), cupy)
    work = {k: v.copy() for k, v in pristine.items()}
    outputs = _OUTPUTS[case.op]

    def restore() -> None:
        for k in outputs:
            cupy.copyto(work[k], pristine[k])

    ours = _tricov_call(case)
    contenders: dict[str, Callable[[], Any]] = {"tricov": lambda: ours(work)}
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
            contenders[f"torch {name}"] = lambda fn=fn: fn(views)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    samples: dict[str, list[float]] = {k: [] for k in contenders}
    for fn in contenders.values():  # warm-up: compiles kernels, fills allocator caches
        restore()
        fn()
    for r in range(repeats):
        names = list(contenders)
        for name in names[r % len(names):] + names[:r % len(names)]:
            restore()
            start.record()
            contenders[name]()
            end.record()
            end.synchronize()
            samples[name].append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return Result(case, {k: statistics.median(v) for k, v in samples.items()})


def run_table(ops: Sequence[str], sizes: Sequence[int], batch: int, dtypes: Sequence[str],
              repeats: int, jobs: int) -> None:
    """Print one row per case: tricov's time and rates, and its speed-up over each peer."""
    import cupy

    from ..backends.batched_cuda import compile_kernels

    compile_kernels(dtypes, jobs)
    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    copy = copy_bandwidth()
    print(f"device {name.decode() if isinstance(name, bytes) else name}, "
          f"copy bandwidth {copy:.0f} GB/s")
    print(f"{'case':32} {'tricov ms':>10} {'GFLOP/s':>9} {'GB/s':>8} {'of copy':>8}  "
          "speed-up over torch (x = torch time / tricov time)")
    for case in bench_cases(ops, sizes, batch, dtypes):
        r = time_case(case, repeats=repeats)
        others = "  ".join(f"{k.removeprefix('torch ')} {r.speedup(k):.2f}x"
                           for k in r.seconds if k != "tricov")
        print(f"{case.label():32} {r.seconds['tricov'] * 1e3:10.3f} {r.gflops():9.1f} "
              f"{r.gbytes():8.1f} {r.gbytes() / copy:8.2f}  {others}", flush=True)
        cupy.get_default_memory_pool().free_all_blocks()
