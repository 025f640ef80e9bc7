"""Bayesian wind tunnels (arXiv 2512.22471, 2512.22473): tasks with exact posteriors, a small
transformer and a capacity-matched MLP trained on them, and geoprobe's probes on both.

``tasks`` (bijection, HMM and their analytic posteriors) → ``nets`` (LlamaForCausalLM, residual
MLP) → ``train`` (seeded, resumable) → ``evaluate`` (entropy MAE, KL, ablations) and ``geometry``
(capture on every checkpoint) → ``result`` (WindTunnelResult) and ``report`` (its pages and figures);
``config`` (WindTunnelConfig) and ``run`` (train_tunnel, evaluate_tunnel) drive them.
"""

from __future__ import annotations

from geoprobe.lazy import lazy_names

#: every public name -> where it lives (``module:attribute``, or a submodule); imported on first use
_LAZY: dict[str, str] = {
    "report": "geoprobe.windtunnel.report",
    "WindTunnelConfig": "geoprobe.windtunnel.config:WindTunnelConfig",
    "WindTunnelResult": "geoprobe.windtunnel.result:WindTunnelResult",
    "evaluate_tunnel": "geoprobe.windtunnel.run:evaluate_tunnel",
    "train_tunnel": "geoprobe.windtunnel.run:train_tunnel",
    "BijectionTask": "geoprobe.windtunnel.tasks:BijectionTask",
    "HMMTask": "geoprobe.windtunnel.tasks:HMMTask",
    "make_task": "geoprobe.windtunnel.tasks:make_task",
}

__all__ = [
    "BijectionTask",
    "HMMTask",
    "WindTunnelConfig",
    "WindTunnelResult",
    "evaluate_tunnel",
    "make_task",
    "train_tunnel",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY)
