"""Timings of the geostatistics workloads: kernel evaluation, one log-likelihood, one fit.

``python -m tricov.geostat.bench kernel``: nanoseconds per Matérn element, tricov against
SciPy's ``kv`` formula, on one tile of scaled distances.

``python -m tricov.geostat.bench loglik --n 20000 [--method dense|tlr] [--peer sklearn|dense]``:
one log-likelihood at random observations (the cost does not depend on them), split into its
stages: assembly and Cholesky factorization (dense), or compression and TLR factorization
(tlr), then the solve. ``--peer`` computes the same log-likelihood on the same data in the same
run by scikit-learn's ``GaussianProcessRegressor`` (``log_marginal_likelihood_value_`` of a
fit without optimizer) or by tricov's dense path (for ``--method tlr``, where the dense matrix
fits), and reports its time, the speed-up and the relative difference of the two values.

``python -m tricov.geostat.bench fit --n 50000 --method tlr``: a full maximum-likelihood fit of a
simulated field (simulated exactly when its dense matrix fits in ``--dense-max`` points, else
with the TLR factor).

Timings are wall-clock seconds of one run on this machine; ``--json`` writes them to a file;
``--profile`` adds the tricov functions that take the most time (cumulative, from cProfile).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from scipy.special import gamma, kv

from .. import dense
from .covariance import covariance, default_workers
from .distance import euclidean
from .fit import fit
from .kernels import matern
from .likelihood import DEFAULT_TOL, Terms, TLREvaluator, tlr_tile_size
from .ordering import jittered_grid, morton_order
from .simulate import simulate

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    """The command line of the benchmark."""
    p = argparse.ArgumentParser(prog="python -m tricov.geostat.bench",
                                description="Time the geostatistics workloads of tricov.")
    p.add_argument("what", choices=("kernel", "loglik", "fit"))
    p.add_argument("--n", type=int, default=None,
                   help="locations (default: 4000 kernel, 20000 loglik, 5000 fit)")
    p.add_argument("--method", choices=("dense", "tlr"), default="dense")
    p.add_argument("--sigma2", type=float, default=1.0)
    p.add_argument("--beta", type=float, default=0.1)
    p.add_argument("--nu", type=float, default=0.5)
    p.add_argument("--tol", type=float, default=DEFAULT_TOL, help="TLR accuracy")
    p.add_argument("--tile-size", type=int, default=None)
    p.add_argument("--workers", type=int, default=None, help="assembly threads")
    p.add_argument("--dense-max", type=int, default=20000,
                   help="largest n simulated exactly for 'fit' (dense memory 8 n^2 bytes)")
    p.add_argument("--peer", choices=("none", "sklearn", "dense"), default="none",
                   help="loglik: also time scikit-learn or tricov's dense path on the same data")
    p.add_argument("--peer-threads", type=int, default=1,
                   help="BLAS threads of the sklearn peer (default 1: the OpenBLAS 0.3.30 that "
                        "SciPy 1.16 ships crashes in dpotrf for n >= 20000 on two threads)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="write the timings to this file")
    p.add_argument("--profile", action="store_true",
                   help="loglik/fit: also list the tricov functions that take the most time "
                        "(cProfile, cumulative seconds; compiled kernels are timed in the "
                        "Python functions that run them)")
    return p


def _profile_rows(prof: Any, count: int = 20) -> list[dict[str, Any]]:
    """The ``count`` tricov functions of a cProfile run with the largest cumulative time."""
    import pstats

    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    rows = []
    for (path, line, name), (_, calls, tottime, cumtime, _) in stats.items():
        if "tricov" not in path.replace("\\", "/").split("/site-packages/")[-1]:
            continue
        module = path.replace("\\", "/").split("tricov/", 1)[-1].removesuffix(".py")
        rows.append({"function": f"{module.replace('/', '.')}.{name}:{line}", "calls": calls,
                     "cumulative_s": cumtime, "own_s": tottime})
    rows.sort(key=lambda r: -r["cumulative_s"])
    return rows[:count]


def _timed(f: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t0


def _kernel(args: argparse.Namespace) -> dict[str, Any]:
    n = args.n or 4000
    rng = np.random.default_rng(args.seed)
    x = jittered_grid(n, 2, rng)
    side = min(n, 1024)
    r = euclidean(x[:side], x[-side:]) / args.beta
    rows = {}
    for nu in sorted({0.5, 1.5, 2.5, args.nu, 0.8, 1.3, 3.7}):
        k = matern(1.0, 1.0, nu)
        k.prepare()
        t = np.asfortranarray(r)
        _, dt = _timed(lambda k=k, t=t: k.correlate(t))
        with np.errstate(all="ignore"):
            _, ds = _timed(lambda nu=nu: 2 ** (1 - nu) / gamma(nu) * r**nu * kv(nu, r))
        rows[nu] = {"tricov_ns": dt / r.size * 1e9, "scipy_ns": ds / r.size * 1e9}
    return {"elements": r.size, "per_nu": rows}


def _loglik(args: argparse.Namespace) -> dict[str, Any]:
    if args.peer == "dense" and args.method != "tlr":
        raise SystemExit("--peer dense compares the TLR path with the dense one: add --method tlr")
    n = args.n or 20000
    rng = np.random.default_rng(args.seed)
    x = jittered_grid(n, 2, rng)
    x = np.ascontiguousarray(x[morton_order(x)])
    z = rng.standard_normal(n)
    k = matern(args.sigma2, args.beta, args.nu)
    out: dict[str, Any] = {"n": n, "method": args.method}
    # warm-up outside the timings: compiled code loaded, the table of this nu built
    k.prepare()
    dense.potrf(np.asfortranarray(k(x[:64])))
    if args.method == "tlr":
        small = min(n, 600)
        TLREvaluator(x[:small], z[:small], tile_size=max(1, small // 3), tol=args.tol)(k)
        out.update(_tlr_loglik(k, x, z, args.tile_size or tlr_tile_size(n), args.tol))
    else:
        out.update(_dense_loglik(k, x, z, args.tile_size or 512, args.workers))
    if args.peer == "sklearn":
        peer = _sklearn_loglik(x, z, args.sigma2, args.beta, args.nu, args.peer_threads)
    elif args.peer == "dense":
        peer = _dense_loglik(k, x, z, 512, args.workers)
    else:
        return out
    out["peer"] = args.peer
    out["peer_total_s"], out["peer_loglik"] = peer["total_s"], peer["loglik"]
    out["speedup"] = peer["total_s"] / out["total_s"]
    out["loglik_rel_diff"] = abs(out["loglik"] - peer["loglik"]) / abs(peer["loglik"])
    return out


def _dense_loglik(k: Any, x: np.ndarray, z: np.ndarray, tile: int,
                  workers: int | None) -> dict[str, Any]:
    """tricov's dense path, stage by stage: assembly, potrf, one triangular solve."""
    n = len(z)
    workers = workers or default_workers()
    out: dict[str, Any] = {"tile_size": tile, "workers": workers}
    t0 = time.perf_counter()
    c, out["assembly_s"] = _timed(lambda: covariance(k, x, lower=True, tile_size=tile,
                                                    workers=workers))
    _, out["potrf_s"] = _timed(lambda: dense.potrf(c))
    w = np.array(z, order="F").reshape(-1, 1)
    _, out["solve_s"] = _timed(lambda: dense.trsm(c, w))
    terms = Terms(float(w[:, 0] @ w[:, 0]), 2.0 * float(np.sum(np.log(np.diagonal(c)))), n)
    out["potrf_gflops"] = n**3 / 3 / out["potrf_s"] / 1e9
    out["total_s"] = time.perf_counter() - t0
    out["loglik"] = terms.loglik()
    return out


def _tlr_loglik(k: Any, x: np.ndarray, z: np.ndarray, tile: int, tol: float) -> dict[str, Any]:
    """The TLR path, stage by stage: compression, TLR potrf, the solve and the logdet."""
    out: dict[str, Any] = {"tile_size": tile, "tol": tol}
    t0 = time.perf_counter()
    ev = TLREvaluator(x, z, tile_size=tile, tol=tol)
    tlr_matrix, tlr_potrf = ev._api
    mat, out["compress_s"] = _timed(lambda: tlr_matrix.from_kernel(k, ev.x, tile_size=tile,
                                                                   tol=tol))
    _, out["potrf_s"] = _timed(lambda: tlr_potrf(mat))
    sol, out["solve_s"] = _timed(lambda: np.asarray(mat.solve(ev.z)).reshape(-1))
    terms = Terms(float(ev.z @ sol), float(mat.logdet()), len(z))
    out["total_s"] = time.perf_counter() - t0
    out["loglik"] = terms.loglik()
    return out


def _sklearn_loglik(x: np.ndarray, z: np.ndarray, sigma2: float, beta: float, nu: float,
                    threads: int | None) -> dict[str, Any]:
    """scikit-learn's log marginal likelihood of the same Matérn model (no optimizer).

    sklearn's ``Matern(length_scale=l, nu)`` is a function of ``sqrt(2 nu) d / l``, so
    ``l = sqrt(2 nu) beta``; ``ConstantKernel`` carries ``sigma2``; its ``alpha`` (added to the
    diagonal) is set to the smallest positive double, no nugget.
    """
    try:
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import ConstantKernel, Matern
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SystemExit("--peer sklearn needs scikit-learn (pip install scikit-learn)") from exc
    from threadpoolctl import threadpool_limits

    kernel = ConstantKernel(sigma2, "fixed") * Matern(math.sqrt(2 * nu) * beta, "fixed", nu)
    gp = GaussianProcessRegressor(kernel, alpha=5e-324, optimizer=None, normalize_y=False,
                                  copy_X_train=False)
    with threadpool_limits(limits=threads, user_api="blas"):
        _, t = _timed(lambda: gp.fit(x, z))
    return {"total_s": t, "loglik": float(gp.log_marginal_likelihood_value_)}


def _fit(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    n = args.n or 5000
    params = (args.sigma2, args.beta, args.nu)
    sim = "dense" if n <= args.dense_max else "tlr"
    (x, z), t_sim = _timed(lambda: simulate(n, params, seed=args.seed, method=sim,
                                            tol=min(args.tol, 1e-9)))
    res = fit(x, z, method=args.method, tol=args.tol, tile_size=args.tile_size,
              workers=args.workers, console=console)
    return {"n": n, "method": args.method, "simulation": sim, "simulation_s": t_sim,
            "params": res.params, "loglik": res.loglik, "evaluations": res.n_evals,
            "seconds_per_evaluation": res.time_per_eval, "fit_s": res.time_total,
            "success": res.success}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one benchmark and print (and optionally store) its timings."""
    args = parser().parse_args(argv)
    console = Console()
    if args.what == "kernel":
        result = _kernel(args)
        t = Table(title=f"Matérn elements ({result['elements']} per run), ns per element")
        for col in ("nu", "tricov", "SciPy kv formula", "speed-up"):
            t.add_column(col, justify="right")
        for nu, r in result["per_nu"].items():
            t.add_row(f"{nu:g}", f"{r['tricov_ns']:.1f}", f"{r['scipy_ns']:.1f}",
                      f"{r['scipy_ns'] / r['tricov_ns']:.1f}x")
        console.print(t)
    else:
        prof = None
        if args.profile:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
        result = _loglik(args) if args.what == "loglik" else _fit(args, console)
        if prof is not None:
            prof.disable()
        t = Table(title=f"{args.what} (n={result['n']}, {args.method})")
        t.add_column("")
        t.add_column("value", justify="right")
        for key, value in result.items():
            shown = f"{value:.4g}" if isinstance(value, float) and math.isfinite(value) \
                else str(value)
            t.add_row(key, shown)
        console.print(t)
        if prof is not None:
            result["profile"] = _profile_rows(prof)
            pt = Table(title="where the time goes (tricov functions, cumulative)")
            for col in ("function", "calls", "cumulative s", "own s"):
                pt.add_column(col, justify="left" if col == "function" else "right")
            for r in result["profile"]:
                pt.add_row(r["function"], str(r["calls"]), f"{r['cumulative_s']:.3f}",
                           f"{r['own_s']:.3f}")
            console.print(pt)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"what": args.what, **result}, fh, indent=2, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
