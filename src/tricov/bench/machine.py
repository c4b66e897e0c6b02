"""What the benchmarks ran on: CPU, BLAS library, package versions, GPUs.

Everything here works without optional packages: a missing one is reported, never raised.
"""

from __future__ import annotations

import os
import platform
import socket
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["blas_libraries", "cpu", "gpus", "summary", "versions"]

_PACKAGES = ("numpy", "scipy", "numba", "threadpoolctl", "rich", "matplotlib", "cupy")


def versions() -> dict[str, str]:
    """Python and the installed version of each package tricov uses ("not installed" if absent)."""
    from .. import __version__

    # the code running, which need not be the installed one
    out = {"tricov": __version__, "python": platform.python_version()}
    providers = metadata.packages_distributions()  # e.g. cupy -> ["cupy-cuda13x"]
    for name in _PACKAGES:
        out[name] = "not installed"
        for dist in providers.get(name, [name]):
            try:
                out[name] = metadata.version(dist)
                break
            except metadata.PackageNotFoundError:
                continue
    return out


def cpu() -> dict[str, Any]:
    """CPU model, logical CPUs of the machine, and CPUs this process may run on."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 0
    return {"model": model, "logical_cpus": os.cpu_count() or 0, "usable_cpus": usable}


def _is_scipys(filepath: str) -> bool:
    """Whether a shared library was shipped inside SciPy's wheel (``scipy.libs``, ``.dylibs``)."""
    import scipy

    path = Path(filepath).resolve()
    scipy_dir = Path(scipy.__file__).resolve().parent
    return path.parent.name == "scipy.libs" or scipy_dir in path.parents


def blas_libraries() -> list[dict[str, Any]]:
    """The BLAS libraries loaded in this process (threadpoolctl), SciPy's one first.

    Each entry has ``internal_api`` (openblas, mkl, blis, ...), ``version``, ``num_threads``,
    ``architecture``, ``filepath`` and ``used_by_tricov``: tricov calls the BLAS/LAPACK that SciPy
    links (its own wheel's library, or the only one loaded).
    """
    import scipy.linalg.cython_blas  # noqa: F401 - load SciPy's BLAS before asking
    from threadpoolctl import threadpool_info

    libs = [dict(lib) for lib in threadpool_info() if lib.get("user_api") == "blas"]
    for lib in libs:
        lib["used_by_tricov"] = len(libs) == 1 or _is_scipys(lib.get("filepath", ""))
    libs.sort(key=lambda lib: not lib["used_by_tricov"])
    return libs


def gpus() -> list[str]:
    """Names of the CUDA GPUs CuPy sees; empty where CuPy is absent or sees none."""
    try:
        import cupy
    except Exception:  # noqa: BLE001 - no CuPy, or a CuPy that cannot load its CUDA libraries
        return []
    try:
        count = cupy.cuda.runtime.getDeviceCount()
        names = []
        for i in range(count):
            name = cupy.cuda.runtime.getDeviceProperties(i)["name"]
            names.append(name.decode() if isinstance(name, bytes) else str(name))
        return names
    except Exception:  # noqa: BLE001 - a driver without devices raises CUDA errors
        return []


def summary() -> dict[str, str]:
    """One flat record of the machine, for CSV columns and tuned-settings files."""
    info: dict[str, str] = {
        "timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
    }
    c = cpu()
    info.update(cpu_model=c["model"], logical_cpus=str(c["logical_cpus"]),
                usable_cpus=str(c["usable_cpus"]))
    libs = blas_libraries()
    mine = next((lib for lib in libs if lib["used_by_tricov"]), None)
    if mine is not None:
        info.update(blas=str(mine.get("internal_api", "")), blas_version=str(mine.get("version")),
                    blas_threads=str(mine.get("num_threads")),
                    blas_architecture=str(mine.get("architecture", "")))
    else:
        info.update(blas="unknown", blas_version="", blas_threads="", blas_architecture="")
    info.update({f"{k}_version": v for k, v in versions().items()})
    return info
