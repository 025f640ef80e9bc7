"""The scan page's figures, one function per figure, each a plotly figure drawn from a result record
(the analysers return arrays and records; they do not draw): the value manifold by layer and its
scatter, the entropy alignment by layer and the entropy scatter that combines the two records, key
orthogonality, attention focusing, whether each layer's PC1 is identifiable, and the scorecard as a
plotly table (the page shows the scorecard as an HTML table; this one is for notebooks). Every figure of an
estimate by layer with its interval and null is drawn by :mod:`geoprobe.report.series` (a band never joins two
series, the legend names them, the y axis spans the estimates, intervals, nulls and references)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from geoprobe.analysis.alignment import ALPHA, AlignmentProfile
from geoprobe.analysis.focusing import AttentionFocusing
from geoprobe.analysis.manifold import ManifoldProfile
from geoprobe.analysis.orthogonality import KeyOrthogonality
from geoprobe.analysis.stats import Estimate
from geoprobe.analysis.tracking import AxisIdentifiability
from geoprobe.report.series import Line, Panel, Reference, estimate_figure, estimate_panels
from geoprobe.scan.scorecard import PC_THRESHOLD, Scorecard


def _line(name: str, x: list[int], ests: Sequence[Estimate], **kw: Any) -> Line:
    """A :class:`Line` of ``ests`` (Estimates) with their intervals."""
    return Line(name, x, [e.value for e in ests], [e.low for e in ests], [e.high for e in ests], **kw)


def manifold_figure(profile: ManifoldProfile) -> Any:
    """PC1 and PC1+PC2 (left) and PR (right) by layer with CIs and the matched-null bands."""
    x = list(profile.layers)
    kind = profile.null[0].kind
    conf = round(100 * profile.pc1[0].confidence)

    def line(name: str, ests: Sequence[Estimate], null: Sequence[Estimate]) -> Line:
        nulls = dict(null_low=[b.low for b in null], null_high=[b.high for b in null])
        return _line(name, x, ests, ci=f"{conf} % CI", **nulls)

    variance = Panel(
        [
            line("PC1", profile.pc1, [b.pc1 for b in profile.null]),
            line("PC1+PC2", profile.pc12, [b.pc12 for b in profile.null]),
        ],
        "fraction of standardised variance",
        "explained variance",
        include=(0.0, 1.0),
        references=[Reference(f"criterion: {PC_THRESHOLD:.2f}", PC_THRESHOLD)],
    )
    pr = Panel([line("participation ratio", profile.pr, [b.pr for b in profile.null])], "effective dimensions (PR)")
    return estimate_panels(
        [variance, pr],
        title=f"{profile.model}: value manifold by layer (n = {profile.n}, d = {profile.d})",
        x_title="layer",
        null_name=f"{kind} null ({conf} % band)",
        height=440,
    )


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
    """Spearman ρ by layer with its CI and the permutation null of |ρ| (its mean, dashed, and the region
    below its upper quantile, shaded, where the file has them); filled markers: Bonferroni p < 0.05."""
    conf = round(100 * profile.spearman[0].confidence)
    nulls: dict[str, Any] = {}
    if profile.null_mean is not None and profile.null_high is not None:
        nulls = dict(null=profile.null_mean, null_low=[0.0] * len(profile.layers), null_high=profile.null_high)
    rho = _line(
        "Spearman ρ",
        list(profile.layers),
        profile.spearman,
        ci=f"{conf} % CI",
        marks=profile.significant,
        marks_name=f"Bonferroni p < {ALPHA}",
        **nulls,
    )
    return estimate_figure(
        [rho],
        title=f"{profile.model}: Spearman ρ(PC1 coordinate, next-token entropy) by layer",
        x_title="layer",
        y_title="Spearman ρ (PC1 oriented so ρ ≥ 0)",
        include=(0.0,),
        null_name=f"|ρ| under independence (permutation mean; shaded to its upper {conf} %)",
    ).update_layout(height=420)


def focusing_figure(focusing: AttentionFocusing) -> Any:
    """Mean head entropy by layer with its CI band, the 10–90 % head band and the uniform ceiling."""
    conf = round(100 * focusing.mean[0].confidence)
    mean = _line(
        "mean head entropy",
        list(focusing.layers),
        focusing.mean,
        low_adj=[a for a, _ in focusing.head_band_10_90],
        high_adj=[b for _, b in focusing.head_band_10_90],
        null=list(focusing.uniform),
        interval_name=f"{conf} % CI over prompts",
        wide_name="heads 10–90 %",
    )
    r = focusing.reduction
    return estimate_figure(
        [mean],
        title=f"Attention focusing: {focusing.model}<br><sub>first → last layer: "
        f"{r.value:.1f} % reduction [{r.low:.1f}, {r.high:.1f}], p = {focusing.reduction_p:.3g}; "
        f"bands: {conf} % CI over prompts, heads 10–90 % (pale)</sub>",
        x_title="layer",
        y_title="final-token attention entropy (bits)",
        include=(0.0,),
        null_name="uniform attention (log2 T)",
    )


def orthogonality_figure(ko: KeyOrthogonality) -> Any:
    """Layer mean with 10–90 and 25–75 % head bands, Gaussian, random-init and threshold lines."""
    mean = Line(
        "mean over heads",
        list(ko.layers),
        list(ko.layer_mean),
        low=[a for a, _ in ko.band_25_75],
        high=[b for _, b in ko.band_25_75],
        low_adj=[a for a, _ in ko.band_10_90],
        high_adj=[b for _, b in ko.band_10_90],
        null=ko.init_layer_mean,
        interval_name="heads 25–75 %",
        wide_name="heads 10–90 %",
    )
    return estimate_figure(
        [mean],
        title=f"Key orthogonality of W_K columns: {ko.model}<br><sub>bands: heads 25–75 %, 10–90 % (pale)</sub>",
        x_title="layer",
        y_title="mean off-diagonal |cos| (unitless)",
        include=(0.0,),
        null_name="random init (twin)",
        references=[Reference("iid Gaussian E|cos|", ko.gaussian), Reference("threshold", ko.threshold)],
    )


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
    x, ok = list(ident.layers), list(ident.identifiable)
    halves = [s.value for s in ident.split_half]
    conf = round(100 * halves[0].confidence)
    marks = dict(marks=ok, marks_name="PC1 identifiable")
    left = Panel(
        [
            _line(
                f"median |cos| ({conf} % of halvings)",
                x,
                halves,
                null=[s.null_high for s in ident.split_half],
                null_name="null (upper)",
                **marks,
            )
        ],
        "|cos| between the halves' PC1s",
        "split-half |cos| of PC1",
        include=(0.0, 1.0),
    )
    right = Panel(
        [
            Line(
                "r1 − r2",
                x,
                [e.gap for e in ident.eigengap],
                null=[e.north_error for e in ident.eigengap],
                null_name="North's error r1·√(2/n)",
                **marks,
            )
        ],
        "fraction of standardised variance",
        "eigengap r1 − r2",
        include=(0.0,),
    )
    return estimate_panels(
        [left, right],
        title=f"{ident.model}: is PC1 an axis? ({sum(ok)} of {len(x)} layers identifiable, n = {ident.n})",
        x_title="layer",
        height=420,
    )
