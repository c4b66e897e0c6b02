"""``tricov demo``: simulate a Matérn field, estimate its parameters (dense and TLR), krige it.

Prints the true and estimated parameters, log-likelihoods and times in a Rich table and saves a
PNG with the observations, the kriged surface and its standard deviation.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from .fit import FitResult, fit
from .kriging import predict
from .likelihood import DEFAULT_TOL, DEVICES, loglik, on_device, tlr_api
from .simulate import simulate

__all__ = ["add_arguments", "main", "parser", "run"]


def parser() -> argparse.ArgumentParser:
    """The command line of the demo."""
    p = argparse.ArgumentParser(
        prog="tricov demo",
        description="Simulate a Gaussian random field with a Matérn covariance, estimate its "
        "parameters by maximum likelihood (dense Cholesky and tile low-rank), and krige it.")
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the options of this command to ``p``."""
    p.add_argument("--n", type=int, default=2000, help="number of locations (default 2000)")
    p.add_argument("--method", choices=("dense", "tlr", "both"), default="both",
                   help="likelihood method (default both; TLR is skipped if unavailable)")
    p.add_argument("--device", choices=DEVICES, default="cpu",
                   help="where the likelihoods and kriging run (gpu: CuPy's current device)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--out", default="tricov-demo.png", help="PNG to write")
    p.add_argument("--sigma2", type=float, default=1.0, help="true variance (default 1)")
    p.add_argument("--beta", type=float, default=0.1, help="true range (default 0.1)")
    p.add_argument("--nu", type=float, default=0.5, help="true smoothness (default 0.5)")
    p.add_argument("--tol", type=float, default=DEFAULT_TOL, help="TLR accuracy")
    p.add_argument("--grid", type=int, default=120, help="prediction grid points per side")
    p.add_argument("--quiet", action="store_true", help="no per-evaluation progress")


def _plot(path: Path, x: np.ndarray, z: np.ndarray, grid: np.ndarray, mean: np.ndarray,
          sd: np.ndarray, title: str) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    side = round(math.sqrt(grid.shape[0]))
    extent = (0.0, 1.0, 0.0, 1.0)
    fig = Figure(figsize=(15, 4.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 3)
    lim = float(np.max(np.abs(z)))
    s = axes[0].scatter(x[:, 0], x[:, 1], c=z, s=6, cmap="RdBu_r", vmin=-lim, vmax=lim)
    axes[0].set_title(f"observations (n={len(z)})")
    fig.colorbar(s, ax=axes[0])
    im = axes[1].imshow(mean.reshape(side, side), origin="lower", extent=extent, cmap="RdBu_r",
                        vmin=-lim, vmax=lim)
    axes[1].set_title("kriging mean")
    fig.colorbar(im, ax=axes[1])
    im = axes[2].imshow(sd.reshape(side, side), origin="lower", extent=extent, cmap="viridis",
                        interpolation="bilinear")
    axes[2].set_title("kriging standard deviation")
    fig.colorbar(im, ax=axes[2])
    for ax in axes:
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
    fig.suptitle(title)
    fig.savefig(path, dpi=110)


def _summary(truth: dict[str, float], ll_true: float, fits: dict[str, FitResult],
             t_sim: float) -> Table:
    t = Table(title="Matérn maximum likelihood")
    t.add_column("")
    t.add_column("true", justify="right")
    for name in fits:
        t.add_column(f"{name} estimate", justify="right")
    for k, v in truth.items():
        t.add_row(k, f"{v:.5g}", *(f"{r.params[k]:.5g}" for r in fits.values()))
    t.add_section()
    t.add_row("log-likelihood", f"{ll_true:.4f}", *(f"{r.loglik:.4f}" for r in fits.values()))
    t.add_row("evaluations", "", *(str(r.n_evals) for r in fits.values()))
    t.add_row("seconds / evaluation", "", *(f"{r.time_per_eval:.3g}" for r in fits.values()))
    t.add_row("seconds (fit)", f"{t_sim:.3g} (simulation)",
              *(f"{r.time_total:.3g}" for r in fits.values()))
    return t


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; returns the exit status."""
    return run(parser().parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Run the command on parsed arguments; returns the exit status."""
    console = Console()
    if args.device == "gpu":
        try:
            on_device(np.zeros(1), "gpu")
        except ImportError as exc:
            console.print(f"[red]{exc}[/red]")
            return 1
    if args.n < 10:
        console.print(f"[red]--n must be at least 10, got {args.n}[/red]")
        return 2
    methods = ["dense", "tlr"] if args.method == "both" else [args.method]
    if "tlr" in methods:
        try:
            tlr_api()
        except ImportError as exc:
            if args.method == "tlr":
                console.print(f"[red]{exc}[/red]")
                return 1
            console.print("[yellow]tricov.tlr is not available: TLR skipped[/yellow]")
            methods.remove("tlr")
    truth = {"sigma2": args.sigma2, "beta": args.beta, "nu": args.nu}
    params = tuple(truth.values())

    t0 = time.perf_counter()
    x, z = simulate(args.n, params, seed=args.seed)
    t_sim = time.perf_counter() - t0
    console.print(f"Simulated a Matérn field at {args.n} jittered-grid locations in "
                  f"{t_sim:.2f} s (sigma2={args.sigma2}, beta={args.beta}, nu={args.nu}).",
                  soft_wrap=True)
    ll_true = loglik(x, z, params, device=args.device)
    fits: dict[str, FitResult] = {}
    for method in methods:
        console.rule(f"{method} fit")
        fits[method] = fit(x, z, method=method, tol=args.tol, device=args.device,
                           progress=not args.quiet, console=console)
    console.print(_summary(truth, ll_true, fits, t_sim))

    best = fits["dense"] if "dense" in fits else next(iter(fits.values()))
    side = args.grid
    g = (np.arange(side) + 0.5) / side
    grid = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)
    t0 = time.perf_counter()
    mean, var = predict(x, z, grid, best, method=best.method, tol=args.tol,
                        device=args.device)
    t_pred = time.perf_counter() - t0
    out = Path(args.out)
    est = ", ".join(f"{k}={best.params[k]:.3g}" for k in truth)
    _plot(out, x, z, grid, mean, np.sqrt(var),
          f"Matérn field, n={args.n}: true sigma2={args.sigma2}, beta={args.beta}, "
          f"nu={args.nu}; estimated ({best.method}) {est}")
    console.print(f"Kriged {grid.shape[0]} grid points in {t_pred:.2f} s; figure written to "
                  f"[bold]{out}[/bold]", soft_wrap=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
