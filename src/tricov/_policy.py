"""Leaf sizes: where each recursion stops and hands a block to the native kernel.

A leaf size is a setting per (backend, operation, dtype). Defaults were measured on the machines
named in ``benchmarks/``; ``tricov tune`` measures the best ones on the current machine and stores
them in the user's cache directory (``$TRICOV_CACHE_DIR``, else ``$XDG_CACHE_HOME/tricov``, else
``~/.cache/tricov``), where later runs find them (a process reads them once, at its first
call, and again after storing new ones). :func:`set_leaf_size` overrides one for the running
process.
"""

from __future__ import annotations

import functools
import json
import os
import threading
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CROSSOVERS", "NARROW_RATIO", "NARROW_ROWS", "OPERATIONS", "LeafSizes", "cache_dir",
           "leaf_sizes", "set_leaf_size", "store_tuned", "trsm_leaf"]

#: Operations that have a leaf size.
OPERATIONS = ("trsm", "trmm", "syrk", "potrf", "trtri", "lauum")
#: Settings beyond leaf sizes: the number of right-hand sides from which TRSM/TRMM hand the
#: whole call to the native routine (which is already GEMM-bound for wide B), the order up to
#: which POTRF hands over the whole matrix, and TRSM's leaves for narrow B and for B of few
#: rows (:func:`trsm_leaf`).
CROSSOVERS = ("trsm_rhs", "trmm_rhs", "potrf_whole", "potrf_panel", "syrk_whole", "syrk_split",
              "trsm_narrow", "trsm_min")
#: B is narrow (for :attr:`LeafSizes.trsm_narrow`) with at least NARROW_ROWS rows and at most
#: 1 / NARROW_RATIO as many columns.
NARROW_ROWS, NARROW_RATIO = 8192, 16

_NEVER = 1 << 62


@dataclass(frozen=True, slots=True)
class LeafSizes:
    """Where each recursion stops.

    A recursion stops when its block is at most the operation's leaf size; TRSM and TRMM also
    stop (at the top, calling the native routine on the whole problem) when B has at least
    ``trsm_rhs`` / ``trmm_rhs`` right-hand sides, and POTRF when the matrix has at most
    ``potrf_whole`` rows, and HERK (SYRK) when C has at least ``syrk_whole`` and fewer than
    ``syrk_split`` rows (the native routine is faster than the recursion there; above, the
    recursion's large GEMMs are). TRSM on narrow B takes leaves of ``trsm_narrow`` where it is
    not 0, and on B of few rows leaves down to ``trsm_min`` where that is not 0
    (:func:`trsm_leaf`).
    """

    trsm: int = 128
    trmm: int = 128
    syrk: int = 128
    potrf: int = 128
    trtri: int = 128
    lauum: int = 128
    trsm_rhs: int = _NEVER
    trmm_rhs: int = _NEVER
    potrf_whole: int = 0
    potrf_panel: int = 0
    syrk_whole: int = _NEVER
    syrk_split: int = _NEVER
    trsm_narrow: int = 0
    trsm_min: int = 0


def trsm_leaf(nb: LeafSizes, rows: int, cols: int) -> int:
    """Leaf size of a TRSM whose B has ``rows`` x ``cols`` (left side): all the rows from
    ``trsm_rhs`` columns on, ``trsm_narrow`` (if set) for narrow B (at least
    :data:`NARROW_ROWS` rows, at most 1 / :data:`NARROW_RATIO` as many columns), else
    ``trsm``, but (if ``trsm_min`` is set and B has at least twice as many rows) no more than
    the largest ``trsm_min`` times a power of two that is at most a quarter of the rows."""
    if cols >= nb.trsm_rhs:
        return rows
    if nb.trsm_narrow and rows >= NARROW_ROWS and cols * NARROW_RATIO <= rows:
        return nb.trsm_narrow
    if nb.trsm_min and rows >= 2 * nb.trsm_min:  # at least four leaves where trsm_min allows
        leaf = nb.trsm_min
        while 2 * leaf <= rows // 4:
            leaf *= 2
        return min(nb.trsm, leaf)
    return nb.trsm


# Measured defaults. CPU: float64 sweeps on 2 cores with OpenBLAS 0.3.30 (benchmarks/README.md):
# POTRF best with leaf 256 and SYRK/TRSM 128-256 inside, POTRI with TRTRI/LAUUM leaves of 512-1024
# and TRMM/SYRK 512; TRSM/TRMM standalone 128-256. Native TRSM (TRMM) is already GEMM-bound from
# 1024 (256) right-hand sides, where the recursion only adds small-GEMM overhead.
# GPU (float64 sweeps of benchmarks/gpu_dense.py --sweep on one H100, benchmarks/README.md):
# TRMM leaves of 128 rows, best of 128/256/512 for square 4096..16384, 16384 x 64..256 and
# inside POTRI. TRSM leaves are GEMMs with inverted diagonal blocks (backends/cuda.py): leaves
# of 256 (float64) and 512 (float32) were the fastest of 128/256/512 for 16384 x 64..256
# (float64 4.2 / 3.8 / 3.1x cuBLAS at 256 against 3.4 / 3.2 / 2.7x at 128; float32 3.1 / 2.7 /
# 2.2x at 512 against 2.8 / 2.5 / 1.7x at 256) and within 2% of the best for square 4096 ...
# 16384 (benchmarks/gpu_trsm_leaves_h100.txt). Measured again on 2026-11-26 (after the faster
# leaf-inverse test; the same file, second part), float64 narrow B had moved to leaves of 512:
# 16384 x 64 / 128 / 256 at 14.1 / 25.5 / 35.6 against 13.1 / 23.8 / 33.8 TFLOP/s, while square
# 4096 / 8192 and 4096 x 64 kept 256 (512: 5%, 1.4%, 4% slower). So float64 B of at least
# NARROW_ROWS rows and 1/16 as many columns takes leaves of 512 (trsm_narrow); float32 is best
# at 512 on every narrow shape measured, and within 3% on squares. Small squares want smaller
# leaves (2026-11-27, one H100, whole calls, µs at the default leaves / leaves of 128 / 256):
# float64 256 83 / 70 / 83, 512 100 / 90 / 101, 768 119 / 112 / 118, 1024 160 / 154 / 156,
# 1536 218 / 231 / 219; float32 512 166 / 96 / 109, 768 172 / 129 / 132, 1024 181 / 157 / 154,
# 1536 294 / 301 / 280, 2048 415 / 451 / 422 (cuBLAS 178 / 129 at 512, float64 / float32). So
# TRSM leaves of real dtypes are at most a quarter of B's rows, down to 128 (trsm_min). TRTRI
# and LAUUM leaves of complex dtypes are tricov's shared-memory kernels, whose largest block
# (kernels.block_order: 128, 64 for complex128) is the leaf size (real dtypes: _GPU_INVERSE).
# POTRF of complex dtypes: leaves of 4096 go to cuSOLVER (float64 sweep on one H200,
# benchmarks/gpu_dense_potrf_sweep_h200.txt: 4096 was best or within 2% of best of the leaves
# 128 ... 16384 and the whole matrix at n = 4096 ... 32768; 1024, the earlier default, was
# 10-40% slower below 16384), but matrices of at most 16384 rows go to cuSOLVER whole
# (benchmarks/gpu_potrf_sizes_h100.txt, one H100: whole 0.97 / 0.99x cuSOLVER's own call at
# n = 6000 / 10000 against 0.88 / 0.89x with leaves of 4096, which win from 20000 up: 1.00-1.07x
# at 20000 ... 40000). Real dtypes: leaves of at most 2048 rows, each one potrf_tiles launch
# (kernels.TILE_POTRF), beat cuSOLVER at every order measured (one H100, 2026-11-27,
# benchmarks/gpu_potrf_tiles_h100.txt, x torch.linalg.cholesky against cuSOLVER's x): float64
# 1.30 / 1.26 / 1.36 / 1.30 / 1.23 / 1.19 against 1.13 / 1.16 / 1.14 / 1.15 / 1.14 / 1.13 at
# 3072 / 4096 / 6144 / 8192 / 12288 / 16384 rows; float32 1.30 / 1.30 / 1.19 / 1.19 against
# 1.10 / 1.10 / 1.09 / 1.08 at 6144 ... 16384, but 1.08 / 1.10 against 1.14 / 1.14 at 3072 /
# 4096. The whole matrix is one leaf (tiles) up to 2560 rows (float64 1.37 against 1.31x with
# leaves of 2048), in float32 up to 4096 (cuSOLVER from 2561). SYRK leaves of 512 (GEMM and a
# triangle update), but C of 2048 rows and more is one cuBLAS SYRK for real dtypes, which is
# then the faster (one H100, 2026-11-27, µs, n = k, tricov's recursion / cuBLAS SYRK / GEMM:
# float64 1024 58 / 66 / 60, 2048 252 / 168 / 304, 4096 1484 / 1224 / 2671; float32 1024
# 75 / 79 / 72, 2048 301 / 226 / 353, 4096 1681 / 1609 / 2701), also for few columns (float64
# n = 4096, k = 128 / 512: 223 / 269 -> 128 / 199 µs); with it POTRF took float64 1.31 / 1.32 /
# 1.47 / 1.40 / 1.19x torch at 3072 / 4096 / 6144 / 8192 / 16384 rows
# (benchmarks/gpu_potrf_tiles_h100.txt). From 8192 rows the recursion's GEMMs win again
# (float64 n = k = 8192 / 16384: 11288 / 91967 µs against cuBLAS SYRK's 11534 / 101035; DPOTRF
# 32768 had dropped from 1.14 to 1.08x torch), so C of 8192 rows and more splits (syrk_split).
# With float32 products as split-TF32 GEMMs (tricov._precision), float32 4096 recurses too: its
# TRSM got faster, and three sweeps on one H100 (2026-11-27, session 26,
# benchmarks/gpu_potrf_cut.py) gave 13.92 / 14.06 / 14.6 TFLOP/s on tile leaves of 2048 against
# 13.66 / 13.41 / 13.89 whole (cuSOLVER), while at 3072 and 3584 the whole matrix stayed ahead
# (8.91 against 8.74, 11.85 against 11.18); orders between 3584 and 4096 were not measured.
# Float32 runs right-looking above 2304 rows: panels of at most 512 columns, each one
# potrf_tiles launch that factors the panel's leaf and solves the rows below it
# (CUDAExecutor.potrf_panel), then cuBLAS's SYRK, down to the last leaf of 2048. Against the
# leaves of 2048 with a TRSM between them (and cuSOLVER whole at 2561-3584), one H100,
# 2026-11-27, x torch over two interleaved runs (benchmarks/gpu_potrf_panels_h100.txt):
# 2560 1.31-1.37 -> 1.54-1.61, 3072 1.14-1.22 -> 1.35-1.43, 3584 1.16-1.23 -> 1.28-1.35, 4096
# 1.16-1.25 -> 1.24-1.33, 6144 1.40-1.41 -> 1.45-1.47; the whole matrix by tiles stays ahead
# at 2304 (1.44-1.48 against 1.38-1.45). Widths of 384 / 640 / 768 were within noise or
# slower, and so was every panel width in float64 from 3584 rows (DPOTRF 4096 1.32-1.34 ->
# 1.15-1.24x), which keeps its TRSMs.
# (potrf, potrf_whole, potrf_panel)
_GPU_POTRF = {"float32": (2048, 2304, 512), "float64": (2048, 2560, 0)}
_GPU_SYRK = {"float32": (2048, 8192), "float64": (2048, 8192)}  # (syrk_whole, syrk_split)
_GPU_BLOCK = {"float32": 128, "float64": 128, "complex64": 128, "complex128": 64}
# POTRI (TRTRI, LAUUM) of real dtypes on the GPU: leaves of 256 (cuSOLVER's TRTRI, LAUUM as a
# cuBLAS TRMM) beat the shared-memory kernels' 128 once TRMMs run staged (backends/staged.py):
# at n = 1024 ... 16384 on one H100 (benchmarks/gpu_potri_leaves_h100.txt), 256 was the fastest
# of 128, 256, 512 and 128/256 for both float32 and float64, 3-20% ahead of 128.
_GPU_INVERSE = {"float32": 256, "float64": 256}
# Float64 TRTRI leaves of 128 (the shared-memory kernel, 1.4x faster than before at 128 since
# commit 8f51cca): three runs of benchmarks/gpu_potri_leaves.py on one H100 put TRTRI / LAUUM
# leaves of 128 / 256 ahead of 256 / 256 at every n, by 3-15% at 1024, 6-7% at 2048, 0-5% at
# 4096, 2-3% at 8192 and 0.5% at 16384 (benchmarks/gpu_potri_leaves_h100.txt). Float32 keeps 256.
_GPU_TRTRI = {"float64": 128}
_GPU_TRSM = {"float32": 512}
_GPU_TRSM_NARROW = {"float64": 512}
_GPU_TRSM_MIN = {"float32": 128, "float64": 128}
_DEFAULTS: dict[str, dict[str, LeafSizes]] = {
    "cpu": {name: LeafSizes(trsm=128, trmm=256, syrk=256, potrf=256, trtri=512, lauum=512,
                            trsm_rhs=1024, trmm_rhs=256)
            for name in ("float32", "float64", "complex64", "complex128")},
    "gpu": {name: LeafSizes(trsm=_GPU_TRSM.get(name, 256), trmm=128, syrk=512,
                            potrf=_GPU_POTRF.get(name, (4096, 16384, 0))[0],
                            trtri=_GPU_TRTRI.get(name, _GPU_INVERSE.get(name, block)),
                            lauum=_GPU_INVERSE.get(name, block),
                            potrf_whole=_GPU_POTRF.get(name, (4096, 16384, 0))[1],
                            potrf_panel=_GPU_POTRF.get(name, (4096, 16384, 0))[2],
                            syrk_whole=_GPU_SYRK.get(name, (_NEVER, _NEVER))[0],
                            syrk_split=_GPU_SYRK.get(name, (_NEVER, _NEVER))[1],
                            trsm_narrow=_GPU_TRSM_NARROW.get(name, 0),
                            trsm_min=_GPU_TRSM_MIN.get(name, 0))
            for name, block in _GPU_BLOCK.items()},
    # Batched GPU: the register kernels' largest order (kernels/cuda/batched_small.cu; 16 for
    # complex dtypes, whose 32 x 32 tiles would not fit in registers). Real dtypes: LAUUM leaves
    # of 64 and TRMM and SYRK leaves on the tile kernels (kernels/cuda/batched_tile.cu). On one
    # H100, batch 10240, C order (benchmarks/gpu_batched_ab.py leaves, 2026-11-22, ms at leaves
    # of 64 / 128 / 256): float64 TRMM n = 128 1.84 / 1.36 / 1.36, n = 256 10.65 / 8.19 / 7.47;
    # SYRK (beta 1) n = 128 1.63 / 1.52 / 1.51, n = 256 8.21 / 7.83 / 9.05; float32 TRMM n = 128
    # 1.23 / 1.09 / 1.09, n = 256 7.29 / 6.81 / 6.93; SYRK n = 128 1.16 / 1.24 / 1.24, n = 256
    # 6.01 / 6.33 / 7.51. (Float32 TRMM leaves of 32 on the register kernels took 1.48 / 8.25 at
    # n = 128 / 256, commit 8115cbb.)
    "batched_gpu": {**{name: LeafSizes(**dict.fromkeys(OPERATIONS, 16))
                       for name in ("complex64", "complex128")},
                    "float32": LeafSizes(trsm=32, trmm=128, syrk=64, potrf=32, trtri=32,
                                         lauum=64),
                    "float64": LeafSizes(trsm=32, trmm=256, syrk=128, potrf=32, trtri=32,
                                         lauum=64)},
}

_lock = threading.Lock()
_overrides: dict[tuple[str, str], LeafSizes] = {}
#: The tuned table, read from the cache directory on first use in the process (and again after
#: :func:`store_tuned`); None until then.
_tuned: dict[tuple[str, str], LeafSizes] | None = None


def cache_dir() -> Path:
    """The directory where tricov keeps tuned settings."""
    env = os.environ.get("TRICOV_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "tricov"


def _tuned_file() -> Path:
    return cache_dir() / "leaf_sizes.json"


def _load_tuned() -> dict[tuple[str, str], LeafSizes]:
    global _tuned
    if _tuned is None:
        table: dict[tuple[str, str], LeafSizes] = {}
        try:
            raw = json.loads(_tuned_file().read_text())
        except (OSError, ValueError):
            raw = {}
        names = {f.name for f in fields(LeafSizes)}
        for backend, per_dtype in raw.get("leaf_sizes", {}).items():
            for dtype, sizes in per_dtype.items():
                base = _DEFAULTS.get(backend, {}).get(dtype, LeafSizes())
                good = {k: int(v) for k, v in sizes.items() if k in names and int(v) >= 1}
                table[(backend, dtype)] = replace(base, **good)
        _tuned = table
    return _tuned


@functools.lru_cache(maxsize=64)
def _name(dtype: Any) -> str:
    return np.dtype(dtype).name


def leaf_sizes(backend: str, dtype: np.dtype) -> LeafSizes:
    """Leaf sizes in force for ``backend`` ("cpu", "gpu") and ``dtype``."""
    key = (backend, _name(dtype))
    override = _overrides.get(key)
    if override is not None:
        return override
    tuned = _tuned  # read once per process: a lookup on every call of every operation
    if tuned is None:
        with _lock:
            tuned = _load_tuned()
    if key in tuned:
        return tuned[key]
    sizes = _DEFAULTS.get(backend, {}).get(key[1])
    return sizes if sizes is not None else LeafSizes()


def set_leaf_size(backend: str, op: str, dtype: np.dtype, size: int | None) -> None:
    """Override the leaf size of ``op`` for this process (``None`` removes all overrides).

    Setting TRSM's leaf also drops its leaves for narrow B and for B of few rows
    (``trsm_narrow``, ``trsm_min``), and setting SYRK's drops ``syrk_whole``: the size set is
    then the leaf on every shape, unless those are set after it.

    Parameters
    ----------
    backend : {"cpu", "gpu"}
    op : str
        One of :data:`OPERATIONS` or :data:`CROSSOVERS`.
    dtype : dtype
    size : int or None
        At least 1 for a leaf size; at least 0 for a crossover (0 turns ``potrf_panel``,
        ``trsm_narrow`` and ``trsm_min`` off).
    """
    from .batched import _replay

    _replay.clear()  # a recorded batched call ran under the sizes before
    key = (backend, np.dtype(dtype).name)
    if size is None:
        with _lock:
            _overrides.pop(key, None)
        return
    if op not in OPERATIONS + CROSSOVERS:
        raise ValueError(f"op must be one of {OPERATIONS + CROSSOVERS}, got {op!r}")
    least = 1 if op in OPERATIONS else 0
    if int(size) < least:
        raise ValueError(f"{op} must be at least {least}, got {size}")
    current = leaf_sizes(backend, dtype)
    with _lock:
        extra = ({"trsm_narrow": 0, "trsm_min": 0} if op == "trsm" else
                 {"syrk_whole": _NEVER} if op == "syrk" else {})
        _overrides[key] = replace(current, **{op: int(size)}, **extra)


def store_tuned(backend: str, dtype: np.dtype, sizes: dict[str, int], info: dict) -> Path:
    """Merge measured leaf sizes (some or all operations) into the cache file; return its path."""
    global _tuned
    path = _tuned_file()
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError):
        raw = {}
    per_backend = raw.setdefault("leaf_sizes", {}).setdefault(backend, {})
    per_backend.setdefault(np.dtype(dtype).name, {}).update(sizes)
    raw.setdefault("machine", {})[backend] = info
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(raw, indent=2, sort_keys=True))
    tmp.replace(path)
    with _lock:
        _tuned = None
    return path
