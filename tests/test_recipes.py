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


@pytest.mark.parametrize(
    "given, words",
    [
        ({"force": "false"}, "force is str ('false'), not a bool; pass force=True or force=False"),
        ({"force": 1}, "force is int (1), not a bool; pass force=True or force=False"),
        ({"force": None}, "force is NoneType (None), not a bool"),
        ({"out": 5}, "out is int (5), not a path; pass a run directory such as 'runs/scan' (a str or os.PathLike)"),
        ({"figures": 3}, "figures is int (3), not a string; pass figures='png', 'svg' or 'pdf', or None"),
        ({"progress": "yes"}, "progress is str ('yes'), not a callable; pass a function progress(stage, done, total)"),
        ({"trust_remote_code": "false"}, "trust_remote_code is str ('false'), not a bool"),
    ],
)
def test_geoprobe_run_refuses_arguments_of_the_wrong_type_before_any_work(given, words, tmp_path, monkeypatch):
    """Was: force="false" replaced the run (bool("false") is True) and out=5 a bare TypeError from Path."""
    import geoprobe
    from geoprobe.errors import ArgumentError
    from geoprobe.recipes import recipe_text

    monkeypatch.chdir(tmp_path)
    recipe = tmp_path / "sula.toml"
    recipe.write_text(recipe_text(geoprobe.SulaConfig()), encoding="utf-8")
    out = {"out": tmp_path / "run"}
    for target in (geoprobe.SulaConfig(), recipe, str(recipe)):
        with pytest.raises(ArgumentError) as err:
            geoprobe.run(target, **{**out, **given})
        assert words in str(err.value) and "\n" not in str(err.value)
        assert isinstance(err.value, TypeError)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sula.toml"]  # nothing written, not even runs/


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
