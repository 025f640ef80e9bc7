"""The wind-tunnel result: metrics, ablations and training geometry (its page and figures:
:mod:`geoprobe.windtunnel.report`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from geoprobe.report.page import Page
from geoprobe.results import Result
from geoprobe.windtunnel.evaluate import Ablations, TunnelMetrics
from geoprobe.windtunnel.geometry import TrainingGeometry
from geoprobe.windtunnel.invariance import SemanticInvariance
from geoprobe.windtunnel.paper import CALIBRATION_TARGET, PAPER, TARGETS
from geoprobe.windtunnel.query import QueryScore


@dataclass(frozen=True, eq=False)
class WindTunnelResult(Result, Page):
    """Everything ``geoprobe windtunnel eval`` measured on one task (both learners)."""

    KIND: ClassVar[str] = "geoprobe.windtunnel"
    FILE: ClassVar[str] = "windtunnel.json"
    PAGE: ClassVar[str | None] = "windtunnel.html"
    WHAT: ClassVar[str] = "wind-tunnel results file"
    FIX: ClassVar[str] = "pass the windtunnel.json that 'geoprobe windtunnel eval' wrote, or re-run it"

    task: dict[str, Any]
    scale: str
    specs: dict[str, dict[str, Any]]  # arch -> RunSpec.to_json()
    n_params: dict[str, int]
    metrics: dict[str, tuple[TunnelMetrics, ...]]  # arch -> one per evaluation length, training length first
    ablations: Ablations | None = None
    geometry: TrainingGeometry | None = None
    training: dict[str, dict[str, Any]] = field(default_factory=dict)  # arch -> seconds, steps, final loss, tokens/s
    provenance: dict[str, Any] = field(default_factory=dict)
    # arch -> Figure 8 (HMM only; absent from files written before it, and from bijection results)
    invariance: dict[str, SemanticInvariance] | None = field(default=None, metadata={"omit_none": True})
    query: dict[str, QueryScore] | None = field(default=None, metadata={"omit_none": True})  # authors' bijection

    def __post_init__(self) -> None:
        if self.task.get("name") not in PAPER:
            raise ValueError(f"unknown task {self.task.get('name')!r}")
        if "transformer" not in self.metrics or not self.metrics["transformer"]:
            raise ValueError("a wind-tunnel result needs the transformer's metrics")
        lengths = [m.K for m in self.metrics["transformer"]]
        for arch, ms in self.metrics.items():
            if [m.K for m in ms] != lengths:
                raise ValueError(f"{arch} was evaluated at K = {[m.K for m in ms]}, the transformer at {lengths}")
        if lengths[0] != self.task["K"]:
            raise ValueError(f"the first evaluation length {lengths[0]} is not the training length {self.task['K']}")

    @property
    def name(self) -> str:
        return self.task["name"]

    @property
    def convention(self) -> str:
        """Whose task ran: ``"geoprobe"`` or ``"authors"`` (their exact task; absent from older files)."""
        return self.task.get("convention", "geoprobe")

    @property
    def lengths(self) -> tuple[int, ...]:
        return tuple(m.K for m in self.metrics["transformer"])

    def at(self, arch: str, K: int | None = None) -> TunnelMetrics:
        K = self.task["K"] if K is None else K
        for m in self.metrics[arch]:
            if m.K == K:
                return m
        raise KeyError(f"{arch} was not evaluated at K = {K}")

    def checks(self) -> list[dict[str, Any]]:
        """The issue's targets against what was measured (paper-definition MAE, training length)."""
        t_max, m_min = TARGETS[self.name]
        rows = [
            {"check": "transformer MAE (bits) ≤", "target": t_max, "measured": self.at("transformer").mae_paper.value}
        ]
        rows[-1]["pass"] = rows[-1]["measured"] <= t_max
        if "mlp" in self.metrics:
            v = self.at("mlp").mae_paper.value
            rows.append({"check": "MLP MAE (bits) ≥", "target": m_min, "measured": v, "pass": v >= m_min})
        if self.geometry is not None and self.name == "bijection":
            g = self.geometry
            v = g.calibration.value
            rows.append(
                {
                    "check": f"|ρ(value PC1, analytic entropy)| at layer {g.calibration_layer} (best of "
                    f"{len(g.final_layer_rho)}; last layer {abs(g.final_layer_rho[-1]):.3f}) ≥",
                    "target": CALIBRATION_TARGET,
                    "measured": v,
                    "pass": v >= CALIBRATION_TARGET,
                }
            )
        return rows


__all__ = ["WindTunnelResult"]
