"""The recursions of tricov, each written once over logical views (see ``_views.Mat``).

They call only an executor's primitives (``gemm``, ``herk`` and the leaves), so the same code
runs on every backend. Leaf sizes come from a :class:`tricov._policy.LeafSizes`.
"""

from .blas3 import herk, leaf_rows, split, trmm, trsm
from .cholesky import lauum, potrf, potrs, trtri

__all__ = ["herk", "lauum", "leaf_rows", "potrf", "potrs", "split", "trmm", "trsm", "trtri"]
