"""The ``geoprobe sula`` page: what a SulaResult shows (summary tables for both analytic targets, the
paper's numbers beside the matching target, its three figures, provenance), registered as its page
with :func:`geoprobe.report.page.register_page`."""

from __future__ import annotations

from typing import Any

import numpy as np

from geoprobe.analysis.stats import Estimate
from geoprobe.report.blocks import html_table
from geoprobe.report.page import Figure, Section, figures_section, paragraph, provenance_section, register_page
from geoprobe.sula.evaluate import POSTERIOR, PREDICTIVE
from geoprobe.sula.result import SulaResult
from geoprobe.sula.tracking import interval_text

#: arXiv 2512.23752 §5.2 (Pythia-410M): the first two against its "analytical posterior entropy H_Bayes(k)",
#: i.e. the posterior entropy h(P(y = L1 | examples)), compared only with our posterior-entropy numbers;
#: the third is not the quantity geoprobe reports (PAPER_K says what differs)
PAPER = (
    ("SULA MAE vs the posterior entropy (bits)", "0.44"),
    ("|ρ(PC1, posterior entropy)|, shared basis (0.65–0.80 over three models)", "0.65–0.80"),
    ("ρ(k, PC1) (Phi-2 0.60, Llama-3.2-1B 0.32): not geoprobe's ρ_S(k, PC1) across prompts, see below", "0.86"),
)

#: what differs between the paper's ρ(k, PC1) and geoprobe's ρ_S(k, PC1) across prompts (docs/sula.md)
PAPER_K = (
    "The paper's ρ(k, PC1) = 0.86 (Pythia-410M; Phi-2 0.60, Llama-3.2-1B 0.32; §5.2) is not set beside these "
    "numbers as the same quantity. How it was computed is not in the authors' released SULA pipeline (it computes "
    "each k's mean PC1, and Pearson correlations elsewhere, but no correlation with k), and its sign convention is "
    "not stated. It cannot be a Spearman ρ over five distinct values of k (those are multiples of 0.1), so it is "
    "not what geoprobe printed before either; if it is a correlation across prompts, it is the nearest to this "
    "one, but it comes with no interval and no contrast with the shuffled or ablated controls."
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


_COLORS = {"main": "#1f77b4", "lexical_remap": "#ff7f0e", "shuffled": "#2ca02c", "ablated": "#d62728"}


def _fmt(e: Estimate | None, spec: str) -> str:
    """An estimate with its interval, or without one and why (never ``[x, x]``; :func:`interval_text`)."""
    return interval_text(e, spec=spec)


def summary_rows(result: SulaResult, target: str = PREDICTIVE) -> list[dict[str, str]]:
    """One row per condition against one analytic ``target``: n, the prompts scored (label mass at
    or above the threshold), MAE, Spearman ρ and Pearson r of (model H, target) over them, label
    mass, ρ_S and r of (PC1, target), with CIs. A flagged condition (mean label mass below the
    threshold) shows "flagged" instead of its MAE and correlations. ρ(k, PC1): :func:`k_tracking_rows`."""
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
                "label mass": _fmt(c.metrics.label_mass, ".2g"),
                "ρ_S(PC1, target)": _fmt(rho_pc1, ".2f"),
                "r(PC1, target)": _fmt(r_pc1, ".2f"),
            }
        )
    return rows


K_RHO = "ρ_S(k, PC1) across prompts"
K_P = "permutation p"
OLD_FILE = "not in this file (written before issue 37)"


def k_contrast_column(result: SulaResult) -> str:
    """The contrast column's heading: main − the row's condition, paired or not."""
    paired = [c.geometry.k_contrast.paired for c in result.conditions.values() if c.geometry.k_contrast is not None]
    return "main − condition" + (" (paired)" if paired and all(paired) else "")


def k_tracking_rows(result: SulaResult, *, reason: bool = True) -> list[dict[str, str]]:
    """One row per condition: ρ_S(k, PC1) across every prompt with its interval and permutation p, and
    main − that condition with its interval. "no interval" with the reason (``reason=False``: without it)
    where the resamples give one value; "not in this file" for files from before issue 37."""
    rows = []
    for name, c in result.conditions.items():
        kt, kc = c.geometry.k_tracking, c.geometry.k_contrast
        row = {"condition": name, "n": str(c.n)}
        if kt is None:
            row.update({K_RHO: OLD_FILE, K_P: "n/a", k_contrast_column(result): "n/a"})
        else:
            row[K_RHO] = interval_text(kt.rho, kt.note, reason=reason)
            row[K_P] = "n/a" if not np.isfinite(kt.p_value) else f"{kt.p_value:.2g}"
            row[k_contrast_column(result)] = "—" if kc is None else interval_text(kc.difference, kc.note, reason=reason)
        rows.append(row)
    return rows


def k_tracking_section(result: SulaResult) -> Section:
    """ρ_S(k, PC1) across prompts per condition and the main − control contrasts, with what they mean and
    what differs from the paper's ρ(k, PC1)."""
    kt = result.main.geometry.k_tracking
    resamples = "" if kt is None else f", {kt.n_resamples} resamples"
    text = paragraph(
        "Spearman ρ between each prompt's number of examples k and its PC1 coordinate, across every prompt of "
        "the condition (the prompts are the replicates; label mass plays no part). PC1 grows with the model's "
        "label entropy, so a trajectory towards confidence as examples accumulate gives a negative ρ. Interval: "
        f"percentile bootstrap over prompts, stratified by k (each resample keeps each k's number of prompts"
        f"{resamples}); p: permutation test of independence. main − condition: the difference of the two ρ_S on "
        "the same resampled prompts (paired: a control's prompt i is main's prompt i with its labels or words "
        "changed). The shuffled labels carry no evidence: if main − shuffled covers 0, PC1 follows the number of "
        "examples whatever they say. Where every resample gives one value there is no interval, and the table "
        "says why. (ρ(k, mean PC1), over the per-k means, is no longer shown: over five values of k it is ±1 "
        "whenever the means are monotone, in the controls as in main.)",
        muted=False,
    )
    return Section(
        "Does PC1 follow k? (value geometry, every prompt)",
        html_table(k_tracking_rows(result)) + "\n" + text + "\n" + paragraph(PAPER_K),
        level=3,
    )


def per_k_rows(result: SulaResult) -> list[dict[str, str]]:
    """Main condition, per k: the prompts scored, the model's mean label entropy and each target's
    mean over them, with CIs."""
    c = result.main
    rows = []
    for i, k in enumerate(c.metrics.k_values):
        at = c.k == k
        row = {"k": str(k), "scored": f"{int(c.scored[at].sum())} of {int(at.sum())}"}
        row["model"] = _fmt(c.metrics.model_per_k[i], ".3f")
        row[PREDICTIVE] = _fmt(c.metrics.bayes_per_k[i], ".3f")
        pm = c.posterior_metrics
        row[POSTERIOR] = "n/a" if pm is None else _fmt(pm.bayes_per_k[i], ".3f")
        rows.append(row)
    return rows


def mass_paragraph(result: SulaResult) -> str:
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


def subtitle(result: SulaResult) -> str:
    return (
        f"geoprobe sula · layer {result.layer} · PC1 of the shared basis explains {100 * result.pc1_ratio:.1f} % "
        f"of the standardised variance · {result.provenance.get('created', '')}"
    )


def sections(result: SulaResult) -> list[Section]:
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
        "posterior-entropy table only (docs/sula.md quotes the definition). Its ρ(k, PC1) is not the quantity "
        "in the k section above (what differs is said there)."
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
        k_tracking_section(result),
        Section("Label mass", mass_paragraph(result), level=3),
        Section("Mean entropy per k (main)", html_table(per_k_rows(result)), level=3),
        Section("The paper's numbers (posterior entropy)", paper + "\n" + note, level=3),
        figures_section(result.figures()),
        provenance_section(result.provenance, config=result.config.to_dict(), timings=result.timings, time_digits=1),
    ]


# -- figures ------------------------------------------------------------------------------------
def calibration_figure(result: SulaResult, condition: str = "main") -> Any:
    """Model label entropy against each analytic target (one panel per target: the posterior
    entropy, the paper's, and the predictive entropy), one point per prompt, identity line."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    c = result.conditions[condition]
    targets = result.targets()
    titles = []
    for t in targets:
        m = c.target(t)[1]
        titles.append(f"vs {t}<br>MAE {interval_text(m.mae, spec='.3f', reason=False)} bits")
    fig = make_subplots(rows=1, cols=len(targets), subplot_titles=titles)
    ok, tau = c.scored, result.config.min_label_mass
    for j, t in enumerate(targets):
        h = c.target(t)[0]
        if not ok.all():  # left out of the metrics: label mass below the threshold
            fig.add_trace(
                go.Scatter(
                    x=h[~ok],
                    y=c.model_entropy[~ok],
                    mode="markers",
                    name=f"label mass < {tau:g} (left out)",
                    showlegend=j == 0,
                    marker=dict(color="lightgrey", symbol="x", size=6),
                    hovertemplate=f"{t} %{{x:.3f}}<br>model %{{y:.3f}}<br>left out: label mass < {tau:g}"
                    "<extra></extra>",
                ),
                row=1,
                col=j + 1,
            )
        fig.add_trace(
            go.Scatter(
                x=h[ok],
                y=c.model_entropy[ok],
                mode="markers",
                name=f"{condition} vs {t}",
                showlegend=False,  # the panel title names the target, the colour bar k
                marker=dict(
                    color=c.k[ok],
                    colorscale="Viridis",
                    size=7,
                    opacity=0.75,
                    colorbar=dict(title=dict(text="k")) if j == 0 else None,
                    showscale=j == 0,
                ),
                hovertemplate=f"{t} %{{x:.3f}}<br>model %{{y:.3f}}<br>k %{{marker.color}}<extra></extra>",
            ),
            row=1,
            col=j + 1,
        )
        fig.add_trace(
            go.Scatter(
                x=[0, 1],
                y=[0, 1],
                mode="lines",
                name="identity",
                showlegend=j == 0,
                line=dict(color="grey", dash="dot"),
            ),
            row=1,
            col=j + 1,
        )
        fig.update_xaxes(title_text=f"analytic {t} (bits)", range=[0, 1.02], row=1, col=j + 1)
        fig.update_yaxes(title_text="model label entropy (bits)" if j == 0 else None, range=[0, 1.02], row=1, col=j + 1)
    fig.update_layout(
        title=dict(
            text=f"{result.model}, SULA {condition}: ρ_S(model, target) = {c.metrics.spearman.value:.2f}"
            + ("" if ok.all() else f" over the {c.metrics.n} of {c.n} prompts with label mass ≥ {tau:g}")
        ),
        template="plotly_white",
        height=480,
        margin=dict(t=110),
        legend=dict(orientation="h", y=-0.2, x=0),
    )
    return fig


def per_k_figure(result: SulaResult) -> Any:
    """Mean entropy against k: the model (solid), the predictive entropy (dashed) and the
    posterior entropy (dotted), one colour per condition."""
    import plotly.graph_objects as go

    fig = go.Figure()
    unscored = []  # conditions with no prompt at or above the label-mass threshold at any k
    for name, c in result.conditions.items():
        m, pm = c.metrics, c.posterior_metrics
        if all(np.isnan(e.value) for e in m.model_per_k):
            unscored.append(name)
            continue
        lines = [(m.model_per_k, "model", "solid"), (m.bayes_per_k, PREDICTIVE, "dash")]
        if pm is not None:
            lines.append((pm.bayes_per_k, POSTERIOR, "dot"))
        for ests, label, dash in lines:
            y = np.array([e.value for e in ests])
            fig.add_trace(
                go.Scatter(
                    x=list(m.k_values),
                    y=y,
                    mode="lines+markers",
                    name=f"{name}: {label}",
                    line=dict(color=_COLORS.get(name), dash=dash),
                    error_y=dict(
                        type="data",
                        symmetric=False,
                        array=np.array([e.high for e in ests]) - y,
                        arrayminus=y - np.array([e.low for e in ests]),
                    ),
                )
            )
    if unscored:
        fig.add_annotation(
            text=f"not drawn, no prompt scored: {', '.join(unscored)} (label mass below "
            f"{result.config.min_label_mass:g} at every k; --min-label-mass)",
            xref="paper",
            yref="paper",
            x=0,
            y=1.06,
            showarrow=False,
            xanchor="left",
        )
    conf = round(100 * result.config.confidence)
    fig.update_layout(
        title=dict(text=f"{result.model}: SULA mean label entropy by k ({conf} % CIs)"),
        xaxis_title="k (labelled examples)",
        yaxis_title="entropy (bits)",
        template="plotly_white",
        height=440,
    )
    return fig


def trajectory_figure(result: SulaResult) -> Any:
    """Mean oriented PC1 (shared basis) against k with CIs, one line per condition."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, c in result.conditions.items():
        g = c.geometry
        y = np.array([e.value for e in g.pc1_per_k])
        kt = g.k_tracking
        fig.add_trace(
            go.Scatter(
                x=list(g.k_values),
                y=y,
                mode="lines+markers",
                name=name if kt is None else f"{name} (ρ_S(k, PC1) = {interval_text(kt.rho, kt.note, reason=False)})",
                line=dict(color=_COLORS.get(name)),
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=np.array([e.high for e in g.pc1_per_k]) - y,
                    arrayminus=y - np.array([e.low for e in g.pc1_per_k]),
                ),
            )
        )
    fig.update_layout(
        title=dict(text=f"{result.model}, layer {result.layer}: SULA trajectory on the value manifold"),
        xaxis_title="k (labelled examples)",
        yaxis_title="mean PC1 coordinate (oriented: grows with model entropy)",
        template="plotly_white",
        height=440,
    )
    return fig


def sula_figures(result: SulaResult) -> list[Figure]:
    """The page's figures in order (the same list ``--figures`` exports)."""
    return [
        Figure("calibration", CAPTIONS["calibration"], calibration_figure(result)),
        Figure("per_k", CAPTIONS["per_k"], per_k_figure(result)),
        Figure("trajectory", CAPTIONS["trajectory"], trajectory_figure(result)),
    ]


def title(result: SulaResult) -> str:
    return f"SULA: in-context Bayesian updating, {result.model}"


PAGE = register_page(SulaResult, title=title, subtitle=subtitle, sections=sections, figures=sula_figures)
