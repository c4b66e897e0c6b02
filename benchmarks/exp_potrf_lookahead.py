"""Experiment: a blocked right-looking POTRF with look-ahead on two streams, from tricov's calls.

    PYTHONPATH=src python3 benchmarks/exp_potrf_lookahead.py [N ...]

tricov's POTRF of 2561-4096 float32 rows is two tile leaves with a TRSM and a SYRK between
them; the leaves are latency-bound (about 0.23 µs a row) and leave most of the GPU idle. Here
the matrix is cut into blocks of ``NB`` columns; stream 0 runs the critical path (the diagonal
block's POTRF, the TRSM of the panel below it, the update of the next block column) while
stream 1 applies each panel to the rest of the trailing matrix. Every schedule is captured
once into a CUDA graph (tricov's calls record their kernels into the caller's capture; the
status read after POTRF is switched off for the capture, so no failure is reported here) and
replayed; medians of 20 replays in microseconds (CUDA events), the input restored before each,
against ``tc.potrf`` on the whole matrix (its own graph replay) and ``torch.linalg.cholesky``.
Rows: the look-ahead schedule, the same blocks on one stream, and with the tile kernel held to
one block per multiprocessor (so that stream 1's GEMMs find room beside it). The factor is
checked against the whole-matrix one.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

import cupy as cp
import numpy as np
import torch
from gpu_layouts import median_us

import tricov as tc
from tricov import _frontend
from tricov.backends import cuda as tc_cuda


def subtract_product(c: cp.ndarray, x: cp.ndarray, y: cp.ndarray) -> None:
    """``C -= X Y^T`` on the current stream, F-ordered views, through tricov's executor (its
    cuBLAS calls, split-TF32 where tricov uses it; CuPy's matmul refuses to run in a capture)."""
    ex = tc_cuda.CUDAExecutor(c.dtype)

    def ld(v: cp.ndarray) -> int:
        return v.strides[1] // v.itemsize

    ex.raw_gemm(b"N", b"T", c.shape[0], c.shape[1], x.shape[1], -1.0, x.data.ptr, ld(x),
                y.data.ptr, ld(y), 1.0, c.data.ptr, ld(c))


def schedule(a: cp.ndarray, nb: int, streams: tuple) -> None:
    """Factor ``a`` (F order, lower) in blocks of ``nb`` columns; ``streams`` = (s0, s1), or
    (s0, s0) for one stream."""
    n = a.shape[0]
    k_blocks = -(-n // nb)
    s0, s1 = streams
    cut = [min(k * nb, n) for k in range(k_blocks + 1)]
    ev_next = {}
    for k in range(k_blocks):
        lo, hi = cut[k], cut[k + 1]
        with s0:
            tc.potrf(a[lo:hi, lo:hi])
            if hi < n:
                tc.trsm(a[lo:hi, lo:hi], a[hi:, lo:hi], side="R", trans="T")
            if k + 1 < k_blocks:
                panel = next_block_column(a, (lo, hi), cut[k + 2], s0, ev_next.get(k - 1))
        if k + 2 < k_blocks:
            ev_next[k] = rest_of_update(a, (lo, hi), cut[k + 2], cut[k + 3], s1, panel)
    join(s0, s1)


def next_block_column(a: cp.ndarray, panel_cols: tuple[int, int], nxt: int, s0: cp.cuda.Stream,
                      wait: cp.cuda.Event | None) -> cp.cuda.Event:
    """On stream 0, after the panel: an event (returned), then, once ``wait`` (stream 1's
    update of this block column by the panel before, if any), the block column from the panel's
    end to column ``nxt`` less the product of the panel's columns."""
    lo, hi = panel_cols
    panel = cp.cuda.Event(disable_timing=True)
    panel.record(s0)
    if wait is not None:
        s0.wait_event(wait)
    tc.syrk(a[hi:nxt, lo:hi], a[hi:nxt, hi:nxt], alpha=-1.0, beta=1.0)
    if nxt < a.shape[0]:
        subtract_product(a[nxt:, hi:nxt], a[nxt:, lo:hi], a[hi:nxt, lo:hi])
    return panel


def rest_of_update(a: cp.ndarray, panel_cols: tuple[int, int], c2: int, c3: int,
                   s1: cp.cuda.Stream, panel: cp.cuda.Event) -> cp.cuda.Event:
    """On stream 1 once ``panel`` is recorded: the trailing matrix from row and column ``c2``
    less the product of the panel's columns, the block column ``c2:c3`` first; returns the event
    recorded after that block column (the rest follows it on stream 1)."""
    lo, hi = panel_cols
    with s1:
        s1.wait_event(panel)
        tc.syrk(a[c2:c3, lo:hi], a[c2:c3, c2:c3], alpha=-1.0, beta=1.0)
        if c3 < a.shape[0]:
            subtract_product(a[c3:, c2:c3], a[c3:, lo:hi], a[c2:c3, lo:hi])
        done = cp.cuda.Event(disable_timing=True)
        done.record(s1)
        if c3 < a.shape[0]:
            tc.syrk(a[c3:, lo:hi], a[c3:, c3:], alpha=-1.0, beta=1.0)
    return done


def join(s0: cp.cuda.Stream, s1: cp.cuda.Stream) -> None:
    """Stream 0 waits for stream 1's work so far (nothing if they are one stream)."""
    if s1 is not s0:
        done = cp.cuda.Event(disable_timing=True)
        done.record(s1)
        s0.wait_event(done)


def captured(run: Callable[[tuple], None], two: bool, priority: int = 0) -> cp.cuda.graph.Graph:
    """``run((s0, s1))`` captured into one graph on a fresh stream of ``priority`` (stream 1
    forked from it, or stream 0 itself if not ``two``), after one uncaptured run that compiles
    and allocates the pools' blocks."""
    s0 = cp.cuda.Stream(non_blocking=True, priority=priority)
    s1 = cp.cuda.Stream(non_blocking=True) if two else s0
    with s0:
        run((s0, s1))
        s0.synchronize()
        s1.synchronize()
        s0.begin_capture()
        fork = cp.cuda.Event(disable_timing=True)
        fork.record(s0)
        s1.wait_event(fork)
        run((s0, s1))
        return s0.end_capture()


def no_status_reads() -> None:
    """No status read, and no refusal, inside a capture (tricov.potrf refuses one otherwise):
    failures go unreported in these experiments."""
    _frontend.Operands.raise_failure = lambda self, error: None
    _frontend.refuse_capture = lambda name: None


def baseline(n: int, dtype: Any) -> tuple[cp.ndarray, Callable[[], None], cp.ndarray, float]:
    """An SPD matrix of order ``n`` in a work array (F order), the function that restores the
    work array, ``tc.potrf``'s factor of it (lower triangle) and torch's time in µs; prints the
    line of torch and ``tc.potrf``."""
    rng = cp.random.default_rng(n)
    x = rng.standard_normal((n, n), dtype=np.float64)
    spd = cp.asfortranarray((x @ x.T / n + cp.eye(n)).astype(dtype))
    w = cp.empty_like(spd)
    ta = torch.as_tensor(spd, device="cuda")

    def restore() -> None:
        cp.copyto(w, spd)

    t_torch = median_us(lambda: None, lambda: torch.linalg.cholesky(ta), 20, 4)
    t_whole = median_us(restore, lambda: tc.potrf(w), 20, 4)
    print(f"{np.dtype(dtype).name} {n}: torch {t_torch:7.0f}  tc.potrf {t_whole:7.0f} "
          f"(x{t_torch / t_whole:.2f})", flush=True)
    return w, restore, cp.tril(w), t_torch


@contextlib.contextmanager
def tile_blocks(itemsize: int, blocks: int | None) -> Iterator[None]:
    """``potrf_tiles`` held to ``blocks`` blocks of threads per multiprocessor (None: as
    tricov sets it) meanwhile."""
    saved = dict(tc_cuda.TILE_BLOCKS)
    if blocks:
        tc_cuda.TILE_BLOCKS[itemsize] = blocks
    try:
        yield
    finally:
        tc_cuda.TILE_BLOCKS.clear()
        tc_cuda.TILE_BLOCKS.update(saved)


def size(n: int) -> None:
    """The lines of one order."""
    w, restore, ref, t_torch = baseline(n, np.float32)
    for blocks in (None, 1):
        with tile_blocks(4, blocks):
            for nb in (1024, 768, 512):
                for two in (True, False):
                    restore()
                    graph = captured(lambda streams, nb=nb: schedule(w, nb, streams), two)
                    t = median_us(restore, graph.launch, 20, 4)
                    err = float(cp.abs(cp.tril(w) - ref).max() / cp.abs(ref).max())
                    print(f"  nb {nb:4d} {'look-ahead' if two else 'one stream'} tile blocks "
                          f"{blocks or 'default'}: {t:7.0f} (x{t_torch / t:.2f}) "
                          f"max diff {err:.1e}", flush=True)


def main(sizes: list[int]) -> None:
    print(torch.cuda.get_device_name(), flush=True)
    no_status_reads()
    for n in sizes:
        size(n)


if __name__ == "__main__":
    main([int(v) for v in sys.argv[1:]] or [3072, 4096])
