"""The ``compare-domains`` page: what a DomainComparison shows (title, sections, and its figures: every
set's value-manifold statistics and the differences between sets per domain), registered as its page
with :func:`geoprobe.report.page.register_page`. Every string from the user or the environment is
escaped by :mod:`geoprobe.report.blocks`."""

from __future__ import annotations

from typing import Any

import numpy as np

from geoprobe.analysis.contrast import METRICS
from geoprobe.domains.config import CONTROL_SUFFIX, KINDS
from geoprobe.domains.result import DomainComparison, fmt_p
from geoprobe.report.blocks import html_table
from geoprobe.report.page import (
    Figure,
    Section,
    figures_section,
    notes_section,
    paragraph,
    provenance_section,
    register_page,
)
from geoprobe.sampling import MIXED

#: arXiv 2512.23752 Table 1: final-layer PC1 / PC1+PC2 (%) for mixed and mathematics prompts
PAPER_TABLE1 = (
    ("Pythia-410M", "79.6 / 99.7", "58.0 / 99.9"),
    ("Phi-2", "46.4 / 60.6", "52.2 / 63.5"),
    ("Llama-3.2-1B", "36.6 / 51.4", "52.5 / 73.6"),
)

_TABLE_NOTE = (
    "PC1 and PC1+PC2: explained-variance ratios of the PCA of z-scored final-token value vectors (KV heads "
    "concatenated); PR: participation ratio. Intervals: bootstrap over prompts; Δ: bootstrap CI of the "
    "difference and a permutation p-value, Bonferroni-adjusted across domains. Every set has the same number "
    "of prompts, because PC1 of standardised data depends on n. See docs/metrics/domain_restriction.md."
)


# -- figures ------------------------------------------------------------------------------------
def plot_title(cmp: DomainComparison, what: str) -> str:
    n = sorted({s.n for s in cmp.sets.values()})
    return f"{cmp.model or 'model'}, layer {cmp.layer}: {what} (n = {', '.join(map(str, n))} per set)"


def sets_figure(cmp: DomainComparison) -> Any:
    """PC1 %, PC1+PC2 % and PR per set with their intervals, coloured by kind; grey bars are
    each set's Gaussian null band, the dashed line the mixed set's value."""
    names = cmp.order()
    conf = round(100 * cmp.sets[MIXED].pc1.confidence)
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

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


def difference_figure(cmp: DomainComparison) -> Any:
    """Forest plot per domain: Δ(restricted − mixed), Δ(control − mixed) and
    Δ(restricted − control) with intervals, for PC1, PC1+PC2 (percentage points) and PR."""
    conf = round(100 * cmp.sets[MIXED].pc1.confidence)
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

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


# -- the page ---------------------------------------------------------------------------------------
def title(cmp: DomainComparison) -> str:
    return f"Domain restriction and the value manifold: {cmp.model}"


def subtitle(cmp: DomainComparison) -> str:
    return (
        f"geoprobe compare-domains · layer {cmp.layer} · domains {', '.join(cmp.domains)} · "
        f"{cmp.provenance.get('created', '')}"
    )


def domains_figures(cmp: DomainComparison) -> list[Figure]:
    """The page's figures (also what ``--figures png|svg|pdf`` exports)."""
    return [
        Figure(
            "sets",
            "PC1, PC1+PC2 and participation ratio of every set with bootstrap CIs; grey bars: each "
            "set's Gaussian null band (same n and d); dashed: the mixed set.",
            sets_figure(cmp),
        ),
        Figure(
            "differences",
            "Differences with bootstrap CIs; hover for the Bonferroni-adjusted permutation p. "
            "Collapse from domain restriction shows as restricted − mixed > 0; if restricted − control is near 0 "
            "the collapse is explained by length and token frequency (lexical narrowness), not the domain.",
            difference_figure(cmp),
        ),
    ]


def sections(cmp: DomainComparison) -> list[Section]:
    prov = dict(cmp.provenance)
    sets = prov.pop("sets", {}) or {}
    timings = prov.pop("timings", {}) or {}
    config = prov.pop("config", {}) or {}
    paper = html_table(
        [{"model (paper)": m, "mixed PC1 / PC1+PC2 %": a, "mathematics PC1 / PC1+PC2 %": b} for m, a, b in PAPER_TABLE1]
    )
    bal = html_table([{"domain": d, **{f"SMD {k}": f"{v:+.3f}" for k, v in b.items()}} for d, b in cmp.balance.items()])
    set_rows = [
        {
            "set": k,
            "n": s.get("n"),
            "sha256": str(s.get("hash", ""))[:16],
            "pool": s.get("pool", ""),
            "domains": ", ".join(f"{d} {c}" for d, c in (s.get("domain_counts") or {}).items()),
            "matched to": s.get("matched_to", ""),
        }
        for k, s in sets.items()
    ]
    return [
        Section("Table 1 analogue", html_table(cmp.table()) + "\n" + paragraph(_TABLE_NOTE)),
        Section("The paper's numbers (arXiv 2512.23752, Table 1)", paper, level=3),
        *notes_section(cmp.notes),
        figures_section(cmp.figures()),
        Section(
            "Matched controls: balance",
            paragraph(
                "Standardised mean difference between each control and its restricted set, per matching "
                "feature (|SMD| < 0.1 is a good match)."
            )
            + "\n"
            + bal,
        ),
        Section("Prompt sets", html_table(set_rows)),
        provenance_section(prov, config=config, timings=timings),
    ]


PAGE = register_page(DomainComparison, title=title, subtitle=subtitle, sections=sections, figures=domains_figures)
