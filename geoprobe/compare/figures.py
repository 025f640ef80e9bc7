"""Figures of a comparison (plotly). Model ids and prompts are user strings: they are
HTML-escaped before they reach plotly, whose labels understand a subset of HTML."""

from __future__ import annotations

import math
from html import escape as _escape
from typing import Any, Sequence

import numpy as np

from geoprobe.analysis.stats import Estimate


def escape(s: str) -> str:
    """Escape for plotly's pseudo-HTML: ``&``, ``<`` and ``>`` only (enough to stop any tag);
    plotly decodes numeric entities but shows ``&quot;`` literally, so quotes stay as they are."""
    return _escape(s, quote=False)


_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def _bar(x: list[str], ests: Sequence[Estimate | None], name: str, color: str, scale: float = 100.0) -> Any:
    import plotly.graph_objects as go

    def val(e: Estimate | None, attr: str) -> float:
        v = math.nan if e is None else getattr(e, attr)
        return v * scale if math.isfinite(v) else math.nan

    y = np.array([val(e, "value") for e in ests])
    hi = np.array([val(e, "high") for e in ests]) - y
    lo = y - np.array([val(e, "low") for e in ests])
    return go.Bar(
        x=x,
        y=y,
        name=escape(name),
        marker_color=color,
        error_y=dict(type="data", symmetric=False, array=np.nan_to_num(hi), arrayminus=np.nan_to_num(lo)),
    )


def comparison_figure(comp: Any) -> Any:
    """Three panels over models: value PC1 (mixed vs each restricted domain, CIs); early-layer
    key |cos| (with random-init and Gaussian baselines); attention-focusing % reduction (CI)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rows = comp.rows
    x = [escape(r.model) for r in rows]
    layer_txt = "last layer" if comp.provenance.get("layer", -1) == -1 else f"layer {comp.provenance.get('layer')}"
    fig = make_subplots(
        rows=1,
        cols=3,
        subplot_titles=(f"value PC1, {layer_txt} (%)", "early-layer key |cos|", "attention focusing (% reduction)"),
    )
    fig.add_trace(_bar(x, [r.mixed.pc1 if r.mixed else None for r in rows], "PC1, mixed", _COLORS[0]), row=1, col=1)
    domains = list(dict.fromkeys(e.domain for r in rows for e in r.restricted))
    for j, dom in enumerate(domains):
        ests = [next((e.pc1 for e in r.restricted if e.domain == dom), None) for r in rows]
        fig.add_trace(_bar(x, ests, f"PC1, restricted: {dom}", _COLORS[(j + 1) % len(_COLORS)]), row=1, col=1)
    fig.add_trace(
        go.Bar(x=x, y=[r.key_cos_early for r in rows], name="early-layer key |cos| (trained)", marker_color=_COLORS[2]),
        row=1,
        col=2,
    )
    if any(r.key_cos_early_init is not None for r in rows):
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[r.key_cos_early_init for r in rows],
                mode="markers",
                name="random init",
                marker=dict(symbol="diamond", size=11, color=_COLORS[3]),
            ),
            row=1,
            col=2,
        )
    if any(r.key_cos_gaussian is not None for r in rows):
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[r.key_cos_gaussian for r in rows],
                mode="markers",
                name="iid Gaussian E|cos|",
                marker=dict(symbol="line-ew-open", size=18, color="gray"),
            ),
            row=1,
            col=2,
        )
    fig.add_trace(
        _bar(x, [r.focusing for r in rows], "attention-entropy reduction, first → last layer", _COLORS[4], scale=1.0),
        row=1,
        col=3,
    )
    fig.update_layout(
        barmode="group",
        template="plotly_white",
        height=470,
        title=dict(text="Model comparison (Table-2 analogue)"),
        legend=dict(orientation="h", y=-0.18),
    )
    fig.update_yaxes(title_text="% of standardised variance", range=[0, 100], row=1, col=1)
    fig.update_yaxes(title_text="mean off-diagonal |cos|", row=1, col=2)
    fig.update_yaxes(title_text="% entropy reduction", row=1, col=3)
    return fig


def global_figure(gp: Any) -> Any:
    """Left: shared prompts on global PC1/PC2 coloured by mean next-token entropy. Right: each
    model's share of the PC1 and PC2 loading energy (dashed: equal shares, 1/M)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    ex = list(gp.explained) + [0.0]
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.6, 0.4],
        subplot_titles=(
            f"shared prompts (n = {gp.n}): global PC1 {100 * ex[0]:.1f} %, PC2 {100 * ex[1]:.1f} %",
            "loading share per model",
        ),
    )
    hover = [escape(p if len(p) <= 80 else p[:77] + "…") for p in gp.prompts]
    fig.add_trace(
        go.Scatter(
            x=gp.coords[:, 0],
            y=gp.coords[:, 1],
            mode="markers",
            text=hover,
            name="prompts",
            showlegend=False,
            marker=dict(
                color=gp.entropy_mean,
                colorscale="Viridis",
                size=7,
                colorbar=dict(title=dict(text="mean next-token entropy (bits)"), x=0.55),
            ),
            hovertemplate="%{text}<br>PC1 %{x:.2f}<br>PC2 %{y:.2f}<br>entropy %{marker.color:.2f} bits<extra></extra>",
        ),
        row=1,
        col=1,
    )
    models = [escape(m) for m in gp.models]
    for c in range(2):
        fig.add_trace(
            go.Bar(x=models, y=100 * gp.loading_share[:, c], name=f"share of PC{c + 1}", marker_color=_COLORS[c]),
            row=1,
            col=2,
        )
    fig.add_hline(y=100 / len(gp.models), line=dict(color="gray", dash="dash"), row=1, col=2)
    fig.update_xaxes(title_text="global PC1", row=1, col=1)
    fig.update_yaxes(title_text="global PC2", row=1, col=1)
    fig.update_yaxes(title_text="% of the component's loading energy", range=[0, 100], row=1, col=2)
    fig.update_layout(
        barmode="group",
        template="plotly_white",
        height=470,
        title=dict(text="Global PCA basis across models (standardised per model, equal weight)"),
    )
    return fig
