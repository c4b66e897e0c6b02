"""The replay of repeated dense calls (tricov._calls) on any machine: a stand-in for CuPy and
stand-in plans check the keys, what a replay runs and in which order, and when it declines.
The GPU suite (tests/test_gpu_calls.py) checks replayed results on a device."""

from __future__ import annotations

import sys
import threading
import types

import numpy as np
import pytest

import tricov as tc
from tricov import _calls, _keys, _plans


class _Memory:
    def __init__(self, ptr: int, device: int = 0) -> None:
        self.ptr, self.device_id = ptr, device


class _DeviceArray:
    """What a key reads of a CuPy array."""

    def __init__(self, ptr: int, shape: tuple[int, int] = (8, 8), device: int = 0) -> None:
        self.data, self.shape, self.dtype = _Memory(ptr, device), shape, np.dtype(np.float64)
        self.strides = (8, 8 * shape[0])


_DeviceArray.__module__, _DeviceArray.__name__ = "cupy", "ndarray"


@pytest.fixture
def device(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """A fake ``cupy``: device 0 current, a stream whose capture state the test sets."""
    stream = types.SimpleNamespace(capturing=False, ptr=0)
    stream.is_capturing = lambda: stream.capturing
    cuda = types.ModuleType("cupy.cuda")
    stream.waits, stream.records = [], []  # (stream, event) of the runtime's calls
    cuda.runtime = types.SimpleNamespace(
        getDevice=lambda: 0, streamWaitEvent=lambda s, e: stream.waits.append((s, e)),
        eventRecord=lambda e, s: stream.records.append((s, e)))
    cuda.Event = lambda **options: types.SimpleNamespace(ptr=0xE7)
    cuda.get_current_stream = lambda: stream
    cupy = types.ModuleType("cupy")
    cupy.cuda = cuda
    cupy.from_dlpack = lambda tensor: tensor.array
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    return stream


class _Tensor:
    """A DLPack tensor of another library over a device array's memory."""

    def __init__(self, array: _DeviceArray, device_type: int = 2) -> None:
        self.array, self.device_type = array, device_type

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device_type, 0


class _Graph:
    def __init__(self, log: list, name: str) -> None:
        self.log, self.name = log, name

    def launch(self, stream: object) -> None:
        self.log.append(("launch", self.name))


class _Ex:
    def __init__(self, info: int) -> None:
        self.info = info


def _plan(log: list, name: str, info: int = 0) -> _plans._Plan:
    return _plans._Plan(_Graph(log, name), _Ex(info), None)


@pytest.fixture
def plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty table of plans for the test; no call recorded after it."""
    monkeypatch.setattr(_plans, "_plans", type(_plans._plans)())
    monkeypatch.setattr(_plans, "_last", {})  # no event of a stand-in outlives the test
    yield
    _calls.clear()


def test_keys(device: types.SimpleNamespace) -> None:
    a, b = _DeviceArray(0x1000), _DeviceArray(0x9000, (8, 2))
    call = _calls.key("trsm", (a, b), ("L", 1.0))
    assert call is not None and call == _calls.key("trsm", (a, b), ("L", 1.0))
    assert call != _calls.key("trsm", (a, _DeviceArray(0x9000, (8, 3))), ("L", 1.0))
    assert call != _calls.key("trsm", (a, b), ("L", 2.0))
    assert call != _calls.key("trmm", (a, b), ("L", 1.0))
    assert _calls.key("trsm", (a, np.ones((8, 2))), ()) is None  # NumPy: the host path
    assert _calls.key("potrf", (np.ones((8, 8)),), ()) is None
    assert _calls.key("trsm", (a, _DeviceArray(0x9000, (8, 2), device=1)), ()) is None
    assert _calls.key("trsm", (a, b), (np.ones(2),)) is None  # an option that cannot be hashed
    # a CUDA DLPack tensor is keyed as the CuPy array over its memory; a host one is not keyed
    assert _calls.key("trsm", (_Tensor(a), b), ("L", 1.0)) == call
    assert _calls.key("trsm", (_Tensor(a, device_type=1), b), ("L", 1.0)) is None
    tc.set_leaf_size("gpu", "trsm", np.float64, 64)
    try:
        assert call != _calls.key("trsm", (a, b), ("L", 1.0))  # the leaf sizes are in it
    finally:
        tc.set_leaf_size("gpu", "trsm", np.float64, None)
    device.capturing = True
    assert _calls.key("trsm", (a, b), ()) is None
    tc.set_cuda_graphs(False)
    try:
        device.capturing = False
        assert _calls.key("trsm", (a, b), ()) is None
    finally:
        tc.set_cuda_graphs(True)


class _TorchTensor:
    """What a key reads of a PyTorch CUDA tensor (strides in elements, as torch gives them)."""

    def __init__(self, ptr: int, shape: tuple[int, int], dtype: str = "float64") -> None:
        self.ptr, self.shape, self.dtype = ptr, shape, dtype
        self.device = types.SimpleNamespace(type="cuda", index=0)
        self.requires_grad, self.conj, self.neg = False, False, False

    def data_ptr(self) -> int:
        return self.ptr

    def stride(self) -> tuple[int, int]:
        return 1, self.shape[0]

    def is_conj(self) -> bool:
        return self.conj

    def is_neg(self) -> bool:
        return self.neg

    def __dlpack_device__(self) -> tuple[int, int]:
        return 2, 0


_TorchTensor.__module__, _TorchTensor.__name__ = "torch", "Tensor"


def test_torch_keys(device: types.SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    """A torch tensor is keyed from its attributes, as the CuPy array over its memory, when
    torch's current stream is CuPy's; else (and for tensors the slow path must refuse or
    resolve) through ``cupy.from_dlpack``, as the slow path takes it."""
    streams = types.SimpleNamespace(torch=0)
    torch = types.ModuleType("torch")
    torch.float32, torch.float64, torch.complex64, torch.complex128 = (
        "float32", "float64", "complex64", "complex128")
    torch.cuda = types.SimpleNamespace(
        current_stream=lambda dev: types.SimpleNamespace(cuda_stream=streams.torch))
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(_keys, "_TORCH_DTYPES", {})
    device.ptr = 0
    converted: list = []
    sys.modules["cupy"].from_dlpack = lambda t: converted.append(t) or _DeviceArray(t.ptr)
    a, t = _DeviceArray(0x1000), _TorchTensor(0x1000, (8, 8))
    call = _calls.key("potrf", (a,), ("L",))
    assert _calls.key("potrf", (t,), ("L",)) == call and not converted
    other = _TorchTensor(0x1000, (8, 8), "int64")  # not a tricov dtype: the slow path's way
    _calls.key("potrf", (other,), ("L",))
    assert converted.pop() is other
    for attr in ("requires_grad", "conj", "neg"):
        setattr(t, attr, True)
        assert _calls.key("potrf", (t,), ("L",)) == call and converted.pop() is t
        setattr(t, attr, False)
    streams.torch = 7  # torch works on another stream: the slow path's conversion orders them
    assert _calls.key("potrf", (t,), ("L",)) == call and converted.pop() is t


def test_replay_takes_the_recorded_steps(device: types.SimpleNamespace, plans: None) -> None:
    """Launches in order; a failure test raises after the launch it follows and stops the
    call; a data test runs on the operand given now."""
    log: list = []
    _plans._remember("p1", _plan(log, "potrf"))
    _plans._remember("p2", _plan(log, "trtri"))
    _plans._remember("p3", _plan(log, "lauum"))

    def test(xp, arr):
        log.append(("test", xp.__name__, arr))

    steps = [(_calls.TEST, (test, 0)), (_calls.PLAN, "p1"), (_calls.FAILURE, ValueError),
             (_calls.PLAN, "p2"), (_calls.FAILURE, KeyError), (_calls.PLAN, "p3")]
    operand = np.eye(2)
    _calls.keep(("poti",), steps)
    assert _calls.replay(("poti",), (operand,))
    assert log == [("test", "cupy", operand), ("launch", "potrf"), ("launch", "trtri"),
                   ("launch", "lauum")]
    log.clear()
    _plans._plans["p2"].ex.info = 7
    with pytest.raises(KeyError, match="7"):
        _calls.replay(("poti",), (operand,))
    assert log == [("test", "cupy", operand), ("launch", "potrf"), ("launch", "trtri")]
    assert not _calls.replay(("other",), ()) and not _calls.replay(None, ())


def test_plans_on_another_stream_wait_for_the_last_launch(device: types.SimpleNamespace,
                                                          plans: None) -> None:
    """An event is recorded after every launch; a launch on another stream than the last one
    first waits for it (the plans share a cuBLAS workspace), one on the same stream does not."""
    log: list = []
    first, second = _plan(log, "potrf"), _plan(log, "trtri")
    other = types.SimpleNamespace(ptr=0x5000)
    for plan, stream in ((first, device), (second, device), (first, other), (second, other),
                         (first, device)):
        _plans.launch(plan, stream)
    assert log == [("launch", n) for n in ("potrf", "trtri", "potrf", "trtri", "potrf")]
    assert device.records == [(s, 0xE7) for s in (0, 0, 0x5000, 0x5000, 0)]
    assert device.waits == [(0x5000, 0xE7), (0, 0xE7)]


def test_per_thread_default_streams_are_told_apart(device: types.SimpleNamespace,
                                                   plans: None) -> None:
    """The per-thread default stream has one handle (2) for another stream in each thread: a
    launch on it from a second thread waits for the first thread's."""
    log: list = []
    per_thread = types.SimpleNamespace(ptr=2)
    _plans.launch(_plan(log, "potrf"), per_thread)
    _plans.launch(_plan(log, "potrf"), per_thread)
    assert device.waits == []
    other = threading.Thread(target=_plans.launch, args=(_plan(log, "trtri"), per_thread))
    other.start()
    other.join()
    assert device.waits == [(2, 0xE7)] and len(log) == 3


def test_replay_declines_without_its_plans(device: types.SimpleNamespace, plans: None) -> None:
    log: list = []
    _plans._remember("p1", _plan(log, "trsm"))
    _plans._remember("p2", 1)  # seen once: no graph yet
    _calls.keep(("a",), [(_calls.PLAN, "p1"), (_calls.PLAN, "p2")])
    assert not _calls.replay(("a",), ())
    assert ("a",) not in _calls._kept and not log  # forgotten, nothing launched
    _calls.keep(("b",), [(_calls.FAILURE, ValueError)])  # no launch: nothing to replay
    assert ("b",) not in _calls._kept


def test_capacity(plans: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_calls, "CAPACITY", 3)
    for k in range(5):
        _calls.keep((k,), [(_calls.PLAN, "p")])
    assert list(_calls._kept) == [(2,), (3,), (4,)]
