"""The page of a wind tunnel run over several seeds (``seeds.html``): the spread of the entropy error
across seeds, Figure 11 (one line per seed), and frame vs precision over seeds (table and figure),
registered as :class:`TunnelSeeds`'s page with :func:`geoprobe.report.page.register_page`."""

from __future__ import annotations

import math
from typing import Any

from geoprobe.analysis.stats import Estimate
from geoprobe.report.blocks import html_table
from geoprobe.report.page import Figure, Section, figures_section, paragraph, provenance_section, register_page
from geoprobe.windtunnel.frame import FramePrecision
from geoprobe.windtunnel.seeds import TunnelSeeds

CAPTION = (
    "Entropy error by position (|mean model entropy − mean analytic entropy| over held-out sequences, log scale), "
    "one line per seed: transformer in blue, MLP in red. Panels beyond the first are lengths not trained on "
    "(arXiv 2512.22471, Figure 11: five seeds of the HMM experiment)."
)
FRAME_CAPTION = (
    "Frame vs precision over training seeds (arXiv 2512.22473): per seed, d = log(t90 frame + 1) − "
    "log(t90 precision + 1), negative when the attention patterns reach 90 % of their change before the entropy "
    "error does; bars: that run's 95 % bootstrap interval over its probe prompts and held-out sequences. "
    "Bottom row: the mean over seeds with its 95 % Student-t interval (n − 1 degrees of freedom), the test."
)
FRAME_NOTE = (
    "t90: the step at which a progress fraction first reaches 0.9, interpolated linearly in log(step + 1) between "
    "log-spaced checkpoints; frame = 1 − TV(s)/TV(0), TV the attention patterns' total-variation distance to the "
    "final checkpoint's; precision = log(MAE(0)/MAE(s)) / log(MAE(0)/MAE(final)), MAE the per-sample entropy "
    "error. Training seeds are the replicates: the verdict is 'frame first' only when the t interval of the mean d "
    "(log units) lies below 0, 'precision first' above 0, else no dissociation detected. A seed whose t90 is "
    "undefined (its entropy error did not fall) is listed and left out of the mean. The per-run bootstrap interval "
    "covers prompt sampling only, not the checkpoint grid's resolution nor another seed."
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
        frame_section(result.frame_precision),
        figures_section(result.figures()),
        provenance_section(result.provenance),
    ]


def frame_section(fp: FramePrecision | None) -> Section:
    """The "Frame vs precision over seeds" table, or why there is none."""
    title = "Frame vs precision over seeds"
    if fp is None:
        return Section(title, paragraph("Not measured: the seeds were evaluated without geometry (geometry = false)."))
    return Section(
        title,
        paragraph(fp.summary(), muted=False) + html_table(fp.rows()) + "\n" + paragraph(FRAME_NOTE),
    )


def seeds_figures(result: TunnelSeeds) -> list[Figure]:
    out = [Figure("seeds", CAPTION, seeds_figure(result))]
    if result.frame_precision is not None:
        out.append(Figure("frame-seeds", FRAME_CAPTION, frame_seeds_figure(result.frame_precision)))
    return out


def frame_seeds_figure(fp: FramePrecision) -> Any:
    """d per seed with its prompt-level interval, and the mean over seeds with its t interval."""
    import plotly.graph_objects as go

    seeds = [r for r in fp.seeds if r.defined]
    labels = [f"seed {r.seed}" for r in seeds]
    lo = [bar(r.difference_log, r.prompt_interval, low=True) for r in seeds]
    hi = [bar(r.difference_log, r.prompt_interval, low=False) for r in seeds]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[r.difference_log for r in seeds],
            y=labels,
            mode="markers",
            name="one seed (bars: bootstrap over its prompts)",
            error_x=dict(type="data", symmetric=False, array=hi, arrayminus=lo),
            marker=dict(color="rgb(31,119,180)", size=9),
        )
    )
    m = fp.difference_log
    if fp.n_seeds >= 2:
        fig.add_trace(
            go.Scatter(
                x=[m.value],
                y=[f"mean of {fp.n_seeds}"],
                mode="markers",
                name="mean over seeds (95 % t interval)",
                error_x=dict(type="data", symmetric=False, array=[m.high - m.value], arrayminus=[m.value - m.low]),
                marker=dict(color="black", size=11, symbol="diamond"),
            )
        )
    fig.add_vline(x=0, line_dash="dot")
    fig.update_xaxes(title_text="d = log(t90 frame + 1) − log(t90 precision + 1)   (< 0: frame first)")
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(title=f"{fp.task}: frame vs precision over seeds: {fp.verdict}", template="plotly_white")
    return fig


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


def bar(value: float, span: Estimate | None, low: bool) -> float:
    """The length of one side of an error bar (0 where the run has no finite interval)."""
    if span is None or not (math.isfinite(span.low) and math.isfinite(span.high)):
        return 0.0
    return max(value - span.low if low else span.high - value, 0.0)


def rgba(rgb: str, alpha: float) -> str:
    return f"rgba({rgb},{alpha:.2f})"


PAGE = register_page(
    TunnelSeeds, title=seeds_title, subtitle=seeds_subtitle, sections=seeds_sections, figures=seeds_figures
)
