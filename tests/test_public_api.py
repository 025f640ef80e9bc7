"""The public API (issue 19 part 6): every name of ``geoprobe.__all__`` resolves, and importing
geoprobe loads none of the heavy modules (torch, numpy, an experiment) until a name is used."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import numpy as np
import pytest

import geoprobe


def test_every_public_name_resolves():
    missing = []
    for name in geoprobe.__all__:
        try:
            getattr(geoprobe, name)
        except (AttributeError, ImportError) as exc:
            missing.append(f"{name} ({geoprobe.PUBLIC.get(name)}): {exc}")
    assert not missing, f"public names that do not resolve (update geoprobe.PUBLIC): {missing}"
    assert set(geoprobe.__all__) == {"__version__", *geoprobe.PUBLIC}
    assert "load_model" in dir(geoprobe)


def test_capture_and_scan_are_the_functions_not_the_subpackages():
    for module in ("geoprobe.capture", "geoprobe.capture.run", "geoprobe.scan", "geoprobe.scan.run"):
        importlib.import_module(module)  # importing a subpackage does not bind it over the public name
    from geoprobe import capture, scan

    assert capture is geoprobe.capture and scan is geoprobe.scan
    assert capture.__module__ == "geoprobe.capture.run" and scan.__module__ == "geoprobe.scan.run"


def test_an_unknown_name_is_an_attribute_error():
    try:
        _ = geoprobe.no_such_name
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("geoprobe.no_such_name resolved")


def test_import_geoprobe_is_cheap():
    code = (
        "import sys; before = set(sys.modules); import geoprobe; "
        "print(__import__('json').dumps(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = json.loads(out)
    heavy = [
        m
        for m in loaded
        if m.split(".")[0] in ("torch", "numpy", "transformers", "plotly")
        or (m.startswith("geoprobe.") and m != "geoprobe.version")
    ]
    assert not heavy, f"import geoprobe loaded {heavy}"
    assert geoprobe.__version__ == geoprobe.version.__version__


def test_the_dynamics_experiment_and_its_identities_are_public():
    """notebooks/09_dynamics.ipynb uses these names only; each is the object of the module it names."""
    from geoprobe.analysis import gradients
    from geoprobe.dynamics.config import DynamicsConfig
    from geoprobe.dynamics.result import DynamicsResult
    from geoprobe.dynamics.run import run_dynamics

    assert geoprobe.run_dynamics is run_dynamics and geoprobe.DynamicsConfig is DynamicsConfig
    assert geoprobe.DynamicsResult is DynamicsResult
    for name in ("routing_gradient", "value_gradient", "value_update"):
        assert name in geoprobe.__all__ and getattr(geoprobe, name) is getattr(gradients, name)


# ---------------------------------------------------------------- wrong arguments (issue 27 part 5)
PROMPTS = ["The river runs past the old mill and", "In the morning the baker opened the", "Once the rain stopped"]


def _bad_calls(m):
    """(entry point, call, the argument its message names) for every wrong argument the API refuses."""
    g = geoprobe
    return [
        ("load_model None", lambda: g.load_model(None), "name is NoneType (None)"),
        ("load_model list", lambda: g.load_model(["smollm2-135m"]), "name is list"),
        ("twin None", lambda: g.twin(None), "alias is NoneType"),
        ("wrap None", lambda: g.wrap(None), "as model, not NoneType"),
        ("capture None model", lambda: g.capture(None, PROMPTS), "model is NoneType (None)"),
        ("capture name", lambda: g.capture("smollm2-135m", PROMPTS), "model is str"),
        ("capture bare string", lambda: g.capture(m, "a prompt"), "prompts is a single str ('a prompt')"),
        ("capture bytes", lambda: g.capture(m, b"a prompt"), "prompts is a single bytes"),
        ("capture non-strings", lambda: g.capture(m, [1, 2]), "prompts[0] is int (1), not a string"),
        ("capture None item", lambda: g.capture(m, ["ok", None]), "prompts[1] is NoneType"),
        ("capture None prompts", lambda: g.capture(m, None), "prompts is NoneType"),
        ("capture dict prompts", lambda: g.capture(m, {"a": 1}), "prompts is dict"),
        ("capture dict config", lambda: g.capture(m, PROMPTS, {"layers": [0]}), "config is dict"),
        ("key_weights None", lambda: g.key_weights(None), "model is NoneType"),
        ("scan None model", lambda: g.scan(None, PROMPTS), "model is NoneType (None)"),
        ("scan bare string", lambda: g.scan(m, "The river that runs"), "prompts is a single str"),
        ("scan non-strings", lambda: g.scan(m, [1, 2, 3]), "prompts[0] is int"),
        ("scan dict config", lambda: g.scan(m, None, {"seed": 1}), "config is dict ({'seed': 1}), not a ScanConfig"),
        ("compare_domains None", lambda: g.compare_domains(None), "model is NoneType"),
        ("compare_domains dict", lambda: g.compare_domains(m, {"seed": 1}), "not a DomainsConfig"),
        ("compare_results str", lambda: g.compare_results("runs/a"), "paths is a single str ('runs/a')"),
        ("run_sula None", lambda: g.run_sula(None), "model is NoneType"),
        ("run_sula dict", lambda: g.run_sula(m, {"seed": 1}), "not a SulaConfig; pass SulaConfig(**config)"),
        ("run_interventions None", lambda: g.run_interventions(None), "model is NoneType"),
        ("run_interventions dict", lambda: g.run_interventions(m, {"seed": 1}), "not an InterventionConfig"),
        ("run_positional None", lambda: g.run_positional(None, g.PositionalConfig()), "model is NoneType"),
        ("run_positional dict", lambda: g.run_positional(m, {"n_prompts": 3}), "not a PositionalConfig"),
        ("run_denoise dict", lambda: g.run_denoise({"seed": 1}), "not a DenoiseConfig"),
        ("run_dynamics dict", lambda: g.run_dynamics({"seed": 1}), "not a DynamicsConfig"),
        ("train_trajectory dict", lambda: g.train_trajectory({"seed": 1}, out="t"), "not a TrajectoryConfig"),
        ("train_tunnel None", lambda: g.train_tunnel(None, "tiny", "out"), "task is NoneType"),
        ("evaluate_tunnel None", lambda: g.evaluate_tunnel(None), "out is NoneType"),
        ("load_result None", lambda: g.load_result(None), "path is NoneType"),
        # switches and paths (bool("false") is True: a string would silently switch the setting on)
        ("run force str", lambda: g.run(g.DenoiseConfig(), force="false"), "force is str ('false'), not a bool"),
        ("run out int", lambda: g.run(g.DenoiseConfig(), out=5), "out is int (5), not a path"),
        ("run figures int", lambda: g.run(g.DenoiseConfig(), figures=3), "figures is int (3), not a string"),
        ("train_trajectory out int", lambda: g.train_trajectory(out=5), "out is int (5), not a path"),
        (
            "train_trajectory documents str",
            lambda: g.train_trajectory(out="t", documents="a b"),
            "documents is a single str",
        ),
        (
            "train_trajectory progress str",
            lambda: g.train_trajectory(out="t", progress="yes"),
            "progress is str ('yes')",
        ),
        (
            "scan return_capture str",
            lambda: g.scan(m, PROMPTS, return_capture="false"),
            "return_capture is str ('false')",
        ),
        (
            "train_tunnel resume str",
            lambda: g.train_tunnel("bijection", "tiny", "t", resume="no"),
            "resume is str ('no')",
        ),
        ("evaluate_tunnel geometry str", lambda: g.evaluate_tunnel("t", geometry="false"), "geometry is str ('false')"),
        ("evaluate_tunnel ablate int", lambda: g.evaluate_tunnel("t", ablate=0), "ablate is int (0), not a bool"),
        ("report force str", lambda: _result().report("p.html", force="false"), "force is str ('false'), not a bool"),
        ("report path int", lambda: _result().report(5), "path is int (5), not a path"),
        ("save path int", lambda: _result().save(5), "path is int (5), not a path"),
        ("capture save overwrite", lambda: g.Capture.save(None, "c", overwrite="no"), "overwrite is str ('no')"),
    ]


def _result():
    """A result object whose page and file are never written (its arguments are refused first)."""
    return object.__new__(geoprobe.DenoiseResult)


def test_every_entry_point_refuses_a_wrong_argument_with_one_type_naming_it(twin_factory, monkeypatch):
    """Was: AttributeError ('NoneType' object has no attribute 'layout'), "prompt #3 is empty" for
    scan(m, "The river…") (one prompt per character), TypeError "object of type 'generator' has no len()",
    AttributeError "'dict' object has no attribute 'layers'", and so on, a different failure per function."""
    import geoprobe.models.loading

    m = twin_factory("llama-3.2-1b")
    monkeypatch.setattr(geoprobe.models.loading, "load_model", lambda *a, **k: pytest.fail("a model was loaded"))
    wrong = []
    for label, call, words in _bad_calls(m):
        try:
            call()
            wrong.append(f"{label}: no error")
        except geoprobe.ArgumentError as exc:
            text = str(exc)
            if words not in text or "\n" in text or not isinstance(exc, TypeError):
                wrong.append(f"{label}: {text!r}")
        except Exception as exc:  # noqa: BLE001 - the point: any other type is a failure of this test
            wrong.append(f"{label}: {type(exc).__name__}: {exc}")
    assert wrong == []


def test_a_generator_of_prompts_is_read_once_and_gives_the_list_s_numbers(twin_factory):
    """A generator is accepted (materialised into a list at the call), not refused: the same arrays."""
    m = twin_factory("llama-3.2-1b")
    a = geoprobe.capture(m, PROMPTS)
    b = geoprobe.capture(m, (p for p in PROMPTS))
    assert b.prompts == a.prompts == tuple(PROMPTS)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.attn_entropy, b.attn_entropy)
