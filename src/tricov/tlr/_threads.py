"""Threads of the TLR code on the CPU: ranges of tiles on threads of our own, BLAS on one thread.

The compiled tile kernels (:mod:`tricov.kernels.numba.tiles`, :mod:`~tricov.kernels.numba.schur`)
release the GIL and work on a range of rows or tiles; :func:`run_ranges` hands ranges out to
``numba.get_num_threads()`` threads, one range at a time (tiles differ widely in cost). BLAS
calls made from those threads must run on one thread each: OpenBLAS would otherwise start its
own threads on cores already busy, and its spinning threads slow every call down by an order of
magnitude. :func:`tile_loops` holds BLAS to one thread
(:func:`tricov.backends.cpu_blas.one_thread`) around the whole construction or factorization;
large products run as row blocks on the same threads instead.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..backends.cpu_blas import one_thread

__all__ = ["run_ranges", "thread_count", "tile_loops"]

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


@contextlib.contextmanager
def tile_loops() -> Iterator[None]:
    """Context of the threaded tile loops: BLAS on one thread."""
    with one_thread():
        yield


def thread_count() -> int:
    """Threads of the tile loops: Numba's setting (``numba.get_num_threads()``)."""
    import numba

    return int(numba.get_num_threads())


def _executor(size: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size != size:
            if _pool is not None:
                _pool.shutdown(wait=True)
            _pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="tricov-tlr")
            _pool_size = size
        return _pool


def run_ranges(fn: Callable[..., None], count: int, args: tuple[Any, ...],
               chunk: int = 1) -> None:
    """``fn(*args, b0, b1)`` over ``[0, count)`` in ranges of ``chunk``, on
    :func:`thread_count` threads taking the next range as they finish (``fn`` must release
    the GIL to run side by side). Exceptions are raised in the caller."""
    threads = min(thread_count(), -(-count // max(chunk, 1)))
    if threads <= 1:
        if count:
            fn(*args, 0, count)
        return
    ticket = itertools.count()

    def worker() -> None:
        while True:
            b0 = next(ticket) * chunk
            if b0 >= count:
                return
            fn(*args, b0, min(count, b0 + chunk))

    pool = _executor(threads)
    for f in [pool.submit(worker) for _ in range(threads)]:
        f.result()
