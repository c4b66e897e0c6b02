"""Thin bindings to cuBLAS, cuBLASLt and cuSOLVER, by pointer, on CuPy's handles.

CuPy binds GEMM and TRSM but not TRMM, SYRK/HERK for every precision, cuSOLVER's TRTRI, or
cuBLASLt's matmul (a GEMM whose output ``D`` need not be its input ``C``), so tricov declares the
few entry points it needs itself, against the very libraries CuPy has loaded (found in the
process map), and calls them with CuPy's per-device handles on the current stream. Scalars are
passed from host memory (pointer mode host), so calls can be captured into CUDA graphs with
their values baked in.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["COMPUTE_TF32", "GEMM_CHUNK", "GEMM_DEFAULT", "bind_blas", "bind_solver", "blas",
           "capture_handle", "check", "cublas_handle", "cusolver_handle", "matmul_into",
           "matmul_plan", "own_handle", "read_small", "solver"]

OP = {b"N": 0, b"T": 1, b"C": 2}
SIDE = {b"L": 0, b"R": 1}
FILL = {b"L": 0, b"U": 1}
DIAG = {b"N": 0, b"U": 1}
#: cudaDataType of each dtype, for cuSOLVER's 64-bit API.
CUDA_TYPE = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.complex64): 4,
             np.dtype(np.complex128): 5}
_PREFIX = {np.dtype(np.float32): "S", np.dtype(np.float64): "D", np.dtype(np.complex64): "C",
           np.dtype(np.complex128): "Z"}

#: Most members of one cuBLAS batched GEMM call.
GEMM_CHUNK = 65535
#: cublasComputeType_t of float32 products on the TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32),
#: and cuBLAS's default algorithm choice.
COMPUTE_TF32, GEMM_DEFAULT = 77, -1

_vp, _i, _i64, _sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_size_t


def _loaded_library(fragment: str) -> ctypes.CDLL:
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            name = path.rsplit("/", 1)[-1]
            if name.startswith(fragment + ".so"):
                return ctypes.CDLL(path)
    return ctypes.CDLL(fragment + ".so")


@functools.cache
def _libs() -> tuple[ctypes.CDLL, ctypes.CDLL, ctypes.CDLL]:
    # Creating CuPy's handles loads the libraries into the process (cuBLAS loads cuBLASLt).
    cublas_handle()
    cusolver_handle()
    return (_loaded_library("libcublas"), _loaded_library("libcusolver"),
            _loaded_library("libcublasLt"))


def cublas_handle() -> int:
    """CuPy's cuBLAS handle of the current device."""
    import cupy

    return int(cupy.cuda.device.get_cublas_handle())


def cusolver_handle() -> int:
    """CuPy's cuSOLVER dense handle of the current device."""
    import cupy

    return int(cupy.cuda.device.get_cusolver_handle())


_SIGNATURES: dict[str, list] = {
    "cublasCreate_v2": [_vp],
    "cublasSetWorkspace_v2": [_vp, _vp, _sz],
    "cublasSetStream_v2": [_vp, _vp],
    "cublasSetPointerMode_v2": [_vp, _i],
    "gemm_v2": [_vp, _i, _i, _i, _i, _i, _vp, _vp, _i, _vp, _i, _vp, _vp, _i],
    "gemmStridedBatched": [_vp, _i, _i, _i, _i, _i, _vp, _vp, _i, _i64, _vp, _i, _i64, _vp,
                           _vp, _i, _i64, _i],
    "gemmBatched": [_vp, _i, _i, _i, _i, _i, _vp, _vp, _i, _vp, _i, _vp, _vp, _i, _i],
    "gemmGroupedBatched": [_vp] * 14 + [_i, _vp],
    "cublasGemmEx": [_vp, _i, _i, _i, _i, _i, _vp, _vp, _i, _i, _vp, _i, _i, _vp, _vp, _i, _i,
                     _i, _i],
    "cublasGemmStridedBatchedEx": [_vp, _i, _i, _i, _i, _i, _vp, _vp, _i, _i, _i64, _vp, _i, _i,
                                   _i64, _vp, _vp, _i, _i, _i64, _i, _i, _i],
    "trsm_v2": [_vp, _i, _i, _i, _i, _i, _i, _vp, _vp, _i, _vp, _i],
    "trmm_v2": [_vp, _i, _i, _i, _i, _i, _i, _vp, _vp, _i, _vp, _i, _vp, _i],
    "syrk_v2": [_vp, _i, _i, _i, _i, _vp, _vp, _i, _vp, _vp, _i],
    "herk_v2": [_vp, _i, _i, _i, _i, _vp, _vp, _i, _vp, _vp, _i],
    "cusolverDnSetStream": [_vp, _vp],
    "potrf_bufferSize": [_vp, _i, _i, _vp, _i, _vp],
    "potrf": [_vp, _i, _i, _vp, _i, _vp, _i, _vp],
    "potri_bufferSize": [_vp, _i, _i, _vp, _i, _vp],
    "potri": [_vp, _i, _i, _vp, _i, _vp, _i, _vp],
    "potrs": [_vp, _i, _i, _i, _vp, _i, _vp, _i, _vp],
    "cusolverDnXtrtri_bufferSize": [_vp, _i, _i, _i64, _i, _vp, _i64, _vp, _vp],
    "cusolverDnXtrtri": [_vp, _i, _i, _i64, _i, _vp, _i64, _vp, _sz, _vp, _sz, _vp],
    "cublasLtMatmulDescCreate": [_vp, _i, _i],
    "cublasLtMatmulDescSetAttribute": [_vp, _i, _vp, _sz],
    "cublasLtMatrixLayoutCreate": [_vp, _i, ctypes.c_uint64, ctypes.c_uint64, _i64],
    "cublasLtMatmulPreferenceCreate": [_vp],
    "cublasLtMatmulPreferenceSetAttribute": [_vp, _i, _vp, _sz],
    "cublasLtMatmulAlgoGetHeuristic": [_vp] * 7 + [_i, _vp, _vp],
    "cublasLtMatmul": [_vp] * 16,
    "cublasLtMatmulDescDestroy": [_vp],
    "cublasLtMatrixLayoutDestroy": [_vp],
    "cublasLtMatmulPreferenceDestroy": [_vp],
}


@functools.cache
def _function(library: str, name: str, signature: str) -> Callable[..., int]:
    lib = _libs()[("cublas", "cusolver", "cublasLt").index(library)]
    fn = getattr(lib, name)
    fn.restype = ctypes.c_int
    fn.argtypes = _SIGNATURES[signature]
    return fn


def blas(name: str, dtype: np.dtype | None = None) -> Callable[..., int]:
    """A cuBLAS function: ``blas("gemm_v2", float64)`` is ``cublasDgemm_v2``."""
    full = name if dtype is None else f"cublas{_PREFIX[np.dtype(dtype)]}{name}"
    return _function("cublas", full, name)


def solver(name: str, dtype: np.dtype | None = None) -> Callable[..., int]:
    """A cuSOLVER function: ``solver("potrf", float64)`` is ``cusolverDnDpotrf``."""
    full = name if dtype is None else f"cusolverDn{_PREFIX[np.dtype(dtype)]}{name}"
    return _function("cusolver", full, name)


#: cuBLASLt's enumerations: compute type (and scale type) per dtype, the matmul descriptor's
#: TRANSA and TRANSB attributes, the preference's MAX_WORKSPACE_BYTES.
_LT_COMPUTE = {np.dtype(np.float32): 68, np.dtype(np.float64): 70, np.dtype(np.complex64): 68,
               np.dtype(np.complex128): 70}
_LT_TRANSA, _LT_TRANSB, _LT_MAX_WORKSPACE = 3, 4, 1
#: Bytes of a cublasLtMatmulHeuristicResult_t (the algorithm, 64 bytes, comes first).
_LT_RESULT = 96


def _lt(name: str) -> Callable[..., int]:
    return _function("cublasLt", name, name)


class _LtPlan:
    """cuBLASLt's descriptors of one GEMM shape on one device, the algorithm its heuristic
    picks with at most :data:`CAPTURE_WORKSPACE` bytes of workspace, and the bytes it needs
    (``workspace``); the descriptors are freed with the plan."""

    def __init__(self, dtype: np.dtype, ta: int, tb: int, m: int, n: int, k: int, lda: int,
                 ldb: int, ldc: int, ldd: int, tf32: bool) -> None:
        kind = CUDA_TYPE[dtype]
        compute = COMPUTE_TF32 if tf32 else _LT_COMPUTE[dtype]
        self.desc, self.layouts = ctypes.c_void_p(), []
        check(_lt("cublasLtMatmulDescCreate")(ctypes.byref(self.desc), compute, kind),
              "cublasLtMatmulDescCreate")
        for attr, value in ((_LT_TRANSA, ta), (_LT_TRANSB, tb)):
            op = ctypes.c_int32(value)
            check(_lt("cublasLtMatmulDescSetAttribute")(self.desc, attr, ctypes.byref(op), 4),
                  "cublasLtMatmulDescSetAttribute")
        for rows, cols, ld in ((k, m, lda) if ta else (m, k, lda),
                               (n, k, ldb) if tb else (k, n, ldb), (m, n, ldc), (m, n, ldd)):
            layout = ctypes.c_void_p()
            self.layouts.append(layout)
            check(_lt("cublasLtMatrixLayoutCreate")(ctypes.byref(layout), kind, rows, cols, ld),
                  "cublasLtMatrixLayoutCreate")
        pref = ctypes.c_void_p()
        check(_lt("cublasLtMatmulPreferenceCreate")(ctypes.byref(pref)),
              "cublasLtMatmulPreferenceCreate")
        try:
            most = ctypes.c_uint64(CAPTURE_WORKSPACE)
            check(_lt("cublasLtMatmulPreferenceSetAttribute")(pref, _LT_MAX_WORKSPACE,
                                                              ctypes.byref(most), 8),
                  "cublasLtMatmulPreferenceSetAttribute")
            self.result = ctypes.create_string_buffer(_LT_RESULT)
            found = ctypes.c_int(0)
            check(_lt("cublasLtMatmulAlgoGetHeuristic")(
                cublas_handle(), self.desc, *self.layouts, pref, 1, self.result,
                ctypes.byref(found)), "cublasLtMatmulAlgoGetHeuristic")
        finally:
            _lt("cublasLtMatmulPreferenceDestroy")(pref)
        if found.value < 1:
            raise RuntimeError(f"cuBLASLt has no algorithm for a {dtype} GEMM of {m}x{n}x{k}")
        self.workspace = ctypes.c_size_t.from_buffer(self.result, 64).value  # after the algo

    def __del__(self) -> None:
        for layout in getattr(self, "layouts", ()):
            if layout.value:
                _lt("cublasLtMatrixLayoutDestroy")(layout)
        if getattr(self, "desc", None) is not None and self.desc.value:
            _lt("cublasLtMatmulDescDestroy")(self.desc)


@functools.lru_cache(maxsize=256)
def _lt_plan(device: int, *shape: Any) -> _LtPlan:
    return _LtPlan(*shape)


atexit.register(_lt_plan.cache_clear)  # free the descriptors while the bindings still exist


def matmul_plan(dtype: np.dtype, ta: int, tb: int, m: int, n: int, k: int, lda: int, ldb: int,
                ldc: int, ldd: int, tf32: bool = False) -> _LtPlan:
    """cuBLASLt's plan of ``D <- alpha op(A) op(B) + beta C`` for this shape on the current
    device (``ta``/``tb`` cublasOperation_t values; ``tf32``: a float32 product on the TF32
    tensor cores): cached; its ``workspace`` is the bytes of device memory
    :func:`matmul_into` needs."""
    import cupy

    return _lt_plan(cupy.cuda.runtime.getDevice(), np.dtype(dtype), ta, tb, m, n, k, lda, ldb,
                    ldc, ldd, tf32)


def matmul_into(handle: int, stream: int, plan: _LtPlan, alpha: int, a: int, b: int, beta: int,
                c: int, d: int, workspace: int) -> None:
    """``D <- alpha op(A) op(B) + beta C`` (cuBLASLt's matmul) as ``plan`` says
    (:func:`matmul_plan`; ``alpha``/``beta`` host addresses): a GEMM whose output need not be
    its input.

    ``handle`` is a cuBLAS handle (a valid cuBLASLt handle too), ``stream`` the stream's
    address, ``workspace`` the address of ``plan.workspace`` bytes of device memory that no
    other work on another stream uses meanwhile."""
    la, lb, lc, ld_ = plan.layouts
    check(_lt("cublasLtMatmul")(handle, plan.desc, alpha, a, la, b, lb, beta, c, lc, d, ld_,
                                plan.result, workspace, plan.workspace, stream),
          "cublasLtMatmul")


def check(status: int, what: str) -> None:
    """Raise if a cuBLAS/cuSOLVER call returned an error status."""
    if status:
        raise RuntimeError(f"{what} failed with status {status}")


#: Workspace of each handle of tricov's own (cuBLAS's recommendation for Hopper).
CAPTURE_WORKSPACE = 32 << 20
_own_handles: dict[tuple[int, str], tuple[int, Any]] = {}


def own_handle(purpose: str) -> int:
    """A cuBLAS handle of tricov's own for the current device and ``purpose``.

    It owns its workspace (set once with ``cublasSetWorkspace``), so its calls never allocate
    (as graph capture requires), and CuPy's own handle keeps its settings.
    """
    import cupy

    key = (cupy.cuda.runtime.getDevice(), purpose)
    if key not in _own_handles:
        handle = ctypes.c_void_p()
        check(blas("cublasCreate_v2")(ctypes.byref(handle)), "cublasCreate")
        workspace = cupy.empty(CAPTURE_WORKSPACE, dtype=np.uint8)
        check(blas("cublasSetWorkspace_v2")(handle.value, workspace.data.ptr,
                                            CAPTURE_WORKSPACE), "cublasSetWorkspace")
        check(blas("cublasSetPointerMode_v2")(handle.value, 0), "cublasSetPointerMode")
        _own_handles[key] = (handle.value, workspace)
    return _own_handles[key][0]


def capture_handle() -> int:
    """The handle (:func:`own_handle`) used while capturing graphs."""
    return own_handle("capture")


def bind_blas(stream_ptr: int, handle: int | None = None) -> int:
    """A cuBLAS handle (CuPy's by default) on ``stream_ptr``, in host pointer mode."""
    handle = cublas_handle() if handle is None else handle
    check(blas("cublasSetStream_v2")(handle, stream_ptr), "cublasSetStream")
    check(blas("cublasSetPointerMode_v2")(handle, 0), "cublasSetPointerMode")
    return handle


def bind_solver(stream_ptr: int) -> int:
    """CuPy's cuSOLVER handle of the current device, on ``stream_ptr``."""
    handle = cusolver_handle()
    check(solver("cusolverDnSetStream")(handle, stream_ptr), "cusolverDnSetStream")
    return handle


_pinned = threading.local()


def read_small(values: Any) -> np.ndarray:
    """The small contiguous device array ``values`` on the host, once the current stream has
    computed it (statuses and per-member infos, read at the end of a checked call).

    It is copied through a page-locked buffer of the calling thread, reused from call to call:
    on an H100 host a copy to fresh pageable memory and the first touch of its pages cost
    about 25 us more, and CuPy's ``get`` of a 64-word status chunk took 15.2 us against 12.8
    this way (benchmarks/gpu_status_read.py). The result is a view of that buffer, valid until
    this thread's next read."""
    import cupy

    nbytes = values.nbytes
    bufs = _pinned.__dict__.setdefault("bufs", {})
    device = cupy.cuda.Device().id
    host = bufs.get(device)
    if host is None or host.size < nbytes:
        host = np.frombuffer(cupy.cuda.alloc_pinned_memory(max(nbytes, 8192)), np.uint8)
        bufs[device] = host
    stream = cupy.cuda.get_current_stream()
    cupy.cuda.runtime.memcpyAsync(host.ctypes.data, values.data.ptr, nbytes,
                                  cupy.cuda.runtime.memcpyDeviceToHost, stream.ptr)
    stream.synchronize()
    return host[:nbytes].view(values.dtype)
