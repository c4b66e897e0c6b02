"""Run-time compilation of tricov's CUDA templates (``kernels/cuda/*.cu``) through CuPy.

Each template instantiation is compiled once per process by NVRTC and looked up by its C++
name expression, e.g. ``tricov::potrf_leaf<double, 128>`` (:func:`function`). CuPy keeps no
binary of modules compiled with name expressions, so kernels that take long to compile are
defined instead by a line appended to their source, a kernel with C linkage, whose binary CuPy
caches on disk (:func:`kernel`): later processes load it.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CTYPE", "SOURCE_DIR", "allow_shared", "function", "kernel", "shared_max",
           "sources"]

SOURCE_DIR = Path(__file__).parent / "cuda"

#: The C++ type of each dtype in the templates.
CTYPE = {np.dtype(np.float32): "float", np.dtype(np.float64): "double",
         np.dtype(np.complex64): "tricov::cplx<float>",
         np.dtype(np.complex128): "tricov::cplx<double>"}


def sources() -> list[Path]:
    """Every CUDA source file of the package (for compile checks)."""
    return sorted(SOURCE_DIR.glob("*.cu"))


@functools.cache
def function(filename: str, expression: str) -> Any:
    """The compiled kernel ``expression`` from ``kernels/cuda/filename``."""
    import cupy

    code = (SOURCE_DIR / filename).read_text()
    module = cupy.RawModule(code=code, options=("-std=c++17", f"-I{SOURCE_DIR}"),
                            name_expressions=(expression,))
    return module.get_function(expression)


#: Shared memory a block may take without opting in (CUDA's static limit).
_DEFAULT_SHARED = 48 * 1024
_opted_in: set[tuple[int, int]] = set()


@functools.cache
def _shared_max(device: int) -> int:
    import cupy

    return int(cupy.cuda.Device(device).attributes["MaxSharedMemoryPerBlockOptin"])


def shared_max() -> int:
    """Dynamic shared memory one block may take on the current device (after opting in)."""
    import cupy

    return _shared_max(cupy.cuda.Device().id)


def allow_shared(kernel: Any, nbytes: int) -> None:
    """Let ``kernel`` launch with ``nbytes`` of dynamic shared memory on the current device.

    The kernel opts in once to all the dynamic shared memory a block may take beside its
    static shared memory.
    """
    if nbytes <= _DEFAULT_SHARED:
        return
    import cupy

    key = (id(kernel), cupy.cuda.Device().id)
    if key not in _opted_in:
        kernel.max_dynamic_shared_size_bytes = shared_max() - kernel.shared_size_bytes
        _opted_in.add(key)



@functools.cache
def kernel(filename: str, name: str, definition: str) -> Any:
    """The C-linkage kernel ``name`` defined by the line ``definition`` appended to
    ``kernels/cuda/filename`` (cached on disk by CuPy, keyed by the code: the headers the
    file includes enter it through their hash)."""
    import cupy

    headers = "".join(f"// {p.name} {hashlib.sha256(p.read_bytes()).hexdigest()}\n"
                      for p in sorted(SOURCE_DIR.glob("*.cuh")))
    code = (SOURCE_DIR / filename).read_text() + "\n" + headers + definition + "\n"
    module = cupy.RawModule(code=code, options=("-std=c++17", f"-I{SOURCE_DIR}"))
    return module.get_function(name)


def cbool(flag: bool) -> str:
    """A C++ boolean literal."""
    return "true" if flag else "false"

