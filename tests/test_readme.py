"""The README's CPU examples run as written (GPU blocks are left to the GPU machine)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
CPU_BLOCKS = [b for b in BLOCKS if "cupy" not in b and "torch" not in b]


def test_readme_has_examples():
    assert len(CPU_BLOCKS) >= 3


def test_readme_cpu_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict = {}
    for block in CPU_BLOCKS:  # later blocks use names (rng, np) the first one defines
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102
    capsys.readouterr()
