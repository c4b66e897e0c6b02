"""GPU dense benchmark: tricov against cuBLAS/cuSOLVER and PyTorch on one GPU, in one run.

A thin layer over the benchmark package: every number is measured by
``tricov.bench.runner.measure`` on the ``gpu`` device (what ``tricov bench OP --device gpu``
runs), here on the shapes the performance issue names, with PyTorch as a second peer. Usage
(on a machine with an NVIDIA GPU, CuPy and optionally PyTorch):

    PYTHONPATH=src python benchmarks/gpu_dense.py [--quick] [--dtypes float64,float32]
        [--json OUT.json] [--table OUT.txt] [--sweep] [--profile]

``--sweep`` also times tricov at several leaf-size settings per shape (the GPU defaults of
``tricov._policy`` come from such sweeps); ``--profile`` prints the GPU time of each kind of
primitive (cuBLAS GEMM, tricov's leaf kernels, ...) inside one call of a few cases.
Timing: CUDA events, warm-up first, median of repeats, inputs restored outside the timed region.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import sys
from pathlib import Path

import cupy as cp
import numpy as np

import tricov as tc
from tricov.bench.cases import CASES
from tricov.bench.devices import GPUDevice
from tricov.bench.runner import Contender, Job, Result, measure, time_interleaved

SQUARES = (4096, 8192, 16384)
FEW_RHS = ((16384, 64), (16384, 128), (16384, 256))
POTRF = (1024, 2048, 4096, 8192, 16384, 32768)
#: Leaf-size settings tried by --sweep for each case (the defaults of tricov._policy are among
#: them): TRSM/TRMM leaves; tricov's POTRF leaf in shared memory (128) against cuSOLVER's on
#: blocks of 1024 to 16384 (the recursion forced: potrf_whole 1), or on the whole matrix
#: (1 << 20); TRTRI and LAUUM leaves in shared
#: memory (128) against cuSOLVER/cuBLAS ones.
CANDIDATES: dict[str, list[dict[str, int]]] = {
    "trsm": [{"trsm": 128}, {"trsm": 256}, {"trsm": 512}, {"trsm": 1024}],
    "trmm": [{"trmm": 64}, {"trmm": 128}, {"trmm": 256}, {"trmm": 512}],
    "potrf": [{"potrf_whole": 1, "potrf": nb}
              for nb in (128, 256, 512, 1024, 2048, 4096, 8192, 16384)]
    + [{"potrf": 1 << 20}],
    "potri": [{"trtri": n, "lauum": n} for n in (128, 256, 512, 1024)],
}


def jobs(quick: bool, dtypes: list[str]) -> list[Job]:
    """The measured shapes: TRSM/TRMM with few right-hand sides and square, POTRF over sizes,
    POTRI and POTI; the largest last."""
    out = []
    for name in dtypes:
        dt = np.dtype(name)
        small, large = [], []
        for op in ("trsm", "trmm"):
            small += [Job(CASES[op], s, dt) for s in FEW_RHS]
        for op in ("trsm", "trmm"):
            small += [Job(CASES[op], (n, n), dt) for n in SQUARES[:2]]
            large += [Job(CASES[op], (n, n), dt) for n in SQUARES[2:]]
        sizes = (512, 1024, 4096, 16384) if quick else POTRF
        small += [Job(CASES["potrf"], (n,), dt) for n in sizes if n <= 8192]
        large += [Job(CASES["potrf"], (n,), dt) for n in sizes if n > 8192]
        for op in ("potri", "poti"):
            small += [Job(CASES[op], (8192,), dt)]
            large += [Job(CASES[op], (16384,), dt)]
        out += small + ([] if quick else large)
    return out


def _big(job: Job) -> bool:
    return math.prod(job.shape) * job.dtype.itemsize >= 2 * 16384**2 * 8 or (
        len(job.shape) == 1 and job.shape[0] >= 16384)


def _free() -> None:
    cp.get_default_memory_pool().free_all_blocks()
    try:
        import torch

        torch.cuda.empty_cache()
    except ImportError:
        pass


def row(r: Result) -> dict:
    """One result as a flat JSON record (TFLOP/s and ratios)."""
    out = {"op": r.op, "dtype": r.dtype, "shape": "x".join(map(str, r.shape)),
           "tricov_TFs": r.tricov_gflops / 1e3, "native_TFs": r.native_gflops / 1e3,
           "native": r.native_routine, "tricov/native": r.ratio_native}
    for label, (_, routine) in r.peers.items():
        out.update({f"{label}_TFs": r.peer_gflops(label) / 1e3, label: routine,
                    f"tricov/{label}": r.ratio_peer(label)})
    if not math.isnan(r.gemm_s):
        out.update({"gemm_TFs": r.gemm_gflops / 1e3, "tricov/gemm": r.ratio_gemm})
    out.update({"rel_diff": r.rel_diff, "leaf": r.leaf_sizes})
    return out


def text_table(rows: list[dict]) -> str:
    """The results as a plain-text table: TFLOP/s of each contender and tricov's ratios."""
    head = ("op", "dtype", "shape", "tricov", "native", "torch", "GEMM", "/native", "/torch",
            "/GEMM")
    lines = ["  ".join(f"{h:>9}" for h in head)]
    for r in rows:
        cells = [r["op"], r["dtype"], r["shape"]]
        for key in ("tricov_TFs", "native_TFs", "torch_TFs", "gemm_TFs", "tricov/native",
                    "tricov/torch", "tricov/gemm"):
            cells.append(f"{r[key]:.2f}" if key in r else "-")
        lines.append("  ".join(f"{c:>9}" for c in cells))
    return "\n".join(lines) + "\n"


def sweep(device: GPUDevice, job: Job) -> dict[str, float]:
    """TFLOP/s of tricov on ``job`` for each leaf-size setting of :data:`CANDIDATES`."""
    case = job.case
    rng = device.generator(job.seed(0))
    pristine = {k: device.upload(v) for k, v in case.make(rng, job.shape, job.dtype, cp).items()}
    contender = Contender("tricov", case.run, pristine, case.outputs, device)
    options = CANDIDATES[case.name]

    def before(i: int) -> None:
        tc.set_leaf_size("gpu", "trsm", job.dtype, None)
        for op, nb in options[i].items():
            tc.set_leaf_size("gpu", op, job.dtype, nb)

    try:
        times = time_interleaved([contender] * len(options), 3, 2, before=before, reduce=min)
    finally:
        tc.set_leaf_size("gpu", "trsm", job.dtype, None)  # drops every override
    flops = case.flops(job.shape, job.dtype)
    return {" ".join(f"{op}={nb}" for op, nb in opt.items()): flops / t / 1e12
            for opt, t in zip(options, times, strict=True)}


def profile(device: GPUDevice, job: Job) -> dict[str, str]:
    """GPU milliseconds per kind of primitive inside one eager call of ``job``."""
    from tricov.backends.cuda import CUDAExecutor

    totals: dict[str, float] = collections.defaultdict(float)
    counts: dict[str, int] = collections.defaultdict(int)
    names = ["raw_gemm", "raw_herk", "raw_potrf", "raw_trtri", "raw_lauum", "raw_trsm",
             "raw_trmm", "_launch"]
    saved = {name: getattr(CUDAExecutor, name) for name in names}

    def wrap(name, fn):
        def timed(self, *args):
            key = args[0].replace("tricov::", "") if name == "_launch" else name
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record()
            out = fn(self, *args)
            e1.record()
            e1.synchronize()
            totals[key] += cp.cuda.get_elapsed_time(e0, e1)
            counts[key] += 1
            return out
        return timed

    case = job.case
    rng = device.generator(job.seed(0))
    arrays = {k: device.upload(v) for k, v in case.make(rng, job.shape, job.dtype, cp).items()}
    tc.set_cuda_graphs(False)
    for name, fn in saved.items():
        setattr(CUDAExecutor, name, wrap(name, fn))
    try:
        case.run(arrays)
    finally:
        for name, fn in saved.items():
            setattr(CUDAExecutor, name, fn)
        tc.set_cuda_graphs(True)
    return {k: f"{counts[k]} x, {v:.2f} ms" for k, v in sorted(totals.items(),
                                                                key=lambda kv: -kv[1])}


def save(args: argparse.Namespace, device: GPUDevice, out: dict) -> str:
    """Write the JSON and the text table asked for; return the table."""
    text = (f"{device.label()}; TFLOP/s; native = cuBLAS/cuSOLVER, torch = PyTorch "
            f"{out['device'].get('torch_version', '')}\n" + text_table(out["results"]))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    if args.table:
        Path(args.table).write_text(text)
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer and smaller shapes")
    p.add_argument("--dtypes", default="float64,float32", help="comma-separated dtypes")
    p.add_argument("--json", help="write every result (and sweeps, profiles) here")
    p.add_argument("--table", help="write the tables as text here")
    p.add_argument("--sweep", action="store_true", help="also time several leaf sizes")
    p.add_argument("--profile", action="store_true",
                   help="GPU time per primitive inside one call of a few cases")
    p.add_argument("--ops", help="comma-separated operations to keep (default: all)")
    args = p.parse_args(argv)
    device = GPUDevice()
    info = device.describe()
    print(device.label(), flush=True)
    out: dict = {"device": info, "results": [], "sweeps": [], "profiles": []}
    todo = jobs(args.quick, args.dtypes.split(","))
    if args.ops:
        keep = set(args.ops.split(","))
        todo = [j for j in todo if j.case.name in keep]
    if args.profile:
        for op, shape in (("trsm", (16384, 64)), ("trsm", (4096, 4096)), ("trmm", (16384, 64)),
                          ("potrf", (4096,)), ("potri", (8192,))):
            job = Job(CASES[op], shape, np.dtype(np.float64))
            prof = profile(device, job)
            print(f"profile {op} {shape}: {prof}", flush=True)
            out["profiles"].append({"op": op, "shape": list(shape), "primitives": prof})
            _free()
    for job in todo:
        big = _big(job)
        result = measure(device, job, repeat=3 if big else 5, warmup=2,
                         gemm=not (len(job.shape) == 1 and job.shape[0] >= 32768))
        out["results"].append(row(result))
        print(json.dumps(out["results"][-1]), file=sys.stderr, flush=True)
        if args.sweep and job.case.name in CANDIDATES:
            rates = sweep(device, job)
            print(f"sweep {job.case.name} {job.dtype.name} {job.shape}: "
                  + ", ".join(f"{k}: {v:.2f}" for k, v in rates.items()), flush=True)
            out["sweeps"].append({"op": job.case.name, "dtype": job.dtype.name,
                                  "shape": list(job.shape), "TFs": rates})
        _free()
        save(args, device, out)  # after every job: a run cut short keeps what it measured
    print(save(args, device, out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
