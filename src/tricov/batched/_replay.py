"""Repeated batched GPU calls replayed from their recorded kernel launches.

At small orders a batched call's device work is one register kernel of a few microseconds,
while checking the operands, grouping the members and preparing the launch take tens of
microseconds of Python. Those steps depend only on the call's arguments as the key below sees
them (the operation and its options, and per operand its address, shape, strides and dtype, the
device), never on the data: so a call whose key was seen before, and whose first run made only
kernel launches through :func:`tricov.kernels.nvrtc.launch`, launches the same kernels with the
same parameters again, on the caller's current stream, and skips the rest. Operations that
return a per-member info (POTRF, TRTRI, POTRI, POTI, POSV) get a new info array, whose address
replaces the recorded one in the kernels' parameters (their register kernels write every
member's entry), and are checked from it as the slow path checks. On one H100 host, calls on
10240 members of order 8 took 7.7-9.2 instead of 51-53 microseconds of host time for TRSM and
TRMM (torch's ``solve_triangular`` and ``matmul``: 34-35), and 13-14 instead of 40 for POTRF
without the check (``cholesky_ex``: 51; ``benchmarks/gpu_batched_call.py``,
``gpu_batched_call_h100.txt``).

What the key cannot see is left to the slow path, which also decides whether a call may be
recorded at all (:meth:`Recording.keep`): members given as lists or as DLPack tensors, stacks
copied to a working layout, members at addresses the kernel reads from a device array, and
any operation that does more than launch kernels (a recursion with cuBLAS above the register
kernels, a batch of several groups). Tables that pick kernels (``tricov.kernels.BATCHED_LANES``
and the others) are read when a call is recorded: a tool that changes them at run time turns
the replay off first (:func:`tricov.set_cuda_graphs`, which also governs this replay).
"""

from __future__ import annotations

import math
import struct
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from .._plans import cuda_graphs_enabled
from ..kernels import nvrtc

__all__ = ["Recording", "clear", "key", "new_info", "replay"]

#: Calls kept (least recently used ones are dropped first).
CAPACITY = 256

_POINTER = struct.Struct("<Q")
_lock = threading.Lock()
_kept: OrderedDict[tuple, tuple[Any, ...]] = OrderedDict()


def clear() -> None:
    """Forget every recorded call."""
    with _lock:
        _kept.clear()


def key(kind: str, arrays: tuple[Any, ...], options: tuple) -> tuple | None:
    """The replay key of a call on ``arrays`` (None where the call cannot be replayed: not all
    CuPy arrays, or on another device than the current one, or replay turned off)."""
    if not cuda_graphs_enabled():
        return None
    try:
        hash(options)
    except TypeError:  # an option given as an array, say
        return None
    parts: list[Any] = [kind, options]
    device = None
    for a in arrays:
        if type(a).__module__ != "cupy" or type(a).__name__ != "ndarray":
            return None
        memory = a.data
        if device is None:
            device = memory.device_id
        elif memory.device_id != device:
            return None
        parts += (memory.ptr, a.shape, a.strides, a.dtype.char)
    import cupy

    if device != cupy.cuda.runtime.getDevice():
        return None
    parts.append(device)
    return tuple(parts)


def new_info(shape: tuple[int, ...]) -> Any:
    """A device int64 array of one entry per member of a stack of batch ``shape``, for
    :func:`replay` (on the current device)."""
    import cupy

    return cupy.empty(math.prod(shape), dtype=np.int64)


def replay(call: tuple | None, info: Any = None) -> bool:
    """Launch the kernels recorded for ``call`` on the current stream; False if none are.

    ``info``: for an operation that returns per-member info, a new device int64 array of one
    entry per member, which the kernels write in place of the recorded call's (every member's
    entry: the recorded kernels write them all, see :meth:`Recording.keep`).
    """
    if call is None:
        return False
    import cupy
    from cupy.cuda import driver

    stream = cupy.cuda.get_current_stream().ptr
    with _lock:  # held while the parameters are patched and copied by the launches
        launches = _kept.get(call)
        if launches is None:
            return False
        _kept.move_to_end(call)
        for function, grid, block, shared, slots, host, patch, _ in launches:
            for at in patch:
                _POINTER.pack_into(host, at, info.data.ptr)
            driver.launchKernel(function, grid, 1, 1, block, 1, 1, shared, stream, slots, 0)
    return True


class Recording:
    """The launches of one slow-path call, kept for its key if the call says they are all it
    did (:meth:`keep`). Use as a context manager around the slow path."""

    def __init__(self, call: tuple | None) -> None:
        self.call = call
        self.launches: list[tuple[Any, ...]] = []
        self.complete = False
        self.info: Any = None

    def keep(self, complete: bool, info: Any = None) -> None:
        """Whether the launches recorded are the whole of the call's device work; ``info``,
        the device array of per-member info they write (all of it, in batch order), whose
        address a replay replaces by that of its own."""
        self.complete, self.info = complete, info

    def __enter__(self) -> Recording:
        if self.call is not None:
            nvrtc.record(self.launches)
        return self

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if self.call is None:
            return
        nvrtc.record(None)
        if exc_type is not None or not self.complete or not self.launches:
            return
        info = 0 if self.info is None else self.info.data.ptr
        kept = tuple(_frozen(*launch, info) for launch in self.launches)
        if info and not all(launch[6] for launch in kept):
            return  # a launch without the info array: a replay could not redirect it
        with _lock:
            _kept[self.call] = kept
            _kept.move_to_end(self.call)
            while len(_kept) > CAPACITY:
                _kept.popitem(last=False)


def _frozen(kernel: Any, grid: int, block: int, codes: str, args: tuple, shared: int,
            info: int) -> tuple[Any, ...]:
    """One launch with its parameters packed into a buffer of its own (the kernel object kept
    alive with it), and the offsets in it of the address ``info`` (none if 0)."""
    layout, host, slots, kept = nvrtc.parameter_buffer(codes)
    layout.pack_into(host, 0, *args)
    patch = nvrtc.address_offsets(codes, args, info) if info else ()
    return kernel.kernel.ptr, grid, block, shared, slots, host, patch, (kernel, kept)
