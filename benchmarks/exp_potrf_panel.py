"""Time variants of the ``potrf_panel`` kernel alone (an experiment, not a peer comparison).

    PYTHONPATH=src python benchmarks/exp_potrf_panel.py

Each variant is ``kernels/cuda/leaves.cu`` with text replaced (phases removed, or another
form of a device function), compiled through NVRTC and launched on one block column of a
random SPD float64 matrix, for several (rows of the column, its width, panel rows per block of
threads). Prints microseconds per launch (mean of 50 launches replayed as one CUDA graph); the
numbers of variants without a phase are wrong by design, only their times matter.
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from tricov.kernels import nvrtc, panel_rows, panel_smem


def _variants(src: str) -> dict[str, str]:
    call_chol = "const int bad = chol32(S, ld, o, dinv);"
    call_solve = "solve_rows(S, ld, o, o + 32, height, dinv);"
    call_update = "update_rows(S, ld, o, o + 32, height, o + 32, w32);"
    no_compute = (src.replace(call_chol, "const int bad = -1;").replace(call_solve, "")
                  .replace(call_update, ""))
    load_at = no_compute.index("    // Block 0 stores the diagonal block")
    out = {"empty": src.replace("    if (col0 && info[0]) return;", "    return;"),
           "load_only": no_compute[:load_at] + "    if (S[tid] == T(7)) info[0] = 1;"
           + no_compute[no_compute.index("\n}\n", load_at):],
           "base": src,
           "no_chol": src.replace(call_chol, "const int bad = -1;"),
           "no_solve": src.replace(call_solve, ""),
           "no_update": src.replace(call_update, ""),
           "load_store": src.replace(call_chol, "const int bad = -1;").replace(call_solve, "")
           .replace(call_update, "")}
    return out


def main() -> None:
    src = (nvrtc.SOURCE_DIR / "leaves.cu").read_text()
    n = 4096
    g = cp.random.default_rng(0).standard_normal((n, n))
    a = cp.asfortranarray(g @ g.T / n + cp.eye(n))
    dst = cp.empty_like(a)
    info = cp.zeros(1, cp.int32)
    shapes = [(128, 128, 0), (1024, 64, panel_rows(64, 8)), (4096, 64, panel_rows(64, 8)),
              (1024, 32, panel_rows(32, 8)), (1024, 128, panel_rows(128, 8)),
              (1024, 64, 192), (1024, 64, 32), (64, 64, 0)]
    print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; us per launch; "
          "(m, w, rows): " + "  ".join(str(s) for s in shapes))
    for name, code in _variants(src).items():
        module = cp.RawModule(code=code, options=("-std=c++17", f"-I{nvrtc.SOURCE_DIR}"),
                              name_expressions=["tricov::potrf_panel<double>"])
        kernel = module.get_function("tricov::potrf_panel<double>")
        times = []
        for m, w, rows in shapes:
            grid = -(-(m - w) // rows) if rows else 1
            args = (np.int32(m), np.int32(w), np.int32(rows), a, np.int64(n), np.int32(0), dst,
                    np.int64(n), np.int32(0), info, np.int32(0))
            smem = panel_smem(w, rows, 8)
            nvrtc.allow_shared(kernel, smem)

            def launch() -> None:
                kernel((grid,), (256,), args, shared_mem=smem)  # noqa: B023

            launch()
            stream = cp.cuda.Stream(non_blocking=True)
            with stream:  # 50 launches in a graph: no host time between them
                stream.begin_capture()
                for _ in range(50):
                    launch()
                graph = stream.end_capture()
                graph.launch()
                start, stop = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                graph.launch()
                stop.record()
                stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3 / 50)
        ok = int(info.get()[0]) == 0
        print(f"{name:12s} " + "  ".join(f"{t:8.1f}" for t in times) + ("" if ok else "  (info)"),
              flush=True)


if __name__ == "__main__":
    main()
