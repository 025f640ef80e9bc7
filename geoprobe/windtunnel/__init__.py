"""Bayesian wind tunnels (arXiv 2512.22471, 2512.22473): tasks with exact posteriors, a small
transformer and a capacity-matched MLP trained on them, and geoprobe's probes on both.

``tasks`` (bijection, HMM and their analytic posteriors) → ``nets`` (LlamaForCausalLM, residual
MLP) → ``train`` (seeded, resumable) → ``evaluate`` (entropy MAE, KL, ablations) and ``geometry``
(capture on every checkpoint) → ``result`` (WindTunnelResult) and ``report`` (its pages and figures);
``config`` (WindTunnelConfig) and ``run`` (train_tunnel, evaluate_tunnel) drive them.
"""

from geoprobe.windtunnel import report as report  # the page of WindTunnelResult and TunnelSeeds: registered on import
from geoprobe.windtunnel.config import WindTunnelConfig
from geoprobe.windtunnel.result import WindTunnelResult
from geoprobe.windtunnel.run import evaluate_tunnel, train_tunnel
from geoprobe.windtunnel.tasks import BijectionTask, HMMTask, make_task

__all__ = [
    "BijectionTask",
    "HMMTask",
    "WindTunnelConfig",
    "WindTunnelResult",
    "evaluate_tunnel",
    "make_task",
    "train_tunnel",
]
