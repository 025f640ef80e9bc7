"""The ``geoprobe intervene`` page: what an InterventionResult shows (the verdict, effects, the
unperturbed numbers, the paper's, the dose–response figure, provenance), registered as its page with
:func:`geoprobe.report.page.register_page`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from geoprobe.intervene.result import InterventionResult
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
from geoprobe.report.series import Line, Panel, estimate_panels
from geoprobe.text import number

#: arXiv 2512.23752 on Pythia-410M (§6.2; the SULA MAE of §5.2 is against the posterior entropy)
PAPER = (
    ("axis–entropy correlation, unperturbed → multi-layer cut", "0.27 → 0.07"),
    ("calibration (SULA MAE and correlation) change under the multi-layer cut", "< 1 %"),
    ("SULA MAE vs the posterior entropy (bits), unperturbed", "0.44"),
)

CAPTION = (
    "Each metric against the edit's strength: the entropy axis (solid, bootstrap CI) and the random axes "
    "orthogonal to it (dashed, shaded: mean ± sd over control seeds)."
)


def subtitle(result: InterventionResult) -> str:
    return (
        f"geoprobe intervene · operation {result.op} · experiments {result.config.get('experiments')} · "
        f"{result.provenance.get('created', '')}"
    )


def verdict_rows(result: InterventionResult) -> list[dict[str, str]]:
    """One row per experiment, strength and target: the change of SULA MAE under the axis edit and
    the random edits, their difference (CIs) and the rule's outcome."""
    rows = []
    for v in result.verdicts or ():
        for t in v.targets:
            rows.append(
                {
                    "layers": ",".join(map(str, v.layers)),
                    "strength": f"{v.strength:g}",
                    "target": t.target,
                    "Δ MAE, entropy axis (bits)": f"{number(t.axis_change, '+.4f')}",
                    f"Δ MAE, {t.n_controls} random axes (bits)": f"{number(t.random_change, '+.4f')}",
                    "axis − random (bits)": f"{number(t.difference, '+.4f')}",
                    "verdict": t.outcome + (" (headline)" if v.headline else ""),
                }
            )
    return rows


def verdict_sections(result: InterventionResult) -> list[Section]:
    """The verdict first (one line), then its table; a 0.1.0 file says it has none."""
    v = result.verdict
    if v is None:
        return [
            Section("Verdict", paragraph("No calibration verdict in this file (written by geoprobe 0.1.0).", False))
        ]
    rule = paragraph(
        f"Rule: the 95 % CI of (axis − random) inside ±{v.margin:g} bits → reads out; otherwise a CI excluding 0 "
        "→ steers; otherwise inconclusive. Changes are in SULA MAE (bits) against each analytic target: the "
        "posterior entropy (the paper's) and the predictive entropy. CIs: bootstrap over prompts, and over the "
        "random axes for the random mean and the difference. See docs/intervene.md."
    )
    return [
        Section("Verdict", paragraph(v.line, muted=False)),
        Section(
            "Calibration under the edits, all experiments", html_table(verdict_rows(result)) + "\n" + rule, level=3
        ),
    ]


def sections(result: InterventionResult) -> list[Section]:
    """The verdict, effects (entropy axis vs random axes), unperturbed, the paper's numbers,
    dose–response, provenance."""
    about = paragraph(
        "Effect sizes with bootstrap CIs over prompts; the random axes (orthogonal to the entropy axis, "
        "same operation, strength and layers) are the matched null. The geometry is ρ between the "
        "entropy-axis coordinate of the edited values at the highest edited layer and the model's "
        "next-token entropy. See docs/intervene.md."
    )
    base = html_table(
        [{"quantity (unperturbed)": k, "value [95 % CI]": f"{e:.4g}"} for k, e in result.baseline.items()]
    )
    paper = html_table([{"Pythia-410M (paper)": q, "value": v} for q, v in PAPER])
    return [
        *verdict_sections(result),
        *notes_section(result.config.get("notes", ())),
        Section("Effects: entropy axis vs random axes", html_table(result.summary()) + "\n" + about),
        Section("Unperturbed", base, level=3),
        Section("The paper's numbers", paper, level=3),
        figures_section(result.figures(), title="Dose–response"),
        provenance_section(result.provenance, config=result.config, timings=result.timings, time_digits=1),
    ]


#: the dose–response panels, in order
SHOWN = ("axis_entropy_rho", "sula_mae", "kl", "delta_entropy", "top1_agreement", "perplexity_ratio")
#: what each dose–response axis must show: 0 for an error, a correlation or a change; 0 and 1 for a fraction;
#: 1 (no change) for a ratio
INCLUDE = {
    "axis_entropy_rho": (0.0,),
    "sula_mae": (0.0,),
    "kl": (0.0,),
    "delta_entropy": (0.0,),
    "top1_agreement": (0.0, 1.0),
    "perplexity_ratio": (1.0,),
}


def dose_response_figure(result: InterventionResult) -> Any:
    """Dose–response: each metric against strength, entropy axis (CI) vs random axes (mean ± sd), one series
    per set of edited layers with the random axes as its null. Drawn by
    :func:`geoprobe.report.series.estimate_panels`."""
    exps = list(dict.fromkeys(r.layers for r in result.rows))
    panels = []
    for m in SHOWN:
        lines = []
        for layers in exps:
            true = sorted(
                (r for r in result.rows if r.layers == layers and r.axis == "entropy"), key=lambda r: r.strength
            )
            x = [r.strength for r in true]
            means, sds = [], []
            for s in x:
                xs = np.array(
                    [
                        r.metrics[m].value
                        for r in result.rows
                        if r.layers == layers and r.strength == s and r.axis != "entropy"
                    ]
                )
                xs = xs[np.isfinite(xs)]
                means.append(float(xs.mean()) if xs.size else math.nan)
                sds.append(float(xs.std(ddof=1)) if xs.size > 1 else 0.0)
            lines.append(
                Line(
                    f"layers {','.join(map(str, layers))}",
                    x,
                    [r.metrics[m].value for r in true],
                    [r.metrics[m].low for r in true],
                    [r.metrics[m].high for r in true],
                    null=means,
                    null_low=[u - d for u, d in zip(means, sds)],
                    null_high=[u + d for u, d in zip(means, sds)],
                )
            )
        panels.append(Panel(lines, m, m, include=INCLUDE[m]))
    return estimate_panels(
        panels,
        title=f"{result.model}: {result.op} along the entropy axis vs random axes<br><sub>solid: the entropy axis "
        "(band: bootstrap CI); dashed: random axes (band: ± sd over control seeds)</sub>",
        x_title="strength",
        null_name="random axes (mean ± sd)",
        cols=3,
        height=640,
    )


def intervene_figures(result: InterventionResult) -> list[Figure]:
    return [Figure("dose-response", CAPTION, dose_response_figure(result))]


def title(result: InterventionResult) -> str:
    return f"Entropy-axis interventions: {result.model}"


PAGE = register_page(InterventionResult, title=title, subtitle=subtitle, sections=sections, figures=intervene_figures)
