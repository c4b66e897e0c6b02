"""Experiment (not used by tricov): how cuBLAS's TF32 GEMMs convert float32 inputs, and what
that means for split-TF32 (3xTF32) products.

    PYTHONPATH=src python3 benchmarks/exp_tf32_rounding.py

1. Rounding: a GEMM on TF32 tensor cores (``torch.backends.cuda.matmul.allow_tf32``) of a
   matrix whose first column holds ``1 + 0.75`` units of TF32's last place and second ``1 +
   0.25``, times the first two unit vectors: round to nearest gives ``1 + 1`` and ``1 + 0``
   units, truncation ``1 + 0`` and ``1 + 0``.
2. Accuracy of one 8192 x 256 x 8192 product against float64, largest
   ``|C - C_exact| / max (|A| |B|)``: SGEMM; 3xTF32 with A and B split into hi + lo (hi
   rounded to TF32 here, lo = x - hi; the three products hi hi, hi lo, lo hi); 3xTF32 with A's
   hi left to the tensor cores' own conversion of A; one TF32 GEMM.

Output: ``exp_tf32_rounding_h100.txt``. tricov's split (``tf32_split.cu``) writes exact TF32
parts for both operands, so its products do not depend on this conversion.
"""

from __future__ import annotations

import cupy as cp
import numpy as np
import torch

SPLIT = cp.ElementwiseKernel(
    "float32 a", "float32 hi, float32 lo",
    "unsigned u = (__float_as_uint(a) + 0x1000u) & 0xffffe000u; hi = __uint_as_float(u); "
    "lo = a - hi;", "tricov_exp_split")


def rounding() -> None:
    """Part 1, at four shapes (cuBLAS picks its kernel by shape)."""
    torch.backends.cuda.matmul.allow_tf32 = True
    ulp = 2.0**-10
    for m, n, k in ((64, 64, 64), (512, 256, 512), (8192, 256, 8192), (4096, 512, 4096)):
        a = torch.zeros(m, k, device="cuda")
        a[:, 0], a[:, 1] = 1 + 0.75 * ulp, 1 + 0.25 * ulp
        b = torch.zeros(k, n, device="cuda")
        b[0, 0] = b[1, 1] = 1
        c = a @ b
        print(f"{m}x{n}x{k}: tf32 of 1+0.75ulp -> 1+{(c[0, 0].item() - 1) / ulp:.3f}ulp ; "
              f"1+0.25ulp -> 1+{(c[0, 1].item() - 1) / ulp:.3f}ulp")


def accuracy(m: int = 8192, n: int = 256, k: int = 8192) -> None:
    """Part 2."""
    a = cp.random.standard_normal((m, k), dtype=cp.float32)
    b = cp.random.standard_normal((k, n), dtype=cp.float32)
    exact = a.astype(cp.float64) @ b.astype(cp.float64)
    scale = float((cp.abs(a) @ cp.abs(b)).max())
    (ah, al), (bh, bl) = SPLIT(a), SPLIT(b)
    t = {name: torch.as_tensor(x, device="cuda") for name, x in
         {"a": a, "b": b, "ah": ah, "al": al, "bh": bh, "bl": bl}.items()}
    torch.backends.cuda.matmul.allow_tf32 = True
    results = {
        "3xtf32 split": t["ah"] @ t["bh"] + t["ah"] @ t["bl"] + t["al"] @ t["bh"],
        "3xtf32 raw-A": t["a"] @ t["bh"] + t["a"] @ t["bl"] + t["al"] @ t["bh"],
        "1xtf32": t["a"] @ t["b"],
    }
    torch.backends.cuda.matmul.allow_tf32 = False
    results = {"sgemm": t["a"] @ t["b"], **results}
    for name, c in results.items():
        err = float(cp.abs(cp.asarray(c).astype(cp.float64) - exact).max()) / scale
        print(f"{name}: max err / (|A||B|) = {err:.2e}  (eps32 {np.finfo(np.float32).eps:.1e})")


if __name__ == "__main__":
    rounding()
    accuracy()
