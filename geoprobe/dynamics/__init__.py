"""The gradient-dynamics paper's own experiment (arXiv 2512.22473): the sticky Markov chain, plain
SGD against the EM-like two-timescale update, on one attention head. See docs/dynamics.md."""

from __future__ import annotations

from geoprobe.lazy import lazy_names

#: every public name -> where it lives (``module:attribute``, or a submodule); imported on first use
_LAZY: dict[str, str] = {
    "report": "geoprobe.dynamics.report",
    "DynamicsConfig": "geoprobe.dynamics.config:DynamicsConfig",
    "DynamicsResult": "geoprobe.dynamics.result:DynamicsResult",
    "run_dynamics": "geoprobe.dynamics.run:run_dynamics",
}

__all__ = ["DynamicsConfig", "DynamicsResult", "run_dynamics"]


__getattr__, __dir__ = lazy_names(__name__, _LAZY)
