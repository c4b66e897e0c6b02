"""The GPU peers: cuBLAS and cuSOLVER called by pointer on the same CuPy arrays, and PyTorch.

The native peer of each case is the vendor library's routine of the same operation (cuBLAS
TRSM/TRMM/SYRK/HERK, cuSOLVER POTRF/POTRS/TRTRI/POTRI; LAUUM, which cuSOLVER lacks, as a cuBLAS
TRMM on a zero-padded copy of the triangle, POSV as POTRF then POTRS, POTI as POTRF then POTRI),
called through the same bindings tricov uses (:mod:`tricov.backends.cuda_libs`), in place on
the column-major arrays of the case. PyTorch, where installed with CUDA, is a second peer: the
call a PyTorch user would write (``torch.linalg.cholesky``, ``torch.cholesky_inverse``, ...), on
the same memory through DLPack.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np

from ..backends import cuda_libs as lib

__all__ = ["NATIVE", "TORCH", "gemm", "routines", "torch_peer"]

Arrays = dict[str, Any]


def _ld(a: Any) -> int:
    if not a.flags.f_contiguous:
        raise ValueError("the native peers take column-major (Fortran-ordered) arrays")
    return max(1, a.shape[0])


def _executor(dtype: np.dtype) -> Any:
    from ..backends.cuda import CUDAExecutor

    return CUDAExecutor(dtype)


def _scalar(dtype: np.dtype, value: float) -> np.ndarray:
    return np.array([value], dtype=dtype)


def _trxm(name: str) -> Callable[[Arrays, np.dtype], None]:
    def call(x: Arrays, dtype: np.dtype) -> None:
        a, b = x["A"], x["B"]
        m, n = b.shape
        one = _scalar(dtype, 1.0)
        args = [lib.cublas_handle(), 0, 0, 0, 0, m, n, one.ctypes.data, a.data.ptr, _ld(a),
                b.data.ptr, _ld(b)]
        if name == "trmm_v2":
            args += [b.data.ptr, _ld(b)]
        lib.check(lib.blas(name, dtype)(*args), name)

    return call


def _syrk(x: Arrays, dtype: np.dtype) -> None:
    a, c = x["A"], x["C"]
    n, k = a.shape
    complex_ = np.dtype(dtype).kind == "c"
    real = np.float32 if np.dtype(dtype) in (np.float32, np.complex64) else np.float64
    one = _scalar(real if complex_ else dtype, 1.0)
    name = "herk_v2" if complex_ else "syrk_v2"
    lib.check(lib.blas(name, dtype)(lib.cublas_handle(), 0, 0, n, k, one.ctypes.data,
                                     a.data.ptr, _ld(a), one.ctypes.data, c.data.ptr, _ld(c)),
              name)


def _potrf(x: Arrays, dtype: np.dtype) -> None:
    a = x["A"]
    ex = _executor(dtype)
    ex.raw_potrf(b"L", a.shape[0], a.data.ptr, _ld(a))


def _trtri(x: Arrays, dtype: np.dtype) -> None:
    a = x["A"]
    ex = _executor(dtype)
    ex.raw_trtri(b"L", b"N", a.shape[0], a.data.ptr, _ld(a))


def _lauum(x: Arrays, dtype: np.dtype) -> None:
    a = x["A"]
    _executor(dtype).raw_lauum(b"L", a.shape[0], a.data.ptr, _ld(a))


# Status words are left on the device: the inputs are positive definite, and the outputs are
# compared with tricov's after timing.
def _potri_raw(ex: Any, a: Any) -> Any:
    n = a.shape[0]
    lwork = ctypes.c_int(0)
    lib.check(lib.solver("potri_bufferSize", ex.dtype)(
        ex._hs, 0, n, a.data.ptr, _ld(a), ctypes.byref(lwork)), "potri_bufferSize")
    work = ex.xp.empty(max(1, lwork.value), dtype=ex.dtype)
    status = ex.xp.empty(1, dtype=np.int32)
    lib.check(lib.solver("potri", ex.dtype)(ex._hs, 0, n, a.data.ptr, _ld(a), work.data.ptr,
                                            lwork.value, status.data.ptr), "potri")
    return status


def _potri(x: Arrays, dtype: np.dtype) -> None:
    ex = _executor(dtype)
    _potri_raw(ex, x["A"])


def _poti(x: Arrays, dtype: np.dtype) -> None:
    a = x["A"]
    ex = _executor(dtype)
    ex.raw_potrf(b"L", a.shape[0], a.data.ptr, _ld(a))
    _potri_raw(ex, a)


def _potrs_raw(ex: Any, lf: Any, b: Any) -> Any:
    n, nrhs = b.shape
    status = ex.xp.empty(1, dtype=np.int32)
    lib.check(lib.solver("potrs", ex.dtype)(ex._hs, 0, n, nrhs, lf.data.ptr, _ld(lf),
                                            b.data.ptr, _ld(b), status.data.ptr), "potrs")
    return status


def _potrs(x: Arrays, dtype: np.dtype) -> None:
    ex = _executor(dtype)
    _potrs_raw(ex, x["L"], x["B"])


def _posv(x: Arrays, dtype: np.dtype) -> None:
    a, b = x["A"], x["B"]
    ex = _executor(dtype)
    ex.raw_potrf(b"L", a.shape[0], a.data.ptr, _ld(a))
    _potrs_raw(ex, a, b)


#: Native peer of each case: ``peer(arrays, dtype)``, in place, lower triangles.
NATIVE: dict[str, Callable[[Arrays, np.dtype], None]] = {
    "trsm": _trxm("trsm_v2"),
    "trmm": _trxm("trmm_v2"),
    "syrk": _syrk,
    "potrf": _potrf,
    "potrs": _potrs,
    "posv": _posv,
    "trtri": _trtri,
    "lauum": _lauum,
    "potri": _potri,
    "poti": _poti,
}

_ROUTINES = {"trsm": "cublas{p}trsm", "trmm": "cublas{p}trmm", "syrk": "cublas{p}syrk",
             "potrf": "cusolverDn{p}potrf", "potrs": "cusolverDn{p}potrs",
             "posv": "cusolverDn{p}potrf+potrs", "trtri": "cusolverDnXtrtri",
             "lauum": "cublas{p}trmm (zero-padded copy)", "potri": "cusolverDn{p}potri",
             "poti": "cusolverDn{p}potrf+potri"}


def routines(case: str, dtype: np.dtype) -> str:
    """Names of the routines the native peer of ``case`` calls, e.g. ``'cublasDtrsm'``."""
    p = {"float32": "S", "float64": "D", "complex64": "C", "complex128": "Z"}[
        np.dtype(dtype).name]
    name = _ROUTINES[case].format(p=p)
    return name.replace("syrk", "herk") if np.dtype(dtype).kind == "c" else name


def gemm(x: Arrays, dtype: np.dtype) -> None:
    """``C += A B`` by cuBLAS on the arrays ``A`` (m x k), ``B`` (k x n) and ``C`` (m x n)."""
    a, b, c = x["A"], x["B"], x["C"]
    m, k = a.shape
    n = b.shape[1]
    one = _scalar(dtype, 1.0)
    lib.check(lib.blas("gemm_v2", dtype)(lib.cublas_handle(), 0, 0, m, n, k, one.ctypes.data,
                                         a.data.ptr, _ld(a), b.data.ptr, _ld(b), one.ctypes.data,
                                         c.data.ptr, _ld(c)), "gemm")


# ----------------------------------------------------------------------------------- torch
def _t(x: Any) -> Any:
    import torch

    return torch.from_dlpack(x)


def _torch_trsm(x: Arrays) -> None:
    import torch

    torch.linalg.solve_triangular(_t(x["A"]), _t(x["B"]), upper=False)


def _torch_trmm(x: Arrays) -> None:
    import torch

    torch.tril(_t(x["A"])) @ _t(x["B"])


def _torch_syrk(x: Arrays) -> None:
    a = _t(x["A"])
    _t(x["C"]).add_(a @ a.mH)


def _torch_potrf(x: Arrays) -> None:
    import torch

    torch.linalg.cholesky(_t(x["A"]))


def _torch_potrs(x: Arrays) -> None:
    import torch

    torch.cholesky_solve(_t(x["B"]), _t(x["L"]))


def _torch_posv(x: Arrays) -> None:
    import torch

    torch.cholesky_solve(_t(x["B"]), torch.linalg.cholesky(_t(x["A"])))


def _torch_potri(x: Arrays) -> None:
    import torch

    torch.cholesky_inverse(_t(x["A"]))


def _torch_poti(x: Arrays) -> None:
    import torch

    torch.cholesky_inverse(torch.linalg.cholesky(_t(x["A"])))


#: The PyTorch call of each case (out of place where PyTorch has no in-place form), with what
#: it runs.
TORCH: dict[str, tuple[Callable[[Arrays], None], str]] = {
    "trsm": (_torch_trsm, "torch.linalg.solve_triangular"),
    "trmm": (_torch_trmm, "torch.tril(A) @ B"),
    "syrk": (_torch_syrk, "C += A @ A.mH"),
    "potrf": (_torch_potrf, "torch.linalg.cholesky"),
    "potrs": (_torch_potrs, "torch.cholesky_solve"),
    "posv": (_torch_posv, "torch.cholesky_solve(B, cholesky(A))"),
    "potri": (_torch_potri, "torch.cholesky_inverse"),
    "poti": (_torch_poti, "torch.cholesky_inverse(cholesky(A))"),
}


def torch_peer(case: str) -> tuple[Callable[[Arrays], None], str] | None:
    """PyTorch's call for ``case`` and its description, if PyTorch with CUDA is installed."""
    if case not in TORCH:
        return None
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return TORCH[case]
