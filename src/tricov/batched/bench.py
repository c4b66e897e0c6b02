"""Timing of the batched operations against NumPy and SciPy on the same stacks.

Each :class:`BatchedCase` is one operation on a C-ordered stack of ``batch`` matrices of order
``n``. :func:`time_case` times ``tricov.batched.<op>`` and its peers on the same data:

* a *batched* NumPy peer where NumPy has one (``numpy.linalg.cholesky`` for POTRF,
  ``numpy.linalg.solve`` for POSV, ``numpy.linalg.inv`` for TRTRI/POTRI/POTI, ``numpy.matmul``
  for TRMM, SYRK and LAUUM), which loops over the members in C;
* a *per-member loop* over SciPy's LAPACK wrappers (``scipy.linalg.lapack``), the code a user
  would write without tricov; it is timed on at most ``loop_members`` members and scaled to
  the batch.

Every call gets fresh copies of the same non-zero inputs (restored outside the timed region);
the reported time is the median of ``repeats`` rounds in which the contenders take turns. Rates
are GFLOP/s with the flop counts of :mod:`tricov.bench.flops` and GB/s with
:func:`bytes_moved`, the bytes each member must move at least once (triangles count their
triangle only), also as a fraction of the machine's copy bandwidth (:func:`copy_bandwidth`).
Nothing here asserts a speed; ``python -m tricov.batched.bench`` prints a table.

>>> from tricov.batched.bench import BatchedCase, time_case
>>> r = time_case(BatchedCase("potrf", n=8, batch=64), repeats=1, loop_members=8)
>>> sorted(r.seconds) == ["numpy", "scipy-loop", "tricov"]
True
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["OPS", "BatchedCase", "Result", "bench_cases", "bytes_moved", "copy_bandwidth",
           "make_inputs", "main", "sector_bytes", "time_case"]

#: The batched operations, in the order they are listed.
OPS = ("potrf", "potrs", "posv", "trsm", "trmm", "syrk", "trtri", "lauum", "potri", "poti")
_RHS_OPS = ("potrs", "posv", "trsm", "trmm", "syrk")

Arrays = dict[str, np.ndarray]


@dataclass(frozen=True)
class BatchedCase:
    """One benchmark: ``op`` on ``batch`` matrices of order ``n``.

    Attributes
    ----------
    op : str
        One of :data:`OPS`.
    n : int
        Order of the square (triangular, SPD) members.
    batch : int
        Number of members.
    nrhs : int
        Columns of B (POTRS, POSV, TRSM, TRMM) or ``k`` of SYRK; ``n`` if 0.
    dtype : str
    """

    op: str
    n: int
    batch: int = 10240
    nrhs: int = 0
    dtype: str = "float64"

    @property
    def k(self) -> int:
        """The second dimension: ``nrhs`` or ``n``."""
        return self.nrhs or self.n

    def dims(self) -> tuple[int, ...]:
        """The dimensions of one member as :func:`tricov.bench.flops.flops` takes them."""
        return (self.n, self.k) if self.op in _RHS_OPS else (self.n,)

    def flops(self) -> float:
        """Flops of the whole batch."""
        from ..bench.flops import flops

        return self.batch * flops(self.op, self.dims(), np.dtype(self.dtype))

    def label(self) -> str:
        dims = "x".join(str(d) for d in self.dims())
        return f"{self.op} {dims} x{self.batch} {self.dtype}"


def bench_cases(ops: Sequence[str] = OPS, sizes: Sequence[int] = (4, 8, 16, 32, 64, 128),
                batch: int = 10240, dtypes: Sequence[str] = ("float64",)) -> list[BatchedCase]:
    """The default grid: every op, order and dtype, square right-hand sides (``nrhs = n``)."""
    return [BatchedCase(op, n, batch, 0, dt) for op in ops for dt in dtypes for n in sizes]


#: Copies of a case's operands that a timing holds at once (the operands, the working copies
#: they are restored into, NumPy's results), for :func:`fitting_batch`.
COPIES = 6


def fitting_batch(case: BatchedCase, memory: int) -> int:
    """The largest batch, at most ``case.batch``, whose :data:`COPIES` copies of the operands
    take at most half of ``memory`` bytes (at least 1).

    >>> from tricov.batched.bench import BatchedCase, fitting_batch
    >>> fitting_batch(BatchedCase("potrf", n=8, batch=10240), 24 << 30)
    10240
    >>> fitting_batch(BatchedCase("potrf", n=256, batch=10240), 24 << 30)
    4096
    """
    n, k = case.n, case.k
    member = (n * n + (n * k if case.op in _RHS_OPS else 0)) * np.dtype(case.dtype).itemsize
    return max(1, min(case.batch, memory // 2 // (COPIES * member)))


#: Per operation, how many times each member's triangle and its n x k operand (B, or A of
#: SYRK) must be read or written at the least: (triangle, rectangle).
_TRAFFIC = {"potrf": (2, 0), "trtri": (2, 0), "lauum": (2, 0), "potri": (2, 0), "poti": (2, 0),
            "potrs": (1, 2), "trsm": (1, 2), "trmm": (1, 2), "posv": (2, 2), "syrk": (2, 1)}


def bytes_moved(case: BatchedCase) -> int:
    """Bytes every member must read or write at least once (a triangle: its triangle only)."""
    tri, rect = _TRAFFIC[case.op]
    n, k = case.n, case.k
    return case.batch * (tri * n * (n + 1) // 2 + rect * n * k) * np.dtype(case.dtype).itemsize


def sector_bytes(case: BatchedCase, sector: int = 32) -> int:
    """The bytes of :func:`bytes_moved` rounded out to the memory sectors (32 bytes, the unit
    in which a GPU reads and writes its memory) that hold them, in C-ordered stacks of
    contiguous members (:func:`make_inputs`): the least a device moves for ``case``.

    A lower triangle in C order is the first ``i + 1`` elements of each row ``i``, so the rest
    of its rows' last sectors move too.

    >>> from tricov.batched.bench import BatchedCase, bytes_moved, sector_bytes
    >>> case = BatchedCase("potrf", n=8, batch=10)
    >>> bytes_moved(case), sector_bytes(case)  # 36 of 64 doubles; 12 of 16 sectors
    (5760, 7680)
    """
    tri, rect = _TRAFFIC[case.op]
    n, k, size = case.n, case.k, np.dtype(case.dtype).itemsize
    # Members repeat their sectors' pattern every `period` members (a whole number of
    # sectors), so count one period's sectors exactly and the rest by repetition.
    period = sector // np.gcd(n * n * size, sector)
    rows, cols = np.tril_indices(n)
    first = np.arange(period)[:, None] * (n * n) + (rows * n + cols)[None, :]
    whole, rest = divmod(case.batch, period)
    tri_sectors = whole * np.unique(first * size // sector).size \
        + np.unique(first[:rest] * size // sector).size
    rect_sectors = -(-case.batch * n * k * size // sector)
    return int(tri * tri_sectors + rect * rect_sectors) * sector


def copy_bandwidth(nbytes: int = 1 << 28, repeats: int = 5) -> float:
    """GB/s of ``numpy.copyto`` between two ``nbytes`` arrays (bytes read plus bytes written)."""
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return 2 * nbytes / best / 1e9


# --------------------------------------------------------------------------------- inputs
def _random(rng: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    x = rng.uniform(-1.0, 1.0, shape)
    if dtype.kind == "c":
        x = x + 1j * rng.uniform(-1.0, 1.0, shape)
    return x.astype(dtype)


def make_inputs(case: BatchedCase, rng: Any, xp: Any = np) -> Arrays:
    """Fresh, non-zero, well-conditioned C-ordered stacks for ``case``.

    ``rng`` is a NumPy generator, or for ``xp=cupy`` a CuPy random state (device arrays made
    on the device).
    """
    dt = np.dtype(case.dtype)
    n, k, b = case.n, case.k, case.batch
    eye = xp.eye(n, dtype=dt)
    g = _random(rng, (b, n, n), dt)
    spd = (g + xp.swapaxes(g, -1, -2).conj()) / 2 + 2 * n * eye
    tri = xp.tril(g) + 2 * n * eye  # a well-conditioned factor-like lower triangle
    rhs = _random(rng, (b, n, k), dt)
    if case.op in ("potrf", "poti"):
        return {"A": spd}
    if case.op == "posv":
        return {"A": spd, "B": rhs}
    if case.op == "potrs":
        return {"L": tri, "B": rhs}
    if case.op in ("trsm", "trmm"):
        return {"A": tri, "B": rhs}
    if case.op == "syrk":
        return {"A": rhs, "C": spd}
    return {"A": tri}


_OUTPUTS = {"potrf": ("A",), "poti": ("A",), "trtri": ("A",), "lauum": ("A",),
            "potri": ("A",), "posv": ("A", "B"), "potrs": ("B",), "trsm": ("B",),
            "trmm": ("B",), "syrk": ("C",)}


# ---------------------------------------------------------------------------- contenders
def _tricov_call(case: BatchedCase, check: bool = True) -> Callable[[Arrays], Any]:
    """The tricov call of ``case`` (``check=False`` for the operations that can fail, if not
    ``check``)."""
    from .. import batched

    fn = getattr(batched, case.op)
    if case.op == "syrk":
        return lambda x: fn(x["A"], x["C"], beta=1.0)
    names = {"potrs": ("L", "B"), "posv": ("A", "B"), "trsm": ("A", "B"), "trmm": ("A", "B")}
    args = names.get(case.op, ("A",))
    kw = {} if check or case.op not in ("potrf", "posv", "trtri", "potri", "poti") else \
        {"check": False}
    return lambda x: fn(*(x[a] for a in args), **kw)


def _numpy_call(case: BatchedCase) -> Callable[[Arrays], Any] | None:
    op = case.op
    if op == "potrf":
        return lambda x: np.linalg.cholesky(x["A"])
    if op == "posv":
        return lambda x: np.linalg.solve(x["A"], x["B"])
    if op in ("trtri", "potri", "poti"):
        return lambda x: np.linalg.inv(x["A"])
    if op == "trmm":
        return lambda x: np.matmul(x["A"], x["B"])
    if op == "syrk":
        return lambda x: np.matmul(x["A"], np.swapaxes(x["A"], -1, -2).conj())
    if op == "lauum":
        return lambda x: np.matmul(np.swapaxes(x["A"], -1, -2).conj(), x["A"])
    return None


def _loop_call(case: BatchedCase) -> Callable[[Arrays, int], Any]:
    from scipy.linalg import lapack, solve_triangular

    dt = np.dtype(case.dtype)
    (potrf, potrs, posv, trtri, lauum, potri) = lapack.get_lapack_funcs(
        ("potrf", "potrs", "posv", "trtri", "lauum", "potri"), dtype=dt)
    op = case.op

    def each(x: Arrays, count: int) -> None:
        for i in range(count):
            if op == "potrf":
                potrf(x["A"][i], lower=1, overwrite_a=1)
            elif op == "poti":
                c, _ = potrf(x["A"][i], lower=1)
                potri(c, lower=1)
            elif op == "potrs":
                potrs(x["L"][i], x["B"][i], lower=1)
            elif op == "posv":
                posv(x["A"][i], x["B"][i], lower=1)
            elif op in ("trsm", "trmm"):
                if op == "trsm":
                    solve_triangular(x["A"][i], x["B"][i], lower=True, check_finite=False)
                else:
                    np.tril(x["A"][i]) @ x["B"][i]
            elif op == "syrk":
                a = x["A"][i]
                a @ a.conj().T
            elif op == "trtri":
                trtri(x["A"][i], lower=1)
            elif op == "lauum":
                lauum(x["A"][i], lower=1)
            else:  # potri
                potri(x["A"][i], lower=1)

    return each


# -------------------------------------------------------------------------------- timing
@dataclass
class Result:
    """Median seconds of each contender on one case, with the derived rates.

    Attributes
    ----------
    case : BatchedCase
    seconds : dict of str to float
        ``"tricov"``, ``"numpy"`` (if NumPy has a batched peer) and ``"scipy-loop"`` (scaled
        from ``loop_members`` members to the whole batch).
    """

    case: BatchedCase
    seconds: dict[str, float] = field(default_factory=dict)

    def gflops(self, who: str = "tricov") -> float:
        return self.case.flops() / self.seconds[who] / 1e9

    def gbytes(self, who: str = "tricov") -> float:
        return bytes_moved(self.case) / self.seconds[who] / 1e9

    def speedup(self, peer: str) -> float:
        """How many times faster tricov is than ``peer``."""
        return self.seconds[peer] / self.seconds["tricov"]


def time_case(case: BatchedCase, *, repeats: int = 5, loop_members: int = 512,
              seed: int = 0) -> Result:
    """Time tricov and its peers on ``case`` (see the module notes)."""
    rng = np.random.default_rng(seed)
    pristine = make_inputs(case, rng)
    outputs = _OUTPUTS[case.op]
    work = {k: v.copy() for k, v in pristine.items()}

    def restore() -> None:
        for k in outputs:
            np.copyto(work[k], pristine[k])

    count = min(case.batch, loop_members)
    loop = _loop_call(case)
    ours = _tricov_call(case)
    contenders: dict[str, Callable[[], Any]] = {"tricov": lambda: ours(work)}
    numpy_peer = _numpy_call(case)
    if numpy_peer is not None:
        contenders["numpy"] = lambda: numpy_peer(work)
    contenders["scipy-loop"] = lambda: loop(work, count)
    scale = {"scipy-loop": case.batch / count}
    samples: dict[str, list[float]] = {k: [] for k in contenders}
    for fn in contenders.values():  # warm-up (compiles the kernels)
        restore()
        fn()
    for r in range(repeats):
        names = list(contenders)
        for name in names[r % len(names):] + names[:r % len(names)]:
            restore()
            t0 = time.perf_counter()
            contenders[name]()
            samples[name].append((time.perf_counter() - t0) * scale.get(name, 1.0))
    return Result(case, {k: statistics.median(v) for k, v in samples.items()})


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m tricov.batched.bench [--device cpu|gpu] [--ops ...] [--sizes ...]
    [--batch B] [--dtype D ...] [--repeats R] [--jobs J]``."""
    parser = argparse.ArgumentParser(prog="python -m tricov.batched.bench",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                        help="gpu: CuPy stacks on the current GPU, against torch.linalg")
    parser.add_argument("--ops", nargs="+", default=list(OPS), choices=OPS)
    parser.add_argument("--sizes", nargs="+", type=int, default=None,
                        help="orders (default 4 .. 128 on the CPU, 4 .. 256 on the GPU)")
    parser.add_argument("--batch", type=int, default=10240)
    parser.add_argument("--dtype", nargs="+", default=["float64"])
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds per contender")
    parser.add_argument("--jobs", type=int, default=1,
                        help="gpu: processes compiling the kernels before timing")
    args = parser.parse_args(argv)
    if args.device == "gpu":
        from .bench_gpu import run_table

        run_table(args.ops, args.sizes or [4, 8, 16, 32, 64, 128, 256], args.batch,
                  args.dtype, args.repeats, args.jobs)
        return
    args.sizes = args.sizes or [4, 8, 16, 32, 64, 128]
    copy = copy_bandwidth()
    print(f"copy bandwidth {copy:.1f} GB/s")
    head = (f"{'case':34} {'tricov ms':>10} {'GFLOP/s':>8} {'GB/s':>7} {'of copy':>8} "
            f"{'x numpy':>8} {'x loop':>7}")
    print(head)
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    for case in bench_cases(args.ops, args.sizes, args.batch, args.dtype):
        batch = fitting_batch(case, memory)
        if batch < case.batch:
            print(f"({case.label()}: {batch} members, to fit {memory / 2**30:.0f} GiB of memory)")
            case = dataclasses.replace(case, batch=batch)
        r = time_case(case, repeats=args.repeats)
        vs_np = f"{r.speedup('numpy'):8.1f}" if "numpy" in r.seconds else f"{'-':>8}"
        print(f"{case.label():34} {r.seconds['tricov'] * 1e3:10.2f} {r.gflops():8.2f} "
              f"{r.gbytes():7.2f} {r.gbytes() / copy:8.2f} {vs_np} "
              f"{r.speedup('scipy-loop'):7.1f}", flush=True)


if __name__ == "__main__":
    main()
