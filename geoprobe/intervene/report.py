"""The ``geoprobe intervene`` page: what an InterventionResult shows beyond its figure (effects, the
unperturbed numbers, the paper's, provenance), as :class:`~geoprobe.report.page.Section` objects."""

from __future__ import annotations

from typing import Any

from geoprobe.report.blocks import html_table
from geoprobe.report.page import Section, figures_section, paragraph, provenance_section

#: arXiv 2512.23752 on Pythia-410M
PAPER = (
    ("axis–entropy correlation, unperturbed → multi-layer cut", "0.27 → 0.07"),
    ("calibration (SULA) change under the cut", "< 1 %"),
    ("SULA MAE (bits)", "0.44"),
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


def sections(result: Any) -> list[Section]:
    """Effects (entropy axis vs random axes), unperturbed, the paper's numbers, dose–response, provenance."""
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
        Section("Effects: entropy axis vs random axes", html_table(result.summary()) + "\n" + about),
        Section("Unperturbed", base, level=3),
        Section("The paper's numbers", paper, level=3),
        figures_section(result.figures(), title="Dose–response"),
        provenance_section(result.provenance, config=result.config, timings=result.timings, time_digits=1),
    ]
