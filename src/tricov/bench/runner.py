"""The measurement loop: warm-up, restored inputs, interleaved repeats, medians.

For one job (a case, a shape, a dtype) the harness makes fresh random inputs once, keeps them as
pristine device copies, and gives each contender (tricov, the native peer, the GEMM) its own
working copies of the arrays it overwrites. Before every call, outside the timed region, the
outputs are restored from the pristine copies, so every call sees the same non-zero data. The
contenders take turns within each repeat (in a rotating order), so that slow drifts of the
machine (clock, other load) affect all of them alike. The reported time is the median.
"""

from __future__ import annotations

import statistics
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _plans, _policy
from .cases import CASES, Case, format_shape, random_matrix, shapes_for
from .devices import Device
from .flops import gemm_flops

__all__ = ["Contender", "Job", "Result", "measure", "plan", "time_interleaved"]

Arrays = dict[str, Any]

DTYPES = ("float32", "float64", "complex64", "complex128")


@dataclass(frozen=True)
class Job:
    """One measurement: a case on one shape in one dtype."""

    case: Case
    shape: tuple[int, ...]
    dtype: np.dtype

    def seed(self, base: int) -> list[int]:
        """A seed that depends on the job only (not on the order of the jobs)."""
        key = f"{self.case.name}/{format_shape(self.shape)}/{self.dtype.name}"
        return [base, zlib.crc32(key.encode())]


def plan(ops: Iterable[str], dtypes: Iterable[str], sizes: Sequence[str] | None = None
         ) -> list[Job]:
    """The jobs for ``ops`` x ``dtypes`` x shapes, grouped by operation, then dtype.

    Parameters
    ----------
    ops : iterable of str
        Case names (keys of :data:`tricov.bench.cases.CASES`).
    dtypes : iterable of str
        Dtype names; ``"all"`` stands for the four supported ones.
    sizes : sequence of str, optional
        Size specifications (``"4096x64"``, ``"1024"``) applied to every op; each case's default
        shapes if omitted.

    Raises
    ------
    ValueError
        For an unknown op or dtype, or a size that does not fit an op.
    """
    names: list[str] = []
    for d in dtypes:
        for name in DTYPES if d == "all" else (d,):
            if name not in DTYPES:
                raise ValueError(f"dtype must be one of {DTYPES} or 'all', got {name!r}")
            if name not in names:
                names.append(name)
    jobs = []
    for op in ops:
        if op not in CASES:
            raise ValueError(f"op must be one of {list(CASES)}, got {op!r}")
        case = CASES[op]
        shapes = shapes_for(case, sizes)
        jobs += [Job(case, s, np.dtype(d)) for d in names for s in shapes]
    return jobs


@dataclass
class Contender:
    """One implementation under test, with its own working arrays.

    ``work`` shares the read-only inputs with ``pristine`` and holds private copies of the
    ``outputs``, which :meth:`restore` resets before each timed call.
    """

    label: str
    call: Callable[[Arrays], object]
    pristine: Arrays
    outputs: tuple[str, ...]
    device: Device
    work: Arrays = field(init=False)

    def __post_init__(self) -> None:
        self.work = dict(self.pristine)
        for name in self.outputs:
            self.work[name] = self.device.upload(self.device.download(self.pristine[name]))

    def restore(self) -> None:
        """Reset the outputs to the pristine inputs."""
        for name in self.outputs:
            self.device.copy(self.work[name], self.pristine[name])

    def timed(self) -> float:
        """Restore, then time one call."""
        self.restore()
        return self.device.time(self.call, self.work)


def time_interleaved(contenders: Sequence[Contender], repeat: int, warmup: int = 1,
                     before: Callable[[int], None] | None = None,
                     reduce: Callable[[list[float]], float] = statistics.median
                     ) -> list[float]:
    """Seconds of each contender over ``repeat`` interleaved calls, after ``warmup``.

    Parameters
    ----------
    contenders : sequence of Contender
        The same object may appear several times (with ``before`` changing a setting).
    repeat, warmup : int
        Timed and untimed calls of each contender.
    before : callable, optional
        ``before(i)`` runs (untimed) before each call of contender ``i``; tuning uses it to
        switch the leaf size between contenders that share one implementation.
    reduce : callable
        Turns the ``repeat`` times of a contender into one number (default: the median).

    On a GPU, the plans the contenders capture are all kept meanwhile (:func:`tricov._plans.kept`):
    large float32 plans take about 1.5 GiB each, and a few contenders on their own operands or
    settings would otherwise push each other's out of the cache's budget and be timed on
    captures and eager runs (identical contenders of TRTRI 16384 differed by 1.5x that way).
    """
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    n = len(contenders)
    times: list[list[float]] = [[] for _ in range(n)]
    with _plans.kept():  # every contender's GPU plans stay, whatever their workspace
        for r in range(warmup + repeat):
            for j in range(n):
                i = (r + j) % n  # rotate who goes first
                if before is not None:
                    before(i)
                t = contenders[i].timed()
                if r >= warmup:
                    times[i].append(t)
    return [reduce(t) for t in times]


@dataclass
class Result:
    """The measured numbers of one job."""

    op: str
    device: str
    dtype: str
    shape: tuple[int, ...]
    dims: tuple[str, ...]
    flops: float
    gemm_shape: tuple[int, int, int]
    gemm_flops: float
    repeat: int
    tricov_s: float
    native_s: float
    gemm_s: float
    native_routine: str
    gemm_routine: str
    gemm_note: str
    rel_diff: float
    leaf_sizes: dict[str, int]
    #: Further peers (:meth:`Device.peers`): label -> (median seconds, what it calls).
    peers: dict[str, tuple[float, str]] = field(default_factory=dict)

    def peer_gflops(self, label: str) -> float:
        """The rate of the further peer ``label``."""
        return self.flops / self.peers[label][0] / 1e9

    def ratio_peer(self, label: str) -> float:
        """tricov's rate over the further peer's."""
        return self.tricov_gflops / self.peer_gflops(label)

    @property
    def tricov_gflops(self) -> float:
        return self.flops / self.tricov_s / 1e9

    @property
    def native_gflops(self) -> float:
        return self.flops / self.native_s / 1e9

    @property
    def gemm_gflops(self) -> float:
        return self.gemm_flops / self.gemm_s / 1e9

    @property
    def ratio_native(self) -> float:
        """tricov's rate over the native peer's (above 1: tricov is faster)."""
        return self.tricov_gflops / self.native_gflops

    @property
    def ratio_gemm(self) -> float:
        """tricov's rate over the GEMM's (the fraction of GEMM speed reached)."""
        return self.tricov_gflops / self.gemm_gflops


def _rel_diff(device: Device, got: Arrays, want: Arrays, names: Iterable[str]) -> float:
    """Largest relative Frobenius difference between the outputs of tricov and of the peer."""
    worst = 0.0
    xp = device.xp  # on the device: large outputs never travel
    for name in names:
        g, w = got[name], want[name]
        scale = float(xp.linalg.norm(w))
        diff = float(xp.linalg.norm(g - w))
        worst = max(worst, diff / scale if scale else diff)
    return worst


def measure(device: Device, job: Job, *, repeat: int = 5, warmup: int = 1, seed: int = 0,
            gemm: bool = True) -> Result:
    """Time tricov, the native peer, the device's further peers and the GEMM on one job.

    After the timed calls, the outputs of tricov and of the native peer (from the same inputs)
    are compared: ``rel_diff`` is a sanity check, not a backward-error test. ``gemm=False``
    leaves the GEMM out (its time is then NaN): three more operands may not fit in memory.
    """
    case, dtype = job.case, job.dtype
    rng = device.generator(job.seed(seed))
    pristine = {k: device.upload(v)
                for k, v in case.make(rng, job.shape, dtype, device.xp).items()}
    m, n, k = case.gemm_dims(job.shape)
    native, native_routine = device.native(case.name, dtype)
    gemm_call, gemm_routine = device.gemm(dtype)
    contenders = [Contender("tricov", case.run, pristine, case.outputs, device),
                  Contender("native", native, pristine, case.outputs, device)]
    extra = device.peers(case.name, dtype)
    contenders += [Contender(label, call, pristine, case.outputs, device)
                   for label, call, _ in extra]
    if gemm:
        gemm_inputs = {name: device.upload(random_matrix(rng, rows, cols, dtype, device.xp))
                       for name, rows, cols in (("A", m, k), ("B", k, n), ("C", m, n))}
        contenders.append(Contender("gemm", gemm_call, gemm_inputs, ("C",), device))
    times = time_interleaved(contenders, repeat, warmup)
    t_gemm = times[-1] if gemm else float("nan")
    nb = _policy.leaf_sizes(device.backend, dtype)
    return Result(
        op=case.name, device=device.name, dtype=dtype.name, shape=job.shape, dims=case.dims,
        flops=case.flops(job.shape, dtype), gemm_shape=(m, n, k),
        gemm_flops=gemm_flops(m, n, k, dtype), repeat=repeat, tricov_s=times[0],
        native_s=times[1], gemm_s=t_gemm, native_routine=native_routine,
        gemm_routine=gemm_routine, gemm_note=case.gemm_note,
        rel_diff=_rel_diff(device, contenders[0].work, contenders[1].work, case.outputs),
        leaf_sizes={op: getattr(nb, op) for op in _policy.OPERATIONS},
        peers={label: (t, routine) for (label, _, routine), t
               in zip(extra, times[2:2 + len(extra)], strict=True)})

