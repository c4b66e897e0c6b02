"""``tricov fit DATA.csv``: maximum-likelihood kernel parameters for your own data.

DATA.csv has a header row and one row per observation: the coordinates (1 to 3 columns;
longitude and latitude in degrees with ``--metric great_circle``) and then the value. With
``--predict GRID.csv`` (a header row and the coordinates of the points to predict at), the
kriging means and variances are written as CSV to ``--output`` (default: standard output, the
report then goes to standard error).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from rich.console import Console

from .distance import EARTH_RADIUS_KM
from .fit import OPTIMIZERS, fit
from .kernels import FAMILIES
from .kriging import predict
from .likelihood import DEFAULT_TOL, DEVICES

__all__ = ["main", "parser", "read_table"]


def parser() -> argparse.ArgumentParser:
    """The command line of ``tricov fit``."""
    p = argparse.ArgumentParser(
        prog="tricov fit",
        description="Estimate covariance parameters of a zero-mean Gaussian field by maximum "
        "likelihood from a CSV of coordinates and values (header row; last column the value).")
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the options of this command to ``p``."""
    p.add_argument("data", help="CSV: coordinates (1-3 columns) then the value; header row")
    p.add_argument("--kernel", default="matern", choices=sorted(FAMILIES))
    p.add_argument("--metric", default="euclidean", choices=("euclidean", "great_circle"))
    p.add_argument("--radius", type=float, default=EARTH_RADIUS_KM,
                   help="sphere radius for great_circle (default 6371 km)")
    p.add_argument("--method", default="dense", choices=("dense", "tlr"))
    p.add_argument("--device", default="cpu", choices=DEVICES,
                   help="where the likelihood runs (gpu: CuPy's current device)")
    p.add_argument("--tol", type=float, default=DEFAULT_TOL, help="TLR accuracy")
    nug = p.add_mutually_exclusive_group()
    nug.add_argument("--nugget", type=float, default=0.0, help="fixed nugget (default 0)")
    nug.add_argument("--estimate-nugget", action="store_true", help="estimate the nugget")
    p.add_argument("--fix", action="append", default=[], metavar="NAME=VALUE",
                   help="hold a kernel parameter fixed (repeatable)")
    p.add_argument("--bounds", action="append", default=[], metavar="NAME=LOW:HIGH",
                   help="search bounds of a parameter (repeatable)")
    p.add_argument("--x0", action="append", default=[], metavar="NAME=VALUE",
                   help="starting value of a parameter (repeatable)")
    p.add_argument("--optimizer", default="cobyqa", choices=tuple(OPTIMIZERS))
    p.add_argument("--max-evals", type=int, default=400)
    p.add_argument("--demean", action="store_true",
                   help="subtract the sample mean first (the model has mean zero)")
    p.add_argument("--predict", metavar="GRID.csv",
                   help="krige at these coordinates (header row, coordinate columns)")
    p.add_argument("--output", default="-", help="CSV of predictions (default: stdout)")
    p.add_argument("--quiet", action="store_true", help="no per-evaluation progress")


def read_table(path: str | Path) -> tuple[list[str], np.ndarray]:
    """A numeric CSV with a header row: (column names, (rows, columns) float64 array)."""
    with open(path, newline="") as fh:
        rows = [r for r in csv.reader(fh) if r and any(c.strip() for c in r)]
    if len(rows) < 2:
        raise ValueError(f"{path}: needs a header row and at least one data row")
    header = [c.strip() for c in rows[0]]
    try:
        data = np.array([[float(c) for c in r] for r in rows[1:]], dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"{path}: non-numeric entry ({exc})") from exc
    if data.ndim != 2 or data.shape[1] != len(header):
        raise ValueError(f"{path}: every row must have {len(header)} columns like the header")
    return header, data


def _pairs(items: Sequence[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"{what} expects NAME=VALUE, got {item!r}")
        out[name.strip()] = value.strip()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``tricov fit``; returns the exit status."""
    return run(parser().parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Run the command on parsed arguments; returns the exit status."""
    to_stdout = args.predict is not None and args.output == "-"
    console = Console(stderr=to_stdout)
    try:
        header, data = read_table(args.data)
        if data.shape[1] < 2:
            raise ValueError(f"{args.data}: needs coordinate columns and a value column")
        x, z = data[:, :-1], data[:, -1]
        if args.demean:
            z = z - z.mean()
        fix = {k: float(v) for k, v in _pairs(args.fix, "--fix").items()}
        x0 = {k: float(v) for k, v in _pairs(args.x0, "--x0").items()}
        bounds = {}
        for k, v in _pairs(args.bounds, "--bounds").items():
            lo, sep, hi = v.partition(":")
            if not sep:
                raise ValueError(f"--bounds expects NAME=LOW:HIGH, got {k}={v}")
            bounds[k] = (float(lo), float(hi))
        console.print(f"{args.data}: {x.shape[0]} observations, coordinates "
                      f"{header[:-1]}, value {header[-1]!r}", soft_wrap=True)
        result = fit(x, z, kernel=args.kernel, bounds=bounds, x0=x0, fix=fix,
                     nugget=None if args.estimate_nugget else args.nugget, metric=args.metric,
                     radius=args.radius, method=args.method, tol=args.tol,
                     device=args.device, optimizer=args.optimizer, max_evals=args.max_evals,
                     progress=not args.quiet, console=console)
        if args.quiet:
            console.print(result.table())
        if args.predict is not None:
            gheader, grid = read_table(args.predict)
            mean, var = predict(x, z, grid, result, method=args.method, tol=args.tol,
                                device=args.device)
            _write(args.output, gheader, grid, mean, var)
            if not to_stdout:
                console.print(f"predictions at {grid.shape[0]} points written to {args.output}",
                              soft_wrap=True)
    except (OSError, ValueError, TypeError, np.linalg.LinAlgError, ImportError) as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        return 1
    return 0


def _write(path: str, header: list[str], grid: np.ndarray, mean: np.ndarray,
           var: np.ndarray) -> None:
    fh = sys.stdout if path == "-" else open(path, "w", newline="")  # noqa: SIM115
    try:
        w = csv.writer(fh)
        w.writerow([*header, "mean", "variance"])
        for row, m, v in zip(grid, mean, var, strict=True):
            w.writerow([*(repr(float(c)) for c in row), repr(float(m)), repr(float(v))])
    finally:
        if fh is not sys.stdout:
            fh.close()


if __name__ == "__main__":
    raise SystemExit(main())
