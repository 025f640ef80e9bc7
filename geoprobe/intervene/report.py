"""The ``geoprobe intervene`` page: what an InterventionResult shows beyond its figure (effects, the
unperturbed numbers, the paper's, provenance), as :class:`~geoprobe.report.page.Section` objects."""

from __future__ import annotations

from typing import Any

from geoprobe.report.blocks import html_table
from geoprobe.report.page import Section, figures_section, notes_section, paragraph, provenance_section

#: arXiv 2512.23752 on Pythia-410M (§6.2; the SULA MAE of §5.2 is against the posterior entropy)
PAPER = (
    ("axis–entropy correlation, unperturbed → multi-layer cut", "0.27 → 0.07"),
    ("calibration (SULA MAE and correlation) change under the multi-layer cut", "< 1 %"),
    ("SULA MAE vs the posterior entropy (bits), unperturbed", "0.44"),
)

CAPTION = (
    "Each metric against the edit's strength: the entropy axis (solid, bootstrap CI) and the random axes "
    "orthogonal to it (dotted, mean ± sd over control seeds)."
)


def subtitle(result: Any) -> str:
    return (
        f"geoprobe intervene · operation {result.op} · experiments {result.config.get('experiments')} · "
        f"{result.provenance.get('created', '')}"
    )


def verdict_rows(result: Any) -> list[dict[str, str]]:
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
                    "Δ MAE, entropy axis (bits)": f"{t.axis_change:+.4f}",
                    f"Δ MAE, {t.n_controls} random axes (bits)": f"{t.random_change:+.4f}",
                    "axis − random (bits)": f"{t.difference:+.4f}",
                    "verdict": t.outcome + (" (headline)" if v.headline else ""),
                }
            )
    return rows


def verdict_sections(result: Any) -> list[Section]:
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


def sections(result: Any) -> list[Section]:
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
