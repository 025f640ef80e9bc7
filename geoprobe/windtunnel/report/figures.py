"""The figures of a wind-tunnel page, one function per figure, drawn from a :class:`WindTunnelResult`:
entropy by position, ablations, frame vs precision over training, attention focusing, value
calibration, and semantic invariance (Figure 8)."""

from __future__ import annotations

from typing import Any

import numpy as np

from geoprobe.windtunnel.invariance import SemanticInvariance
from geoprobe.windtunnel.result import WindTunnelResult


def entropy_figure(result: WindTunnelResult) -> Any:
    """Mean predictive entropy by position: analytic, transformer, MLP; one panel per length."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    lengths = result.lengths
    fig = make_subplots(rows=1, cols=len(lengths), subplot_titles=[f"K = {k}" for k in lengths])
    colours = {"transformer": "rgb(31,119,180)", "mlp": "rgb(214,39,40)"}
    for c, K in enumerate(lengths, start=1):
        ref = result.at("transformer", K)
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
        for arch in result.metrics:
            m = result.at(arch, K)
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
    fig.update_layout(title=f"{result.name}: model vs analytic entropy", template="plotly_white")
    return fig


def ablation_figure(result: WindTunnelResult) -> Any:
    """Per-sample MAE with each head (and each whole attention layer) zeroed."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    a = result.ablations
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
        title=f"{result.name}: ablations (hypothesis head: layer 0 head {a.hypothesis_head})",
        template="plotly_white",
        showlegend=False,
    )
    return fig


def dynamics_figure(result: WindTunnelResult) -> Any:
    """Frame (attention, keys) vs precision (entropy error, value manifold) over training."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    g = result.geometry
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
    fig.add_trace(go.Scatter(x=x, y=list(g.frame_tv), name="attention TV to final", mode="lines+markers"), row=1, col=2)
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
        title=f"{result.name}: frame (t90 ≈ step {g.t90_frame:,.0f}) vs precision (t90 ≈ step {g.t90_precision:,.0f}), "
        "one seed",
        template="plotly_white",
    )
    return fig


def focusing_figure(result: WindTunnelResult) -> Any:
    """Attention entropy of the final token by layer, one line per checkpoint (attention focusing)."""
    import plotly.graph_objects as go

    g = result.geometry
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
        title=f"{result.name}: attention entropy by layer over training (mean over heads and probes)",
        xaxis_title="layer",
        yaxis_title="attention entropy (bits)",
        template="plotly_white",
    )
    return fig


def calibration_figure(result: WindTunnelResult) -> Any:
    """Value PC1 (at the calibration layer) against the analytic entropy, one point per probe prompt."""
    import plotly.graph_objects as go

    g = result.geometry
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
        title=f"{result.name}: value PC1 vs analytic entropy, |ρ| = {c:.3f}",
        xaxis_title="analytic predictive entropy (bits)",
        yaxis_title=f"value PC1, layer {g.calibration_layer}",
        template="plotly_white",
    )
    return fig


def invariance_figure(inv: dict[str, SemanticInvariance], task: str) -> Any:
    """Per-sequence calibration error before (x) vs after (y) relabelling, one colour per learner, y = x."""
    import plotly.graph_objects as go

    colours = {"transformer": "rgb(31,119,180)", "mlp": "rgb(214,39,40)"}
    fig = go.Figure()
    top = 0.0
    for arch, m in inv.items():
        top = max(top, max(m.error_before), max(m.error_after))
        fig.add_trace(
            go.Scatter(
                x=list(m.error_before),
                y=list(m.error_after),
                mode="markers",
                name=f"{arch} (TV {m.equivariance_tv.value:.3g})",
                marker=dict(color=colours.get(arch), size=4, opacity=0.5),
            )
        )
    fig.add_trace(go.Scatter(x=[0, top], y=[0, top], mode="lines", name="y = x", line=dict(color="black", dash="dash")))
    fig.update_layout(
        title=f"{task}: semantic invariance, calibration error before vs after relabelling the hidden states",
        xaxis_title="calibration error, original labels (bits)",
        yaxis_title="calibration error, states relabelled (bits)",
        template="plotly_white",
    )
    return fig
