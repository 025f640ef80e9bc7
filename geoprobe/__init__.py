"""geoprobe: measure the Bayesian geometry of attention in pretrained language models.

The public API is the names in ``__all__``: load or wrap a model, capture its attention, run a
scan or any experiment (``geoprobe.run``: a recipe or a config, writing what the command line writes),
read any results file back. They are imported on first use (module ``__getattr__``), so ``import
geoprobe`` stays cheap (no torch) and no module of the package needs this one: there is no import cycle
through ``geoprobe`` itself. ``PUBLIC`` is where each name lives: :data:`FUNCTIONS`, and every
experiment's config and result classes, read from the experiment list (docs/architecture.md).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

from geoprobe.version import __version__ as __version__

#: the public functions -> "module:attribute" each is read from (update here when a module moves); the
#: experiments' config and result classes join them from the experiment list (:func:`public`)
FUNCTIONS: dict[str, str] = {
    # models and capture
    "load_model": "geoprobe.models.loading:load_model",
    "twin": "geoprobe.models.twins:twin",
    "wrap": "geoprobe.models.wrap:wrap",
    "LoadedModel": "geoprobe.models.loading:LoadedModel",
    "LoadOptions": "geoprobe.models.loading:LoadOptions",
    "capture": "geoprobe.capture.run:capture",
    "Capture": "geoprobe.capture.result:Capture",
    "CaptureConfig": "geoprobe.capture.run:CaptureConfig",
    "key_weights": "geoprobe.capture.run:key_weights",
    # any experiment from a recipe or a config, writing what the command line writes; any results file back
    "run": "geoprobe.recipes:run",
    "load_result": "geoprobe.recipes:load_result",
    # each experiment's own Python function (returns the result, writes nothing)
    "scan": "geoprobe.scan.run:scan",
    "compare_domains": "geoprobe.domains.run:compare_domains_run",
    "compare_results": "geoprobe.compare.run:compare_results",
    "run_sula": "geoprobe.sula.run:run_sula",
    "run_interventions": "geoprobe.intervene.run:run_interventions",
    "run_positional": "geoprobe.positional.run:run_positional",
    "run_denoise": "geoprobe.denoise.run:run_denoise",
    "train_tunnel": "geoprobe.windtunnel.run:train_tunnel",
    "evaluate_tunnel": "geoprobe.windtunnel.run:evaluate_tunnel",
    "run_dynamics": "geoprobe.dynamics.run:run_dynamics",
    "train_trajectory": "geoprobe.trajectory.train:train_trajectory",
    # the one exception family of bad input, and the type of a wrong argument to any entry point above
    "GeoprobeError": "geoprobe.errors:GeoprobeError",
    "ArgumentError": "geoprobe.errors:ArgumentError",
    # the gradient-dynamics paper's identities for one attention head (arXiv 2512.22473)
    "routing_gradient": "geoprobe.analysis.gradients:routing_gradient",
    "value_gradient": "geoprobe.analysis.gradients:value_gradient",
    "value_update": "geoprobe.analysis.gradients:value_update",
    # Jupyter: a result's figure (or any plotly figure) with a static image beside it (notebooks/)
    "show": "geoprobe.report.notebook:show",
}


def public() -> dict[str, str]:
    """Every public name -> "module:attribute": :data:`FUNCTIONS`, then each experiment's config class and
    result classes (geoprobe.recipes.EXPERIMENTS; importing it loads every experiment, so this runs on
    first use of such a name, never at ``import geoprobe``)."""
    table = globals().get("_public")
    if table is None:
        experiments = importlib.import_module("geoprobe.recipes").experiments  # resolved like every name here
        classes = [c for e in experiments().values() for c in (e.config, *e.results)]
        table = {**FUNCTIONS, **{c.__name__: f"{c.__module__}:{c.__name__}" for c in classes}}
        globals()["_public"] = table
    return table


def __getattr__(name: str) -> Any:
    if name == "PUBLIC":
        return public()
    if name == "__all__":
        return ["__version__", *public()]
    target = FUNCTIONS.get(name) or (public().get(name) if name[:1].isupper() else None)
    if target is None:
        raise AttributeError(f"module 'geoprobe' has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *public()})


class _Package(types.ModuleType):
    """``geoprobe.capture`` and ``geoprobe.scan`` name the functions, never the subpackages of the
    same name: importing a subpackage does not bind it here over a public name (the subpackages
    stay reachable by import, e.g. ``from geoprobe.scan import ScanResult``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in FUNCTIONS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
