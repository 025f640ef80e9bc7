"""The ``geoprobe compare`` page: what a ModelComparison shows (title, sections, figures), registered
as its page with :func:`geoprobe.report.page.register_page`. Every string that comes from the user or the
environment (model ids, paths, prompt-set names, notes) goes through :func:`html.escape` (in figures,
:func:`plotly_escape`: plotly's labels understand a subset of HTML).
"""

from __future__ import annotations

import math
from html import escape
from typing import Any, Sequence

from geoprobe.analysis.stats import Estimate
from geoprobe.compare.global_pca import GlobalPCA
from geoprobe.compare.inputs import short_hash
from geoprobe.compare.result import ModelComparison
from geoprobe.compare.table import PAPER, PAPER_TABLE2, pct
from geoprobe.report.blocks import html_figure
from geoprobe.report.page import (
    Figure,
    Section,
    figures_section,
    notes_section,
    paragraph,
    provenance_section,
    register_page,
)
from geoprobe.report.series import Line, Panel, estimate_panels

_NUMERIC = ("PC1", "|cos|", "%", "n prompts", "layers", "heads", "d_head", "share", "ρ", "D kept")


def table_html(rows: list[dict[str, str]], caption: str | None = None) -> str:
    """An HTML table of display rows (dicts with the same keys); every cell escaped."""
    if not rows:
        return '<p class="muted">(no rows)</p>'
    cols = list(rows[0])
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    num = {c for c in cols if any(k in c for k in _NUMERIC)}
    attr = {c: ' class="num"' if c in num else "" for c in cols}
    body = "".join(
        "<tr>" + "".join(f"<td{attr[c]}>{escape(str(r.get(c, '')))}</td>" for c in cols) + "</tr>" for r in rows
    )
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def paper_rows() -> list[dict[str, str]]:
    return [
        {
            "model": m,
            "mixed PC1 %": f"{a:.1f}",
            "mixed PC1+PC2 %": f"{b:.1f}",
            "restricted set": "math",
            "restricted PC1 %": f"{c:.1f}",
            "restricted PC1+PC2 %": f"{d:.1f}",
        }
        for m, a, b, c, d in PAPER_TABLE2
    ]


def _side_by_side(comp: ModelComparison) -> list[dict[str, str]]:
    """Our value-manifold columns (point values) followed by the paper's reference rows."""
    ours = []
    for r in comp.rows:
        for e in r.restricted or (None,):
            ours.append(
                {
                    "source": "this comparison",
                    "model": r.model,
                    "mixed PC1 %": pct(r.mixed.pc1, ci=False) if r.mixed else "n/a",
                    "mixed PC1+PC2 %": pct(r.mixed.pc12, ci=False) if r.mixed else "n/a",
                    "restricted set": e.label if e else "n/a",
                    "restricted PC1 %": pct(e.pc1, ci=False) if e else "n/a",
                    "restricted PC1+PC2 %": pct(e.pc12, ci=False) if e else "n/a",
                }
            )
    return ours + [{"source": f"paper ({PAPER}, Table 2)", **r} for r in paper_rows()]


def _sources_rows(comp: ModelComparison) -> list[dict[str, str]]:
    return [
        {
            "results file": s.path,
            "model": s.model,
            "role": s.role,
            "prompt set": s.set_name,
            "kind": s.set_kind,
            "set hash": short_hash(s.set_hash),
            "prompts hash": short_hash(s.prompts_hash),
            "seed": "n/a" if s.seed is None else str(s.seed),
            "n prompts": str(s.n_prompts),
            "capture": s.capture_dir or "none",
        }
        for s in comp.sources
    ]


# -- figures ------------------------------------------------------------------------------------
def plotly_escape(s: str) -> str:
    """Escape for plotly's pseudo-HTML: ``&``, ``<`` and ``>`` only (enough to stop any tag);
    plotly decodes numeric entities but shows ``&quot;`` literally, so quotes stay as they are."""
    return escape(s, quote=False)


_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def _points(x: list[str], ests: Sequence[Estimate | None], name: str, scale: float = 100.0, **kw: Any) -> Line:
    """One value per model (``scale``d) with its interval as error bars (None: no value or no interval)."""

    def val(e: Estimate | None, attr: str) -> float | None:
        v = None if e is None else getattr(e, attr)
        return v * scale if v is not None and math.isfinite(v) else None

    lows, highs = [val(e, "low") for e in ests], [val(e, "high") for e in ests]
    return Line(plotly_escape(name), x, [val(e, "value") for e in ests], lows, highs, markers=True, **kw)


def comparison_figure(comp: ModelComparison) -> Any:
    """Three panels over models: value PC1 (mixed vs each restricted domain, CIs); early-layer
    key |cos| (with random-init and Gaussian baselines); attention-focusing % reduction (CI). Drawn by
    :func:`geoprobe.report.series.estimate_panels`: one point per model, error bars, nothing joins two models."""
    rows = comp.rows
    x = [plotly_escape(r.model) for r in rows]
    layer_txt = "last layer" if comp.provenance.get("layer", -1) == -1 else f"layer {comp.provenance.get('layer')}"
    pc1 = [_points(x, [r.mixed.pc1 if r.mixed else None for r in rows], "PC1, mixed")]
    for dom in dict.fromkeys(e.domain for r in rows for e in r.restricted):
        ests = [next((e.pc1 for e in r.restricted if e.domain == dom), None) for r in rows]
        pc1.append(_points(x, ests, f"PC1, restricted: {dom}"))
    init = [r.key_cos_early_init for r in rows]
    keys = [
        Line(
            "early-layer key |cos| (trained)",
            x,
            [r.key_cos_early for r in rows],
            null=init if any(v is not None for v in init) else None,
            null_name="random init",
            markers=True,
        )
    ]
    if any(r.key_cos_gaussian is not None for r in rows):
        keys.append(Line("iid Gaussian E|cos|", x, [r.key_cos_gaussian for r in rows], markers=True))
    focusing = [_points(x, [r.focusing for r in rows], "attention-entropy reduction, first → last layer", 1.0)]
    fig = estimate_panels(
        [
            Panel(pc1, "% of standardised variance", f"value PC1, {layer_txt} (%)", include=(0.0, 100.0)),
            Panel(keys, "mean off-diagonal |cos|", "early-layer key |cos|", include=(0.0,)),
            Panel(focusing, "% entropy reduction", "attention focusing (% reduction)", include=(0.0,)),
        ],
        title="Model comparison (Table-2 analogue)",
        x_title="",
        height=470,
    )
    return fig.update_layout(legend=dict(orientation="h", y=-0.18))


def global_figure(gp: GlobalPCA) -> Any:
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
    hover = [plotly_escape(p if len(p) <= 80 else p[:77] + "…") for p in gp.prompts]
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
    models = [plotly_escape(m) for m in gp.models]
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


# -- the page ---------------------------------------------------------------------------------------
_COMPARISON_CAPTION = (
    "Per model: value PC1 (mixed vs restricted, CIs), early-layer key |cos| with its baselines, "
    "attention-focusing reduction (CI)."
)
_GLOBAL_CAPTION = (
    "Shared prompts on the global PC1/PC2 (colour: next-token entropy averaged over models) and each "
    "model's share of the PC1/PC2 loading energy; dashed: equal shares."
)


def compare_figures(comp: ModelComparison) -> list[Figure]:
    """The page's figures (the global PCA only where there is one); also what ``--figures`` exports."""
    figs = [Figure("comparison", _COMPARISON_CAPTION, comparison_figure(comp))]
    if comp.global_pca is not None:
        figs.append(Figure("global-pca", _GLOBAL_CAPTION, global_figure(comp.global_pca)))
    return figs


def title(comp: ModelComparison) -> str:
    return "Bayesian geometry of attention across models"


def subtitle(comp: ModelComparison) -> str:
    layer = comp.provenance.get("layer", -1)
    frac = comp.provenance.get("early_fraction", 1 / 3)
    return (
        f"geoprobe compare · {', '.join(comp.models)} · {len(comp.rows)} models · {len(comp.sources)} results · "
        f"{comp.provenance.get('created', '')} · value manifold at "
        f"{'the last layer' if layer == -1 else f'layer {layer}'} · early layers = first "
        f"{100 * float(frac):.0f} % of each model's layers"
    )


_TABLE_NOTE = (
    "PC1 and PC1+PC2: % of the standardised final-token value variance (heads concatenated), with "
    "bootstrap CIs; mixed = a multi-domain set (mixed, builtin or a file), restricted = a single-domain "
    "set. Early key |cos| = mean over the analysed early layers of the mean off-diagonal |cos| between W_K "
    "columns (init: the same on the architecture's random initialisation). Focusing = % reduction of the "
    "final token's attention entropy from the first to the last analysed layer, with a paired bootstrap "
    "CI. Definitions: docs/compare.md."
)


def _global_html(comp: ModelComparison, figures: dict[str, Figure]) -> str:
    gp = comp.global_pca
    if gp is None:
        return (
            '<p class="muted">No global PCA (see the notes). It needs two or more models scanned with saved '
            "captures on at least 10 shared prompts: scan every model with the same <code>--prompts FILE</code>.</p>"
        )
    ex = ", ".join(f"PC{i + 1} {100 * r:.1f} %" for i, r in enumerate(gp.explained[:5]))
    f = figures["global-pca"]
    return (
        f"<p>{gp.n} shared prompts (hash <code>{escape(short_hash(gp.prompts_hash))}</code>); "
        f"explained variance {escape(ex)}; participation ratio {gp.participation_ratio:.2f}.</p>"
        + table_html(gp.table())
        + html_figure(f.fig, f.anchor, f.caption)
    )


def sections(comp: ModelComparison) -> list[Section]:
    figures = {f.anchor: f for f in comp.figures()}
    return [
        Section("Table 2 analogue", table_html(comp.table()) + "\n" + paragraph(_TABLE_NOTE)),
        Section(
            "Value manifold beside the paper",
            table_html(_side_by_side(comp))
            + "\n"
            + paragraph(
                f"The paper's numbers ({PAPER}, Table 2) are for its own models and prompt sets (final layer, "
                "mixed-domain vs mathematics prompts); ours are for the results compared here."
            ),
        ),
        *[Section("Notes and warnings", n.html) for n in notes_section(comp.notes)],
        figures_section([figures["comparison"]]),
        Section("Global PCA basis", _global_html(comp, figures)),
        Section("Sources", table_html(_sources_rows(comp))),
        provenance_section(comp.provenance),
    ]


def summary_html(comp: ModelComparison) -> str:
    """What Jupyter shows for a comparison: the Table-2 analogue."""
    return table_html(comp.table())


PAGE = register_page(
    ModelComparison,
    title=title,
    subtitle=subtitle,
    sections=sections,
    figures=compare_figures,
    summary_html=summary_html,
)
