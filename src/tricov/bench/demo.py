"""``tricov demo`` (what ``make demo`` runs): a short benchmark of TRSM and POTRI in float64.

It times tricov against the native BLAS/LAPACK routine and a GEMM on a few shapes, in well under
two minutes on two cores, and prints the tables. The subcommand is registered in
:data:`tricov.cli.COMMANDS`; a different demo replaces that one line.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["REPEAT", "SHAPES", "demo", "run_demo"]

#: Shapes of the demo, per operation.
SHAPES: dict[str, tuple[str, ...]] = {
    "trsm": ("1024", "2048", "4096x64", "8192x64"),
    "potri": ("1024", "2048"),
}
#: Timed calls per contender.
REPEAT = 3


def run_demo() -> int:
    """Run the demo and print its tables; the exit status."""
    from rich.console import Console

    from .commands import run_jobs
    from .devices import get_device
    from .runner import plan

    console = Console()
    console.print("[bold]tricov demo[/]: recursive TRSM and POTRI against the native "
                  "BLAS/LAPACK routine on the same data, and against a GEMM of the same shape.")
    device = get_device("cpu")
    for op, sizes in SHAPES.items():
        run_jobs(console, device, plan([op], ["float64"], sizes), repeat=REPEAT)
    console.print("Ratios above 1 in tricov/native mean tricov is faster; 'tricov bench --help' "
                  "runs more.")
    return 0


def demo(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """Configure ``tricov demo`` (no arguments)."""
    return lambda args: run_demo()
