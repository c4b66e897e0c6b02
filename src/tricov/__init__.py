"""tricov: fast dense linear algebra for covariance matrices.

In-place triangular BLAS-3 and the Cholesky family, written once as recursions over GEMM and run
on the CPU (NumPy) or on NVIDIA GPUs (CuPy, or PyTorch/JAX tensors through DLPack).

>>> import numpy as np, tricov as tc
>>> A = np.array([[4.0, 2.0], [2.0, 5.0]])
>>> L = tc.potrf(A.copy())           # in place, lower triangle
>>> tc.potrs(L, np.array([[6.0], [7.0]]))
array([[1.],
       [1.]])
"""

from ._errors import NotPositiveDefiniteError, SingularMatrixError
from ._plans import cuda_graphs_enabled, set_cuda_graphs
from ._policy import leaf_sizes, set_leaf_size
from ._precision import set_split_tf32, split_tf32_enabled
from .dense import lauum, posv, poti, potrf, potri, potrs, syrk, trmm, trsm, trtri

__version__ = "0.1.0"

_SUBMODULES = ("batched", "geostat", "tlr")


def __getattr__(name: str):
    """Import the larger subpackages (``tricov.tlr``, ...) on first use."""
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "NotPositiveDefiniteError",
    "SingularMatrixError",
    "cuda_graphs_enabled",
    "lauum",
    "leaf_sizes",
    "posv",
    "poti",
    "potri",
    "potrf",
    "potrs",
    "set_cuda_graphs",
    "set_leaf_size",
    "set_split_tf32",
    "split_tf32_enabled",
    "syrk",
    "trmm",
    "trsm",
    "trtri",
]
