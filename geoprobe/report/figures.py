"""The report's figures, in order, each from a result object's own ``.figure()``.

The one figure that combines two results (next-token entropy against the oriented PC1
coordinate, with the alignment's ρ) is built here.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def entropy_scatter(manifold: Any, alignment: Any, layer: int) -> Any:
    """Next-token entropy (bits) against the entropy-oriented PC1 coordinate at ``layer``."""
    import plotly.graph_objects as go

    i = list(alignment.layers).index(layer)
    coords = np.asarray(manifold.coords[layer])[:, 0] * alignment.orientation[i]
    ent = np.asarray(manifold.next_entropy)
    rho, r = alignment.spearman[i], alignment.pearson[i]
    fig = go.Figure(go.Scatter(x=coords, y=ent, mode="markers", marker=dict(size=6, opacity=0.7),
                               hovertemplate="PC1 %{x:.2f}<br>entropy %{y:.2f} bits<extra></extra>"))
    fig.update_layout(
        title=(f"Layer {layer}: next-token entropy vs PC1 (oriented); Spearman ρ = {rho.value:.2f} "
               f"[{rho.low:.2f}, {rho.high:.2f}], Pearson r = {r.value:.2f}, p = {alignment.p_value[i]:.2g} "
               f"(Bonferroni {alignment.p_bonferroni[i]:.2g})"),
        xaxis_title="PC1 coordinate (standardised values, oriented so ρ ≥ 0)",
        yaxis_title="next-token entropy (bits)", template="plotly_white", height=460)
    return fig


def scan_figures(result: Any) -> list[tuple[str, str, Any]]:
    """(anchor, caption, figure) for every figure the scan's results support."""
    figs: list[tuple[str, str, Any]] = [(
        "scorecard", "The paper's three criteria (§4.4), each with its confidence interval and matched null.",
        result.scorecard.figure())]
    m, a = result.manifold, result.alignment
    if m is not None:
        final = result.layers[-1]
        shown = [final] + [x for x in sorted(m.coords) if x != final]
        for layer in shown:
            figs.append((f"manifold-scatter-{layer}",
                         f"Layer {layer}: final-token value vectors projected on PC1 and PC2 of the standardised "
                         "values, coloured by next-token entropy.", m.scatter_figure(layer)))
        figs.append(("manifold-profile",
                     f"PC1, PC1+PC2 and participation ratio by layer; shaded: the matched null "
                     f"({m.null[0].kind} data of the same n × d, {m.null[0].draws} draws).", m.figure()))
    if a is not None and m is not None:
        figs.append(("entropy-scatter", "Next-token entropy against the PC1 coordinate of the final layer.",
                     entropy_scatter(m, a, result.layers[-1])))
        figs.append(("alignment-profile", "Spearman ρ between PC1 and next-token entropy by layer, with bootstrap "
                     "CIs; filled markers: significant after Bonferroni across layers.", a.figure()))
    if result.orthogonality is not None:
        figs.append(("key-orthogonality", "Mean off-diagonal |cos| between W_K columns by layer: head bands, the "
                     "Gaussian expectation and the architecture's own random initialisation.",
                     result.orthogonality.figure()))
    if result.focusing is not None:
        figs.append(("attention-focusing", "Final-token attention entropy by layer (per-head entropy averaged over "
                     "heads), bootstrap CI over prompts; dashed: uniform attention.", result.focusing.figure()))
    return figs
