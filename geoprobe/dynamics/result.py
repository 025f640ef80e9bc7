"""DynamicsResult: the loss curves of both schedules per seed, and what they say (dynamics.json)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from geoprobe.analysis.stats import Estimate, t_interval
from geoprobe.dynamics.config import DynamicsConfig
from geoprobe.report.blocks import html_table
from geoprobe.report.page import Figure, Page, Section, figures_section, paragraph, provenance_section
from geoprobe.results import Result
from geoprobe.serial import Record

#: the authors' report (abstract of arXiv 2512.22473 and their script's convergence analysis)
PAPER_SPEEDUP = "2.3× (430 vs 1,000 steps)"


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

    def __post_init__(self) -> None:
        if not self.runs or any(len(r.sgd) != self.config.steps or len(r.em) != self.config.steps for r in self.runs):
            raise ValueError(f"every seed needs {self.config.steps} losses per schedule")

    # -- what the curves say ---------------------------------------------------------------
    def final(self, schedule: str) -> Estimate:
        """Loss after the last step (mean over seeds, t interval)."""
        return t_interval([getattr(r, schedule)[-1] for r in self.runs])

    def threshold(self) -> float:
        """The authors' target: SGD's final loss, averaged over seeds."""
        return float(np.mean([r.sgd[-1] for r in self.runs]))

    def em_steps_to_sgd(self) -> Estimate:
        """Steps the EM-like schedule takes to reach SGD's final loss (mean over seeds, t interval)."""
        e = t_interval([steps_to(r.em, self.threshold()) for r in self.runs])
        if not math.isfinite(e.low):
            return e
        return Estimate(e.value, max(e.low, 0.0), min(e.high, float(self.config.steps)), e.confidence)

    def speedup(self) -> float:
        """The authors' summary: SGD's steps / the EM-like schedule's mean steps to the same loss."""
        return self.config.steps / max(self.em_steps_to_sgd().value, 1.0)

    # -- page --------------------------------------------------------------------------------
    def title(self) -> str:
        return "Gradient dynamics: EM-like vs SGD on the sticky Markov chain"

    def subtitle(self) -> str:
        c = self.config
        return (
            f"geoprobe dynamics · {len(self.runs)} seeds · {c.steps} steps · one head (d_k {c.d_k}, d_v {c.d_v}) · "
            f"{c.n_symbols} symbols, self-transition {c.self_prob}"
        )

    def figures(self) -> list[Figure]:
        import plotly.graph_objects as go

        x = list(range(self.config.steps))
        fig = go.Figure()
        for name, key, color in (("SGD", "sgd", "rgba(200,60,60,"), ("EM-like", "em", "rgba(40,90,200,")):
            a = np.array([getattr(r, key) for r in self.runs])
            m, s = a.mean(0), a.std(0)
            fig.add_trace(
                go.Scatter(
                    x=x + x[::-1],
                    y=list(m + s) + list((m - s)[::-1]),
                    fill="toself",
                    fillcolor=color + "0.18)",
                    line=dict(width=0),
                    hoverinfo="skip",
                    showlegend=False,
                )
            )
            fig.add_trace(go.Scatter(x=x, y=m, mode="lines", name=name, line=dict(color=color + "1)")))
        fig.add_hline(y=self.floor_nats, line_dash="dash", annotation_text="H(Y_t | Y_t−1)")
        fig.update_layout(xaxis_title="step", yaxis_title="cross-entropy (nats)", template="plotly_white", height=460)
        return [
            Figure(
                "loss-curves",
                "Training loss by step, mean over seeds; bands: ± 1 SD over seeds; dashed: "
                "the chain's conditional entropy, the floor of any predictor from the previous symbol.",
                fig,
            )
        ]

    def sections(self) -> list[Section]:
        steps = self.em_steps_to_sgd()
        rows = [
            {"quantity": "final loss, SGD (nats)", "geoprobe": f"{self.final('sgd'):.4f}", "paper": "—"},
            {"quantity": "final loss, EM-like (nats)", "geoprobe": f"{self.final('em'):.4f}", "paper": "—"},
            {"quantity": "EM-like steps to SGD's final loss", "geoprobe": f"{steps:.0f}", "paper": "430"},
            {
                "quantity": "speed-up (SGD steps / EM-like steps)",
                "geoprobe": f"{self.speedup():.2f}×",
                "paper": PAPER_SPEEDUP,
            },
            {"quantity": "floor H(Y_t | Y_t−1) (nats)", "geoprobe": f"{self.floor_nats:.4f}", "paper": "—"},
        ]
        text = (
            "Same task and schedules as the authors' script; the random streams differ (geoprobe seeds "
            f"{', '.join(str(r.seed) for r in self.runs)}; theirs 42, 2024, 1337, 7777, 9999), so seed-level "
            "numbers are not comparable, only their spread. Intervals: Student t over seeds."
        )
        return [
            Section("Summary", html_table(rows) + paragraph(text)),
            figures_section(self.figures()),
            provenance_section(self.provenance, config=self.config.to_dict()),
        ]
