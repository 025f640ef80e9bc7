"""The gradient-dynamics paper's own experiment (arXiv 2512.22473): the sticky Markov chain, plain
SGD against the EM-like two-timescale update, on one attention head. See docs/dynamics.md."""

from geoprobe.dynamics import report as report  # the page of DynamicsResult: registered on import
from geoprobe.dynamics.config import DynamicsConfig
from geoprobe.dynamics.result import DynamicsResult
from geoprobe.dynamics.run import run_dynamics

__all__ = ["DynamicsConfig", "DynamicsResult", "run_dynamics"]
