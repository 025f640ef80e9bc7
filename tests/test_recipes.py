"""The experiment registry (geoprobe.recipes): every reference it holds resolves, to what it says."""

from __future__ import annotations

import inspect

import pytest

from geoprobe.recipes import KINDS, RECIPES, result_class
from geoprobe.results import Result


@pytest.mark.parametrize("command", list(RECIPES))
def test_every_registry_entry_resolves(command):
    r = RECIPES[command]
    assert inspect.isclass(r.config_class()) and callable(r.run_function())
    for kind in r.results:
        cls = result_class(kind)
        assert issubclass(cls, Result) and cls.KIND == kind  # the class reads the kind it is filed under
    assert set(KINDS) >= set(r.results)
