"""The public API (issue 19 part 6): every name of ``geoprobe.__all__`` resolves, and importing
geoprobe loads none of the heavy modules (torch, numpy, an experiment) until a name is used."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

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
