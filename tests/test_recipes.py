"""The experiment list (geoprobe.recipes): every entry resolves to an experiment whose result classes read the
kinds they are filed under, and everything that knows the experiments is derived from the one list."""

from __future__ import annotations

import pytest

from geoprobe.experiment import Experiment
from geoprobe.recipes import EXPERIMENTS, experiment_of_package, experiments, kinds, result_class
from geoprobe.results import Result


@pytest.mark.parametrize("package", EXPERIMENTS)
def test_every_experiment_of_the_list_resolves(package):
    e = experiment_of_package(package)
    assert isinstance(e, Experiment) and e.command in experiments()
    assert e.config.__dataclass_params__.frozen and callable(e.execute)
    for cls in e.results:
        assert issubclass(cls, Result) and result_class(cls.KIND) is cls  # the class reads the kind it is filed under
    assert hasattr(e.config, "from_tables") and hasattr(e.config, "to_tables")


def test_the_tables_derived_from_the_list():
    import geoprobe
    from geoprobe import recipes

    assert list(recipes.RECIPES) == list(recipes.COMMANDS) == [experiment_of_package(p).command for p in EXPERIMENTS]
    assert set(recipes.KINDS) == set(kinds()) == {c.KIND for e in experiments().values() for c in e.results}
    assert geoprobe.PUBLIC["run"] == "geoprobe.recipes:run"
    for e in experiments().values():  # every experiment's config and result classes are public
        for cls in (e.config, *e.results[:1]):
            assert any(ref.endswith(f":{cls.__name__}") for ref in geoprobe.PUBLIC.values()), cls
