"""Batched triangular BLAS and LAPACK for very many small matrices.

The functions of :mod:`tricov.dense`, with the same options, dtypes and in-place semantics,
over a batch given either as a *stack* (an array of shape ``(..., n, n)``, any leading batch
dimensions, each matrix C- or F-ordered inside, used in place) or as a *list* of 2-D arrays
whose sizes may differ. A failing member (POTRF, POSV, POTI: not positive definite; TRTRI,
POTRI: a zero diagonal element) never changes the others; ``check=False`` returns the
LAPACK ``info`` of every member instead of raising.

>>> import numpy as np, tricov as tc
>>> A = np.array([[[4.0, 2.0], [2.0, 5.0]], [[9.0, 3.0], [3.0, 5.0]]])
>>> tc.batched.potrf(A)[:, 1, 1]
array([2., 2.])

Batch indices (``NotPositiveDefiniteError.indices``, ``SingularMatrixError.indices``) are flat:
C order over the batch dimensions of a stack (``numpy.unravel_index`` gives tuples), list
positions for a list. A stack costs a few tens of microseconds of Python per call whatever
its size (10**6 members and more); a list costs some microseconds per member, so prefer
stacks for very many matrices of one size. A call repeated on the same NumPy or CuPy stacks
(same addresses, shapes, strides, dtype and options) whose work is the small-order kernels
alone skips those steps and reruns what its first call recorded, in about 10 microseconds
(:mod:`tricov.batched._replay`; ``tricov.set_cuda_graphs(False)`` turns this off).

On the CPU, small orders run SIMD kernels that process 8 (float64) or 16 (float32) members at
once (:mod:`tricov.kernels.numba.small`), larger ones the recursions of the dense path over a
per-member BLAS executor (:mod:`tricov.batched._cpu` says where each operation switches).
CuPy arrays (and DLPack tensors of a CUDA device) run on their GPU, on the current stream:
orders up to 32 (16 for complex dtypes) in register kernels, one group of lanes of a warp per
member (``kernels/cuda/batched_small.cu``), larger ones the same recursions over cuBLAS batched
GEMM with those kernels at the leaves (:mod:`tricov.batched._cuda`); nothing waits for the
device but the final check of ``check=True``. Timing functions for benchmarks are in
:mod:`tricov.batched.bench` (``--device gpu``: :mod:`tricov.batched.bench_gpu`).
"""

from ._api import lauum, posv, poti, potrf, potri, potrs, syrk, trmm, trsm, trtri

__all__ = ["lauum", "posv", "poti", "potri", "potrf", "potrs", "syrk", "trmm", "trsm", "trtri"]
