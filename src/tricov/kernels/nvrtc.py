"""Run-time compilation of tricov's CUDA templates (``kernels/cuda/*.cu``) through CuPy.

Each template instantiation is compiled once per process by NVRTC and looked up by its C++
name expression, e.g. ``tricov::potrf_leaf<double, 128>`` (:func:`function`). CuPy keeps no
binary of modules compiled with name expressions, so kernels that take long to compile are
defined instead by a line appended to their source, a kernel with C linkage, whose binary CuPy
caches on disk (:func:`kernel`): later processes load it.

:func:`launch` starts a compiled kernel with its scalar parameters packed into one host
buffer, for launches whose Python cost matters (the batched operations on small matrices).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import struct
import threading
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ARCH", "CTYPE", "SOURCE_DIR", "address_offsets", "allow_shared", "capability",
           "device_attribute", "function", "kernel", "launch", "parameter_buffer", "record",
           "shared_max", "sources"]

SOURCE_DIR = Path(__file__).parent / "cuda"

#: The C++ type of each dtype in the templates.
CTYPE = {np.dtype(np.float32): "float", np.dtype(np.float64): "double",
         np.dtype(np.complex64): "tricov::cplx<float>",
         np.dtype(np.complex128): "tricov::cplx<double>"}


#: Sources built for one GPU architecture's own features (not forward compatible), by name: the
#: fused split-TF32 kernel uses Hopper's warpgroup MMA (wgmma), which only sm_90a code may.
ARCH = {"tf32_narrow.cu": "sm_90a"}


def sources() -> list[Path]:
    """Every CUDA source file of the package (for compile checks)."""
    return sorted(SOURCE_DIR.glob("*.cu"))


@functools.cache
def function(filename: str, expression: str) -> Any:
    """The compiled kernel ``expression`` from ``kernels/cuda/filename``."""
    import cupy

    code = (SOURCE_DIR / filename).read_text()
    if filename in ARCH:
        return _for_arch(code, expression, ARCH[filename])
    module = cupy.RawModule(code=code, options=("-std=c++17", f"-I{SOURCE_DIR}"),
                            name_expressions=(expression,))
    return module.get_function(expression)


@functools.cache
def _binaries() -> Path:
    """A directory of this process's own (mode 0700, removed at exit) for the binaries of
    :func:`_for_arch`: no other user's file can stand in for one of them."""
    import atexit
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="tricov-cubin-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def _for_arch(code: str, expression: str, arch: str) -> Any:
    """The kernel ``expression`` of ``code`` built by NVRTC for ``arch`` (CuPy's RawModule
    picks the device's generic target itself), loaded from its binary in this process's own
    directory (:func:`_binaries`: CuPy loads a module from a file, on each device as it needs
    it)."""
    import cupy
    from cupy.cuda import nvrtc as nv

    program = nv.createProgram(code, "tricov.cu", [], [])
    try:
        nv.addNameExpression(program, expression)
        try:
            nv.compileProgram(program, ["-std=c++17", f"-I{SOURCE_DIR}", f"-arch={arch}"])
        except nv.NVRTCError as err:
            raise RuntimeError(f"{expression} ({arch}):\n{nv.getProgramLog(program)}") from err
        binary, lowered = nv.getCUBIN(program), nv.getLoweredName(program, expression)
    finally:
        nv.destroyProgram(program)
    path = _binaries() / f"{hashlib.sha256(binary).hexdigest()[:24]}.cubin"
    path.write_bytes(binary)
    return cupy.RawModule(path=str(path)).get_function(lowered)


#: Shared memory a block may take without opting in (CUDA's static limit).
_DEFAULT_SHARED = 48 * 1024
# Kernels that opted in, by (id, device); each entry holds its kernel, so no other object can
# take its id while it is recorded.
_opted_in: dict[tuple[int, int], Any] = {}


@functools.cache
def _attribute(device: int, name: str) -> int:
    import cupy

    return int(cupy.cuda.Device(device).attributes[name])


def device_attribute(name: str) -> int:
    """The current device's attribute ``name`` (as CuPy's ``Device.attributes`` names it),
    read once per device."""
    import cupy

    return _attribute(cupy.cuda.Device().id, name)


@functools.cache
def _capability(device: int) -> str:
    import cupy

    return str(cupy.cuda.Device(device).compute_capability)


def capability() -> str:
    """The current device's compute capability as CuPy writes it ("90" for Hopper)."""
    import cupy

    return _capability(cupy.cuda.Device().id)


def shared_max() -> int:
    """Dynamic shared memory one block may take on the current device (after opting in)."""
    return device_attribute("MaxSharedMemoryPerBlockOptin")


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
        _opted_in[key] = kernel



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


#: Bytes of host buffer per kernel parameter in :func:`launch` (the largest: complex128).
_SLOT = 16
#: Packing of one parameter in its slot, by code: int64, uint64 (an address), int32, and the
#: scalar types by NumPy's character (a complex one takes two values, real and imaginary).
_PACK = {"q": "q8x", "Q": "Q8x", "i": "i12x", "f": "f12x", "d": "d8x", "F": "2f8x", "D": "2d"}


@functools.cache
def _layout(codes: str) -> struct.Struct:
    return struct.Struct("<" + "".join(_PACK[c] for c in codes))


# Per thread and parameter codes: the host buffer of the parameters and the array of the
# addresses of its slots (what the driver reads), made once and refilled by every launch (the
# driver copies the parameters before cuLaunchKernel returns).
_buffers = threading.local()


def parameter_buffer(codes: str) -> tuple[struct.Struct, Any, int, Any]:
    """A new (packing, host buffer, address of the slot addresses, the slot addresses) for
    parameters of type codes ``codes``."""
    layout = _layout(codes)
    host = ctypes.create_string_buffer(layout.size)
    base = ctypes.addressof(host)
    slots = (ctypes.c_void_p * len(codes))(*(base + _SLOT * i for i in range(len(codes))))
    return layout, host, ctypes.addressof(slots), slots


def _parameters(codes: str) -> tuple[struct.Struct, Any, int, Any]:
    """The calling thread's :func:`parameter_buffer` of ``codes``."""
    table = _buffers.__dict__.setdefault("table", {})
    entry = table.get(codes)
    if entry is None:
        entry = table[codes] = parameter_buffer(codes)
    return entry


def address_offsets(codes: str, args: tuple, address: int) -> tuple[int, ...]:
    """Byte offsets, in a :func:`parameter_buffer` of ``codes`` packed with ``args``, of the
    address parameters (code ``Q``) equal to ``address``."""
    offsets, at = [], 0
    for slot, code in enumerate(codes):
        if code == "Q" and args[at] == address:
            offsets.append(_SLOT * slot)
        at += 2 if code in "FD" else 1  # a complex value is given as two
    return tuple(offsets)


def record(launches: list | None) -> None:
    """Append every later :func:`launch` of the calling thread to ``launches``, as (kernel,
    grid, block, codes, parameters, shared), until called with None."""
    _buffers.recording = launches


def launch(kernel: Any, grid: int, block: int, stream: int, codes: str, *args: Any,
           shared: int = 0) -> None:
    """Launch ``kernel`` (from :func:`kernel` or :func:`function`) on a 1-D grid.

    The parameters are packed into one host buffer by their type codes (see ``_PACK``; a
    complex parameter takes its real and imaginary parts as two arguments), and the driver
    reads each from its slot, so a launch costs a few microseconds of Python instead of one
    conversion per parameter. The buffer and the addresses of its slots are made once per
    thread and layout and refilled in place: on an H100 host, with the batch's layouts looked up
    once (:mod:`tricov.batched._operands`), that took a batched TRSM call of order 8 from 65.5
    to 47.8 us (``benchmarks/gpu_batched_call.py``, ``gpu_batched_call_h100.txt``).

    Parameters
    ----------
    kernel : cupy.RawKernel
        Its ``kernel`` is the function loaded on the current device.
    grid, block : int
        Blocks, and threads per block.
    stream : int
        The CUDA stream (``cupy.cuda.Stream.ptr``).
    codes : str
        One code per parameter of the kernel, in order.
    *args
        The parameters' values.
    shared : int
        Bytes of dynamic shared memory (beyond 48 KiB the kernel opts in, see
        :func:`allow_shared`).
    """
    from cupy.cuda import driver

    recording = getattr(_buffers, "recording", None)
    if recording is not None:
        recording.append((kernel, grid, block, codes, args, shared))
    layout, host, slots, _ = _parameters(codes)
    layout.pack_into(host, 0, *args)
    allow_shared(kernel, shared)
    driver.launchKernel(kernel.kernel.ptr, grid, 1, 1, block, 1, 1, shared, stream, slots, 0)
