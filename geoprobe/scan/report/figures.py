"""The scan page's figures, one function per figure, each a plotly figure drawn from a result record
(the analysers return arrays and records; they do not draw): the value manifold by layer and its
scatter, the entropy alignment by layer and the entropy scatter that combines the two records, key
orthogonality, attention focusing, whether each layer's PC1 is identifiable, and the scorecard as a
plotly table (the page shows the scorecard as an HTML table; this one is for notebooks)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from geoprobe.analysis.alignment import ALPHA, AlignmentProfile
from geoprobe.analysis.focusing import AttentionFocusing
from geoprobe.analysis.manifold import ManifoldProfile
from geoprobe.analysis.orthogonality import KeyOrthogonality
from geoprobe.analysis.stats import Estimate
from geoprobe.analysis.tracking import AxisIdentifiability
from geoprobe.scan.scorecard import Scorecard


def manifold_figure(profile: ManifoldProfile) -> Any:
    """PC1 and PC1+PC2 (left) and PR (right) by layer with CIs and the matched-null bands."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    x = list(profile.layers)
    kind = profile.null[0].kind
    fig = make_subplots(rows=1, cols=2, subplot_titles=("explained variance", "participation ratio"))

    def band(col: int, ests: Sequence[Estimate], name: str, color: str) -> None:
        fig.add_trace(
            go.Scatter(
                x=x + x[::-1],
                y=[e.high for e in ests] + [e.low for e in ests][::-1],
                fill="toself",
                fillcolor=color,
                line=dict(width=0),
                hoverinfo="skip",
                name=name,
            ),
            row=1,
            col=col,
        )

    def line(col: int, ests: Sequence[Estimate], name: str, color: str) -> None:
        y = np.array([e.value for e in ests])
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="lines+markers",
                name=name,
                line=dict(color=color),
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=[e.high for e in ests] - y,
                    arrayminus=y - [e.low for e in ests],
                ),
            ),
            row=1,
            col=col,
        )

    conf = round(100 * profile.pc1[0].confidence)
    band(1, [b.pc1 for b in profile.null], f"{kind} null PC1 ({conf} % band)", "rgba(31,119,180,0.15)")
    band(1, [b.pc12 for b in profile.null], f"{kind} null PC1+PC2 ({conf} % band)", "rgba(255,127,14,0.15)")
    line(1, profile.pc1, f"PC1 ({conf} % CI)", "#1f77b4")
    line(1, profile.pc12, f"PC1+PC2 ({conf} % CI)", "#ff7f0e")
    band(2, [b.pr for b in profile.null], f"{kind} null PR ({conf} % band)", "rgba(44,160,44,0.15)")
    line(2, profile.pr, f"participation ratio ({conf} % CI)", "#2ca02c")
    fig.add_hline(y=0.30, line=dict(color="grey", dash="dot"), row=1, col=1)
    fig.update_xaxes(title_text="layer")
    fig.update_yaxes(title_text="fraction of standardised variance", range=[0, 1], row=1, col=1)
    fig.update_yaxes(title_text="effective dimensions (PR)", row=1, col=2)
    fig.update_layout(
        title=dict(text=f"{profile.model}: value manifold by layer (n = {profile.n}, d = {profile.d})"),
        template="plotly_white",
        height=440,
    )
    return fig


def manifold_scatter(profile: ManifoldProfile, layer: int) -> Any:
    """Prompts on PC1 (oriented, see ``orientation``) and PC2, coloured by next-token entropy."""
    import plotly.graph_objects as go

    if layer not in profile.coords:
        raise ValueError(f"layer {layer} has no stored coordinates; scatter layers are {sorted(profile.coords)}")
    i = profile.layers.index(layer)
    xy = profile.coords[layer]
    fig = go.Figure(
        go.Scatter(
            x=xy[:, 0] * profile.orientation[layer],
            y=xy[:, 1],
            mode="markers",
            marker=dict(
                color=profile.next_entropy,
                colorscale="Viridis",
                size=7,
                colorbar=dict(title=dict(text="next-token entropy (bits)")),
            ),
            hovertemplate="PC1 %{x:.2f}<br>PC2 %{y:.2f}<br>entropy %{marker.color:.2f} bits<extra></extra>",
        )
    )
    fig.update_layout(
        title=dict(
            text=f"{profile.model}, layer {layer}: PC1 {100 * profile.pc1[i].value:.1f} %, "
            f"PC1+PC2 {100 * profile.pc12[i].value:.1f} % of standardised variance"
        ),
        xaxis_title="PC1 coordinate (oriented: grows with entropy)",
        yaxis_title="PC2 coordinate",
        template="plotly_white",
        height=460,
    )
    return fig


def alignment_figure(profile: AlignmentProfile) -> Any:
    """Spearman ρ by layer with its CI; filled markers: Bonferroni p < 0.05."""
    import plotly.graph_objects as go

    rho = np.array([e.value for e in profile.spearman])
    lo, hi = np.array([e.low for e in profile.spearman]), np.array([e.high for e in profile.spearman])
    sig = np.array(profile.significant)
    conf = round(100 * profile.spearman[0].confidence)
    fig = go.Figure(
        [
            go.Scatter(
                x=list(profile.layers),
                y=rho,
                mode="lines+markers",
                name=f"Spearman ρ ({conf} % CI)",
                marker=dict(symbol="circle-open", size=8),
                error_y=dict(type="data", symmetric=False, array=hi - rho, arrayminus=rho - lo),
            ),
            go.Scatter(
                x=[x for x, s in zip(profile.layers, sig) if s],
                y=rho[sig],
                mode="markers",
                name=f"Bonferroni p < {ALPHA}",
                marker=dict(symbol="circle", size=9),
            ),
        ]
    )
    fig.add_hline(y=0, line=dict(color="grey", dash="dot"))
    fig.update_layout(
        title=dict(text=f"{profile.model}: Spearman ρ(PC1 coordinate, next-token entropy) by layer"),
        xaxis_title="layer",
        yaxis_title="Spearman ρ (PC1 oriented so ρ ≥ 0)",
        template="plotly_white",
        height=420,
    )
    return fig


def focusing_figure(focusing: AttentionFocusing) -> Any:
    """Mean head entropy by layer with its CI band, the 10–90 % head band and the uniform ceiling."""
    import plotly.graph_objects as go

    x = list(focusing.layers)
    conf = round(100 * focusing.mean[0].confidence)
    fig = go.Figure()
    bands = (
        (
            "heads 10–90 %",
            [b for _, b in focusing.head_band_10_90],
            [a for a, _ in focusing.head_band_10_90],
            "rgba(44,160,44,0.15)",
        ),
        (
            f"{conf} % CI over prompts",
            [e.high for e in focusing.mean],
            [e.low for e in focusing.mean],
            "rgba(31,119,180,0.3)",
        ),
    )
    for name, high, low, color in bands:
        fig.add_trace(
            go.Scatter(
                x=x,
                y=high,
                mode="lines",
                line=dict(width=0),
                showlegend=False,
                hoverinfo="skip",
                name=f"{name} high",
            )
        )
        fig.add_trace(
            go.Scatter(x=x, y=low, mode="lines", line=dict(width=0), fill="tonexty", fillcolor=color, name=name)
        )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=[e.value for e in focusing.mean],
            mode="lines+markers",
            name="mean head entropy",
            line=dict(color="rgb(31,119,180)"),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=list(focusing.uniform),
            mode="lines",
            name="uniform attention (log2 T)",
            line=dict(color="gray", dash="dash"),
        )
    )
    r = focusing.reduction
    fig.update_layout(
        title=dict(
            text=f"Attention focusing: {focusing.model}<br><sub>first → last layer: "
            f"{r.value:.1f} % reduction [{r.low:.1f}, {r.high:.1f}], p = {focusing.reduction_p:.3g}</sub>"
        ),
        xaxis_title="layer",
        yaxis_title="final-token attention entropy (bits)",
        template="plotly_white",
    )
    return fig


def orthogonality_figure(ko: KeyOrthogonality) -> Any:
    """Layer mean with 10–90 and 25–75 % head bands, Gaussian, random-init and threshold lines."""
    import plotly.graph_objects as go

    x = list(ko.layers)
    fig = go.Figure()
    bands = (("heads 10–90 %", ko.band_10_90, 0.15), ("heads 25–75 %", ko.band_25_75, 0.3))
    for name, band, alpha in bands:
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[b for _, b in band],
                mode="lines",
                line=dict(width=0),
                showlegend=False,
                hoverinfo="skip",
                name=f"{name} high",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[a for a, _ in band],
                mode="lines",
                line=dict(width=0),
                fill="tonexty",
                fillcolor=f"rgba(31,119,180,{alpha})",
                name=name,
            )
        )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=list(ko.layer_mean),
            mode="lines+markers",
            name="mean over heads",
            line=dict(color="rgb(31,119,180)"),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=[ko.gaussian] * len(x),
            mode="lines",
            name="iid Gaussian E|cos|",
            line=dict(color="gray", dash="dash"),
        )
    )
    if ko.init_layer_mean is not None:
        fig.add_trace(
            go.Scatter(
                x=x,
                y=list(ko.init_layer_mean),
                mode="lines",
                name="random init (twin)",
                line=dict(color="rgb(214,39,40)", dash="dot"),
            )
        )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=[ko.threshold] * len(x),
            mode="lines",
            name="threshold",
            line=dict(color="black", dash="dot", width=1),
        )
    )
    fig.update_layout(
        title=dict(text=f"Key orthogonality of W_K columns: {ko.model}"),
        xaxis_title="layer",
        yaxis_title="mean off-diagonal |cos| (unitless)",
        template="plotly_white",
    )
    return fig


def scorecard_figure(card: Scorecard) -> Any:
    import plotly.graph_objects as go

    rows = card.rows()
    cols = ["criterion", "statement", "value", "ci", "passes", "null", "beats_null"]
    head = ["criterion", "paper's test", "value", "CI", "passes", "null: random init", "beats null"]
    if all("vs_init" in r for r in rows):
        cols[4:4], head[4:4] = ["threshold", "vs_init"], ["threshold", "Δ vs random init [CI]"]
    fig = go.Figure(
        go.Table(
            header=dict(values=head, align="left", fill_color="#e8e8e8"),
            cells=dict(values=[[r[c] for r in rows] for c in cols], align="left", height=28),
        )
    )
    fig.update_layout(
        title=f"Scorecard: {card.n_passed} of {len(rows)} criteria pass (§4.4)",
        height=140 + 60 * len(rows),
        margin=dict(l=10, r=10, t=50, b=10),
    )
    return fig


def entropy_scatter(manifold: ManifoldProfile, alignment: AlignmentProfile, layer: int) -> Any:
    """Next-token entropy (bits) against the entropy-oriented PC1 coordinate at ``layer``."""
    import plotly.graph_objects as go

    i = list(alignment.layers).index(layer)
    coords = np.asarray(manifold.coords[layer])[:, 0] * alignment.orientation[i]
    ent = np.asarray(manifold.next_entropy)
    rho, r = alignment.spearman[i], alignment.pearson[i]
    fig = go.Figure(
        go.Scatter(
            x=coords,
            y=ent,
            mode="markers",
            marker=dict(size=6, opacity=0.7),
            hovertemplate="PC1 %{x:.2f}<br>entropy %{y:.2f} bits<extra></extra>",
        )
    )
    fig.update_layout(
        title=(
            f"Layer {layer}: next-token entropy vs PC1 (oriented); Spearman ρ = {rho.value:.2f} "
            f"[{rho.low:.2f}, {rho.high:.2f}], Pearson r = {r.value:.2f}, p = {alignment.p_value[i]:.2g} "
            f"(Bonferroni {alignment.p_bonferroni[i]:.2g})"
        ),
        xaxis_title="PC1 coordinate (standardised values, oriented so ρ ≥ 0)",
        yaxis_title="next-token entropy (bits)",
        template="plotly_white",
        height=460,
    )
    return fig


def identifiability_figure(ident: AxisIdentifiability) -> Any:
    """Split-half |cos| of PC1 by layer (median over halvings, their central interval) against the
    column-permutation null's upper quantile (left), and r1 − r2 against North's error r1·√(2/n)
    (right); filled markers: PC1 identifiable (both above their nulls)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    x, ok = list(ident.layers), np.array(ident.identifiable)
    halves = [s.value for s in ident.split_half]
    y = np.array([e.value for e in halves])
    gap = np.array([e.gap for e in ident.eigengap])
    conf = round(100 * halves[0].confidence)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("split-half |cos| of PC1", "eigengap r1 − r2"))
    for col, values, null, name, null_name in (
        (1, y, [s.null_high for s in ident.split_half], f"median |cos| ({conf} % of halvings)", "null (upper)"),
        (2, gap, [e.north_error for e in ident.eigengap], "r1 − r2", "North's error r1·√(2/n)"),
    ):
        err = None
        if col == 1:
            err = dict(
                type="data", symmetric=False, array=[e.high for e in halves] - y, arrayminus=y - [e.low for e in halves]
            )
        fig.add_trace(
            go.Scatter(
                x=x, y=values, mode="lines+markers", name=name, marker=dict(symbol="circle-open", size=8), error_y=err
            ),
            row=1,
            col=col,
        )
        fig.add_trace(
            go.Scatter(x=x, y=null, mode="lines", name=null_name, line=dict(color="gray", dash="dash")), row=1, col=col
        )
        fig.add_trace(
            go.Scatter(
                x=[v for v, k in zip(x, ok) if k],
                y=values[ok],
                mode="markers",
                name="PC1 identifiable",
                marker=dict(symbol="circle", size=9, color="rgb(44,160,44)"),
                showlegend=col == 1,
            ),
            row=1,
            col=col,
        )
    fig.update_xaxes(title_text="layer")
    fig.update_yaxes(title_text="|cos| between the halves' PC1s", range=[0, 1], row=1, col=1)
    fig.update_yaxes(title_text="fraction of standardised variance", row=1, col=2)
    fig.update_layout(
        title=dict(text=f"{ident.model}: is PC1 an axis? ({sum(ok)} of {len(x)} layers identifiable, n = {ident.n})"),
        template="plotly_white",
        height=420,
    )
    return fig
