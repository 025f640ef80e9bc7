"""The ``geoprobe positional`` pages: what a PositionalResult shows (head classes, fitted β, stability,
every head, and the figures: β per head, example profiles, classes per layer, stability over length)
and what a TunnelLengthCurve shows (its table and figure), each registered as the class's page with
:func:`geoprobe.report.page.register_page` (every user string escaped by the blocks)."""

from __future__ import annotations

import math
from html import escape
from typing import Any

import numpy as np

from geoprobe.positional.heads import BETA_SPLIT, CLASSES, FLAT_KL_BITS, LOCAL_MASS, SINK_MASS, HeadPrior
from geoprobe.positional.prior import gg_prior, rope_decay
from geoprobe.positional.result import PositionalResult, TunnelLengthCurve
from geoprobe.positional.stability import Stability
from geoprobe.report.blocks import html_table
from geoprobe.report.page import Figure, Section, figures_section, paragraph, provenance_section, register_page
from geoprobe.report.series import Line, Panel, estimate_panels

CAPTIONS = {
    "beta": "Left: the fitted shape exponent β of the generalised Gaussian p(Δ) ∝ exp(−(|Δ − μ|/σ)^β) per head "
    "(blank: no converged fit). Right: β with its 95 % bootstrap CI over prompts for every fitted head; "
    "dotted: β = 1 (Laplace, ALiBi-like) and β = 2 (Gaussian).",
    "profiles": "Example heads (the best-fitted head of each class): the measured final-token attention by distance "
    "Δ (first token(s) excluded, renormalised over the window), the fitted generalised Gaussian and the "
    "reference shapes (uniform ≈ NoPE, Laplace ≈ ALiBi, Gaussian, RoPE decay with a fitted scale).",
    "classes": "Head classes per layer (rules in docs/positional.md).",
    "stability": "Stability over prompt length T: value PC1 explained-variance ratio and |ρ(PC1, next-token "
    "entropy)| at the last analysed layer with 95 % CIs (dashed: critical length, where the CI falls "
    "wholly below the shortest length's), and each layer's mean attention entropy divided by log2 T.",
    "tunnel": "Wind-tunnel transformer against the analytic posterior at lengths beyond training (dotted: the "
    "training length; dashed: critical length, where the per-sample MAE CI lies wholly above the "
    "training length's). Intervals: 95 % bootstrap over sequences.",
}


def _stability(s: Stability) -> list[Section]:
    rows = []
    last = s.layers[-1]
    for p in s.points:
        i = len(s.layers) - 1
        rows.append(
            {
                "T": p.T,
                "prompts": p.n,
                f"PC1 ratio (layer {last})": f"{p.pc1[i]:.3f}",
                f"|ρ| (layer {last})": f"{p.alignment[i]:.3f}",
                "attention entropy, mean over layers (bits)": f"{sum(p.attn_entropy) / len(p.attn_entropy):.3f}",
            }
        )
    crit = {m: s.critical(m, last) or "none (never degrades)" for m in ("pc1", "alignment")}
    note = paragraph(
        f"Critical length at layer {last}: PC1 ratio {crit['pc1']}, |ρ| {crit['alignment']} (smallest T "
        "whose 95 % CI lies wholly below the shortest length's; every layer's critical lengths are in "
        "positional.json).",
        muted=False,
    )
    return [Section("Stability over prompt length", html_table(rows) + note)]


def sections(result: PositionalResult) -> list[Section]:
    """How the priors were fitted, head classes, fitted β, stability, figures, every head, provenance."""
    about = paragraph(
        f"Final-token attention of {result.n_prompts} prompts of {result.fit_length} tokens, by distance "
        f"Δ = 0..{result.max_distance} from the final token, the first {result.exclude_first} token(s) "
        "excluded as attention sinks and the rest renormalised; per head a generalised Gaussian (the BAM "
        f"prior) fitted by minimising KL(measured ‖ fit); CIs: {result.n_resamples} one-step bootstrap "
        "resamples over prompts.",
        muted=False,
    )
    rules = paragraph(
        f"Rules, first that applies: sink mass ≥ {SINK_MASS} → sink-dominated; KL(p ‖ uniform) ≤ "
        f"{FLAT_KL_BITS} bits → flat (NoPE-like); p(0) + p(1) ≥ {LOCAL_MASS} → local/previous-token; no "
        f'converged fit → unfit; β ≤ {BETA_SPLIT} → ALiBi-like, else Gaussian-like ("(?)": the β CI '
        f"contains {BETA_SPLIT})."
    )
    counts = html_table([{"class": k, "heads": v} for k, v in result.class_counts().items()])
    bs = result.beta_summary()
    beta = (
        html_table([{k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in bs.items()}])
        if bs.get("n")
        else "<p>No ALiBi-like or Gaussian-like head.</p>"
    )
    return [
        Section("", about),
        Section("Head classes", counts + "\n" + rules),
        Section("Fitted β (ALiBi-like and Gaussian-like heads)", beta),
        *(_stability(result.stability) if result.stability is not None else []),
        figures_section(result.figures()),
        Section("Every head", html_table(result.rows())),
        provenance_section(result.provenance, config=result.config),
    ]


def tunnel_sections(curve: TunnelLengthCurve) -> list[Section]:
    """The task and critical length, the per-length table, the figure, provenance."""
    rows = [
        {
            "K": m.K,
            "trained": "yes" if m.K == curve.train_K else "",
            "MAE paper (bits)": f"{m.mae_paper:.3f}",
            "MAE per sample (bits)": f"{m.mae_sample:.3f}",
            "KL (bits)": f"{m.kl:.3f}",
        }
        for m in curve.metrics
    ]
    crit = curve.critical_length
    crit_text = str(crit) if crit is not None else "none (the error never rises beyond its training-length CI)"
    about = (
        f"<p>Task {escape(str(curve.task.get('name')))} trained at K = {curve.train_K}; run "
        f"{escape(curve.run_dir)}.\nCritical length: {escape(crit_text)}.</p>"
    )
    return [
        Section("", about + "\n" + html_table(rows)),
        figures_section(curve.figures(), title=""),
        provenance_section(curve.provenance),
    ]


# -- figures ------------------------------------------------------------------------------------
def beta_figure(result: PositionalResult) -> Any:
    """Heat map of β̂ per (layer, head) (blank: no converged fit) and β̂ with its CI by layer."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    L, H = len(result.layers), result.n_heads
    z = np.full((L, H), np.nan)
    text = np.empty((L, H), dtype=object)
    for h in result.heads:
        i = result.layers.index(h.layer)
        if h.beta is not None:
            z[i, h.head] = h.beta.value
        text[i, h.head] = f"{h.head_class}<br>β = {'—' if h.beta is None else f'{h.beta.value:.2f}'}"
    fig = make_subplots(rows=1, cols=2, subplot_titles=("fitted β per head", "β with 95 % CI (fitted heads)"))
    fig.add_trace(
        go.Heatmap(
            z=z,
            x=list(range(H)),
            y=list(result.layers),
            text=text,
            hoverinfo="text+x+y",
            colorscale="Viridis",
            zmin=0,
            zmax=4,
            colorbar=dict(title="β", x=0.45),
        ),
        row=1,
        col=1,
    )
    pts = [h for h in result.heads if h.beta is not None]
    if pts:
        v = np.array([h.beta.value for h in pts])
        lo = np.array([h.beta.low for h in pts])
        hi = np.array([h.beta.high for h in pts])
        x = np.array([h.layer + (h.head - H / 2) / (2.5 * H) for h in pts])
        fig.add_trace(
            go.Scatter(
                x=x,
                y=v,
                mode="markers",
                showlegend=False,
                text=[h.head_class for h in pts],
                error_y=dict(
                    type="data", symmetric=False, array=np.nan_to_num(hi - v), arrayminus=np.nan_to_num(v - lo)
                ),
            ),
            row=1,
            col=2,
        )
    for y, name in ((1.0, "Laplace (ALiBi)"), (2.0, "Gaussian")):
        fig.add_hline(y=y, line_dash="dot", line_color="grey", row=1, col=2, annotation_text=name)
    fig.update_xaxes(title_text="head", row=1, col=1)
    fig.update_yaxes(title_text="layer", row=1, col=1)
    fig.update_xaxes(title_text="layer", row=1, col=2)
    fig.update_yaxes(title_text="β", type="log", row=1, col=2)
    fig.update_layout(template="plotly_white", height=480)
    return fig


def example_heads(result: PositionalResult, k: int = 6) -> list[HeadPrior]:
    """Up to ``k`` heads to draw: the best-fitted head of each class present, then the rest by fit KL."""
    chosen: list[HeadPrior] = []
    for c in CLASSES:
        of = [h for h in result.heads if h.head_class == c]
        if of:
            chosen.append(min(of, key=lambda h: h.fit_kl if h.fit_kl is not None else math.inf))
    return chosen[:k]


def profile_figure(result: PositionalResult, heads: list[HeadPrior] | None = None) -> Any:
    """Measured profiles (log scale) with the generalised-Gaussian fit and the reference shapes."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    heads = heads or example_heads(result)
    cols = min(3, max(1, len(heads)))
    rows = math.ceil(len(heads) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[f"L{h.layer} H{h.head}: {h.head_class}" for h in heads])
    delta = np.arange(result.max_distance + 1, dtype=np.float64)
    colours = {
        "measured": "black",
        "fit": "firebrick",
        "uniform": "grey",
        "laplace": "royalblue",
        "gaussian": "seagreen",
        "rope": "darkorange",
    }
    for n, h in enumerate(heads):
        r, c = n // cols + 1, n % cols + 1
        curves = {"measured": result.profiles[result.layers.index(h.layer), h.head]}
        if h.beta is not None:
            curves["fit"] = gg_prior(delta, h.mu.value, h.sigma.value, h.beta.value)  # type: ignore[union-attr]
        curves["uniform"] = np.full(delta.size, 1.0 / delta.size)
        for name, b in (("laplace", 1.0), ("gaussian", 2.0)):
            mu, sigma = h.ref_params[name]
            curves[name] = gg_prior(delta, mu, sigma, b)
        if "rope" in h.ref_params and result.rope is not None:
            z = h.ref_params["rope"][0] * rope_decay(result.max_distance, *result.rope)
            curves["rope"] = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        for name, y in curves.items():
            fig.add_trace(
                go.Scatter(
                    x=delta,
                    y=y,
                    mode="lines",
                    name=name,
                    legendgroup=name,
                    showlegend=n == 0,
                    line=dict(
                        color=colours[name],
                        width=2.5 if name == "measured" else 1.5,
                        dash="solid" if name in ("measured", "fit") else "dot",
                    ),
                ),
                row=r,
                col=c,
            )
    fig.update_yaxes(type="log", title_text="p(Δ)")
    fig.update_xaxes(title_text="distance Δ")
    fig.update_layout(template="plotly_white", height=320 * rows)
    return fig


def class_figure(result: PositionalResult) -> Any:
    """Stacked counts of head classes per layer."""
    import plotly.graph_objects as go

    by = result.class_counts_by_layer()
    fig = go.Figure([go.Bar(x=list(result.layers), y=[by[x][c] for x in result.layers], name=c) for c in CLASSES])
    fig.update_layout(barmode="stack", template="plotly_white", height=380, xaxis_title="layer", yaxis_title="heads")
    return fig


def _line(name: str, x: list[int], ests: list[Any]) -> Line:
    """The estimates ``ests`` with their 95 % CIs (named in the legend as far as the points have them)."""
    return Line(name, x, [e.value for e in ests], [e.low for e in ests], [e.high for e in ests], ci="95 % CI")


def tunnel_figure(curve: TunnelLengthCurve) -> Any:
    """Per-sample entropy MAE and KL (bits, 95 % CIs) against K; dotted: the training length; dashed: the
    critical length. Drawn by :func:`geoprobe.report.series.estimate_panels`."""
    Ks = list(curve.lengths)
    panels = [
        Panel([_line(what, Ks, [getattr(m, key) for m in curve.metrics])], "bits", what, include=(0.0,))
        for key, what in (("mae_sample", "entropy MAE per sample (bits)"), ("kl", "KL(Bayes ‖ model) (bits)"))
    ]
    fig = estimate_panels(panels, title="", x_title="sequence length K (predictions)", height=400)
    for col in (1, 2):
        fig.add_vline(
            x=curve.train_K,
            line_dash="dot",
            line_color="grey",
            row=1,
            col=col,
            annotation_text=f"trained at K = {curve.train_K}",
        )
        if curve.critical_length is not None:
            fig.add_vline(x=curve.critical_length, line_dash="dash", line_color="firebrick", row=1, col=col)
    return fig.update_layout(showlegend=False)


def stability_figure(stability: Stability, layer: int | None = None) -> Any:
    """PC1 ratio, |ρ| (with CIs; dashed line: critical length) at ``layer`` (default the last),
    and the normalised attention entropy of every layer, against T (log axis). Drawn by
    :func:`geoprobe.report.series.estimate_panels`."""
    layer = stability.layers[-1] if layer is None else layer
    Ts = list(stability.lengths)
    H = np.array([p.attn_entropy for p in stability.points]) / np.log2(np.array(Ts))[:, None]
    entropy = [Line(f"layer {lay}", Ts, [float(v) for v in H[:, j]]) for j, lay in enumerate(stability.layers)]
    panels = [
        Panel(
            [_line(f"value PC1 ratio, layer {layer}", Ts, stability.series("pc1", layer))],
            "fraction of standardised variance",
            f"value PC1 ratio (layer {layer})",
            include=(0.0,),
        ),
        Panel(
            [_line(f"|ρ(PC1, entropy)|, layer {layer}", Ts, stability.series("alignment", layer))],
            "|ρ|",
            f"|ρ(PC1, next-token entropy)| (layer {layer})",
            include=(0.0,),
        ),
        Panel(entropy, "attention entropy / log2 T", "attention entropy / log2 T", include=(0.0, 1.0)),
    ]
    fig = estimate_panels(panels, title="", x_title="prompt length T (tokens)", log_x=True, height=420)
    for col, metric in ((1, "pc1"), (2, "alignment")):
        crit = stability.critical(metric, layer)
        if crit is not None:
            fig.add_vline(
                x=crit, line_dash="dash", line_color="firebrick", row=1, col=col, annotation_text=f"critical T = {crit}"
            )
    return fig


def positional_figures(result: PositionalResult) -> list[Figure]:
    """The page's figures in order (the same list ``--figures`` exports)."""
    out = [
        Figure("beta", CAPTIONS["beta"], beta_figure(result)),
        Figure("profiles", CAPTIONS["profiles"], profile_figure(result)),
        Figure("classes", CAPTIONS["classes"], class_figure(result)),
    ]
    if result.stability is not None:
        out.append(Figure("stability", CAPTIONS["stability"], stability_figure(result.stability)))
    return out


def tunnel_figures(curve: TunnelLengthCurve) -> list[Figure]:
    return [Figure("tunnel", CAPTIONS["tunnel"], tunnel_figure(curve))]


def title(result: PositionalResult) -> str:
    return f"Positional priors: {result.model}"


def subtitle(result: PositionalResult) -> str:
    return f"geoprobe positional · {result.provenance.get('created', '')}"


def tunnel_title(curve: TunnelLengthCurve) -> str:
    return f"Wind-tunnel length generalisation: {curve.task.get('name')}"


PAGE = register_page(PositionalResult, title=title, subtitle=subtitle, sections=sections, figures=positional_figures)
TUNNEL_PAGE = register_page(TunnelLengthCurve, title=tunnel_title, sections=tunnel_sections, figures=tunnel_figures)
