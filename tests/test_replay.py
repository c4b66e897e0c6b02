"""The replay of repeated batched calls (tricov.batched._replay), its GPU branch included, on
any machine: a stand-in for CuPy records what would be launched, so the parameters a replay
launches (the info address patched into them, the rest as recorded) are checked without a GPU.
The GPU suite (tests/test_gpu_batched.py) checks replayed results on a device."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from tricov.batched import _replay
from tricov.kernels import nvrtc


class _Memory:
    def __init__(self, ptr: int) -> None:
        self.ptr, self.device_id = ptr, 0


class _DeviceArray:
    """What the replay reads of a CuPy array."""

    def __init__(self, ptr: int, shape: tuple[int, ...] = (4, 8, 8)) -> None:
        self.data, self.shape, self.dtype = _Memory(ptr), shape, np.dtype(np.float64)
        self.strides = tuple(8 * int(np.prod(shape[k + 1:])) for k in range(len(shape)))


_DeviceArray.__module__, _DeviceArray.__name__ = "cupy", "ndarray"


@pytest.fixture
def device(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """A fake ``cupy`` whose driver appends each launch (and the packed parameters it was
    given) to the returned list."""
    launched: list[tuple] = []

    def launch(function, gx, gy, gz, bx, by, bz, shared, stream, slots, extra):
        launched.append((function, gx, bx, shared, stream, slots))

    driver = types.ModuleType("cupy.cuda.driver")
    driver.launchKernel = launch
    cuda = types.ModuleType("cupy.cuda")
    cuda.driver = driver
    cuda.runtime = types.SimpleNamespace(getDevice=lambda: 0)
    cuda.get_current_stream = lambda: types.SimpleNamespace(ptr=77)
    cupy = types.ModuleType("cupy")
    cupy.cuda, cupy.ndarray = cuda, _DeviceArray
    cupy.empty = lambda count, dtype: _DeviceArray(0xDEF0, (count,))  # a new info array
    for name, module in (("cupy", cupy), ("cupy.cuda", cuda), ("cupy.cuda.driver", driver)):
        monkeypatch.setitem(sys.modules, name, module)
    return launched


def _kernel(ptr: int) -> types.SimpleNamespace:
    return types.SimpleNamespace(kernel=types.SimpleNamespace(ptr=ptr))


def test_device_keys(device: list[tuple]) -> None:
    """Keys of CuPy arrays of the current device; none for mixed arrays or options that cannot
    be hashed."""
    a, b = _DeviceArray(0x1000), _DeviceArray(0x9000, (4, 8, 2))
    opts = ("L", "L", "N", "N", 1.0)
    call = _replay.key("trsm", (a, b), opts)
    assert call is not None and call[-2] == 0 and call == _replay.key("trsm", (a, b), opts)
    from tricov.backends.batched_cuda import BatchedCUDAExecutor

    assert call[-1] == BatchedCUDAExecutor.settings()  # which kernels the engine picks
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(BatchedCUDAExecutor, "mma", not BatchedCUDAExecutor.mma)
        assert call != _replay.key("trsm", (a, b), opts)
    assert call != _replay.key("trsm", (a, _DeviceArray(0x9000, (4, 8, 3))), opts)
    assert call != _replay.key("trmm", (a, b), opts)
    assert _replay.key("trsm", (a, np.ones((4, 8, 2))), opts) is None
    assert _replay.key("trsm", (a, b), (np.ones(2),)) is None


def test_replayed_launch_gets_the_new_info_address(device: list[tuple]) -> None:
    """A replay launches the recorded kernels with their recorded parameters, on the current
    stream, except the info address, replaced by that of the new array (in a slot that a
    complex parameter before it does not shift)."""
    _replay.clear()
    call = ("potrf-test",)
    old_info = _DeviceArray(0xABC0)
    codes, args = "qDQiQ", (7, 1.0, -2.0, 0xABC0, 3, 0x5550)
    with _replay.Recording(call) as recording:
        nvrtc.launch(_kernel(0x42), 12, 128, 77, codes, *args)
        recording.keep(True, old_info)
    assert len(device) == 1 and call in _replay._kept
    hit, info = _replay.replay(call, _DeviceArray(0x7000, (4, 8, 8)))
    assert hit and info.data.ptr == 0xDEF0 and info.shape == (4,)
    function, grid, block, shared, stream, slots = device[-1]
    assert (function, grid, block, shared, stream) == (0x42, 12, 128, 0, 77)
    _, runs, _ = _replay._kept[call]
    packed = runs[0][5].raw  # the replayed parameters
    assert int.from_bytes(packed[32:40], "little") == 0xDEF0  # the info slot, patched
    assert int.from_bytes(packed[64:72], "little") == 0x5550  # another address, kept
    assert int.from_bytes(packed[0:8], "little") == 7


def test_what_is_not_kept(device: list[tuple]) -> None:
    """Calls the slow path says are not kernels alone, launches that do not take the info
    array, and failed calls are not kept."""
    _replay.clear()
    info = _DeviceArray(0xABC0)
    with _replay.Recording(("incomplete",)) as recording:
        nvrtc.launch(_kernel(1), 1, 128, 77, "Q", 0xABC0)
        recording.keep(False, info)
    with _replay.Recording(("no info",)) as recording:
        nvrtc.launch(_kernel(1), 1, 128, 77, "Q", 0x1234)
        recording.keep(True, info)
    with pytest.raises(RuntimeError), _replay.Recording(("failed",)) as recording:
        nvrtc.launch(_kernel(1), 1, 128, 77, "Q", 0xABC0)
        recording.keep(True, info)
        raise RuntimeError
    with _replay.Recording(("nothing",)) as recording:
        recording.keep(True)
    assert not _replay._kept
    assert _replay.replay(("incomplete",)) == (False, None)
