"""``tricov tune``: measure the best leaf size of each recursion on this machine and keep it.

For each operation with a leaf size and each dtype, tricov's own call is timed at one
representative size for every candidate leaf size (candidates take turns within each repeat, as
in the benchmarks, and each keeps its fastest call). The fastest candidate is chosen, and the
result is stored in the user's cache directory by :func:`tricov._policy.store_tuned`, where
later processes find it.

Operations are tuned in an order where the leaves an operation reuses are already tuned: POTRF
recurses through TRSM and SYRK, TRTRI through TRMM, LAUUM through SYRK and TRMM.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _policy
from .cases import CASES
from .devices import Device
from .runner import Contender, time_interleaved

__all__ = ["FULL", "QUICK", "TunePlan", "TuneResult", "order_ops", "steps", "tune"]

#: The order in which operations are tuned (dependencies first).
ORDER = ("trsm", "trmm", "syrk", "potrf", "trtri", "lauum")

#: A candidate replaces the leaf size in force only if it is at least this much faster.
MARGIN = 0.02


@dataclass(frozen=True)
class TunePlan:
    """How much to measure: the matrix size, the candidate leaf sizes, the repeats."""

    size: int
    candidates: tuple[int, ...]
    repeat: int
    warmup: int = 1


#: About a minute for the four dtypes on two cores.
QUICK = TunePlan(size=768, candidates=(32, 64, 128, 256, 512), repeat=3)
#: Several minutes for the four dtypes on two cores.
FULL = TunePlan(size=2048, candidates=(16, 32, 64, 96, 128, 192, 256, 384, 512, 768),
                repeat=5)


@dataclass(frozen=True)
class TuneResult:
    """The outcome for one operation and dtype: seconds per candidate leaf size."""

    op: str
    dtype: str
    previous: int
    best: int
    seconds: dict[int, float]

    @property
    def gain(self) -> float:
        """Time at the previous leaf size over time at the best one (1: no change)."""
        return self.seconds[self.previous] / self.seconds[self.best]


def order_ops(ops: Iterable[str]) -> list[str]:
    """``ops`` in tuning order; each must be one of :data:`tricov._policy.OPERATIONS`."""
    ops = list(ops)
    for op in ops:
        if op not in _policy.OPERATIONS:
            raise ValueError(f"op must be one of {_policy.OPERATIONS}, got {op!r}")
    return [op for op in ORDER if op in ops]


def _shape(op: str, n: int) -> tuple[int, ...]:
    return (n, n) if len(CASES[op].dims) == 2 else (n,)


def _candidates(plan: TunePlan, previous: int) -> list[int]:
    """Candidates below the size (a leaf as large as the matrix does not recurse), and the
    leaf size in force."""
    return sorted({c for c in plan.candidates if 1 <= c < plan.size} | {previous})


def steps(plan: TunePlan, ops: Iterable[str], dtypes: Iterable[str], backend: str) -> int:
    """Number of timed calls :func:`tune` makes (for a progress bar)."""
    total = 0
    for dtype in dtypes:
        current = _policy.leaf_sizes(backend, dtype)
        for op in ops:
            total += len(_candidates(plan, getattr(current, op))) * (plan.warmup + plan.repeat)
    return total


def tune(device: Device, ops: Iterable[str], dtypes: Iterable[str], plan: TunePlan, *,
         seed: int = 0, step: Callable[[str], None] | None = None,
         info: dict | None = None) -> tuple[list[TuneResult], Path | None]:
    """Tune and store the leaf sizes of ``ops`` for each of ``dtypes``.

    Parameters
    ----------
    device : Device
        Where to measure; its ``backend`` names the policy entry that is stored.
    ops : iterable of str
        Operations of :data:`tricov._policy.OPERATIONS`.
    dtypes : iterable of str
    plan : TunePlan
    seed : int
    step : callable, optional
        Called with a description before each timed call (progress display).
    info : dict, optional
        Stored with the sizes (machine description, plan).

    Returns
    -------
    results : list of TuneResult
    path : Path or None
        The settings file written (None if ``dtypes`` is empty).

    Notes
    -----
    The sizes stored for a dtype are all of its leaf sizes: the new ones for ``ops``, and for
    the other operations those in force before (tuned earlier, or defaults). The crossovers of
    :data:`tricov._policy.CROSSOVERS` are not tuned here and keep their stored values. Leaf-size
    overrides of this process (:func:`tricov.set_leaf_size`) for the tuned dtypes are removed.
    """
    ops = order_ops(ops)
    backend = device.backend
    results: list[TuneResult] = []
    path: Path | None = None
    for name in dtypes:
        dtype = np.dtype(name)
        _policy.set_leaf_size(backend, ORDER[0], dtype, None)  # drop this process's overrides
        previous = _policy.leaf_sizes(backend, dtype)
        chosen = {op: getattr(previous, op) for op in _policy.OPERATIONS}
        try:
            for op in ops:
                result = _tune_one(device, op, dtype, plan, chosen[op], seed, step)
                chosen[op] = result.best
                # later operations recurse through this one: measure them with its best leaf
                _policy.set_leaf_size(backend, op, dtype, result.best)
                results.append(result)
        finally:
            _policy.set_leaf_size(backend, ORDER[0], dtype, None)
        path = _policy.store_tuned(backend, dtype, chosen, dict(info or {}))
    return results, path


def _tune_one(device: Device, op: str, dtype: np.dtype, plan: TunePlan, previous: int,
              seed: int, step: Callable[[str], None] | None) -> TuneResult:
    case = CASES[op]
    rng = device.generator([seed, plan.size])
    shape = _shape(op, plan.size)
    pristine = {k: device.upload(v) for k, v in case.make(rng, shape, dtype, device.xp).items()}
    contender = Contender(op, case.run, pristine, case.outputs, device)
    candidates = _candidates(plan, previous)

    def before(i: int) -> None:
        _policy.set_leaf_size(device.backend, op, dtype, candidates[i])
        if step is not None:
            step(f"{op} {dtype.name} n={plan.size} leaf={candidates[i]}")

    # The fastest of the repeats: other load on the machine only ever slows a call down.
    fastest_times = time_interleaved([contender] * len(candidates), plan.repeat, plan.warmup,
                                     before=before, reduce=min)
    seconds = dict(zip(candidates, fastest_times, strict=True))
    fastest = min(candidates, key=seconds.__getitem__)
    best = fastest if seconds[fastest] < (1 - MARGIN) * seconds[previous] else previous
    return TuneResult(op=op, dtype=dtype.name, previous=previous, best=best, seconds=seconds)
