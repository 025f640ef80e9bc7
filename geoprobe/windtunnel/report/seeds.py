"""The page of a wind tunnel run over several seeds (``seeds.html``): the spread of the entropy error
across seeds and Figure 11 (one line per seed), registered as :class:`TunnelSeeds`'s page with
:func:`geoprobe.report.page.register_page`."""

from __future__ import annotations

from typing import Any

from geoprobe.report.blocks import html_table
from geoprobe.report.page import Figure, Section, figures_section, paragraph, provenance_section, register_page
from geoprobe.windtunnel.seeds import TunnelSeeds

CAPTION = (
    "Entropy error by position (|mean model entropy − mean analytic entropy| over held-out sequences, log scale), "
    "one line per seed: transformer in blue, MLP in red. Panels beyond the first are lengths not trained on "
    "(arXiv 2512.22471, Figure 11: five seeds of the HMM experiment)."
)


def seeds_title(result: TunnelSeeds) -> str:
    return f"Bayesian wind tunnel: {result.name} ({result.scale} scale), {len(result.runs)} seeds"


def seeds_subtitle(result: TunnelSeeds) -> str:
    return f"geoprobe windtunnel run --seeds · {result.provenance.get('created', '')}"


def seeds_sections(result: TunnelSeeds) -> list[Section]:
    seeds = ", ".join(str(s) for s in result.seeds)
    return [
        Section(
            "Spread across seeds",
            html_table(result.spread_rows())
            + "\n"
            + paragraph(
                f"Seeds {seeds}, one complete run each ({', '.join(r.run for r in result.runs)}); mean over seeds "
                "with its 95 % Student-t interval (n − 1 degrees of freedom), sample sd, and the range. The "
                "paper (arXiv 2512.22471, Figure 11) repeats the HMM experiment over 5 seeds."
            ),
        ),
        figures_section(result.figures()),
        provenance_section(result.provenance),
    ]


def seeds_figures(result: TunnelSeeds) -> list[Figure]:
    return [Figure("seeds", CAPTION, seeds_figure(result))]


def seeds_figure(result: TunnelSeeds) -> Any:
    """Figure 11: |mean model entropy − mean analytic entropy| by position, one line per seed and learner."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    lengths = result.lengths()
    fig = make_subplots(rows=1, cols=len(lengths), subplot_titles=[f"K = {k}" for k in lengths])
    palette = {"transformer": "31,119,180", "mlp": "214,39,40"}
    for c, K in enumerate(lengths, start=1):
        for arch in result.learners:
            for i, r in enumerate(result.runs):
                m = next(m for m in r.metrics[arch] if m.K == K)
                fig.add_trace(
                    go.Scatter(
                        x=list(range(1, K + 1)),
                        y=[max(v, 1e-6) for v in m.mae_curve],
                        mode="lines",
                        name=f"{arch}, seed {r.seed}",
                        legendgroup=f"{arch}-{r.seed}",
                        showlegend=c == 1,
                        line=dict(color=rgba(palette.get(arch, "90,90,90"), 0.35 + 0.65 * (i + 1) / len(result.runs))),
                    ),
                    row=1,
                    col=c,
                )
        fig.update_xaxes(title_text="prediction position t", row=1, col=c)
    fig.update_yaxes(type="log", title_text="|H̄ model − H̄ Bayes| (bits)", row=1, col=1)
    fig.update_layout(title=f"{result.name}: entropy error by position, one line per seed", template="plotly_white")
    return fig


def rgba(rgb: str, alpha: float) -> str:
    return f"rgba({rgb},{alpha:.2f})"


PAGE = register_page(
    TunnelSeeds, title=seeds_title, subtitle=seeds_subtitle, sections=seeds_sections, figures=seeds_figures
)
