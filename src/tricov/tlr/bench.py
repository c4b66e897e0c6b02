"""Benchmark of the TLR Cholesky on a Matérn covariance of points in the unit square (or cube).

:func:`run` builds ``n`` points (a jittered grid, Morton-ordered), compresses and factors the
Matérn covariance matrix with TLR, estimates the achieved accuracy ``||A - L L^H||_F / ||A||_F``
without forming A, and, where the dense matrix fits in memory, times a dense Cholesky (SciPy's
LAPACK, or tricov's own :func:`tricov.potrf`) on the same matrix. ``tricov bench tlr-potrf``
calls it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .cholesky import potrf, potrf_from_kernel
from .matrix import TLRMatrix, default_tile_size
from .ordering import morton_order

__all__ = ["accuracy", "jittered_points", "matern_kernel", "run"]


def matern_kernel(nu: float = 1.5, length: float = 0.1, variance: float = 1.0) -> Any:
    """Matérn covariance for ``nu`` in {0.5, 1.5, 2.5} (closed forms), a compiled kernel.

    ``k(d) = variance * exp(-d/l)`` (0.5), ``variance (1 + s) exp(-s)``, ``s = sqrt(3) d / l``
    (1.5), ``variance (1 + s + s^2/3) exp(-s)``, ``s = sqrt(5) d / l`` (2.5): the
    :func:`tricov.geostat.matern` kernel with range ``beta = l / sqrt(2 nu)``, whose compiled
    form the TLR construction evaluates tile by tile in parallel.
    """
    from ..geostat.kernels import matern

    if nu not in (0.5, 1.5, 2.5):
        raise ValueError(f"nu must be 0.5, 1.5 or 2.5, got {nu!r}")
    return matern(variance, length / math.sqrt(2.0 * nu), nu)


def jittered_points(n: int, dim: int = 2, seed: Any = 0) -> np.ndarray:
    """``n`` points of a regular grid in ``[0, 1]^dim``, each moved by up to 0.4 of the spacing
    (so no two are closer than 0.2 spacing), in Morton order."""
    rng = np.random.default_rng(seed)
    side = math.ceil(n ** (1.0 / dim) - 1e-9)
    axes = np.meshgrid(*[np.arange(side, dtype=np.float64)] * dim, indexing="ij")
    pts = np.stack(axes, axis=-1).reshape(-1, dim)[:n]
    pts = (pts + 0.5 + 0.4 * rng.uniform(-1.0, 1.0, pts.shape)) / side
    return pts[morton_order(pts)]


def _available_bytes() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 << 30


def _kernel_times(kernel: Callable[[Any, Any], Any], pts: np.ndarray, nugget: float,
                  tile: int, X: np.ndarray) -> tuple[np.ndarray, float]:
    """``A X`` and ``||A||_F`` from lower-triangle panels of ``A = kernel + nugget I``."""
    n = pts.shape[0]
    Y = np.zeros_like(X)
    norm2 = 0.0
    for c0 in range(0, n, tile):
        c1 = min(n, c0 + tile)
        d = kernel(pts[c0:c1], pts[c0:c1])
        d[np.diag_indices(c1 - c0)] += nugget
        Y[c0:c1] += d @ X[c0:c1]
        norm2 += float((d * d).sum())
        for r0 in range(c1, n, max(tile, (1 << 22) // max(1, c1 - c0))):
            r1 = min(n, r0 + max(tile, (1 << 22) // max(1, c1 - c0)))
            b = kernel(pts[r0:r1], pts[c0:c1])
            Y[r0:r1] += b @ X[c0:c1]
            Y[c0:c1] += b.T @ X[r0:r1]
            norm2 += 2.0 * float((b * b).sum())
    return Y, math.sqrt(norm2)


def accuracy(T: TLRMatrix, kernel: Callable[[Any, Any], Any], pts: np.ndarray, nugget: float,
             samples: int = 10, seed: Any = 0) -> float:
    """Randomized estimate of ``||A - L L^H||_F / ||A||_F`` for a factored T.

    ``E ||E w||^2 = ||E||_F^2`` for a Gaussian vector ``w``: with ``p`` samples the estimate
    ``||E W||_F / sqrt(p)`` has a relative spread of about ``1 / sqrt(2p)``. ``A W`` is applied
    from kernel panels (the lower triangle, used twice); ``||A||_F`` is exact.
    """
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((T.n, samples))
    AW, anorm = _kernel_times(kernel, pts, nugget, T.tile_size, W)
    LLW = T.matvec(T.matvec(W, trans=True))
    return float(np.linalg.norm(AW - LLW) / math.sqrt(samples) / anorm)


def run(n: int, tol: float = 1e-8, tile_size: int | None = None, *, nu: float = 1.5,
        length: float = 0.1, nugget: float = 0.0, dim: int = 2, mode: str = "LL",
        algorithm: str = "left", method: str | None = None, dense: bool | None = None,
        dense_impl: str = "scipy", dense_threads: int | None = None,
        accuracy_samples: int = 10, threads: int | None = None, seed: Any = 0,
        progress: bool = False) -> dict[str, Any]:
    """Time TLR compression + Cholesky of a Matérn matrix; compare with a dense Cholesky.

    Parameters
    ----------
    n, tol, tile_size
        Matrix order, TLR accuracy, tile size (default :func:`~tricov.tlr.default_tile_size`).
    nu, length, nugget, dim
        Matérn smoothness (0.5, 1.5, 2.5), range, diagonal nugget, dimension of the points.
    mode : {'LL', 'DL'}
        'LL': :meth:`TLRMatrix.from_kernel` then :func:`~tricov.tlr.potrf` (the faster on the
        CPU: compiled ACA evaluates a fraction of the entries); 'DL':
        :func:`~tricov.tlr.potrf_from_kernel` (compression inside the factorization, every
        entry generated).
    algorithm : {'left', 'right'}
        LL only: the potrf algorithm.
    method : {'rsvd', 'aca', 'svd'}, optional
        Tile compression; default: ACA for LL (the kernel is compiled), 'rsvd' for DL.
    dense : bool, optional
        Run the dense Cholesky; default: if the matrix takes less than 70% of the available
        memory.
    dense_impl : {'scipy', 'tricov'}
        The dense Cholesky: ``scipy.linalg.cholesky`` (LAPACK ``dpotrf`` of the OpenBLAS that
        SciPy ships) or :func:`tricov.potrf`, both in place on the same F-ordered matrix.
    dense_threads : int, optional
        BLAS threads of the dense Cholesky only; default: as ``threads``. (SciPy 1.16's
        OpenBLAS 0.3.30 crashes in ``dpotrf`` for n >= 20000 on two threads; one thread works.)
    accuracy_samples : int
        Gaussian vectors of the accuracy estimate (0 skips it: it costs one kernel pass).
    threads : int, optional
        BLAS threads for the whole run (every BLAS library loaded, through threadpoolctl);
        default: leave them as they are.
    seed, progress

    Returns
    -------
    dict
        ``n, tol, tile_size, mode, algorithm, method, kernel, time_compress`` (LL; None for DL,
        where compression happens inside the factorization), ``time_factor, time_total,
        max_rank, mean_rank, nbytes`` (the factor), ``nbytes_matrix`` (LL: the compressed A),
        ``accuracy`` (estimated ``||A - L L^H||_F / ||A||_F``), ``accuracy_samples``,
        ``dense_impl``, ``dense_threads``, ``dense_time`` (in place), ``dense_generate_time``,
        ``dense_nbytes`` (``n^2`` elements), ``speedup`` (``dense_time / time_total``),
        ``memory_ratio`` (``nbytes / dense_nbytes``), ``blas_threads`` (the most threads of any
        BLAS library). Entries that were not measured are None. Timings are wall-clock seconds.

    Notes
    -----
    NumPy and SciPy wheels each bundle their own OpenBLAS; the TLR code calls both (NumPy for
    the low-rank algebra, SciPy's through tricov's dense kernels), and the idle threads of
    one spin while the other works. On a busy machine, compare ``threads=1`` runs too.
    """
    if mode not in ("DL", "LL"):
        raise ValueError(f"mode must be 'DL' or 'LL', got {mode!r}")
    if dense_impl not in ("scipy", "tricov"):
        raise ValueError(f"dense_impl must be 'scipy' or 'tricov', got {dense_impl!r}")
    import scipy.linalg  # noqa: F401 - load SciPy's BLAS now, so that the limit reaches it
    from threadpoolctl import threadpool_info, threadpool_limits

    with threadpool_limits(limits=threads, user_api="blas"):
        out = _run(n, tol, tile_size, nu, length, nugget, dim, mode, algorithm, method, dense,
                   dense_impl, threads if dense_threads is None else dense_threads,
                   accuracy_samples, seed, progress)
        out["blas_threads"] = max((p["num_threads"] for p in threadpool_info()
                                   if p.get("user_api") == "blas"), default=None)
    return out


def _run(n: int, tol: float, tile_size: int | None, nu: float, length: float, nugget: float,
         dim: int, mode: str, algorithm: str, method: str | None, dense: bool | None,
         dense_impl: str, dense_threads: int | None, accuracy_samples: int, seed: Any,
         progress: bool) -> dict[str, Any]:
    pts = jittered_points(n, dim, seed)
    kernel = matern_kernel(nu, length)
    if tile_size is None:
        tile_size = default_tile_size(n)
    out: dict[str, Any] = {"n": n, "tol": tol, "tile_size": tile_size, "mode": mode,
                           "algorithm": algorithm if mode == "LL" else "left",
                           "method": None,
                           "kernel": f"matern nu={nu} length={length} nugget={nugget} "
                                     f"dim={dim}, jittered grid, Morton order"}
    t0 = time.perf_counter()
    if mode == "LL":
        T = TLRMatrix.from_kernel(kernel, pts, tile_size=tile_size, tol=tol, method=method,
                                  nugget=nugget, seed=seed, progress=progress)
        t1 = time.perf_counter()
        out["nbytes_matrix"] = T.nbytes
        potrf(T, algorithm=algorithm, seed=seed, progress=progress)
        t2 = time.perf_counter()
        out["time_compress"], out["time_factor"] = t1 - t0, t2 - t1
    else:
        T = potrf_from_kernel(kernel, pts, tile_size=tile_size, tol=tol,
                              method=method or "rsvd", nugget=nugget, seed=seed,
                              progress=progress)
        t2 = time.perf_counter()
        out["nbytes_matrix"] = None
        out["time_compress"], out["time_factor"] = None, t2 - t0
    out["time_total"] = t2 - t0
    out["method"] = T.method
    out["max_rank"], out["mean_rank"], out["nbytes"] = T.max_rank, T.mean_rank, T.nbytes
    out["accuracy_samples"] = accuracy_samples
    out["accuracy"] = (accuracy(T, kernel, pts, nugget, accuracy_samples, seed)
                       if accuracy_samples else None)
    del T
    out["dense_nbytes"] = n * n * 8
    if dense is None:
        dense = out["dense_nbytes"] < 0.7 * _available_bytes()
    out["dense_time"] = out["dense_generate_time"] = None
    out["dense_impl"], out["dense_threads"] = (dense_impl, dense_threads) if dense else (None, None)
    if dense:
        out["dense_generate_time"], out["dense_time"] = _dense_cholesky(
            kernel, pts, nugget, dense_impl, dense_threads)
    out["speedup"] = None if out["dense_time"] is None else out["dense_time"] / out["time_total"]
    out["memory_ratio"] = out["nbytes"] / out["dense_nbytes"]
    return out


def _dense_cholesky(kernel: Callable, pts: np.ndarray, nugget: float, impl: str,
                    threads: int | None) -> tuple[float, float]:
    """Generate the dense matrix and factor it in place; (generation, factorization) seconds."""
    import scipy.linalg
    from threadpoolctl import threadpool_limits

    from ..dense import potrf as dense_potrf

    n = len(pts)
    t0 = time.perf_counter()
    A = np.empty((n, n))
    step = max(1, (1 << 22) // max(1, n))
    for r0 in range(0, n, step):
        A[r0:r0 + step] = kernel(pts[r0:r0 + step], pts)
    A[np.diag_indices(n)] += nugget
    t1 = time.perf_counter()
    # A is symmetric: A.T is the F-ordered view that both factor in place without a copy.
    with threadpool_limits(limits=threads, user_api="blas"):
        if impl == "scipy":
            scipy.linalg.cholesky(A.T, lower=True, overwrite_a=True, check_finite=False)
        else:
            dense_potrf(A.T, uplo="L")
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def main(argv: Any = None) -> int:
    """``tricov bench tlr-potrf --n N [N ...] --tol TOL ...``: one :func:`run` per ``n``, a table
    of its numbers (and ``--json FILE``)."""
    import argparse
    import json

    from rich.console import Console
    from rich.table import Table

    p = argparse.ArgumentParser(prog="tricov bench tlr-potrf", description=__doc__.split("\n")[0])
    p.add_argument("--ops", nargs="+", default=["potrf"], choices=["potrf"])
    p.add_argument("--n", type=int, nargs="+", default=[20000])
    p.add_argument("--tol", type=float, default=1e-8)
    p.add_argument("--tile-size", type=int, default=None,
                   help="default: tricov.tlr.default_tile_size(n)")
    p.add_argument("--nu", type=float, default=1.5, choices=(0.5, 1.5, 2.5))
    p.add_argument("--length", type=float, default=0.1)
    p.add_argument("--nugget", type=float, default=0.0)
    p.add_argument("--mode", choices=("LL", "DL"), default="LL")
    p.add_argument("--method", choices=("rsvd", "aca", "svd"), default=None)
    p.add_argument("--dense", choices=("auto", "yes", "no"), default="auto",
                   help="time a dense Cholesky too (auto: where it fits in memory)")
    p.add_argument("--dense-impl", choices=("scipy", "tricov"), default="scipy",
                   help="the dense Cholesky: SciPy's LAPACK or tricov.potrf")
    p.add_argument("--dense-threads", type=int, default=None,
                   help="BLAS threads of the dense Cholesky (default: --threads)")
    p.add_argument("--threads", type=int, default=None, help="BLAS threads")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    dense = {"auto": None, "yes": True, "no": False}[args.dense]
    rows = [run(n, args.tol, args.tile_size, nu=args.nu, length=args.length,
                nugget=args.nugget, mode=args.mode, method=args.method, dense=dense,
                dense_impl=args.dense_impl, dense_threads=args.dense_threads,
                threads=args.threads) for n in args.n]
    table = Table(title=f"TLR Cholesky, Matérn nu={args.nu}, tol={args.tol:g}")
    table.add_column("")
    for r in rows:
        table.add_column(f"n={r['n']}", justify="right")
    for key in rows[0]:
        table.add_row(key, *(f"{r[key]:.4g}" if isinstance(r[key], float) else str(r[key])
                             for r in rows))
    Console().print(table)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1, default=str)
    return 0
