"""What a call's operands and options say about its work: the shared part of replay keys.

A repeated call is replayed (:mod:`tricov._calls` for dense calls, :mod:`tricov.batched._replay`
for batched ones) when its key was seen before. The key holds the operation and its options and,
per operand, its address, shape, strides and dtype (and for NumPy whether it is writeable):
everything the slow path's decisions depend on, never the data.

GPU operands of other libraries count as the CuPy arrays over their memory:

* a PyTorch CUDA tensor is keyed from its own attributes (``data_ptr``, ``shape``, ``stride``,
  ``dtype``) when torch's current stream on its device is CuPy's current stream, so that no
  ordering between the two is needed; about 3 microseconds, where ``cupy.from_dlpack`` takes
  about 20 (on one H100 host). A tensor that requires grad, or has its conjugate or negative bit
  set, is left to the slow path, which refuses or resolves it as before;
* any other DLPack tensor of a CUDA device (JAX, or torch on another stream) is converted as the
  slow path converts it (``cupy.from_dlpack``, which also orders the producer's stream before
  CuPy's current one) and keyed as the result.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from . import _plans

__all__ = ["CUDA_DLPACK", "on_cuda", "operand_key"]

#: DLPack device types of CUDA memory (kDLCUDA, kDLCUDAManaged): the tensors tricov takes to
#: the GPU.
CUDA_DLPACK = (2, 13)


def on_cuda(x: Any) -> bool:
    """Whether ``x`` is a CuPy array or a DLPack tensor of CUDA memory."""
    cls = type(x)
    if cls.__module__ == "cupy" and cls.__name__ == "ndarray":
        return True
    device = getattr(x, "__dlpack_device__", None)
    return device is not None and int(device()[0]) in CUDA_DLPACK


def operand_key(kind: Any, arrays: tuple[Any, ...],
                options: tuple) -> tuple[list[Any], int | None, np.dtype] | None:
    """``(parts, device, dtype)``: the parts of a replay key (``kind``, ``options``, then per
    operand its address, shape, strides and dtype, byte order included, and for NumPy whether it
    is writeable), the device (None for NumPy arrays) and the first operand's dtype. None where
    the call cannot be replayed: graphs off, an option that cannot be hashed, operands that are
    not all NumPy arrays or all CUDA arrays of the current device."""
    if not _plans.cuda_graphs_enabled():
        return None
    try:
        hash(options)
    except TypeError:  # an option given as an array, say
        return None
    parts: list[Any] = [kind, options]
    kinds = set()
    dtype = None
    for a in arrays:
        cls = type(a)
        if cls is np.ndarray:
            device, part = None, (a.__array_interface__["data"][0], a.shape, a.strides, a.dtype,
                                  a.flags.writeable)
        else:
            found = _device_part(a, cls)
            if found is None:
                return None
            device, part = found
        kinds.add(device)
        parts += part
        dtype = part[3] if dtype is None else dtype
    if len(kinds) != 1:
        return None
    device = kinds.pop()
    if device is not None:
        import cupy

        if device != cupy.cuda.runtime.getDevice():
            return None
    return parts, device, dtype


def _device_part(a: Any, cls: type) -> tuple[int, tuple] | None:
    """(device, (address, shape, strides, dtype)) of a GPU operand, None if it is not one."""
    if cls.__module__ == "torch" and cls.__name__ == "Tensor":
        part = _torch_part(a)
        if part is not None:
            return part
    elif not on_cuda(a):
        return None
    if cls.__module__ != "cupy":
        import cupy

        a = cupy.from_dlpack(a)
    memory = a.data
    return memory.device_id, (memory.ptr, a.shape, a.strides, a.dtype)


_TORCH_DTYPES: dict[Any, np.dtype] = {}


def _torch_part(t: Any) -> tuple[int, tuple] | None:
    """:func:`_device_part` of a PyTorch tensor from its own attributes, where that is exact
    (see the module notes); else None."""
    device = t.device
    try:
        if device.type != "cuda" or t.requires_grad or t.is_conj() or t.is_neg():
            return None
    except AttributeError:  # a torch without conjugate or negative bits
        return None
    torch = sys.modules["torch"]
    if not _TORCH_DTYPES:
        _TORCH_DTYPES.update({torch.float32: np.dtype(np.float32),
                              torch.float64: np.dtype(np.float64),
                              torch.complex64: np.dtype(np.complex64),
                              torch.complex128: np.dtype(np.complex128)})
    dtype = _TORCH_DTYPES.get(t.dtype)
    if dtype is None:
        return None
    import cupy

    if torch.cuda.current_stream(device).cuda_stream != cupy.cuda.get_current_stream().ptr:
        return None
    size = dtype.itemsize
    return device.index, (t.data_ptr(), tuple(t.shape), tuple(s * size for s in t.stride()),
                          dtype)
