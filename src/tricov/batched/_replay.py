"""Repeated batched calls replayed from what their first run recorded.

At small orders a batched call's work is one kernel over the members (a register kernel on the
GPU, the SIMD lane kernels on the CPU), while checking the operands, grouping the members and
preparing the kernel's parameters take tens of microseconds of Python. Those steps depend only
on the call's arguments as the key below sees them (the operation and its options, and per
operand its address, shape, strides and dtype; the device, or on the host the thread count),
never on the data: so a call whose key was seen before, and whose first run was such kernels
alone, runs the same kernels with the same parameters again and skips the rest.

* GPU: the launches made through :func:`tricov.kernels.nvrtc.launch`, relaunched on the
  caller's current stream. On one H100 host, calls on 10240 members of order 8 took 7.7-9.2
  instead of 51-53 microseconds of host time for TRSM and TRMM (torch's ``solve_triangular``
  and ``matmul``: 34-35), and 13-14 instead of 40 for POTRF without the check (``cholesky_ex``:
  51; ``benchmarks/gpu_batched_call.py``, ``gpu_batched_call_h100.txt``).
* CPU: the runs of :func:`tricov.kernels.numba.small.run`, rerun on a new parameter block
  with the recorded parameters. On a 2-core VM a batched POTRF / TRSM of one member of order
  4 took 8.8 / 10.1 instead of 39.6 / 56.1 microseconds (``numpy.linalg.cholesky``: 4.5-7.0),
  and POTRF of 10240 members of order 4 0.165 instead of 0.25 ms on 2 threads
  (``benchmarks/cpu_front_end.py``, ``cpu_batched_small.py``, ``cpu_batched.txt``).

DLPack tensors of a CUDA device (PyTorch, JAX) are keyed as the CuPy arrays over their memory
(:mod:`tricov._keys`).

Operations that return a per-member info (POTRF, TRTRI, POTRI, POTI, POSV) get a new info array,
which the kernels write in place of the recorded call's (they write every member's entry), and
are checked from it as the slow path checks.

What the key cannot see is left to the slow path, which also decides whether a call may be
recorded at all (:meth:`Recording.keep`): members given as lists, stacks copied to a working
layout, members at addresses a GPU kernel reads from a device array, and
any operation that does more than these kernels (a recursion over BLAS or cuBLAS above them, a
batch of several groups). Tables that pick kernels (``tricov.kernels.BATCHED_LANES`` and the
others) are read when a call is recorded: a tool that changes them at run time turns the replay
off first (:func:`tricov.set_cuda_graphs`, which also governs this replay); setting a leaf size
(:func:`tricov.set_leaf_size`) forgets every recorded call.
"""

from __future__ import annotations

import math
import struct
import threading
from collections import OrderedDict
from typing import Any

import numba
import numpy as np

from .._keys import operand_key
from ..kernels import nvrtc
from ..kernels.numba import small

__all__ = ["Recording", "clear", "key", "replay"]

#: Calls kept (least recently used ones are dropped first).
CAPACITY = 256
#: Bytes of host arrays the kept calls may hold together (a host call keeps the addresses of
#: its members, 8 bytes each per operand); least recently used calls are dropped first.
HOST_BYTES = 256 << 20

_POINTER = struct.Struct("<Q")
_lock = threading.Lock()
# Per key: (on the host, the recorded runs or launches, bytes of host arrays they hold).
_kept: OrderedDict[tuple, tuple[bool, tuple[Any, ...], int]] = OrderedDict()
_held = [0]  # bytes of host arrays the kept calls hold together (a running sum, under _lock)


def clear() -> None:
    """Forget every recorded call."""
    with _lock:
        _kept.clear()
        _held[0] = 0


def key(kind: str, arrays: tuple[Any, ...], options: tuple) -> tuple | None:
    """The replay key of a call on ``arrays`` (None where the call cannot be replayed: not all
    NumPy arrays or all CuPy arrays of the current device, or replay turned off)."""
    found = operand_key(kind, arrays, options)
    if found is None:
        return None
    parts, device, _ = found
    if device is None:
        parts.append(("host", numba.get_num_threads()))
    else:  # the device, and the engine's settings (which kernels it picks)
        from ..backends.batched_cuda import BatchedCUDAExecutor

        parts += [device, BatchedCUDAExecutor.settings()]
    return tuple(parts)


def replay(call: tuple | None, info_like: Any = None) -> tuple[bool, Any]:
    """Run again what was recorded for ``call``: (whether anything was, the info array).

    With ``info_like`` (the stack of an operation that returns per-member info), the kernels
    write a new int64 array of one entry per member, on its device (on the host for NumPy),
    in place of the recorded call's info; it is returned, flat.
    """
    if call is None:
        return False, None
    with _lock:
        entry = _kept.get(call)
        if entry is None:
            return False, None
        _kept.move_to_end(call)
    host, runs, _ = entry
    count = math.prod(info_like.shape[:-2]) if info_like is not None else 0
    if host:
        info = np.zeros(count, np.int64) if info_like is not None else None
        for dtype, header, tp, rp, recorded, nt in runs:
            small.rerun(dtype, header, tp, rp, np.empty_like(recorded) if info is None else info,
                        nt)
        return True, info
    import cupy
    from cupy.cuda import driver

    info = cupy.empty(count, dtype=np.int64) if info_like is not None else None
    stream = cupy.cuda.get_current_stream().ptr
    with _lock:  # held while the parameters are patched and copied by the launches
        for function, grid, block, shared, slots, buffer, patch, _ in runs:
            for at in patch:
                _POINTER.pack_into(buffer, at, info.data.ptr)
            driver.launchKernel(function, grid, 1, 1, block, 1, 1, shared, stream, slots, 0)
    return True, info


class Recording:
    """The kernels of one slow-path call, kept for its key if the call says they are all it
    did (:meth:`keep`). Use as a context manager around the slow path."""

    def __init__(self, call: tuple | None) -> None:
        self.call = call
        self.launches: list[tuple[Any, ...]] = []
        self.runs: list[tuple[Any, ...]] = []
        self.complete = False
        self.info: Any = None

    def keep(self, complete: bool, info: Any = None) -> None:
        """Whether the kernels recorded are the whole of the call's work; ``info``, the array
        of per-member info they write (all of it, in batch order), which a replay replaces by
        its own."""
        self.complete, self.info = complete, info

    def __enter__(self) -> Recording:
        if self.call is not None:
            nvrtc.record(self.launches)
            small.record(self.runs)
        return self

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if self.call is None:
            return
        nvrtc.record(None)
        small.record(None)
        if exc_type is not None or not self.complete or bool(self.launches) == bool(self.runs):
            return  # failed, incomplete, or not kernels of one kind
        if self.runs:
            if self.info is not None and any(run[4] is not self.info for run in self.runs):
                return  # a run writing another info array: a replay could not redirect it
            held = sum(header.nbytes + tp.nbytes + rp.nbytes + info.nbytes
                       for _, header, tp, rp, info, _ in self.runs)
            entry = (True, tuple(self.runs), held)
        else:
            info = 0 if self.info is None else self.info.data.ptr
            kept = tuple(_frozen(*launch, info) for launch in self.launches)
            if info and not all(launch[6] for launch in kept):
                return  # a launch without the info array: a replay could not redirect it
            entry = (False, kept, 0)
        with _lock:
            old = _kept.pop(self.call, None)
            _kept[self.call] = entry
            _held[0] += entry[2] - (old[2] if old is not None else 0)
            while len(_kept) > 1 and (len(_kept) > CAPACITY or _held[0] > HOST_BYTES):
                _held[0] -= _kept.popitem(last=False)[1][2]


def _frozen(kernel: Any, grid: int, block: int, codes: str, args: tuple, shared: int,
            info: int) -> tuple[Any, ...]:
    """One launch with its parameters packed into a buffer of its own (the kernel object kept
    alive with it), and the offsets in it of the address ``info`` (none if 0)."""
    layout, host, slots, kept = nvrtc.parameter_buffer(codes)
    layout.pack_into(host, 0, *args)
    patch = nvrtc.address_offsets(codes, args, info) if info else ()
    return kernel.kernel.ptr, grid, block, shared, slots, host, patch, (kernel, kept)
