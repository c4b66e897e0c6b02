"""Where a benchmark runs: memory, timing and peers of one kind of device.

The harness (:mod:`tricov.bench.runner`) only talks to a :class:`Device`. A device makes the
random inputs where they will live (its array module and random generator), restores outputs
between timed calls, times one call (CPU: wall clock; GPU: CUDA events), and supplies the peers:
the native library routine of each case, the GEMM, and any further peers (PyTorch on the GPU).
Devices are registered in :data:`DEVICES` by name; the GPU's factory imports CuPy when called.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["DEVICES", "CPUDevice", "Device", "GPUDevice", "call_microseconds", "event_seconds",
           "get_device", "kernel_times", "queued_seconds"]

Arrays = dict[str, Any]
Call = Callable[[Arrays], object]
#: A further peer: its label (a column of the tables), its call, what it calls.
Peer = tuple[str, Call, str]


class Device(ABC):
    """One kind of device the harness can measure on."""

    #: Name on the command line (``--device NAME``).
    name: str = ""
    #: Backend name of the leaf-size policy (:func:`tricov.leaf_sizes`).
    backend: str = ""
    #: The array module inputs are made with (numpy, cupy).
    xp: Any = np

    def generator(self, seed: Any) -> Any:
        """A random generator with NumPy's ``uniform(low, high, size)`` for ``xp`` arrays."""
        return np.random.default_rng(seed)

    @abstractmethod
    def upload(self, host: np.ndarray) -> Any:
        """A device array holding a copy of the column-major host array ``host``."""

    @abstractmethod
    def download(self, arr: Any) -> np.ndarray:
        """A host copy of the device array ``arr``."""

    @abstractmethod
    def copy(self, dst: Any, src: Any) -> None:
        """Copy ``src`` into ``dst`` (same shape and dtype), finished when this returns."""

    @abstractmethod
    def time(self, call: Call, arrays: Arrays) -> float:
        """Seconds that ``call(arrays)`` takes on the device."""

    @abstractmethod
    def native(self, case: str, dtype: np.dtype) -> tuple[Call, str]:
        """The native peer of ``case`` for ``dtype``, and the names of the routines it calls."""

    @abstractmethod
    def gemm(self, dtype: np.dtype) -> tuple[Call, str]:
        """``C += A B`` on arrays ``A, B, C`` in the vendor library, and the routine's name."""

    def peers(self, case: str, dtype: np.dtype) -> list[Peer]:
        """Further peers of ``case`` beyond the native one (none by default)."""
        return []

    @abstractmethod
    def describe(self) -> dict[str, str]:
        """A flat record of the device and its libraries (CSV columns, table captions)."""

    def label(self) -> str:
        """A short description for table titles."""
        return self.name


class CPUDevice(Device):
    """The CPU: NumPy arrays, wall-clock timing, SciPy's BLAS/LAPACK as the peer."""

    name = "cpu"
    backend = "cpu"

    def upload(self, host: np.ndarray) -> np.ndarray:
        return np.array(host, order="F", copy=True)

    def download(self, arr: np.ndarray) -> np.ndarray:
        return np.array(arr, copy=True)

    def copy(self, dst: np.ndarray, src: np.ndarray) -> None:
        np.copyto(dst, src)

    def time(self, call: Call, arrays: Arrays) -> float:
        start = time.perf_counter()
        call(arrays)
        return time.perf_counter() - start

    def native(self, case: str, dtype: np.dtype) -> tuple[Call, str]:
        from . import peers_cpu

        try:
            peer = peers_cpu.NATIVE[case]
        except KeyError:
            raise ValueError(f"no native CPU peer for the case {case!r}") from None
        dtype = np.dtype(dtype)
        return (lambda x: peer(x, dtype)), peers_cpu.routines(case, dtype)

    def gemm(self, dtype: np.dtype) -> tuple[Call, str]:
        from ..backends.cpu_blas import prefix
        from . import peers_cpu

        dtype = np.dtype(dtype)
        return (lambda x: peers_cpu.gemm(x, dtype)), prefix(dtype) + "gemm"

    def describe(self) -> dict[str, str]:
        from . import machine

        return {"device": self.name, **machine.summary()}

    def label(self) -> str:
        info = self.describe()
        threads = info["blas_threads"]
        return (f"cpu ({info['usable_cpus']} cores, {info['blas']} {info['blas_version']}, "
                f"{threads} thread{'' if threads == '1' else 's'})")


class GPUDevice(Device):
    """The current CUDA GPU: CuPy arrays made on the device, CUDA-event timing, cuBLAS and
    cuSOLVER as the native peers (:mod:`tricov.bench.peers_gpu`), PyTorch as a further peer
    where it is installed with CUDA."""

    name = "gpu"
    backend = "gpu"

    def __init__(self) -> None:
        import cupy

        self.xp = cupy

    def generator(self, seed: Any) -> Any:
        # CuPy's legacy generator has NumPy's uniform(low, high, size); it takes one integer.
        state = np.random.SeedSequence(seed).generate_state(1)[0]
        return self.xp.random.RandomState(int(state))

    def upload(self, host: Any) -> Any:
        return self.xp.asfortranarray(self.xp.asarray(host))

    def download(self, arr: Any) -> np.ndarray:
        return self.xp.asnumpy(arr)

    def copy(self, dst: Any, src: Any) -> None:
        self.xp.copyto(dst, src)
        self.xp.cuda.get_current_stream().synchronize()

    def time(self, call: Call, arrays: Arrays) -> float:
        return event_seconds(lambda: call(arrays), repeats=1, warmup=0)[0]

    def native(self, case: str, dtype: np.dtype) -> tuple[Call, str]:
        from . import peers_gpu

        try:
            peer = peers_gpu.NATIVE[case]
        except KeyError:
            raise ValueError(f"no native GPU peer for the case {case!r}") from None
        dtype = np.dtype(dtype)
        return (lambda x: peer(x, dtype)), peers_gpu.routines(case, dtype)

    def gemm(self, dtype: np.dtype) -> tuple[Call, str]:
        from . import peers_gpu

        dtype = np.dtype(dtype)
        prefix = {"float32": "S", "float64": "D", "complex64": "C", "complex128": "Z"}
        return (lambda x: peers_gpu.gemm(x, dtype)), f"cublas{prefix[dtype.name]}gemm"

    def peers(self, case: str, dtype: np.dtype) -> list[Peer]:
        from . import peers_gpu

        found = peers_gpu.torch_peer(case)
        return [] if found is None else [("torch", found[0], found[1])]

    def describe(self) -> dict[str, str]:
        from . import machine

        props = self.xp.cuda.runtime.getDeviceProperties(self.xp.cuda.Device().id)
        name = props["name"]
        runtime = self.xp.cuda.runtime.runtimeGetVersion()
        info = {"device": self.name,
                "gpu": name.decode() if isinstance(name, bytes) else str(name),
                "cuda_runtime": f"{runtime // 1000}.{runtime % 1000 // 10}"}
        try:
            import torch

            info["torch_version"] = str(torch.__version__)
        except ImportError:
            info["torch_version"] = "not installed"
        try:
            info.update(machine.summary())
        except ImportError:  # threadpoolctl absent: the host's BLAS is not what is measured
            info.update({f"{k}_version": v for k, v in machine.versions().items()})
        return info

    def label(self) -> str:
        info = self.describe()
        return f"gpu ({info['gpu']}, CUDA {info['cuda_runtime']})"


#: Device factories by name.
DEVICES: dict[str, Callable[[], Device]] = {"cpu": CPUDevice, "gpu": GPUDevice}


def get_device(name: str) -> Device:
    """A new device of kind ``name`` (a key of :data:`DEVICES`).

    Raises
    ------
    ValueError
        For an unknown name, or a device this machine cannot provide (no CuPy, no GPU).
    """
    try:
        factory = DEVICES[name]
    except KeyError:
        raise ValueError(f"device must be one of {sorted(DEVICES)}, got {name!r}") from None
    try:
        return factory()
    except ImportError as e:
        raise ValueError(f"device {name!r} is not available here: {e}") from None


def call_microseconds(call: Callable[[], object], calls: int = 200, rounds: int = 5,
                      warmup: int = 20, sync: Callable[[], object] | None = None) -> float:
    """Best host microseconds per call of ``call`` over ``rounds`` loops of ``calls`` calls,
    after ``warmup`` untimed calls: the fixed cost of a call where its work takes no time.
    ``sync`` (a device synchronisation) runs before and after each loop, so that a loop of
    calls that only queue GPU work is timed without the work queued before it."""
    for _ in range(warmup):
        call()
    best = float("inf")
    for _ in range(rounds):
        if sync is not None:
            sync()
        t = time.perf_counter()
        for _ in range(calls):
            call()
        if sync is not None:
            sync()
        best = min(best, (time.perf_counter() - t) / calls * 1e6)
    return best


def event_seconds(call: Callable[[], object], reset: Callable[[], object] | None = None,
                  repeats: int = 7, warmup: int = 2) -> list[float]:
    """GPU seconds of ``repeats`` calls of ``call``, each between two CUDA events on the
    current stream (a call as a user makes it, host work included where the GPU waits for it).

    ``reset`` runs before every call, outside the events (restoring an in-place output);
    ``warmup`` calls run first, untimed.
    """
    import cupy

    times = []
    for k in range(warmup + repeats):
        if reset is not None:
            reset()
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        call()
        stop.record()
        stop.synchronize()
        if k >= warmup:
            times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return times


def queued_seconds(call: Callable[[], object], calls: int = 10, rounds: int = 3,
                   warmup: int = 3) -> float:
    """GPU seconds per call of ``calls`` back-to-back calls of ``call`` between two CUDA events
    (host work hidden where the device is the slower), best of ``rounds``; ``warmup`` calls run
    first, untimed."""
    import cupy

    for _ in range(warmup):
        call()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    best = float("inf")
    for _ in range(rounds):
        start.record()
        for _ in range(calls):
            call()
        stop.record()
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop) / 1e3 / calls)
    return best


def kernel_times(call: Callable[[], object]) -> list[tuple[str, float, int]]:
    """(name, device microseconds, count) of every kernel and copy one ``call`` runs, summed by
    name, longest first, as PyTorch's profiler sees them (CUPTI: CuPy's, cuBLAS's and tricov's
    kernels alike). Needs PyTorch, a comparison tool here: no library path calls this."""
    import cupy
    from torch.profiler import ProfilerActivity, profile

    cupy.cuda.Device().synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        cupy.cuda.Device().synchronize()
    rows = [(e.key, e.device_time_total, e.count) for e in prof.key_averages()
            if e.device_time_total > 0]
    return sorted(rows, key=lambda r: -r[1])
