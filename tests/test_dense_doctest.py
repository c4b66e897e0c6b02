"""The examples in the docstrings of the dense API are run and must print what they show."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

import tricov
import tricov.dense


@pytest.mark.parametrize("module", [tricov.dense, tricov], ids=lambda m: m.__name__)
def test_docstring_examples(module: ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{module.__name__} has no docstring examples"
    assert result.failed == 0, f"{result.failed} docstring example(s) of {module.__name__} failed"


def test_every_public_function_has_an_example() -> None:
    """Each public dense function documents itself with at least one example."""
    finder = doctest.DocTestFinder()
    for name in tricov.dense.__all__:
        tests = finder.find(getattr(tricov.dense, name), name)
        assert any(t.examples for t in tests), f"tricov.dense.{name} has no example"
