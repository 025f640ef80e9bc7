"""The ``geoprobe sula`` page: what a SulaResult shows beyond its figures (summary tables for both
analytic targets, the paper's numbers beside the matching target, provenance), as
:class:`~geoprobe.report.page.Section` objects."""

from __future__ import annotations

from typing import Any

from geoprobe.report.blocks import html_table
from geoprobe.report.page import Section, figures_section, paragraph, provenance_section
from geoprobe.sula.evaluate import POSTERIOR, PREDICTIVE

#: arXiv 2512.23752 §5.2 (Pythia-410M), all against its "analytical posterior entropy H_Bayes(k)",
#: i.e. the posterior entropy h(P(y = L1 | examples)); compared only with our posterior-entropy numbers
PAPER = (
    ("SULA MAE vs the posterior entropy (bits)", "0.44"),
    ("|ρ(PC1, posterior entropy)|, shared basis (0.65–0.80 over three models)", "0.65–0.80"),
    ("ρ(k, mean PC1)", "0.86"),
)

FLAGGED = "flagged"  # the word on the page and in the terminal for a condition left out of the comparison

CAPTIONS = {
    "calibration": "The model's entropy over the two labels (renormalised) against each analytic target, per "
    "prompt: the posterior entropy h(p) (the paper's target) and the predictive entropy h(a p + (1 − a)(1 − p)); "
    "the diagonal is perfect calibration.",
    "per_k": "Mean entropy by number of in-context examples k: the model (solid), the predictive entropy (dashed) "
    "and the posterior entropy (dotted), per condition, with CIs.",
    "trajectory": "Mean PC1 coordinate of the final-token values (one PCA basis fitted on the main prompts, "
    "oriented to grow with the model's entropy) by k, with CIs.",
}


def _fmt(e: Any, spec: str) -> str:
    return "n/a" if e is None else format(e, spec)


def summary_rows(result: Any, target: str = PREDICTIVE) -> list[dict[str, str]]:
    """One row per condition against one analytic ``target``: n, the prompts scored (label mass at
    or above the threshold), MAE, Spearman ρ and Pearson r of (model H, target) over them, label
    mass, ρ_S and r of (PC1, target), ρ(k, mean PC1), with CIs. A flagged condition (mean label
    mass below the threshold) shows "flagged" instead of its MAE and correlations."""
    rows = []
    for name, c in result.conditions.items():
        h, m = c.target(target)
        g = c.geometry
        rho_pc1, r_pc1 = (
            (g.rho_pc1_posterior, g.r_pc1_posterior) if target == POSTERIOR else (g.rho_pc1_bayes, g.r_pc1_bayes)
        )
        out = f"{FLAGGED} (label mass < {result.config.min_label_mass:g})" if c.flagged else None
        rows.append(
            {
                "condition": name,
                "n": str(c.n),
                "scored": str(c.n) if c.low_mass is None else str(c.metrics.n),
                "MAE (bits)": out or _fmt(None if m is None else m.mae, ".3f"),
                "Spearman ρ(model H, target)": out or _fmt(None if m is None else m.spearman, ".2f"),
                "Pearson r(model H, target)": out or _fmt(None if m is None else m.pearson, ".2f"),
                "label mass": f"{c.metrics.label_mass:.2g}",
                "ρ_S(PC1, target)": _fmt(rho_pc1, ".2f"),
                "r(PC1, target)": _fmt(r_pc1, ".2f"),
                "ρ(k, mean PC1)": f"{g.rho_k_pc1:.2f}",
            }
        )
    return rows


def per_k_rows(result: Any) -> list[dict[str, str]]:
    """Main condition, per k: the prompts scored, the model's mean label entropy and each target's
    mean over them, with CIs."""
    c = result.main
    rows = []
    for i, k in enumerate(c.metrics.k_values):
        at = c.k == k
        row = {"k": str(k), "scored": f"{int(c.scored[at].sum())} of {int(at.sum())}"}
        row["model"] = f"{c.metrics.model_per_k[i]:.3f}"
        row[PREDICTIVE] = f"{c.metrics.bayes_per_k[i]:.3f}"
        pm = c.posterior_metrics
        row[POSTERIOR] = "n/a" if pm is None else f"{pm.bayes_per_k[i]:.3f}"
        rows.append(row)
    return rows


def mass_paragraph(result: Any) -> str:
    """What the label-mass threshold left out (or that this file predates it)."""
    tau = result.config.min_label_mass
    if tau is None:
        return paragraph(
            "This file was written before the label-mass threshold: every prompt is scored, whatever its label "
            "mass (the label mass column shows it). See docs/sula.md."
        )
    left = ", ".join(f"{name} {int(c.low_mass.sum())} of {c.n}" for name, c in result.conditions.items())
    flagged = result.flagged
    text = (
        f"Threshold {tau:g} (--min-label-mass; min_label_mass in a recipe): a prompt whose label mass P(L1) + P(L2) "
        "is below it is left out of the MAE, the correlations of the model's entropy and the per-k means, because "
        "the model is then not predicting a label and the renormalised two-label entropy is not its belief about "
        f'the label (docs/sula.md, "Label mass"). Prompts left out: {left}. '
    )
    if flagged:
        means = ", ".join(f"{n} {result.conditions[n].metrics.label_mass.value:.3g}" for n in flagged)
        text += (
            f"Flagged: {means} (mean label mass below {tau:g}): the model does not read these prompts as a "
            f'labelling task, so their calibration is left out of the comparison ("{FLAGGED}" in the tables '
            "above; sula.json keeps the numbers over their scored prompts)."
        )
    else:
        text += f"No condition is flagged (every mean label mass is at least {tau:g})."
    return paragraph(text, muted=False)


def subtitle(result: Any) -> str:
    return (
        f"geoprobe sula · layer {result.layer} · PC1 of the shared basis explains {100 * result.pc1_ratio:.1f} % "
        f"of the standardised variance · {result.provenance.get('created', '')}"
    )


def sections(result: Any) -> list[Section]:
    """Summary against each target, per-k means, the paper's numbers, figures, provenance."""
    about = paragraph(
        f"Main: k labelled examples whose labels agree with a latent class with probability "
        f"{result.config.agreement}. Two analytic targets, both in closed form: the posterior entropy "
        "h(P(y = L1 | examples)), the paper's H_Bayes (§5.2) and the authors' released pipeline's target, and the "
        "predictive entropy of the query label with label noise, h(a p + (1 − a)(1 − p)), which never falls below "
        f"h({result.config.agreement}). Both rank the prompts identically, so every Spearman ρ is the same for the "
        "two; MAE, Pearson r and the per-k means differ. Controls: lexical remap (other labels), shuffled (labels "
        "carry no evidence: 1 bit), ablated (carrier words masked). Intervals: bootstrap over prompts. "
        "See docs/sula.md."
    )
    secs = []
    for t in result.targets():
        secs.append(Section(f"Against the {t}", html_table(summary_rows(result, t)), level=3))
    if result.main.posterior_metrics is None:
        secs.append(
            Section(f"Against the {POSTERIOR}", paragraph("Not in this file (written by geoprobe 0.1.0)."), level=3)
        )
    paper = html_table([{"quantity (Pythia-410M, paper §5.2)": q, "value": v} for q, v in PAPER])
    left = 0 if result.main.low_mass is None else int(result.main.low_mass.sum())
    note = paragraph(
        "The paper's MAE and |ρ(PC1, ·)| are against the posterior entropy; compare them with the "
        "posterior-entropy table only (docs/sula.md quotes the definition)."
        + (
            f" The paper scores every prompt; the MAE above leaves out the {left} of {result.main.n} main prompts "
            f"whose label mass is below {result.config.min_label_mass:g} (see Label mass): rerun with "
            "--min-label-mass 0 to compare like for like."
            if left
            else ""
        )
    )
    return [
        Section("Summary", about),
        *secs,
        Section("Label mass", mass_paragraph(result), level=3),
        Section("Mean entropy per k (main)", html_table(per_k_rows(result)), level=3),
        Section("The paper's numbers (posterior entropy)", paper + "\n" + note, level=3),
        figures_section(result.figures()),
        provenance_section(result.provenance, config=result.config.to_dict(), timings=result.timings, time_digits=1),
    ]
