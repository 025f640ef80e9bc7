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


def test_geoprobe_run_refuses_what_an_experiment_does_not_have_before_any_work(tmp_path):
    """``geoprobe.run`` overrides config fields, loading settings and where to write; anything else, or a
    loading setting of an experiment that loads no model, is refused in one line (never ignored)."""
    import geoprobe
    from geoprobe.errors import ArgumentError, ProbeError

    with pytest.raises(ArgumentError, match="'nope' is not a setting of sula"):
        geoprobe.run(geoprobe.SulaConfig(), nope=1, out=tmp_path / "s")
    with pytest.raises(ProbeError, match="--model is not used by denoise"):
        geoprobe.run(geoprobe.DenoiseConfig(), model="twin:llama-3.2-1b", out=tmp_path / "d")
    with pytest.raises(ArgumentError, match="config is dict"):
        geoprobe.run({"seed": 1})
    assert list(tmp_path.iterdir()) == []


def test_a_config_and_its_recipe_text_read_back_equal(tmp_path):
    from geoprobe.models.loading import LoadOptions
    from geoprobe.recipes import load_probe, recipe_text

    for exp in experiments().values():
        config, model = exp.tiny()
        path = tmp_path / f"{exp.command}.toml"
        path.write_text(recipe_text(config, model), encoding="utf-8")
        probe = load_probe(path)
        assert probe.command == exp.command and probe.config == config, exp.command
        if isinstance(model, LoadOptions) and "model" in exp.loads:
            assert LoadOptions(**probe.load) == model
