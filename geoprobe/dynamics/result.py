"""DynamicsResult: the loss curves of both schedules per seed, what they say, and each seed's check of
the routing law and the value update against autograd (dynamics.json; its page: dynamics.report)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from geoprobe.analysis.stats import Estimate, t_interval
from geoprobe.dynamics.check import GradientCheck
from geoprobe.dynamics.config import DynamicsConfig
from geoprobe.report.page import Page
from geoprobe.results import Result
from geoprobe.serial import Record


@dataclass(frozen=True, eq=False)
class SeedRun(Record):
    """One seed: the loss (nats) before each step, for SGD and for the EM-like schedule."""

    seed: int
    sgd: tuple[float, ...]
    em: tuple[float, ...]


def steps_to(losses: Any, threshold: float) -> int:
    """The first step whose loss is below ``threshold``; the number of steps if none is."""
    below = np.flatnonzero(np.asarray(losses) < threshold)
    return int(below[0]) if below.size else len(losses)


@dataclass(frozen=True, eq=False)
class DynamicsResult(Result, Page):
    KIND: ClassVar[str] = "geoprobe.dynamics"
    FILE: ClassVar[str] = "dynamics.json"
    PAGE: ClassVar[str | None] = "dynamics.html"
    WHAT: ClassVar[str] = "dynamics results file"
    FIX: ClassVar[str] = "pass the dynamics.json that geoprobe dynamics wrote, or re-run geoprobe dynamics"

    config: DynamicsConfig
    floor_nats: float  # H(Y_t | Y_{t-1}): no predictor of y_t from y_{t-1} does better
    runs: tuple[SeedRun, ...]
    provenance: dict[str, Any] = field(default_factory=dict)
    gradient_checks: tuple[GradientCheck, ...] = ()  # one per seed (absent from files written before them)

    def __post_init__(self) -> None:
        if not self.runs or any(len(r.sgd) != self.config.steps or len(r.em) != self.config.steps for r in self.runs):
            raise ValueError(f"every seed needs {self.config.steps} losses per schedule")
        if self.gradient_checks and [c.seed for c in self.gradient_checks] != [r.seed for r in self.runs]:
            raise ValueError("gradient checks must be one per seed, in the runs' order")

    # -- what the curves say ---------------------------------------------------------------
    def final(self, schedule: str) -> Estimate:
        """Loss after the last step (mean over seeds, t interval)."""
        return t_interval([getattr(r, schedule)[-1] for r in self.runs])

    def threshold(self) -> float:
        """The authors' target: SGD's final loss, averaged over seeds."""
        return float(np.mean([r.sgd[-1] for r in self.runs]))

    def steps(self, schedule: str) -> tuple[int, ...]:
        """Per seed, the first step at which ``schedule``'s loss is below :meth:`threshold` (the number
        of steps where it never is)."""
        threshold = self.threshold()
        return tuple(steps_to(getattr(r, schedule), threshold) for r in self.runs)

    def steps_to_threshold(self, schedule: str) -> Estimate:
        """:meth:`steps` of ``schedule``: mean over seeds with its t interval, clipped to [0, steps]."""
        e = t_interval(self.steps(schedule))
        if not math.isfinite(e.low):
            return e
        return Estimate(e.value, max(e.low, 0.0), min(e.high, float(self.config.steps)), e.confidence)

    def em_steps_to_sgd(self) -> Estimate:
        """Steps the EM-like schedule takes to reach SGD's final loss (mean over seeds, t interval)."""
        return self.steps_to_threshold("em")

    def speedup(self) -> float:
        """The authors' summary: SGD's steps / the EM-like schedule's mean steps to the same loss."""
        return self.config.steps / max(self.em_steps_to_sgd().value, 1.0)
