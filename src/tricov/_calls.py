"""Repeated dense GPU calls replayed from the steps their earlier run took.

A dense call on CuPy arrays checks its arguments, builds logical views and an executor, and runs
its recursions, each a captured CUDA graph from its second sighting on (:mod:`tricov._plans`).
On one H100 host that Python took about 40 microseconds before the first launch of a POTRF of
order 1024, the device idle meanwhile. None of it depends on the data, only on the call's key:
the operation and its options, per operand its address, shape, strides and dtype, the device,
the leaf sizes in force and the GPU executor's settings. So a call whose key was seen before,
and whose run was nothing but the steps below, takes those steps again and nothing else:

* launch a plan (by its key in :mod:`tricov._plans`) on the current stream;
* read the statuses of the last plan's executor and raise the call's error where one failed
  (the test after POTRF or TRTRI);
* run a test of an operand that raises on bad data (the zero-diagonal test before TRTRI and
  POTRI).

A call is recorded only when it succeeds and every recursion it ran launched a plan; anything
else it did (copies to a working layout, conjugations around a recursion, eager runs) leaves it
unrecorded, and so does a call on a stream that is capturing a graph of the caller's own.
DLPack tensors of a CUDA device (PyTorch, JAX) are keyed as the CuPy arrays over their memory
(:mod:`tricov._keys`). A replay that finds one of its plans forgotten (plans are
dropped least recently used first) forgets the call and takes the slow path.
:func:`tricov.set_cuda_graphs` turns the replay off with the plans and forgets every recorded
call.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from . import _plans
from ._keys import operand_key
from ._policy import leaf_sizes
from .backends.cuda import CUDAExecutor

__all__ = ["CAPACITY", "FAILURE", "PLAN", "TEST", "clear", "keep", "key", "replay"]

#: Calls kept (least recently used ones are dropped first).
CAPACITY = 256
#: Kinds of step: launch the plan of key ``arg``; raise ``arg`` (an error class) where the last
#: plan's executor reports a failure; ``test(cupy, operand)`` for ``arg = (test, index)``.
PLAN, FAILURE, TEST = range(3)

_lock = threading.Lock()
_kept: OrderedDict[tuple, tuple[tuple[int, Any], ...]] = OrderedDict()


def clear() -> None:
    """Forget every recorded call."""
    with _lock:
        _kept.clear()


def key(name: Any, arrays: tuple[Any, ...], options: tuple) -> tuple | None:
    """The replay key of a dense call of operation ``name`` (a name, or the recursion it runs)
    on ``arrays`` (None where it cannot be replayed: not all CuPy arrays of the current device,
    graphs off, or the current stream capturing)."""
    if type(arrays[0]) is np.ndarray:  # the host path, which has nothing to replay
        return None
    found = operand_key(name, arrays, options)
    if found is None or found[1] is None:
        return None
    import cupy

    if cupy.cuda.get_current_stream().is_capturing():
        return None
    parts, device, dtype = found
    parts += (device, leaf_sizes("gpu", dtype), CUDAExecutor.settings())
    return tuple(parts)


def keep(call: tuple, steps: list[tuple[int, Any]]) -> None:
    """Record the steps of a successful call (at least one plan launched)."""
    if not any(kind == PLAN for kind, _ in steps):
        return
    with _lock:
        _kept[call] = tuple(steps)
        _kept.move_to_end(call)
        while len(_kept) > CAPACITY:
            _kept.popitem(last=False)


def replay(call: tuple | None, arrays: tuple[Any, ...]) -> bool:
    """Take again the steps recorded for ``call`` on ``arrays`` (the call's operands); whether
    there were any. Raises the call's error where a recorded test fails."""
    if call is None:
        return False
    with _lock:
        steps = _kept.get(call)
        if steps is None:
            return False
        _kept.move_to_end(call)
    plans = _plans.find([arg for kind, arg in steps if kind == PLAN])
    if plans is None:
        with _lock:
            _kept.pop(call, None)
        return False
    import cupy

    stream, plan = cupy.cuda.get_current_stream(), None
    launch = iter(plans)
    for kind, arg in steps:
        if kind == PLAN:
            plan = next(launch)
            _plans.launch(plan, stream)
        elif kind == FAILURE:
            info = plan.ex.info
            if info:
                raise arg(info)
        else:
            from ._frontend import as_array  # imported here: _frontend imports this module

            test, index = arg
            test(cupy, as_array(arrays[index], ""))
    return True
