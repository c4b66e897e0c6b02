"""Experiment: POTRF as fused panels (``CUDAExecutor.potrf_panel``) with look-ahead on two streams.

    PYTHONPATH=src python3 benchmarks/exp_potrf_panels_lookahead.py [N ...]

tricov's float32 POTRF of 2305-4096 rows runs right-looking: panels of at most 512 columns, each
one ``potrf_tiles`` launch that factors the panel's diagonal block and solves the rows below it,
then a SYRK of the trailing matrix, down to a last tile leaf of 2048 rows. The panels are
latency-bound (the chain of diagonal tiles) and the SYRKs wait for them. Here the same cuts run
with look-ahead: stream 0 runs the panels and the update of the next panel's columns, stream 1
the rest of each trailing update, so that a SYRK overlaps the next panel. Every schedule is
captured once into a CUDA graph and replayed; medians of 20 replays in microseconds (CUDA
events), the input restored before each, against ``tc.potrf`` (its own replay) and
``torch.linalg.cholesky``. Variants: panel widths, one stream (the same launches as tc.potrf),
stream 0 at high priority, and the tile kernel held to one block per multiprocessor. The factor
is checked against tc.potrf's.
"""

from __future__ import annotations

import sys

import cupy as cp
import numpy as np
import torch
from exp_potrf_lookahead import (
    baseline,
    captured,
    join,
    next_block_column,
    no_status_reads,
    rest_of_update,
    tile_blocks,
)
from gpu_layouts import median_us

import tricov as tc
from tricov._views import view_of
from tricov.backends import cuda as tc_cuda

LEAF = 2048


def cuts(n: int, width: int) -> list[int]:
    """Column cuts: panels of at most ``width`` (as equal as they come), then the last leaf."""
    out = [0]
    while n - out[-1] > LEAF:
        rest = n - out[-1] - LEAF
        out.append(out[-1] + -(-rest // -(-rest // width)))
    return out + [n]


def schedule(a: cp.ndarray, cut: list[int], streams: tuple, keep: list) -> None:
    """Factor ``a`` (F order, lower) along ``cut``; ``streams`` = (s0, s1), or (s0, s0)."""
    last = len(cut) - 2
    s0, s1 = streams
    ev_next = {}
    for k in range(last + 1):
        lo, hi = cut[k], cut[k + 1]
        with s0:
            if k == last:
                tc.potrf(a[lo:, lo:])
                break
            ex = tc_cuda.CUDAExecutor(a.dtype)
            keep.append(ex)
            ex.potrf_panel(view_of(a[lo:, lo:hi]), 0)
            panel = next_block_column(a, (lo, hi), cut[k + 2], s0, ev_next.get(k - 1))
        if k + 2 <= last:
            ev_next[k] = rest_of_update(a, (lo, hi), cut[k + 2], cut[k + 3], s1, panel)
    join(s0, s1)


def size(n: int, dtype) -> None:
    w, restore, ref, t_torch = baseline(n, dtype)
    high = -100  # CUDA clamps it to the device's greatest priority
    variants = [(512, True, 0, None), (512, False, 0, None), (512, True, high, None),
                (512, True, 0, 1), (384, True, 0, None), (768, True, 0, None),
                (1024, True, 0, None)]
    for width, two, priority, blocks in variants:
        keep: list = []
        with tile_blocks(np.dtype(dtype).itemsize, blocks):
            restore()
            cut = cuts(n, width)
            graph = captured(lambda streams, cut=cut, keep=keep: schedule(w, cut, streams, keep),
                             two, priority)
            t = median_us(restore, graph.launch, 20, 4)
        err = float(cp.abs(cp.tril(w) - ref).max() / cp.abs(ref).max())
        print(f"  width {width:4d} {'look-ahead' if two else 'one stream'}"
              f"{' high priority' if priority else ''}"
              f"{f' tile blocks {blocks}' if blocks else ''}: {t:7.0f} (x{t_torch / t:.2f}) "
              f"max diff {err:.1e}", flush=True)


def main(sizes: list[int]) -> None:
    print(torch.cuda.get_device_name(), flush=True)
    no_status_reads()
    for dtype in (np.float32, np.float64):
        for n in sizes:
            size(n, dtype)


if __name__ == "__main__":
    main([int(v) for v in sys.argv[1:]] or [3072, 3584, 4096])
