"""The ``geoprobe positional`` pages: what a PositionalResult or a TunnelLengthCurve shows beyond its
figures (head classes, fitted β, stability, every head; the length curve's table), as
:class:`~geoprobe.report.page.Section` objects (every user string escaped by the blocks)."""

from __future__ import annotations

from html import escape
from typing import Any

from geoprobe.positional.heads import BETA_SPLIT, FLAT_KL_BITS, LOCAL_MASS, SINK_MASS
from geoprobe.report.blocks import html_table
from geoprobe.report.page import Section, figures_section, paragraph, provenance_section

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


def _stability(s: Any) -> list[Section]:
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


def sections(result: Any) -> list[Section]:
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


def tunnel_sections(curve: Any) -> list[Section]:
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
