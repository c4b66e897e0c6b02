"""POTRF on C- and F-ordered CuPy arrays against torch, and cuSOLVER's lower and upper POTRF.

    PYTHONPATH=src python3 benchmarks/gpu_potrf_order.py

A C-ordered matrix is, to column-major libraries, the transpose of its memory: its lower
triangle is memory's upper one. cuSOLVER's upper POTRF runs 2.5-3x slower than its lower, so
where tricov hands a whole C-ordered block to cuSOLVER (float32 of 2561-3584 rows, complex
leaves past the tile kernel) it factors the lower triangle of the transposed block between two
in-place transposes. Printed per dtype and order n: torch.linalg.cholesky, tc.potrf on C and F
order (and the speed-up over torch), cuSOLVER's lower and upper POTRF on F-ordered memory;
medians of 20 calls in microseconds (CUDA events, the input restored before each). Output:
``gpu_potrf_order_h100.txt``.
"""

from __future__ import annotations

import cupy as cp
import numpy as np
import torch
from cupy_backends.cuda.libs import cusolver
from gpu_layouts import median_us

import tricov as tc


def vendor(a: cp.ndarray, uplo: int) -> float:
    """cuSOLVER's POTRF (``uplo`` 0 lower, 1 upper) on a copy of F-ordered ``a``."""
    n, handle = a.shape[0], cp.cuda.device.get_cusolver_handle()
    char = "s" if a.dtype == np.float32 else "d" if a.dtype == np.float64 else (
        "c" if a.dtype == np.complex64 else "z")
    size, potrf = getattr(cusolver, f"{char}potrf_bufferSize"), getattr(cusolver, f"{char}potrf")
    w = cp.empty_like(a)
    lwork = size(handle, uplo, n, w.data.ptr, n)
    work, info = cp.empty(lwork, dtype=a.dtype), cp.zeros(1, dtype=np.int32)
    return median_us(lambda: cp.copyto(w, a), lambda: potrf(
        handle, uplo, n, w.data.ptr, n, work.data.ptr, lwork, info.data.ptr), 20, 4)


def row(dtype: np.dtype, n: int) -> str:
    """One line of the table."""
    rng = cp.random.default_rng(0)
    x = rng.standard_normal((n, n), dtype=np.float64).astype(dtype)
    a = cp.asfortranarray(x @ x.conj().T + n * cp.eye(n, dtype=dtype))
    torch_a = torch.as_tensor(a, device="cuda")
    t_torch = median_us(lambda: None, lambda: torch.linalg.cholesky(torch_a), 20, 4)
    ours = []
    for order in ("C", "F"):
        src = cp.array(a, order=order)
        w = cp.empty_like(src)
        t = median_us(lambda w=w, src=src: cp.copyto(w, src), lambda w=w: tc.potrf(w), 20, 4)
        ours.append(f"{order} {t:7.0f} (x{t_torch / t:4.2f})")
    return (f"{np.dtype(dtype).name:10} {n:5d} | torch {t_torch:7.0f} | tricov {' '.join(ours)} "
            f"| cuSOLVER L {vendor(a, 0):7.0f} U {vendor(a, 1):7.0f}")


def main() -> None:
    print(torch.cuda.get_device_name())
    for dtype in (np.float32, np.float64, np.complex64, np.complex128):
        for n in (1024, 2048, 3072, 4096):
            print(row(np.dtype(dtype), n), flush=True)


if __name__ == "__main__":
    main()
