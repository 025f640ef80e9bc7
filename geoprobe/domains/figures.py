"""The figures of a domain comparison (plotly): every set's value-manifold statistics, and the
differences between sets per domain."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from geoprobe.analysis.contrast import METRICS
from geoprobe.domains.config import CONTROL_SUFFIX, KINDS
from geoprobe.sampling import MIXED


def fmt_p(p: float) -> str:
    """A p-value with two significant digits, or n/a."""
    return "n/a" if not math.isfinite(p) else f"{p:.2g}"


def plot_title(cmp: Any, what: str) -> str:
    n = sorted({s.n for s in cmp.sets.values()})
    return f"{cmp.model or 'model'}, layer {cmp.layer}: {what} (n = {', '.join(map(str, n))} per set)"


def sets_figure(cmp: Any) -> Any:
    """PC1 %, PC1+PC2 % and PR per set with their intervals, coloured by kind; grey bars are
    each set's Gaussian null band, the dashed line the mixed set's value."""
    names = cmp.order()
    conf = round(100 * cmp.sets[MIXED].pc1.confidence)
    fig = make_subplots(rows=1, cols=3, subplot_titles=("PC1 (%)", "PC1+PC2 (%)", "participation ratio"))
    colors = {"mixed": "#444444", "restricted": "#d62728", "control": "#1f77b4"}
    for col, m in enumerate(METRICS, start=1):
        scale = 1.0 if m == "pr" else 100.0
        nulls = [getattr(cmp.sets[k].null, m) for k in names]
        fig.add_trace(
            go.Bar(
                x=names,
                y=[scale * (b.high - b.low) for b in nulls],
                base=[scale * b.low for b in nulls],
                marker=dict(color="rgba(128,128,128,0.25)"),
                name=f"Gaussian null ({conf} % band)",
                legendgroup="null",
                showlegend=col == 1,
                hoverinfo="skip",
            ),
            row=1,
            col=col,
        )
        for kind in KINDS:
            ks = [k for k in names if cmp.sets[k].kind == kind]
            if not ks:
                continue
            est = [getattr(cmp.sets[k], m) for k in ks]
            y = np.array([scale * e.value for e in est])
            fig.add_trace(
                go.Scatter(
                    x=ks,
                    y=y,
                    mode="markers",
                    name=f"{kind} ({conf} % CI)",
                    legendgroup=kind,
                    showlegend=col == 1,
                    marker=dict(color=colors[kind], size=9),
                    error_y=dict(
                        type="data",
                        symmetric=False,
                        array=np.array([scale * e.high for e in est]) - y,
                        arrayminus=y - np.array([scale * e.low for e in est]),
                    ),
                ),
                row=1,
                col=col,
            )
        fig.add_hline(
            y=scale * getattr(cmp.sets[MIXED], m).value, line=dict(color=colors["mixed"], dash="dash"), row=1, col=col
        )
    fig.update_yaxes(title_text="% of standardised variance", row=1, col=1)
    fig.update_yaxes(title_text="effective dimensions", row=1, col=3)
    fig.update_layout(
        title=dict(text=plot_title(cmp, "value manifold, mixed vs restricted vs matched control")),
        template="plotly_white",
        height=460,
        barmode="overlay",
    )
    return fig


def difference_figure(cmp: Any) -> Any:
    """Forest plot per domain: Δ(restricted − mixed), Δ(control − mixed) and
    Δ(restricted − control) with intervals, for PC1, PC1+PC2 (percentage points) and PR."""
    conf = round(100 * cmp.sets[MIXED].pc1.confidence)
    fig = make_subplots(rows=1, cols=3, shared_yaxes=True, subplot_titles=("ΔPC1 (pp)", "ΔPC1+PC2 (pp)", "ΔPR"))
    series = (
        ("restricted − mixed", lambda d: (MIXED, d), "#d62728", -0.2),
        ("control − mixed", lambda d: (MIXED, d + CONTROL_SUFFIX), "#1f77b4", 0.0),
        ("restricted − control", lambda d: (d + CONTROL_SUFFIX, d), "#9467bd", 0.2),
    )
    for col, m in enumerate(METRICS, start=1):
        scale = 1.0 if m == "pr" else 100.0
        for label, pair, color, offset in series:
            pts = [(i, cmp.get(*pair(d))) for i, d in enumerate(cmp.domains)]
            pts = [(i, c) for i, c in pts if c is not None]
            if not pts:
                continue
            x = np.array([scale * c.diff[m].value for _, c in pts])
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=[i + offset for i, _ in pts],
                    mode="markers",
                    name=f"{label} ({conf} % CI)",
                    legendgroup=label,
                    showlegend=col == 1,
                    marker=dict(color=color, size=9),
                    text=[f"p = {fmt_p(c.p_adjusted[m])} (Bonferroni)" for _, c in pts],
                    hovertemplate="%{x:.2f}<br>%{text}<extra></extra>",
                    error_x=dict(
                        type="data",
                        symmetric=False,
                        array=np.array([scale * c.diff[m].high for _, c in pts]) - x,
                        arrayminus=x - np.array([scale * c.diff[m].low for _, c in pts]),
                    ),
                ),
                row=1,
                col=col,
            )
        fig.add_vline(x=0, line=dict(color="grey", dash="dot"), row=1, col=col)
    fig.update_yaxes(tickvals=list(range(len(cmp.domains))), ticktext=list(cmp.domains), autorange="reversed")
    fig.update_layout(
        title=dict(text=plot_title(cmp, "Δ value manifold by domain")),
        template="plotly_white",
        height=max(320, 140 + 60 * len(cmp.domains)),
    )
    return fig
