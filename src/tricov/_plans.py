"""Plans: recursions captured once as CUDA graphs and replayed on later identical calls.

A recursion's launches depend only on its arguments (views, scalars, leaf sizes), never on the
data, so a call that repeats one already seen (same operation, operands at the same addresses
with the same shapes and layouts, same options, device and settings) can replay a CUDA graph of
the first run: one launch instead of one per primitive, and no Python on the critical path.

The first sighting of a key runs eagerly; the second is captured on a private stream (with a
private cuBLAS handle that owns its workspace, so nothing allocates during the capture) and
launched on the caller's stream; later ones just launch. The plan keeps its executor alive: its
workspaces and the device-side status words that :attr:`Executor.info` reads after a replay.

Every plan's cuBLAS calls share the workspace of the capture handle. Replays are therefore kept
in one order: an event is recorded after each launch, and a plan launched on another stream than
the last plan of its device waits for it (on the device), so two plans never run at once on
different streams and corrupt each other's workspace.

A capture costs more than an eager run: the recursion runs on the host as eagerly, then the
graph is instantiated and launched. On one H200, TRTRI of 16384 rows in float32 took about 75 ms
captured, 43 eagerly and 28 replayed, so a plan pays once it has been replayed about twice.
Where the kept plans cannot all stay (the :data:`WORKSPACE` budget or the :data:`CAPACITY`: a
caller cycling through more large operands than fit), a plan dropped after fewer than
:data:`PAYBACK` replays marks its key as futile: later sightings of that key run eagerly, as
with graphs turned off, instead of capturing again and again.

Set ``TRICOV_CUDA_GRAPHS=0`` or call :func:`set_cuda_graphs` to run everything eagerly (this
also turns off the replay of batched calls' launches, :mod:`tricov.batched._replay`).
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from .backends.base import Executor

__all__ = ["cuda_graphs_enabled", "find", "kept", "launch", "run", "set_cuda_graphs"]


def _bytes(text: str) -> int:
    """A byte count written as an integer with an optional suffix K, M or G (powers of 1024)."""
    value = text.strip().upper()
    shift = {"K": 10, "M": 20, "G": 30}.get(value[-1:], 0)
    try:
        count = int(value[:-1] if shift else value)
    except ValueError:
        raise ValueError(f"TRICOV_PLAN_WORKSPACE must be a byte count such as 8G, got "
                         f"{text!r}") from None
    if count < 0:
        raise ValueError(f"TRICOV_PLAN_WORKSPACE must not be negative, got {text!r}")
    return count << shift


def _budget() -> int:
    """The workspace budget of the environment (4 GiB by default, or where its value cannot be
    read, with a warning)."""
    text = os.environ.get("TRICOV_PLAN_WORKSPACE", "4G")
    try:
        return _bytes(text)
    except ValueError as err:
        warnings.warn(f"{err}; the plans keep at most 4G", stacklevel=2)
        return 4 << 30


#: Plans kept per process (least recently used ones are dropped first).
CAPACITY = 64
#: Bytes of device workspace the kept plans may hold together (a plan keeps the workspaces of
#: its recursion, up to a few copies of the largest block of its operands; least recently
#: used plans are dropped first, the newest is always kept): 4 GiB, or ``TRICOV_PLAN_WORKSPACE``
#: (``8G``, ``512M``, ...), for callers that repeat calls on more large operands than that holds.
WORKSPACE = _budget()

#: Replays a plan needs before it is dropped for its key to be captured again later.
PAYBACK = 2
#: Keys whose plan was dropped after fewer than :data:`PAYBACK` replays, kept to run them
#: eagerly (least recently seen ones are forgotten first, and may then be captured again).
FUTILE = 4 * CAPACITY

_lock = threading.Lock()
_plans: OrderedDict[tuple, Any] = OrderedDict()
_futile: OrderedDict[tuple, None] = OrderedDict()
_enabled = os.environ.get("TRICOV_CUDA_GRAPHS", "1") != "0"
_PER_THREAD = 2  # cudaStreamPerThread
_last: dict[int, list] = {}  # per device: the last plan launch's stream, an event after it


def set_cuda_graphs(enabled: bool) -> None:
    """Turn the capture and replay of CUDA graphs for repeated GPU calls on or off, and with
    them the replay of repeated dense calls (:mod:`tricov._calls`) and of the kernel launches
    of repeated batched calls (:mod:`tricov.batched._replay`); either way, forget what was
    captured or recorded."""
    global _enabled
    with _lock:
        _enabled = bool(enabled)
        _plans.clear()
        _futile.clear()
    from . import _calls
    from .batched import _replay

    _calls.clear()
    _replay.clear()


def cuda_graphs_enabled() -> bool:
    """Whether repeated GPU calls replay captured CUDA graphs."""
    return _enabled


class _Plan:
    __slots__ = ("ex", "graph", "nbytes", "replays", "stream")

    def __init__(self, graph: Any, ex: Executor, stream: Any) -> None:
        self.graph, self.ex, self.stream = graph, ex, stream
        self.nbytes = sum(getattr(kept, "nbytes", 0) for kept in getattr(ex, "_keep", ()))
        self.replays = 0  # launches after the one that follows its capture


def _nbytes(entry: Any) -> int:
    return entry.nbytes if isinstance(entry, _Plan) else 0


def run(ex: Executor, fn: Callable[..., Any], *args: Any) -> tuple[Executor, tuple | None]:
    """Run ``fn(ex, *args)``, through a captured graph where that pays; return the executor
    whose :attr:`~Executor.info` describes this call, and the key of the plan launched (None
    where the call ran eagerly)."""
    if ex.backend != "gpu" or not _enabled:
        fn(ex, *args)
        return ex, None
    import cupy

    stream = cupy.cuda.get_current_stream()
    if stream.is_capturing():  # the caller is recording us into a graph of its own
        fn(ex, *args)
        return ex, None
    key = (fn, args, ex.dtype, ex.settings(), cupy.cuda.Device().id)
    entry, futile = _lookup(key)
    if isinstance(entry, _Plan):
        launch(entry, stream)
        return entry.ex, key
    if entry is None:  # first sighting (or a futile key): run eagerly, remember it
        fn(ex, *args)
        if not futile:
            _remember(key, 1)
        return ex, None
    plan = _capture(ex, fn, args)
    _remember(key, plan)
    launch(plan, stream)
    return plan.ex, key


def launch(plan: Any, stream: Any) -> None:
    """Launch ``plan``'s graph on ``stream``, after the device's last plan launch where that
    was on another stream (the plans share a cuBLAS workspace)."""
    from cupy.cuda import runtime

    device, ptr = runtime.getDevice(), stream.ptr
    # the per-thread default stream has one handle for a different stream in every thread
    where = (ptr, threading.get_ident()) if ptr == _PER_THREAD else ptr
    with _lock:  # held through the launch: another thread's plan queues before or after it
        last = _last.get(device)
        if last is None:
            import cupy

            done = cupy.cuda.Event(block=False, disable_timing=True)
            last = _last[device] = [where, done.ptr, done]
        elif last[0] != where:
            runtime.streamWaitEvent(ptr, last[1])
            last[0] = where
        plan.graph.launch(stream=stream)
        runtime.eventRecord(last[1], ptr)


def _lookup(key: tuple) -> tuple[Any, bool]:
    """The entry of ``key`` (a plan, counted as replayed, or the marker of a first sighting),
    as most recently used; and whether the key is futile (no entry, and its last plan was
    dropped before it paid)."""
    with _lock:
        entry = _plans.get(key)
        if entry is not None:
            _plans.move_to_end(key)
            if isinstance(entry, _Plan):
                entry.replays += 1
            return entry, False
        futile = key in _futile
        if futile:
            _futile.move_to_end(key)
        return None, futile


def find(keys: list[tuple]) -> list[Any] | None:
    """The plans of these keys, in order, as most recently used and counted as replayed (None
    if one is not kept)."""
    with _lock:
        found = [_plans.get(key) for key in keys]
        if not all(isinstance(plan, _Plan) for plan in found):
            return None
        for key, plan in zip(keys, found, strict=True):
            _plans.move_to_end(key)
            plan.replays += 1
    return found


def _remember(key: tuple, value: Any) -> None:
    """Keep ``value`` (a plan, or 1 for a first sighting) under ``key``, dropping the least
    recently used entries beyond the budgets; a plan dropped before it paid makes its key
    futile."""
    with _lock:
        _futile.pop(key, None)
        _plans[key] = value
        _plans.move_to_end(key)
        _trim()


def _trim() -> None:
    """Drop the least recently used entries beyond the budgets (under the lock); a plan dropped
    before it paid makes its key futile."""
    held = sum(_nbytes(entry) for entry in _plans.values())
    while len(_plans) > 1 and (len(_plans) > CAPACITY or held > WORKSPACE):
        dropped, entry = _plans.popitem(last=False)
        held -= _nbytes(entry)
        if isinstance(entry, _Plan) and entry.replays < PAYBACK:
            _futile[dropped] = None
            if len(_futile) > FUTILE:
                _futile.popitem(last=False)


@contextlib.contextmanager
def kept() -> Iterator[None]:
    """Keep every plan captured meanwhile whatever its workspace, then drop the oldest down to
    :data:`WORKSPACE` again: for timing runs (:func:`tricov.bench.runner.time_interleaved`),
    whose contenders take turns on operands or settings of their own, so that their plans do
    not push each other out and time captures and eager runs instead of replays."""
    global WORKSPACE
    with _lock:
        budget, WORKSPACE = WORKSPACE, max(WORKSPACE, 1 << 62)
    try:
        yield
    finally:
        with _lock:
            WORKSPACE = budget
            _trim()


def _capture(ex: Executor, fn: Callable[..., Any], args: tuple) -> _Plan:
    import cupy

    from .backends import cuda_libs

    capture = cupy.cuda.Stream(non_blocking=True)
    with capture:
        planned = type(ex)(ex.dtype, blas_handle=cuda_libs.capture_handle())
        capture.begin_capture()
        try:
            fn(planned, *args)
        finally:
            graph = capture.end_capture()
    return _Plan(graph, planned, capture)
