"""Lanes per member for the batched register kernels: every candidate, checked and timed.

The register kernels of ``kernels/cuda/batched_small.cu`` take the order N and the lanes per
member G (each lane holding N / G lines) as template arguments; this script measures which G
(and threads per block) is fastest for POTRF, POTRS, POSV, TRSM and POTRI, float64 and float32,
batch 10240, on C-ordered stacks, through the library's own launch path (only the lane table
``tricov.kernels.BATCHED_LANES`` and the block size are changed between candidates). The
library's choice (``BATCHED_LANES``) comes from its output.

Two steps, so that no device time goes to compiling:

    python benchmarks/exp_batched_small.py build DIR     # here: nvcc, cubins + registers
    python benchmarks/exp_batched_small.py run DIR       # on the GPU: check, time, table

Each candidate is checked against NumPy (relative error of the whole batch) and timed with
CUDA events as ``tricov.batched.bench_gpu`` does (calls queued behind a spinning kernel, the
restoring copies subtracted). Rates: GB/s of :func:`tricov.batched.bench.bytes_moved`, as a
fraction of the 1 GiB device copy bandwidth (``of copy``, the library's benchmark figure) and
of a device copy of the same bytes (``of same``).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tricov.kernels import batched_small  # noqa: E402

OPS = {"potrf": 3, "potrs": 8, "posv": 9, "trsm": 0, "potri": 6}
LANES = {4: (1, 2, 4), 8: (1, 2, 4, 8), 16: (2, 4, 8, 16), 32: (8, 16, 32)}
CTYPES = {"float64": "double", "float32": "float"}
SIZES = (4, 8, 12, 16, 24, 32)


def build(out: Path) -> None:
    """Compile every candidate kernel into cubins (one per dtype and order) with nvcc."""
    out.mkdir(parents=True, exist_ok=True)
    src = ROOT / "src/tricov/kernels/cuda"
    jobs, manifest = [], {}
    for ctype in CTYPES.values():
        for order, lanes in LANES.items():
            unit = out / f"{ctype}{order}.cu"
            lines = [f'#include "{src / "batched_small.cu"}"']
            for g in lanes:
                for code in set(OPS.values()):
                    name, line = batched_small(ctype, order, g, code)
                    lines.append(line)
                    manifest[name] = unit.with_suffix(".cubin").name
            unit.write_text("\n".join(lines) + "\n")
            jobs.append(unit)

    def nvcc(unit: Path) -> str:
        r = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", f"-I{src}",
                            "-Xptxas", "-v", str(unit), "-o", str(unit.with_suffix(".cubin"))],
                           capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(r.stderr[-3000:])
        return r.stderr

    regs: dict[str, dict[str, int]] = {}
    with ThreadPoolExecutor(int(os.environ.get("JOBS", "2"))) as pool:
        for log in pool.map(nvcc, jobs):
            name = None
            for line in log.splitlines():
                if m := re.search(r"Function properties for (\w+)", line):
                    name = m.group(1)
                    regs[name] = {}
                elif name and (m := re.search(r"(\d+) bytes spill stores", line)):
                    regs[name]["spill"] = int(m.group(1))
                elif name and (m := re.search(r"Used (\d+) registers", line)):
                    regs[name]["regs"] = int(m.group(1))
    (out / "manifest.json").write_text(json.dumps({"cubins": manifest, "regs": regs}, indent=1))
    print(f"{len(manifest)} kernels in {len(jobs)} cubins")
    for name, r in sorted(regs.items()):
        if name.startswith("tricov_batched_small"):
            print(f"{name:40} regs {r.get('regs')} spill {r.get('spill')}")


# ------------------------------------------------------------------------------ device
def reference(op: str, x: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What ``op`` must leave in its outputs (lower triangles where triangular), float64."""
    f = {k: v.astype(np.float64) for k, v in x.items()}
    if op == "potrf":
        return {"A": np.linalg.cholesky(f["A"])}
    if op == "posv":
        return {"A": np.linalg.cholesky(f["A"]), "B": np.linalg.solve(f["A"], f["B"])}
    if op == "potrs":
        low = np.tril(f["L"])
        return {"B": np.linalg.solve(low @ np.swapaxes(low, -1, -2), f["B"])}
    if op == "trsm":
        return {"B": np.linalg.solve(np.tril(f["A"]), f["B"])}
    low = np.tril(f["A"])  # potri
    return {"A": np.tril(np.linalg.inv(low @ np.swapaxes(low, -1, -2)))}


def run(out: Path) -> None:
    import cupy

    import tricov
    import tricov.backends.batched_cuda as bc
    import tricov.batched._cuda as engine
    import tricov.kernels as kernels
    import tricov.kernels.nvrtc as nvrtc
    from tricov.batched.bench import BatchedCase, _tricov_call, bytes_moved, make_inputs
    from tricov.batched.bench_gpu import _Queue, copy_bandwidth

    manifest = json.loads((out / "manifest.json").read_text())
    modules: dict[str, object] = {}
    original = nvrtc.kernel

    def kernel(filename: str, name: str, definition: str):
        cubin = manifest["cubins"].get(name)
        if cubin is None:
            return original(filename, name, definition)
        if cubin not in modules:
            modules[cubin] = cupy.RawModule(path=str(out / cubin))
        return modules[cubin].get_function(name)

    nvrtc.kernel = kernel
    tricov.set_cuda_graphs(False)  # the tables change between calls: nothing is replayed
    lanes_table = kernels.BATCHED_LANES
    initial = dict(lanes_table)
    default_split = engine.SMALL_MAX
    queue = _Queue(10)
    copy = copy_bandwidth()
    dev = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    dev = dev.decode() if isinstance(dev, bytes) else dev
    print(f"device {dev}, copy bandwidth {copy:.0f} GB/s", flush=True)

    def device_seconds(fn, restore) -> float:
        restore()
        fn()
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        fn()
        host = time.perf_counter() - t0
        got = []
        for _ in range(3):
            copies = queue.seconds(restore, 2e-5)
            both = queue.seconds(lambda: (restore(), fn()), host + 2e-5)
            if copies is not None and both is not None:
                got.append(max(both - copies, 0.0) / queue.queued)
        return statistics.median(got) if got else float("nan")

    rows = []
    for dtype in CTYPES:
        eps = np.finfo(dtype).eps
        for n in SIZES:
            order = bc.padded_order(n)
            for op, code in OPS.items():
                case = BatchedCase(op, n, 10240, 0, dtype)
                nbytes = bytes_moved(case)
                src = cupy.ones(nbytes // 2 // 4, dtype=np.float32)
                dst = cupy.empty_like(src)
                same = device_seconds(lambda d=dst, s=src: cupy.copyto(d, s), lambda: None)
                pristine = make_inputs(case, cupy.random.RandomState(n), cupy)
                host_in = {k: cupy.asnumpy(v) for k, v in pristine.items()}
                ref = reference(op, host_in)
                work = {k: v.copy() for k, v in pristine.items()}

                def restore(work=work, pristine=pristine) -> None:
                    for k in work:
                        cupy.copyto(work[k], pristine[k])

                call = _tricov_call(case, check=False)
                fused = (False, True) if op == "posv" and order == 32 else (order < 32,)
                for g in LANES[order]:
                    for fuse in fused:
                        for c in (code, 3, 8) if op == "posv" else (code,):
                            lanes_table[(np.dtype(dtype).char, order, c)] = g
                        engine.SMALL_MAX = 64 if fuse else default_split
                        restore()
                        call(work)
                        err = 0.0
                        for k, want in ref.items():
                            got = cupy.asnumpy(work[k]).astype(np.float64)
                            if k == "A":
                                got = np.tril(got)
                            err = max(err, float(np.abs(got - want).max() / np.abs(want).max()))
                        ok = bool(err < 100 * n * eps)
                        for block in (32, 64, 128) if g <= 2 else (64, 128):
                            if block < g:
                                continue
                            bc.BLOCK = block
                            sec = device_seconds(lambda c=call, w=work: c(w), restore)
                            gbs = nbytes / sec / 1e9
                            name = batched_small(CTYPES[dtype], order, g, code)[0]
                            r = manifest["regs"].get(name, {})
                            row = dict(op=op, dtype=dtype, n=n, lanes=g, block=block,
                                       fused=fuse, err=err, ok=ok, us=sec * 1e6, gbs=gbs,
                                       of_copy=gbs / copy, of_same=same / sec,
                                       regs=r.get("regs"), spill=r.get("spill"))
                            rows.append(row)
                            print(f"{op:6} {dtype:7} n={n:2d} G={g:2d} blk={block:3d} "
                                  f"{'fused' if fuse else 'split'} err={err:.1e} "
                                  f"{'ok' if ok else 'WRONG'} {sec * 1e6:8.2f} us "
                                  f"{gbs:7.0f} GB/s {gbs / copy:5.2f} of copy "
                                  f"{same / sec:5.2f} of same  regs={r.get('regs')} "
                                  f"spill={r.get('spill')}", flush=True)
                        bc.BLOCK = 128
                engine.SMALL_MAX = default_split
                lanes_table.clear()
                lanes_table.update(initial)
    (Path(os.environ.get("OUT", out)) / "exp_batched_small.json").write_text(json.dumps(rows))
    print("\nbest per case (correct candidates only):")
    best: dict[tuple, dict] = {}
    for r in rows:
        key = (r["op"], r["dtype"], r["n"])
        if r["ok"] and (key not in best or r["us"] < best[key]["us"]):
            best[key] = r
    for (op, dtype, n), r in best.items():
        print(f"{op:6} {dtype:7} n={n:2d}  G={r['lanes']:2d} blk={r['block']:3d} "
              f"{'fused' if r['fused'] else 'split'} {r['us']:8.2f} us {r['of_copy']:5.2f} "
              f"of copy {r['of_same']:5.2f} of same")


if __name__ == "__main__":
    {"build": build, "run": run}[sys.argv[1]](Path(sys.argv[2]))
