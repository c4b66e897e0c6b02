"""Presenting results: Rich tables, CSV files and GFLOP/s plots."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .cases import CASES, format_shape
from .runner import Result

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["CSV_COLUMNS", "plot", "table", "write_csv"]


def _gflops(x: float) -> str:
    return f"{x:,.1f}" if x >= 1 else f"{x:.3f}"


def table(results: Sequence[Result], title: str = "") -> Table:
    """A Rich table of results, one row per shape.

    Columns: the shape, the GFLOP/s of tricov, of the native peer and of the GEMM, the ratios of
    tricov's rate to the peer's and to the GEMM's, and the relative difference between the
    outputs of tricov and of the peer.
    """
    from rich import box
    from rich.table import Table

    first = results[0] if results else None
    caption = ""
    if first is not None:
        leaves = " ".join(f"{op}={first.leaf_sizes[op]}" for op in CASES[first.op].leaf_ops)
        caption = (f"native = {first.native_routine}; GEMM = {first.gemm_routine} "
                   f"{first.gemm_note}, rated with its own flop count; "
                   f"median of {first.repeat} call{'' if first.repeat == 1 else 's'}; "
                   f"leaf sizes {leaves}")
    out = Table(title=title or None, caption=caption or None, title_justify="left",
                caption_justify="left", box=box.SIMPLE_HEAD)
    labels = list(first.peers) if first is not None else []
    if labels:
        caption += "; " + "; ".join(f"{label} = {first.peers[label][1]}" for label in labels)
        out.caption = caption
    dims = "x".join(first.dims) if first is not None else "shape"
    out.add_column(dims, justify="right", no_wrap=True)
    out.add_column("tricov\nGFLOP/s", justify="right")
    out.add_column("native\nGFLOP/s", justify="right")
    for label in labels:
        out.add_column(f"{label}\nGFLOP/s", justify="right")
    out.add_column("GEMM\nGFLOP/s", justify="right")
    out.add_column("tricov/\nnative", justify="right")
    for label in labels:
        out.add_column(f"tricov/\n{label}", justify="right")
    out.add_column("tricov/\nGEMM", justify="right")
    out.add_column("rel.\ndiff", justify="right")
    for r in results:
        peers = [p for p in labels if p in r.peers]
        ratios = [_ratio(r.ratio_native)] + [_ratio(r.ratio_peer(p)) for p in peers]
        out.add_row(format_shape(r.shape), _gflops(r.tricov_gflops), _gflops(r.native_gflops),
                    *(_gflops(r.peer_gflops(p)) for p in peers), _gflops(r.gemm_gflops),
                    *ratios, f"{r.ratio_gemm:.2f}", f"{r.rel_diff:.1e}")
    return out


def _ratio(x: float) -> str:
    text = f"{x:.2f}"
    return f"[green]{text}[/]" if x >= 1 else text


#: Columns of the CSV file, before the machine columns.
CSV_COLUMNS = (
    "op", "device", "dtype", "shape", "dim1", "dim2", "flops", "repeat",
    "tricov_s", "native_s", "gemm_s", "tricov_gflops", "native_gflops", "gemm_gflops",
    "ratio_native", "ratio_gemm", "gemm_m", "gemm_n", "gemm_k", "gemm_flops",
    "native_routine", "gemm_routine", "rel_diff",
)


def _row(r: Result) -> dict[str, object]:
    dim2 = r.shape[1] if len(r.shape) > 1 else ""
    row: dict[str, object] = {
        "op": r.op, "device": r.device, "dtype": r.dtype, "shape": format_shape(r.shape),
        "dim1": r.shape[0], "dim2": dim2, "flops": f"{r.flops:.6g}", "repeat": r.repeat,
        "tricov_s": f"{r.tricov_s:.6g}", "native_s": f"{r.native_s:.6g}",
        "gemm_s": f"{r.gemm_s:.6g}", "tricov_gflops": f"{r.tricov_gflops:.6g}",
        "native_gflops": f"{r.native_gflops:.6g}", "gemm_gflops": f"{r.gemm_gflops:.6g}",
        "ratio_native": f"{r.ratio_native:.6g}", "ratio_gemm": f"{r.ratio_gemm:.6g}",
        "gemm_m": r.gemm_shape[0], "gemm_n": r.gemm_shape[1], "gemm_k": r.gemm_shape[2],
        "gemm_flops": f"{r.gemm_flops:.6g}", "native_routine": r.native_routine,
        "gemm_routine": r.gemm_routine, "rel_diff": f"{r.rel_diff:.3g}",
    }
    for label, (seconds, routine) in r.peers.items():
        row.update({f"{label}_s": f"{seconds:.6g}", f"{label}_gflops":
                    f"{r.peer_gflops(label):.6g}", f"ratio_{label}": f"{r.ratio_peer(label):.6g}",
                    f"{label}_routine": routine})
    row.update({f"leaf_{op}": nb for op, nb in r.leaf_sizes.items()})
    return row


def write_csv(path: str | Path, results: Iterable[Result], machine: Mapping[str, str]) -> Path:
    """Write one row per result: every measured number, the leaf sizes, and the machine."""
    rows = [_row(r) for r in results]
    columns = list(CSV_COLUMNS)
    for key in (k for row in rows for k in row):
        if key not in columns:
            columns.append(key)  # further peers, the leaf sizes
    machine = {k: v for k, v in machine.items() if k not in columns}
    columns += list(machine)
    path = Path(path)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, **machine})
    return path


def _family(r: Result) -> tuple[str, str, int]:
    """Panel title, x-axis label and x value of a result.

    One-dimensional cases and square shapes vary one size; for the others the first dimension
    is held (one panel each) and the second varies.
    """
    if len(r.shape) == 1 or len(set(r.shape)) == 1:
        label = r.dims[0] if len(r.shape) == 1 else "=".join(r.dims)
        return ("square" if len(r.shape) > 1 else "", label, r.shape[0])
    return (f"{r.dims[0]}={r.shape[0]}", r.dims[1], r.shape[1])


_STYLE = {"tricov": ("tab:blue", "o"), "native": ("tab:orange", "s"),
          "GEMM": ("tab:gray", "^")}


def plot(path: str | Path, results: Sequence[Result], title: str = "") -> Path:
    """Plot GFLOP/s against size for tricov, its peers and the GEMM, into a PNG.

    One row of panels per (op, dtype); one panel per family of shapes (see :func:`_family`).
    """
    from matplotlib.figure import Figure  # no pyplot: no global state, Agg canvas

    groups: dict[tuple[str, str], dict[tuple[str, str], list[tuple[int, Result]]]] = {}
    for r in results:
        panel, xlabel, x = _family(r)
        groups.setdefault((r.op, r.dtype), {}).setdefault((panel, xlabel), []).append((x, r))
    if not groups:
        raise ValueError("no results to plot")
    ncols = max(len(panels) for panels in groups.values())
    fig = Figure(figsize=(4.2 * ncols, 3.2 * len(groups)), layout="constrained")
    axes = fig.subplots(len(groups), ncols, squeeze=False)
    for row, ((op, dtype), panels) in enumerate(groups.items()):
        for col, ((panel, xlabel), points) in enumerate(panels.items()):
            ax = axes[row][col]
            points.sort(key=lambda p: p[0])
            xs = [x for x, _ in points]
            curves = [("tricov", lambda r: r.tricov_gflops), ("native", lambda r: r.native_gflops),
                      ("GEMM", lambda r: r.gemm_gflops)]
            curves += [(label, lambda r, label=label: r.peer_gflops(label))
                       for label in points[0][1].peers]
            for name, rate in curves:
                color, marker = _STYLE.get(name, ("tab:green", "D"))
                ax.plot(xs, [rate(r) for _, r in points], marker=marker, color=color,
                        label=name)
            if len(set(xs)) > 1:
                ax.set_xscale("log", base=2)
            ax.set_xticks(xs, [str(x) for x in xs])
            ax.set_title(" ".join(filter(None, (op, dtype, panel))), fontsize=10)
            ax.set_xlabel(xlabel)
            ax.set_ylabel("GFLOP/s")
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        for col in range(len(panels), ncols):
            axes[row][col].set_visible(False)
    if title:
        fig.suptitle(title, fontsize=10)
    path = Path(path)
    fig.savefig(path, dpi=110)
    return path
