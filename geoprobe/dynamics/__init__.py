"""The gradient-dynamics paper's own experiment (arXiv 2512.22473): the sticky Markov chain, plain
SGD against the EM-like two-timescale update, on one attention head. See docs/dynamics.md."""

from __future__ import annotations

import importlib
from typing import Any

#: every public name -> where it lives (``module:attribute``, or a submodule); imported on first use
_LAZY: dict[str, str] = {
    "report": "geoprobe.dynamics.report",
    "DynamicsConfig": "geoprobe.dynamics.config:DynamicsConfig",
    "DynamicsResult": "geoprobe.dynamics.result:DynamicsResult",
    "run_dynamics": "geoprobe.dynamics.run:run_dynamics",
}

__all__ = ["DynamicsConfig", "DynamicsResult", "run_dynamics"]


def __getattr__(name: str) -> Any:  # each name imported on first use (PEP 562): importing a submodule stays cheap
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = importlib.import_module(module)
    value = getattr(value, attr) if attr else value
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
