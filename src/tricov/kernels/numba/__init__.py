"""Numba kernels of the batched CPU operations.

* :mod:`.simd`: lane vectors (one SIMD register of ``W`` batch members) and register
  transposes between member memory and scratch.
* :mod:`.lanes`: element arithmetic on lane vectors, one source for real and complex data.
* :mod:`.small`: the lane kernels of every operation, fused chains, and their driver.
* :mod:`.calls`: parallel loops that call BLAS/LAPACK (or a compiled worker) by address.
* :mod:`.members`: element-wise helpers over the members of a batch.
"""
