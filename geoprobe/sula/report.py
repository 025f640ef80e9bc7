"""The ``geoprobe sula`` page: what a SulaResult shows beyond its figures (summary table, the
paper's numbers, provenance), as :class:`~geoprobe.report.page.Section` objects."""

from __future__ import annotations

from typing import Any

from geoprobe.report.blocks import html_table
from geoprobe.report.page import Section, figures_section, paragraph, provenance_section

#: arXiv 2512.23752 (Pythia-410M): SULA MAE and the k → PC1 correlation
PAPER = (("SULA MAE vs the analytic entropy (bits)", "0.44"), ("ρ(k, mean PC1)", "0.86"))

CAPTIONS = {
    "calibration": "The model's entropy over the two labels (renormalised) against the analytic posterior "
    "predictive entropy, per prompt; the diagonal is perfect calibration.",
    "per_k": "Mean entropy by number of in-context examples k, model vs Bayes, per condition, with CIs.",
    "trajectory": "Mean PC1 coordinate of the final-token values (one PCA basis fitted on the main prompts, "
    "oriented to grow with the model's entropy) by k, with CIs.",
}


def summary_rows(result: Any) -> list[dict[str, str]]:
    """One row per condition: n, MAE, ρ(model H, Bayes H), label mass, ρ(PC1, Bayes H), ρ(k, mean PC1) with CIs."""
    rows = []
    for name, c in result.conditions.items():
        m, g = c.metrics, c.geometry
        rows.append(
            {
                "condition": name,
                "n": str(m.n),
                "MAE (bits)": f"{m.mae:.3f}",
                "Spearman ρ(model H, Bayes H)": f"{m.spearman:.2f}",
                "label mass": f"{m.label_mass:.3f}",
                "ρ(PC1, Bayes H)": f"{g.rho_pc1_bayes:.2f}",
                "ρ(k, mean PC1)": f"{g.rho_k_pc1:.2f}",
            }
        )
    return rows


def subtitle(result: Any) -> str:
    return (
        f"geoprobe sula · layer {result.layer} · PC1 of the shared basis explains {100 * result.pc1_ratio:.1f} % "
        f"of the standardised variance · {result.provenance.get('created', '')}"
    )


def sections(result: Any) -> list[Section]:
    """Summary, the paper's numbers, figures, provenance."""
    about = paragraph(
        f"Main: k labelled examples whose labels agree with a latent class with probability "
        f"{result.config.agreement}; the analytic posterior predictive of the query label is known in "
        "closed form. Controls: lexical remap (other labels), shuffled (labels carry no evidence: 1 bit), "
        "ablated (carrier words masked). Intervals: bootstrap over prompts. See docs/sula.md."
    )
    paper = html_table([{"quantity (Pythia-410M, paper)": q, "value": v} for q, v in PAPER])
    return [
        Section("Summary", html_table(summary_rows(result)) + "\n" + about),
        Section("The paper's numbers", paper, level=3),
        figures_section(result.figures()),
        provenance_section(result.provenance, config=result.config.to_dict(), timings=result.timings, time_digits=1),
    ]
