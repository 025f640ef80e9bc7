"""geoprobe: measure the Bayesian geometry of attention in pretrained language models.

The public API is the names in ``__all__``: load or wrap a model, capture its attention, run a
scan or any experiment, read any results file back. They are imported on first use (module
``__getattr__``), so ``import geoprobe`` stays cheap (no torch) and no module of the package needs
this one: there is no import cycle through ``geoprobe`` itself. :data:`PUBLIC` is the one table of
where each name lives (docs/architecture.md).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

from geoprobe.version import __version__

#: public name -> "module:attribute" it is read from (update here when a module moves)
PUBLIC: dict[str, str] = {
    # models and capture
    "load_model": "geoprobe.models.loading:load_model",
    "twin": "geoprobe.models.twins:twin",
    "wrap": "geoprobe.models.wrap:wrap",
    "LoadedModel": "geoprobe.models.loading:LoadedModel",
    "capture": "geoprobe.capture.run:capture",
    "Capture": "geoprobe.capture.result:Capture",
    "CaptureConfig": "geoprobe.capture.run:CaptureConfig",
    "key_weights": "geoprobe.capture.run:key_weights",
    # results files of every experiment
    "load_result": "geoprobe.recipes:load_result",
    # experiments: run function, config, result class
    "scan": "geoprobe.scan.run:scan",
    "ScanConfig": "geoprobe.scan.config:ScanConfig",
    "ScanResult": "geoprobe.scan.result:ScanResult",
    "compare_domains": "geoprobe.domains.run:compare_domains_run",
    "DomainsConfig": "geoprobe.domains.config:DomainsConfig",
    "DomainComparison": "geoprobe.domains.result:DomainComparison",
    "compare_results": "geoprobe.compare.run:compare_results",
    "ModelComparison": "geoprobe.compare.result:ModelComparison",
    "run_sula": "geoprobe.sula.run:run_sula",
    "SulaConfig": "geoprobe.sula.config:SulaConfig",
    "SulaResult": "geoprobe.sula.result:SulaResult",
    "run_interventions": "geoprobe.intervene.run:run_interventions",
    "InterventionConfig": "geoprobe.intervene.config:InterventionConfig",
    "InterventionResult": "geoprobe.intervene.result:InterventionResult",
    "run_positional": "geoprobe.positional.run:run_positional",
    "PositionalConfig": "geoprobe.positional.config:PositionalConfig",
    "PositionalResult": "geoprobe.positional.result:PositionalResult",
    "run_denoise": "geoprobe.denoise.run:run_denoise",
    "DenoiseConfig": "geoprobe.denoise.config:DenoiseConfig",
    "DenoiseResult": "geoprobe.denoise.result:DenoiseResult",
    "train_tunnel": "geoprobe.windtunnel.run:train_tunnel",
    "evaluate_tunnel": "geoprobe.windtunnel.run:evaluate_tunnel",
    "WindTunnelConfig": "geoprobe.windtunnel.config:WindTunnelConfig",
    "WindTunnelResult": "geoprobe.windtunnel.result:WindTunnelResult",
    "run_dynamics": "geoprobe.dynamics.run:run_dynamics",
    "DynamicsConfig": "geoprobe.dynamics.config:DynamicsConfig",
    "DynamicsResult": "geoprobe.dynamics.result:DynamicsResult",
    "train_trajectory": "geoprobe.trajectory.train:train_trajectory",
    "TrajectoryConfig": "geoprobe.trajectory.config:TrajectoryConfig",
    "TrajectoryResult": "geoprobe.trajectory.result:TrajectoryResult",
    # the one exception family of bad input, and the type of a wrong argument to any entry point above
    "GeoprobeError": "geoprobe.errors:GeoprobeError",
    "ArgumentError": "geoprobe.errors:ArgumentError",
    # the gradient-dynamics paper's identities for one attention head (arXiv 2512.22473)
    "routing_gradient": "geoprobe.analysis.gradients:routing_gradient",
    "value_gradient": "geoprobe.analysis.gradients:value_gradient",
    "value_update": "geoprobe.analysis.gradients:value_update",
}

__all__ = ["__version__", *PUBLIC]


def __getattr__(name: str) -> Any:
    target = PUBLIC.get(name)
    if target is None:
        raise AttributeError(f"module 'geoprobe' has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *PUBLIC})


class _Package(types.ModuleType):
    """``geoprobe.capture`` and ``geoprobe.scan`` name the functions, never the subpackages of the
    same name: importing a subpackage does not bind it here over a public name (the subpackages
    stay reachable by import, e.g. ``from geoprobe.scan import ScanResult``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in PUBLIC and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
