"""The ``tricov`` command: benchmarks, tuning, machine information and the demo.

Subcommands are registered in one place, :data:`COMMANDS`. Each entry names a function
``configure(parser) -> run``, given as ``"module:function"``: it adds the subcommand's arguments
to its parser and returns the function that runs it (``run(args) -> exit status``). Only the
module of the subcommand being run is imported, so the command starts quickly and a heavy
subcommand costs nothing to the others. Adding a subcommand is one line::

    Command("fit", "tricov.geostat.cli:fit", "Fit a Matern covariance model to data."),
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["COMMANDS", "Command", "build_parser", "main"]

Run = Callable[[argparse.Namespace], int]


@dataclass(frozen=True)
class Command:
    """A subcommand: its name, where its ``configure`` function lives, a one-line help."""

    name: str
    target: str
    help: str

    def configure(self, parser: argparse.ArgumentParser) -> Run:
        """Import the target and let it add its arguments; returns its ``run`` function.

        ``target`` is ``"module:function"`` (the function configures the parser and returns the
        run function) or ``"module"`` (a module with ``add_arguments(parser)`` and ``run(args)``).
        """
        module, _, attr = self.target.partition(":")
        mod = importlib.import_module(module)
        if attr:
            return getattr(mod, attr)(parser)
        mod.add_arguments(parser)
        return mod.run


#: The subcommands of ``tricov``, in the order ``tricov --help`` lists them.
COMMANDS: list[Command] = [
    Command("bench", "tricov.bench.commands:bench",
            "Time operations against the native BLAS/LAPACK routine and a GEMM."),
    Command("tune", "tricov.bench.commands:tune",
            "Measure the best leaf sizes on this machine and store them."),
    Command("info", "tricov.bench.commands:info",
            "Show the BLAS library, versions, CPUs, GPUs and leaf sizes in force."),
    Command("demo", "tricov.geostat.demo",
            "Simulate a Gaussian random field, fit it (dense and TLR), predict, and plot."),
    Command("fit", "tricov.geostat.fitcli",
            "Fit a Matern (or other) covariance to your own CSV data by maximum likelihood."),
    Command("bench-demo", "tricov.bench.demo:demo", "A short benchmark of trsm and potri."),
]


#: ``tricov bench`` operations that another benchmark runs: the prefix of their names and the
#: module whose ``main(argv)`` takes them (without the prefix) as ``--ops``, with the rest of
#: the command line: ``tricov bench batched-potrf --batch 10240 --sizes 8 16``,
#: ``tricov bench tlr-potrf --n 40000 --tol 1e-8``.
BENCH_FAMILIES = {"batched-": "tricov.batched.bench", "tlr-": "tricov.tlr.bench"}


def _family_bench(argv: Sequence[str]) -> int | None:
    """Run ``tricov bench FAMILY-OP...`` through its family's benchmark; None if not one."""
    if len(argv) < 2 or argv[0] != "bench":
        return None
    for prefix, module in BENCH_FAMILIES.items():
        if argv[1].startswith(prefix):
            k = 1
            while k < len(argv) and argv[k].startswith(prefix):
                k += 1
            ops = [a[len(prefix):] for a in argv[1:k]]
            return int(importlib.import_module(module).main(["--ops", *ops, *argv[k:]]) or 0)
    return None


def _requested(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (the first word that is not an option)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(argv: Sequence[str] = (), *, configure_all: bool = False
                 ) -> argparse.ArgumentParser:
    """The argument parser, with the arguments of the subcommand named in ``argv``.

    Parameters
    ----------
    argv : sequence of str
        The arguments about to be parsed; only their subcommand's module is imported.
    configure_all : bool
        Import every subcommand and add all their arguments.
    """
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="tricov",
        description="tricov: recursive triangular BLAS-3 and the Cholesky family, benchmarked.")
    parser.add_argument("--version", action="version", version=f"tricov {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    requested = _requested(argv)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.help,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        if configure_all or command.name == requested:
            p.set_defaults(run=command.configure(p))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``tricov`` with ``argv`` (default: the process's arguments); the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    family = _family_bench(argv)
    if family is not None:
        return family
    args = build_parser(argv).parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
