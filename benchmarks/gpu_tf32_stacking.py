"""Design probe for split-TF32 products (torch on the GPU): three TF32 GEMMs of depth k
against one on the parts stacked along the depth (3k), against SGEMM and one-pass TF32.

Operands are split in torch (its time, "split", is that of several elementwise kernels; tricov
splits in one, kernels/cuda/tf32_split.cu); the GEMM columns exclude it. Errors: largest
|C - C_exact| / (|A| |B|)_ij, in units of 2^-24. Usage: python3 benchmarks/gpu_tf32_stacking.py
"""

from __future__ import annotations

import torch

SHAPES = [(4096, 4096, 4096), (2048, 4096, 2048), (512, 4096, 512), (1024, 4096, 1024),
          (8192, 256, 8192), (4096, 256, 4096), (2048, 2048, 2048), (8192, 8192, 8192)]
U = 2.0**-24


def rn_tf32(x: torch.Tensor) -> torch.Tensor:
    """x rounded to TF32 (to nearest, ties away from zero), as float32."""
    return ((x.view(torch.int32) + 0x1000) & ~0x1FFF).view(torch.float32)


def split(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    hi = rn_tf32(x)
    return hi, rn_tf32(x - hi)


def median_us(fn, reps: int = 10) -> float:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    return sorted(times)[len(times) // 2] * 1e3


def tf32(fn):
    def run():
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            return fn()
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False
    return run


def row(m: int, n: int, k: int) -> str:
    """One shape's line of the table."""
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(k, n, device="cuda")
    ref = a.double() @ b.double()
    scale = a.double().abs() @ b.double().abs()
    ah, al = split(a)
    bh, bl = split(b)
    a3, b3 = torch.cat([al, ah, ah], 1), torch.cat([bh, bl, bh], 0)

    def three():
        c = ah @ bl
        c.addmm_(al, bh)
        return c.addmm_(ah, bh)

    runs = {"sgemm": lambda: a @ b, "3x": tf32(three), "cat": tf32(lambda: a3 @ b3),
            "tf32": tf32(lambda: a @ b)}
    cells = []
    for name in ("sgemm", "3x", "cat"):
        us = median_us(runs[name])
        cells.append(f"{us:{9 if name == 'sgemm' else 8}.1f} {2 * m * n * k / us / 1e6:5.1f}")
    t_split = median_us(lambda: (split(a), split(b)))
    t_tf32 = median_us(runs["tf32"])
    errs = [((runs[name]().double() - ref).abs() / scale).max().item() / U
            for name in ("sgemm", "3x", "cat", "tf32")]
    return (f"{m:5d} {n:5d} {k:5d} | " + " | ".join(cells) + f" | {t_split:6.1f} | "
            f"{t_tf32:7.1f} | {errs[0]:6.1f} {errs[1]:6.1f} {errs[2]:6.1f} {errs[3]:8.1f}")


def main() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    print(torch.cuda.get_device_name())
    print(f"{'m':>5} {'n':>5} {'k':>5} | {'sgemm us':>9} {'TF/s':>5} | {'3x us':>8} {'TF/s':>5} | "
          f"{'cat us':>8} {'TF/s':>5} | {'split':>6} | {'tf32':>7} | "
          "err s / 3x / cat / tf32 (units of 2^-24)")
    for m, n, k in SHAPES:
        print(row(m, n, k))


if __name__ == "__main__":
    main()
