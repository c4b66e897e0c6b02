"""How float32 products run on NVIDIA GPUs: plain FP32, or split TF32 (3xTF32).

With split TF32 (the default), the large GEMMs inside the dense GPU recursions of float32 run
on the TF32 tensor cores at float32 accuracy: each operand is split into two TF32 numbers,
``x = hi + lo`` to about ``2^-22 |x|``, and a product ``A B`` is computed as
``lo_A hi_B + hi_A lo_B + hi_A hi_B`` in one TF32 GEMM of three times the depth, with float32
accumulation (:class:`tricov.backends.cuda.CUDAExecutor`, ``kernels/cuda/tf32_split.cu``).
On one H100 a GEMM of 4096 x 4096 x 4096 ran 2.25x as fast as cuBLAS SGEMM this way, split
included, with a largest error per element of 25 units of float32 roundoff times
``(|A| |B|)_ij`` against SGEMM's 8 (both far inside float32's ``k u`` bound;
``benchmarks/gpu_tf32_split_h100.txt``). Small GEMMs stay on SGEMM, and so does complex64,
whose TF32 GEMM of three times the depth gained nothing there. Products whose split operands
exceed the executor's workspace budget run in blocks. Turn it off for products rounded
exactly as cuBLAS's FP32 GEMM rounds them.
"""

from __future__ import annotations

import os

__all__ = ["set_split_tf32", "split_tf32_enabled"]

_enabled = os.environ.get("TRICOV_SPLIT_TF32", "1") != "0"


def set_split_tf32(enabled: bool) -> None:
    """Run the large float32 GPU products of the dense operations as split-TF32 tensor-core
    GEMMs (``True``, the default; ``TRICOV_SPLIT_TF32=0`` in the environment starts with
    ``False``) or as cuBLAS's FP32 GEMMs (``False``). Captured plans and replayed calls are
    keyed by the setting, so later calls follow it.

    Examples
    --------
    >>> import tricov as tc
    >>> tc.set_split_tf32(False)   # FP32 products, as cuBLAS SGEMM rounds them
    >>> tc.split_tf32_enabled()
    False
    >>> tc.set_split_tf32(True)
    """
    global _enabled
    _enabled = bool(enabled)


def split_tf32_enabled() -> bool:
    """Whether large float32 GPU products run as split-TF32 GEMMs."""
    return _enabled
