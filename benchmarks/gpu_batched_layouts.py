"""Device time of the batched register kernels on C- against F-ordered members (batch 10240).

    PYTHONPATH=src python3 benchmarks/gpu_batched_layouts.py

C-ordered members reach the kernels transposed: their lanes read memory rows (coalesced) and
move them with butterfly transposes in registers; F-ordered members of POTRF need none. One
line per dtype and order: microseconds per call of POTRF, POTRI, POTRS, POSV and TRSM (calls
queued behind a spinning kernel, restoring copies subtracted, best of 5 queues of 8).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import cupy as cp
import numpy as np

import tricov as tc
from tricov.batched.bench_gpu import _Queue

BATCH = 10240


def device_us(queue: _Queue, fn: Callable[[], Any], restore: Callable[[], Any]) -> float:
    """Device microseconds of ``fn``, the time of ``restore`` subtracted."""
    for _ in range(3):
        restore()
        fn()
    both = min(queue.seconds(lambda: (restore(), fn()), 3e-4) or np.inf for _ in range(5))
    alone = min(queue.seconds(restore, 3e-4) or np.inf for _ in range(5))
    return (both - alone) / queue.queued * 1e6


def f_order(x: Any) -> Any:
    """The same stack with each member stored column-major."""
    return cp.ascontiguousarray(x.transpose(0, 2, 1)).transpose(0, 2, 1)


def times(queue: _Queue, a: Any, fac: Any, r: Any) -> dict[str, float]:
    """Device µs of each operation on the stacks ``a`` (SPD), ``fac`` (its factor), ``r``."""
    w, x = a.copy(order="K"), r.copy(order="K")

    def put(dst: Any, src: Any) -> Callable[[], None]:
        return lambda: dst.__setitem__(Ellipsis, src)

    return {
        "potrf": device_us(queue, lambda: tc.batched.potrf(w, check=False), put(w, a)),
        "potri": device_us(queue, lambda: tc.batched.potri(w, check=False), put(w, fac)),
        "potrs": device_us(queue, lambda: tc.batched.potrs(fac, x), put(x, r)),
        "posv": device_us(queue, lambda: tc.batched.posv(w, x, check=False),
                          lambda: (put(w, a)(), put(x, r)())),
        "trsm": device_us(queue, lambda: tc.batched.trsm(fac, x), put(x, r)),
    }


def main() -> None:
    queue = _Queue(8)
    for dt in (np.float64, np.float32):
        for n in (8, 16, 32):
            rng = cp.random.default_rng(n)
            x = rng.standard_normal((BATCH, n, n), dtype=dt)
            a = x @ x.transpose(0, 2, 1) + n * cp.eye(n, dtype=dt)
            fac = cp.linalg.cholesky(a)
            r = rng.standard_normal((BATCH, n, n), dtype=dt)
            c = times(queue, a, fac, r)
            f = times(queue, f_order(a), f_order(fac), f_order(r))
            print(np.dtype(dt).name, f"n={n:2d} us  " + "  ".join(
                f"{op} C {c[op]:6.1f} F {f[op]:6.1f}" for op in c), flush=True)


if __name__ == "__main__":
    main()
