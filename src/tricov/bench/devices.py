"""Where a benchmark runs: memory, timing and peers of one kind of device.

The harness (:mod:`tricov.bench.runner`) only talks to a :class:`Device`. A device moves host
arrays onto itself, restores outputs between timed calls, times one call (CPU: wall clock; a
GPU device will use CUDA events), and supplies the peers: the native library routine of each case
and the GEMM. Only the CPU is implemented here; a GPU device registers itself in :data:`DEVICES`
with a factory that imports CuPy lazily.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["DEVICES", "CPUDevice", "Device", "get_device"]

Arrays = dict[str, Any]
Call = Callable[[Arrays], object]


class Device(ABC):
    """One kind of device the harness can measure on."""

    #: Name on the command line (``--device NAME``).
    name: str = ""
    #: Backend name of the leaf-size policy (:func:`tricov.leaf_sizes`).
    backend: str = ""

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


#: Device factories by name. A GPU device is added as ``DEVICES["gpu"] = factory``, where the
#: factory imports CuPy when called.
DEVICES: dict[str, Callable[[], Device]] = {"cpu": CPUDevice}


def get_device(name: str) -> Device:
    """A new device of kind ``name`` (a key of :data:`DEVICES`)."""
    try:
        factory = DEVICES[name]
    except KeyError:
        raise ValueError(f"device must be one of {sorted(DEVICES)}, got {name!r}") from None
    return factory()
