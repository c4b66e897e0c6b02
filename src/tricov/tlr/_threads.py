"""Threads on the CPU: Numba's parallel loops over tiles, or BLAS's inside large products, never
both at once.

A BLAS call made from inside a parallel Numba loop must run on one thread: OpenBLAS would
otherwise start its own threads on cores that the loop already occupies, and its spinning
threads slow every call down by an order of magnitude. :func:`tile_loops` holds BLAS to one
thread (every BLAS library loaded, through a cached threadpoolctl controller: entering costs
microseconds) and hands the iterations of Numba's loops out one at a time, since tiles differ
widely in cost.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["tile_loops"]

_controller: Any = None


def _blas_controller() -> Any:
    global _controller
    if _controller is None:
        import scipy.linalg  # noqa: F401 - SciPy's BLAS (Numba's) loaded before the snapshot
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    return _controller


@contextlib.contextmanager
def tile_loops() -> Iterator[None]:
    """Context of the parallel tile loops: BLAS on one thread, Numba iterations one by one."""
    import numba

    with _blas_controller().limit(limits=1, user_api="blas"), numba.parallel_chunksize(1):
        yield
