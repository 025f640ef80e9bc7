"""The ``geoprobe positional`` report: one self-contained HTML file from a PositionalResult or a
TunnelLengthCurve (every user string escaped)."""
from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any

from geoprobe.report.blocks import html_figure, html_table, kv_table, write_page
from geoprobe.report.html import _CSS

_CAPTIONS = {
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


def _page(title: str, body: str) -> str:
    from plotly.offline import get_plotlyjs

    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title><style>{_CSS}</style>
<script type="text/javascript">{get_plotlyjs()}</script></head>
<body>
<h1>{escape(title)}</h1>
{body}
</body></html>
"""


def _provenance_rows(prov: dict[str, Any], config: dict[str, Any]) -> list[tuple[Any, Any]]:
    prov = dict(prov)
    versions = prov.pop("versions", {}) or {}
    rows = [(k, v) for k, v in prov.items()] + [(f"config.{k}", v) for k, v in config.items()]
    return rows + [(f"version: {k}", v) for k, v in versions.items()]


def positional_figures(result: Any) -> list[tuple[str, str, Any]]:
    """(anchor, caption, figure) of the page's figures (a PositionalResult or a TunnelLengthCurve)."""
    from geoprobe.positional.tunnel import TunnelLengthCurve

    if isinstance(result, TunnelLengthCurve):
        return [("tunnel", _CAPTIONS["tunnel"], result.figure())]
    return [(a, _CAPTIONS.get(a, ""), f) for a, f in result.figures().items()]


def render_positional_report(result: Any) -> str:
    from geoprobe.positional.heads import BETA_SPLIT, FLAT_KL_BITS, LOCAL_MASS, SINK_MASS

    counts = html_table([{"class": k, "heads": v} for k, v in result.class_counts().items()])
    bs = result.beta_summary()
    beta = (html_table([{k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in bs.items()}])
            if bs.get("n") else "<p>No ALiBi-like or Gaussian-like head.</p>")
    stab = ""
    if result.stability is not None:
        s = result.stability
        rows = []
        for p in s.points:
            i = len(s.layers) - 1
            rows.append({"T": p.T, "prompts": p.n, f"PC1 ratio (layer {s.layers[-1]})": _est(p.pc1[i]),
                         f"|ρ| (layer {s.layers[-1]})": _est(p.alignment[i]),
                         "attention entropy, mean over layers (bits)": f"{sum(p.attn_entropy) / len(p.attn_entropy):.3f}"})
        last = s.layers[-1]
        crit = {m: s.critical(m, last) for m in ("pc1", "alignment")}
        stab = ("<h2>Stability over prompt length</h2>" + html_table(rows)
                + f"<p>Critical length at layer {last}: PC1 ratio {escape(str(crit['pc1'] or 'none (never degrades)'))}, "
                  f"|ρ| {escape(str(crit['alignment'] or 'none (never degrades)'))} (smallest T whose 95 % CI lies wholly "
                  "below the shortest length's; every layer's critical lengths are in positional.json).</p>")
    figs = "".join(html_figure(f, a, c) for a, c, f in positional_figures(result))
    body = f"""<p class="muted">geoprobe positional · {escape(str(result.provenance.get("created", "")))}</p>
<p>Final-token attention of {result.n_prompts} prompts of {result.fit_length} tokens, by distance Δ = 0..{result.max_distance}
from the final token, the first {result.exclude_first} token(s) excluded as attention sinks and the rest renormalised;
per head a generalised Gaussian (the BAM prior) fitted by minimising KL(measured ‖ fit); CIs: {result.n_resamples}
one-step bootstrap resamples over prompts.</p>
<h2>Head classes</h2>
{counts}
<p class="muted">Rules, first that applies: sink mass ≥ {SINK_MASS} → sink-dominated; KL(p ‖ uniform) ≤ {FLAT_KL_BITS} bits
→ flat (NoPE-like); p(0) + p(1) ≥ {LOCAL_MASS} → local/previous-token; no converged fit → unfit; β ≤ {BETA_SPLIT} →
ALiBi-like, else Gaussian-like ("(?)": the β CI contains {BETA_SPLIT}).</p>
<h2>Fitted β (ALiBi-like and Gaussian-like heads)</h2>
{beta}
{stab}
<h2>Figures</h2>
{figs}
<h2>Every head</h2>
{html_table(result.rows())}
<h2>Provenance</h2>
{kv_table(_provenance_rows(result.provenance, result.config))}
"""
    return _page(f"Positional priors: {result.model}", body)


def _est(e: Any) -> str:
    import math

    return f"{e.value:.3f} [{e.low:.3f}, {e.high:.3f}]" if math.isfinite(e.low) else f"{e.value:.3f}"


def render_tunnel_report(curve: Any) -> str:
    rows = [{"K": m.K, "trained": "yes" if m.K == curve.train_K else "", "MAE paper (bits)": _est(m.mae_paper),
             "MAE per sample (bits)": _est(m.mae_sample), "KL (bits)": _est(m.kl)} for m in curve.metrics]
    crit = curve.critical_length
    body = f"""<p>Task {escape(str(curve.task.get("name")))} trained at K = {curve.train_K}; run {escape(curve.run_dir)}.
Critical length: {escape(str(crit) if crit is not None else "none (the error never rises beyond its training-length CI)")}.</p>
{html_table(rows)}
{"".join(html_figure(f, a, c) for a, c, f in positional_figures(curve))}
<h2>Provenance</h2>
{kv_table(_provenance_rows(curve.provenance, {}))}
"""
    return _page(f"Wind-tunnel length generalisation: {curve.task.get('name')}", body)


def write_positional_report(result: Any, path: str | os.PathLike, *, force: bool = False) -> Path:
    from geoprobe.positional.tunnel import TunnelLengthCurve

    render = render_tunnel_report if isinstance(result, TunnelLengthCurve) else render_positional_report
    return write_page(path, lambda: render(result), force=force)
