"""Compile every CUDA kernel template for sm_90 without a GPU, so a broken kernel cannot land.

Uses nvcc when the machine has it (CI does); the instantiations are those the executors ask
for at run time (see ``tricov.kernels.instantiations``).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tricov.kernels import definitions, instantiations, nvrtc

NVCC = shutil.which("nvcc")
UNITS = [(src.name, ctype) for src in nvrtc.sources()
         for ctype in sorted(set(instantiations(src.name)) | set(definitions(src.name)))]


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize("source,ctype", UNITS)
def test_compiles_for_sm90(source, ctype, tmp_path):
    unit = tmp_path / "unit.cu"
    lines = [f'#include "{nvrtc.SOURCE_DIR / source}"']
    lines += [f"template {decl};" for decl in instantiations(source).get(ctype, [])]
    lines += definitions(source).get(ctype, [])
    unit.write_text("\n".join(lines) + "\n")
    result = subprocess.run(
        [NVCC, "-arch=sm_90", "-std=c++17", "-c", str(unit), "-o", str(tmp_path / "unit.o"),
         f"-I{nvrtc.SOURCE_DIR}", "-Xptxas", "-warn-spills"],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "spill" not in result.stderr, result.stderr[-4000:]
