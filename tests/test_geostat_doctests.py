"""The examples in the docstrings of tricov.geostat run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["tricov.geostat", "tricov.geostat.distance", "tricov.geostat.kernels",
           "tricov.geostat.likelihood", "tricov.geostat.simulate", "tricov.geostat.fit",
           "tricov.geostat.kriging"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
