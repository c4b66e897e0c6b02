"""The ``bench``, ``tune`` and ``info`` subcommands of ``tricov`` (see :mod:`tricov.cli`).

Each ``configure(parser)`` function adds its arguments and returns its ``run(args)`` function.
Heavy modules (Rich, Matplotlib, threadpoolctl) are imported when a command runs.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from .._policy import OPERATIONS
from .cases import CASES, format_shape
from .devices import DEVICES
from .runner import DTYPES

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from .devices import Device
    from .runner import Job, Result
    from .tune import TuneResult

__all__ = ["bench", "info", "run_jobs", "tune"]

Run = Callable[[argparse.Namespace], int]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def _add_device(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", choices=sorted(DEVICES), default="cpu",
                        help="where to run (default: cpu)")
    parser.add_argument("--threads", type=_positive, metavar="N",
                        help="limit the BLAS to N threads (default: the library's own setting)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the inputs")


@contextlib.contextmanager
def _blas_threads(threads: int | None) -> Iterator[None]:
    if threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads, user_api="blas"):
        yield


# ------------------------------------------------------------------------------------- bench
def run_jobs(console: Console, device: Device, jobs: Sequence[Job], *, repeat: int,
             warmup: int = 1, seed: int = 0) -> list[Result]:
    """Measure ``jobs`` in order, printing one table per (op, dtype) as soon as it is done."""
    from .report import table
    from .runner import measure

    label = device.label()
    results: list[Result] = []
    group: list[Result] = []
    for i, job in enumerate(jobs):
        what = f"{job.case.name} {job.dtype.name} {format_shape(job.shape)}"
        with console.status(f"measuring {what} ({i + 1}/{len(jobs)})"):
            result = measure(device, job, repeat=repeat, warmup=warmup, seed=seed)
        results.append(result)
        group.append(result)
        last = i + 1 == len(jobs)
        if last or (jobs[i + 1].case.name, jobs[i + 1].dtype) != (job.case.name, job.dtype):
            console.print(table(group, title=f"{job.case.name} {job.dtype.name} on {label}"))
            group = []
    return results


def bench(parser: argparse.ArgumentParser) -> Run:
    """Configure ``tricov bench``."""
    parser.epilog = (
        "examples:\n"
        "  tricov bench trsm\n"
        "  tricov bench trsm trmm --sizes 4096 8192x64 --dtype all --csv out.csv --plot out.png\n"
        "  tricov bench potrf potri --sizes 1024,2048 --repeat 10\n"
        "  tricov bench batched-potrf batched-posv --batch 10240 --sizes 8 16 32 [--device gpu]\n"
        "  tricov bench tlr-potrf --n 40000 --tol 1e-8\n\n"
        "sizes: MxN for trsm/trmm (B is MxN, A is MxM), NxK for syrk, N for potrf, trtri, lauum,\n"
        "potri, poti, NxNRHS for potrs/posv; a single N means NxN for two-dimensional ops.")
    parser.add_argument("ops", nargs="+", choices=list(CASES), metavar="OP",
                        help=f"operation(s) to time: {', '.join(CASES)}")
    parser.add_argument("--sizes", nargs="+", metavar="SIZE",
                        help="shapes to time (default: each operation's standard set)")
    parser.add_argument("--dtype", nargs="+", default=["float64"], choices=[*DTYPES, "all"],
                        metavar="DTYPE",
                        help=f"precision(s): {', '.join(DTYPES)} or all (default: float64)")
    parser.add_argument("--repeat", type=_positive, default=5,
                        help="timed calls of each contender; the median is reported (default 5)")
    parser.add_argument("--warmup", type=_non_negative, default=1,
                        help="untimed calls of each contender first (default 1)")
    parser.add_argument("--csv", metavar="FILE.csv", help="write every number and the machine")
    parser.add_argument("--plot", metavar="FILE.png", help="plot GFLOP/s against size")
    _add_device(parser)

    def run(args: argparse.Namespace) -> int:
        from rich.console import Console

        from .devices import get_device
        from .runner import plan

        try:
            jobs = plan(args.ops, args.dtype, args.sizes)
        except ValueError as e:
            parser.error(str(e))
        console = Console()
        try:
            device = get_device(args.device)
        except ValueError as e:
            parser.error(str(e))
        with _blas_threads(args.threads):
            results = run_jobs(console, device, jobs, repeat=args.repeat, warmup=args.warmup,
                               seed=args.seed)
            machine = device.describe()
        _save(console, results, machine, csv=args.csv, plot=args.plot, title=device.label())
        return 0

    return run


def _save(console: Console, results: Sequence[Result], machine: dict[str, str], *,
          csv: str | None, plot: str | None, title: str) -> None:
    from . import report

    if csv:
        console.print(f"wrote {report.write_csv(csv, results, machine)}")
    if plot:
        console.print(f"wrote {report.plot(plot, results, title=title)}")


# -------------------------------------------------------------------------------------- tune
def tune(parser: argparse.ArgumentParser) -> Run:
    """Configure ``tricov tune``."""
    parser.epilog = (
        "Each candidate leaf size is timed on tricov's own call at one size; the fastest is\n"
        "kept (the size in force stays unless a candidate is 2% faster) and stored in the\n"
        "cache directory shown by 'tricov info', where later runs find it.")
    parser.add_argument("--ops", nargs="+", choices=OPERATIONS, default=list(OPERATIONS),
                        metavar="OP",
                        help=f"operations to tune: {', '.join(OPERATIONS)} (default: all)")
    parser.add_argument("--dtypes", nargs="+", choices=[*DTYPES, "all"], default=["all"],
                        metavar="DTYPE",
                        help=f"precisions to tune: {', '.join(DTYPES)} or all (default: all)")
    parser.add_argument("--quick", action="store_true",
                        help="a smaller size, fewer candidates and repeats (about a minute)")
    parser.add_argument("--size", type=_positive,
                        help="matrix size to tune at (default 2048, 768 with --quick)")
    parser.add_argument("--candidates", type=_positive, nargs="+", metavar="NB",
                        help="candidate leaf sizes")
    parser.add_argument("--repeat", type=_positive, help="timed calls per candidate")
    _add_device(parser)

    def run(args: argparse.Namespace) -> int:
        from dataclasses import replace

        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        from . import tune as tuning
        from .devices import get_device

        plan = tuning.QUICK if args.quick else tuning.FULL
        changes = {k: v for k, v in (("size", args.size), ("repeat", args.repeat)) if v}
        if args.candidates:
            changes["candidates"] = tuple(args.candidates)
        plan = replace(plan, **changes)
        dtypes = list(DTYPES if "all" in args.dtypes else dict.fromkeys(args.dtypes))
        ops = tuning.order_ops(args.ops)
        console = Console()
        try:
            device = get_device(args.device)
        except ValueError as e:
            parser.error(str(e))
        with _blas_threads(args.threads):
            machine = device.describe()
            info = {**machine, "size": plan.size, "candidates": list(plan.candidates),
                    "repeat": plan.repeat, "quick": bool(args.quick)}
            total = tuning.steps(plan, ops, dtypes, device.backend)
            with Progress("[progress.description]{task.description}", BarColumn(),
                          MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                          transient=True) as progress:
                task = progress.add_task("tuning", total=total)

                def step(what: str) -> None:
                    progress.update(task, advance=1, description=what)

                results, path = tuning.tune(device, ops, dtypes, plan, seed=args.seed,
                                            step=step, info=info)
        console.print(_tune_table(results, plan.size, device.label()))
        console.print(f"stored in {path}")
        return 0

    return run


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}"


def _tune_table(results: Sequence[TuneResult], size: int, label: str) -> Table:
    from rich.table import Table

    candidates = sorted({nb for r in results for nb in r.seconds})
    out = Table(title=f"leaf sizes at n={size} on {label}: ms per call for each leaf size",
                title_justify="left", caption_justify="left",
                caption="best in bold; gain = time at the previous leaf size / at the best")
    out.add_column("op", no_wrap=True)
    out.add_column("dtype", no_wrap=True)
    for nb in candidates:
        out.add_column(str(nb), justify="right", no_wrap=True)
    out.add_column("prev", justify="right")
    out.add_column("best", justify="right")
    out.add_column("gain", justify="right")
    for r in results:
        cells = []
        for nb in candidates:
            cell = _ms(r.seconds[nb]) if nb in r.seconds else ""
            cells.append(f"[bold]{cell}[/]" if nb == r.best else cell)
        out.add_row(r.op, r.dtype, *cells, str(r.previous), f"[bold]{r.best}[/]",
                    f"{r.gain:.2f}")
    return out


# -------------------------------------------------------------------------------------- info
def info(parser: argparse.ArgumentParser) -> Run:
    """Configure ``tricov info``."""

    def run(args: argparse.Namespace) -> int:
        from rich.console import Console

        console = Console()
        for part in _info_parts():
            console.print(part)
        return 0

    return run


def _info_parts() -> list[object]:
    from rich.table import Table

    from .. import _policy, _precision
    from . import machine

    parts: list[object] = []
    versions = machine.versions()
    parts.append(f"[bold]tricov {versions['tricov']}[/]")

    blas = Table(title="BLAS libraries loaded (threadpoolctl)", title_justify="left",
                 caption="tricov calls the BLAS/LAPACK that SciPy links", caption_justify="left")
    for name in ("library", "version", "threads", "architecture", "tricov's", "file"):
        blas.add_column(name, overflow="fold")
    libs = machine.blas_libraries()
    for lib in libs:
        blas.add_row(str(lib.get("internal_api")), str(lib.get("version")),
                     str(lib.get("num_threads")), str(lib.get("architecture", "")),
                     "yes" if lib["used_by_tricov"] else "no",
                     str(lib.get("filepath")))
    if not libs:
        blas.add_row("none found", "", "", "", "", "")
    parts.append(blas)

    pkgs = Table(title="Packages", title_justify="left")
    pkgs.add_column("package")
    pkgs.add_column("version")
    for name, version in versions.items():
        pkgs.add_row(name, version)
    parts.append(pkgs)

    cpu = machine.cpu()
    parts.append(f"CPU: {cpu['model']}; {cpu['logical_cpus']} logical CPUs, "
                 f"{cpu['usable_cpus']} usable by this process")

    gpus = machine.gpus()
    for backend in ("cpu", "gpu") if gpus else ("cpu",):
        leaves = Table(title=f"Leaf sizes in force ({backend})", title_justify="left")
        leaves.add_column("op")
        for dtype in DTYPES:
            leaves.add_column(dtype, justify="right")
        sizes = {d: _policy.leaf_sizes(backend, d) for d in DTYPES}
        for op in _policy.OPERATIONS:
            leaves.add_row(op, *(str(getattr(sizes[d], op)) for d in DTYPES))
        parts.append(leaves)

    where = _policy.cache_dir()
    stored = sorted(p.name for p in where.glob("*.json")) if where.is_dir() else []
    parts.append(f"Tuned settings are stored in {where} "
                 f"({', '.join(stored) if stored else 'nothing tuned yet'})")

    parts.append("GPUs: " + ("; ".join(f"{i}: {n}" for i, n in enumerate(gpus)) if gpus
                             else "none (CuPy not installed or no CUDA device)"))
    parts.append("Float32 GPU products: " + (
        "split TF32 (tensor cores at float32 accuracy; tc.set_split_tf32(False) or "
        "TRICOV_SPLIT_TF32=0 for FP32)" if _precision.split_tf32_enabled()
        else "FP32 (tc.set_split_tf32(True) for split TF32)"))
    return parts
