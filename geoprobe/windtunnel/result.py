"""The wind-tunnel result: metrics, ablations and training geometry, with figures made from them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from geoprobe.report.page import Figure, Page, Section
from geoprobe.results import Result
from geoprobe.windtunnel import report
from geoprobe.windtunnel.evaluate import Ablations, TunnelMetrics
from geoprobe.windtunnel.geometry import TrainingGeometry
from geoprobe.windtunnel.invariance import SemanticInvariance, invariance_figure
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

    # -- page -------------------------------------------------------------------------------
    def title(self) -> str:
        return f"Bayesian wind tunnel: {self.name} ({self.scale} scale, {self.convention} convention)"

    def subtitle(self) -> str:
        return report.subtitle(self)

    def sections(self) -> list[Section]:
        return report.sections(self)

    # -- figures ----------------------------------------------------------------------------
    def entropy_figure(self) -> Any:
        """Mean predictive entropy by position: analytic, transformer, MLP; one panel per length."""
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        lengths = self.lengths
        fig = make_subplots(rows=1, cols=len(lengths), subplot_titles=[f"K = {k}" for k in lengths])
        colours = {"transformer": "rgb(31,119,180)", "mlp": "rgb(214,39,40)"}
        for c, K in enumerate(lengths, start=1):
            ref = self.at("transformer", K)
            x = list(range(1, K + 1))
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=list(ref.curve_bayes),
                    name="analytic (Bayes)",
                    mode="lines",
                    line=dict(color="black", dash="dash"),
                    showlegend=c == 1,
                ),
                row=1,
                col=c,
            )
            for arch in self.metrics:
                m = self.at(arch, K)
                fig.add_trace(
                    go.Scatter(
                        x=x,
                        y=list(m.curve_model),
                        name=arch,
                        mode="lines+markers",
                        line=dict(color=colours.get(arch)),
                        showlegend=c == 1,
                    ),
                    row=1,
                    col=c,
                )
            fig.update_xaxes(title_text="prediction position t", row=1, col=c)
        fig.update_yaxes(title_text="mean predictive entropy (bits)", row=1, col=1)
        fig.update_layout(title=f"{self.name}: model vs analytic entropy", template="plotly_white")
        return fig

    def ablation_figure(self) -> Any:
        """Per-sample MAE with each head (and each whole attention layer) zeroed."""
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        a = self.ablations
        if a is None:
            raise ValueError("no ablations in this result")
        heads = np.array(a.head_mae_sample)
        fig = make_subplots(
            rows=1, cols=2, subplot_titles=["one head zeroed", "whole attention layer zeroed"], column_widths=[0.6, 0.4]
        )
        fig.add_trace(
            go.Heatmap(
                z=heads.tolist(),
                x=[f"h{h}" for h in range(heads.shape[1])],
                y=[f"L{layer}" for layer in range(heads.shape[0])],
                colorscale="Viridis",
                colorbar=dict(title="MAE (bits)", x=0.55),
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Bar(
                x=[f"L{layer}" for layer in range(len(a.layer_mae_sample))],
                y=list(a.layer_mae_sample),
                name="layer zeroed",
                marker_color="rgb(31,119,180)",
            ),
            row=1,
            col=2,
        )
        fig.add_hline(y=a.baseline_sample, line_dash="dash", annotation_text="intact", row=1, col=2)
        fig.update_yaxes(autorange="reversed", row=1, col=1)
        fig.update_yaxes(title_text="per-sample entropy MAE (bits)", type="log", row=1, col=2)
        fig.update_layout(
            title=f"{self.name}: ablations (hypothesis head: layer 0 head {a.hypothesis_head})",
            template="plotly_white",
            showlegend=False,
        )
        return fig

    def dynamics_figure(self) -> Any:
        """Frame (attention, keys) vs precision (entropy error, value manifold) over training."""
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        g = self.geometry
        if g is None:
            raise ValueError("no training geometry in this result")
        x = [max(s, 1) for s in g.steps]
        fig = make_subplots(rows=1, cols=2, subplot_titles=["progress fraction (0 = init, 1 = final)", "raw measures"])
        fig.add_trace(
            go.Scatter(x=x, y=list(g.frame_progress), name="frame: attention patterns", mode="lines+markers"),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(x=x, y=list(g.precision_progress), name="precision: entropy error (log)", mode="lines+markers"),
            row=1,
            col=1,
        )
        fig.add_hline(y=0.9, line_dash="dot", row=1, col=1)
        fig.add_trace(
            go.Scatter(x=x, y=list(g.mae_sample), name="per-sample MAE (bits)", mode="lines+markers"), row=1, col=2
        )
        fig.add_trace(
            go.Scatter(x=x, y=[abs(r) for r in g.value_rho], name="|ρ(value PC1, Bayes H)|", mode="lines+markers"),
            row=1,
            col=2,
        )
        fig.add_trace(
            go.Scatter(x=x, y=list(g.frame_tv), name="attention TV to final", mode="lines+markers"), row=1, col=2
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[float(np.mean(r)) for r in g.key_orth],
                name="key orthogonality (mean |cos|)",
                mode="lines+markers",
            ),
            row=1,
            col=2,
        )
        fig.update_xaxes(type="log", title_text="training step")
        fig.update_yaxes(type="log", row=1, col=2)
        fig.update_layout(
            title=f"{self.name}: frame (t90 ≈ step {g.t90_frame:.0f}) vs precision (t90 ≈ step {g.t90_precision:.0f})",
            template="plotly_white",
        )
        return fig

    def focusing_figure(self) -> Any:
        """Attention entropy of the final token by layer, one line per checkpoint (attention focusing)."""
        import plotly.graph_objects as go

        g = self.geometry
        if g is None:
            raise ValueError("no training geometry in this result")
        fig = go.Figure()
        n = len(g.steps)
        for i, (step, row) in enumerate(zip(g.steps, g.attn_entropy)):
            shade = int(40 + 180 * i / max(1, n - 1))
            fig.add_trace(
                go.Scatter(
                    x=list(range(len(row))),
                    y=list(row),
                    mode="lines+markers",
                    name=f"step {step}",
                    line=dict(color=f"rgb({255 - shade},{shade // 2},{shade})"),
                )
            )
        fig.update_layout(
            title=f"{self.name}: attention entropy by layer over training (mean over heads and probes)",
            xaxis_title="layer",
            yaxis_title="attention entropy (bits)",
            template="plotly_white",
        )
        return fig

    def calibration_figure(self) -> Any:
        """Value PC1 (at the calibration layer) against the analytic entropy, one point per probe prompt."""
        import plotly.graph_objects as go

        g = self.geometry
        if g is None:
            raise ValueError("no training geometry in this result")
        c = g.calibration
        fig = go.Figure(
            go.Scatter(
                x=list(g.analytic_entropy),
                y=list(g.final_pc1),
                mode="markers",
                marker=dict(
                    color=list(g.final_model_entropy),
                    colorscale="Viridis",
                    size=6,
                    colorbar=dict(title="model H (bits)"),
                ),
                name="probe prompt",
            )
        )
        fig.update_layout(
            title=f"{self.name}: value PC1 vs analytic entropy, |ρ| = {c:.3f}",
            xaxis_title="analytic predictive entropy (bits)",
            yaxis_title=f"value PC1, layer {g.calibration_layer}",
            template="plotly_white",
        )
        return fig

    def figures(self) -> list[Figure]:
        """The page's figures in order (the same list ``--figures`` exports)."""
        out = [Figure("entropy", report.CAPTIONS["entropy"], self.entropy_figure())]
        if self.ablations is not None:
            out.append(Figure("ablations", report.CAPTIONS["ablations"], self.ablation_figure()))
        if self.geometry is not None:
            out += [
                Figure("dynamics", report.CAPTIONS["dynamics"], self.dynamics_figure()),
                Figure("focusing", report.CAPTIONS["focusing"], self.focusing_figure()),
                Figure("calibration", report.CAPTIONS["calibration"], self.calibration_figure()),
            ]
        if self.invariance:
            out.append(Figure("invariance", report.CAPTIONS["invariance"], self.invariance_figure()))
        return out

    def invariance_figure(self) -> Any:
        """Figure 8: per-sequence calibration error before vs after relabelling the hidden states."""
        if not self.invariance:
            raise ValueError("no semantic-invariance measurement in this result")
        return invariance_figure(self.invariance, self.name)


__all__ = ["WindTunnelResult"]
