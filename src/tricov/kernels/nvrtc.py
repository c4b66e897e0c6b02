"""Run-time compilation of tricov's CUDA templates (``kernels/cuda/*.cu``) through CuPy.

Each template instantiation is compiled once per process by NVRTC (CuPy also caches the binary
on disk) and looked up by its C++ name expression, e.g.
``tricov::tri_small<double, 256, 4, false, true, false, 0, 0>``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CTYPE", "SOURCE_DIR", "function", "sources"]

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


def cbool(flag: bool) -> str:
    """A C++ boolean literal."""
    return "true" if flag else "false"
