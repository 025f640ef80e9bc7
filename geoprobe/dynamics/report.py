"""The ``geoprobe dynamics`` page (``dynamics.html``): the summary beside the authors' numbers, the
steps-to-threshold table per seed with Student-t intervals, the loss curves, and the routing law and
the value update against autograd, registered as :class:`DynamicsResult`'s page with
:func:`geoprobe.report.page.register_page`."""

from __future__ import annotations

from typing import Any

import numpy as np

from geoprobe.dynamics.result import DynamicsResult
from geoprobe.report.blocks import html_table
from geoprobe.report.page import Figure, Section, figures_section, paragraph, provenance_section, register_page
from geoprobe.report.series import Line, Reference, estimate_figure

#: the authors' report (abstract of arXiv 2512.22473 and their script's convergence analysis)
PAPER_SPEEDUP = "2.3× (430 vs 1,000 steps)"

LOSS_CAPTION = (
    "Training loss by step, mean over seeds; bands: ± 1 SD over seeds; dotted: "
    "the chain's conditional entropy, the floor of any predictor from the previous symbol."
)


def loss_figure(result: DynamicsResult) -> Any:
    """Mean loss by step of both schedules with ± 1 SD bands over seeds, and the floor (drawn by
    :func:`geoprobe.report.series.estimate_figure`: each schedule its own band, the floor a reference)."""
    x = list(range(result.config.steps))
    lines = []
    for name, key in (("SGD", "sgd"), ("EM-like", "em")):
        a = np.array([getattr(r, key) for r in result.runs], dtype=float)
        m, s = a.mean(0), a.std(0)
        lines.append(Line(name, x, list(m), list(m - s), list(m + s), interval_name="± 1 SD over seeds", dots=False))
    fig = estimate_figure(
        lines,
        title="",
        x_title="step",
        y_title="cross-entropy (nats)",
        references=[Reference("H(Y_t | Y_t−1)", result.floor_nats)],
    )
    return fig.update_layout(height=460)


def dynamics_figures(result: DynamicsResult) -> list[Figure]:
    """The page's figures (the same list ``--figures`` exports)."""
    return [Figure("loss-curves", LOSS_CAPTION, loss_figure(result))]


def title(result: DynamicsResult) -> str:
    return "Gradient dynamics: EM-like vs SGD on the sticky Markov chain"


def subtitle(result: DynamicsResult) -> str:
    c = result.config
    return (
        f"geoprobe dynamics · {len(result.runs)} seeds · {c.steps} steps · one head (d_k {c.d_k}, d_v {c.d_v}) · "
        f"{c.n_symbols} symbols, self-transition {c.self_prob}"
    )


def summary_rows(result: DynamicsResult) -> list[dict[str, str]]:
    """The authors' summary numbers, geoprobe's beside the paper's."""
    return [
        {"quantity": "final loss, SGD (nats)", "geoprobe": f"{result.final('sgd'):.4f}", "paper": "—"},
        {"quantity": "final loss, EM-like (nats)", "geoprobe": f"{result.final('em'):.4f}", "paper": "—"},
        {
            "quantity": "EM-like steps to SGD's final loss",
            "geoprobe": f"{result.em_steps_to_sgd():.0f}",
            "paper": "430",
        },
        {
            "quantity": "speed-up (SGD steps / EM-like steps)",
            "geoprobe": f"{result.speedup():.2f}×",
            "paper": PAPER_SPEEDUP,
        },
        {"quantity": "floor H(Y_t | Y_t−1) (nats)", "geoprobe": f"{result.floor_nats:.4f}", "paper": "—"},
    ]


def steps_rows(result: DynamicsResult) -> list[dict[str, str]]:
    """Per seed: both final losses and both schedules' steps to the threshold; then their means with
    Student-t intervals over seeds."""
    sgd_steps, em_steps = result.steps("sgd"), result.steps("em")
    rows = [
        {
            "seed": str(r.seed),
            "SGD final loss (nats)": f"{r.sgd[-1]:.4f}",
            "EM-like final loss (nats)": f"{r.em[-1]:.4f}",
            "SGD steps to threshold": str(s),
            "EM-like steps to threshold": str(e),
        }
        for r, s, e in zip(result.runs, sgd_steps, em_steps)
    ]
    conf = round(100 * result.final("sgd").confidence)
    rows.append(
        {
            "seed": f"mean [{conf} % t interval]",
            "SGD final loss (nats)": f"{result.final('sgd'):.4f}",
            "EM-like final loss (nats)": f"{result.final('em'):.4f}",
            "SGD steps to threshold": f"{result.steps_to_threshold('sgd'):.1f}",
            "EM-like steps to threshold": f"{result.steps_to_threshold('em'):.1f}",
        }
    )
    return rows


def check_rows(result: DynamicsResult) -> list[dict[str, str]]:
    """Per seed: each closed form's largest difference from autograd beside autograd's largest entry."""
    return [
        {
            "seed": str(c.seed),
            "routing law: max |diff|": f"{c.routing_max_abs_diff:.2e}",
            "max |∂L/∂s|": f"{c.routing_max_abs:.2e}",
            "value gradient: max |diff|": f"{c.value_max_abs_diff:.2e}",
            "max |∂L/∂v|": f"{c.value_max_abs:.2e}",
            f"value update (η = {c.update_lr:g}): max |diff|": f"{c.update_max_abs_diff:.2e}",
        }
        for c in result.gradient_checks
    ]


def check_section(result: DynamicsResult) -> Section:
    """The routing law and the value update against autograd (or that this file predates the check)."""
    head = "The routing law and the value update against autograd"
    if not result.gradient_checks:
        return Section(head, paragraph("Not in this file (written before geoprobe checked them on every run)."))
    worst = max(c.max_relative for c in result.gradient_checks)
    text = (
        "On each seed's head at its initial weights and on its training sequence, in float64: autograd's "
        "∂L/∂s (scores), ∂L/∂v (values) and u = ∂L/∂o (outputs) against the paper's closed forms, advantage-based "
        "routing ∂L/∂s_ij = α_ij (b_ij − E_α_i[b]) with b_ij = u_i · v_j, the responsibility-weighted value "
        "gradient ∂L/∂v_j = Σ_i α_ij u_i, and the value update Δv_j = −η Σ_i α_ij u_i at the EM-like schedule's "
        f"value rate. Largest relative difference over seeds: {worst:.1e} "
        "(rounding; float64 carries about 16 digits). geoprobe.analysis.gradients; docs/dynamics.md."
    )
    return Section(head, html_table(check_rows(result)) + paragraph(text))


def sections(result: DynamicsResult) -> list[Section]:
    """Summary, steps to the threshold, the loss curves, the autograd check, provenance."""
    text = (
        "Same task and schedules as the authors' script; the random streams differ (geoprobe seeds "
        f"{', '.join(str(r.seed) for r in result.runs)}; theirs 42, 2024, 1337, 7777, 9999), so seed-level "
        "numbers are not comparable, only their spread. Intervals: Student t over seeds."
    )
    steps = paragraph(
        f"Threshold: SGD's final loss averaged over seeds, {result.threshold():.4f} nats; per seed, the first step "
        "whose loss is below it (the number of steps where none is). The authors' speed-up is SGD's steps over the "
        "EM-like schedule's mean."
    )
    return [
        Section("Summary", html_table(summary_rows(result)) + paragraph(text)),
        Section("Steps to SGD's final loss", html_table(steps_rows(result)) + steps),
        figures_section(result.figures()),
        check_section(result),
        provenance_section(result.provenance, config=result.config.to_dict()),
    ]


PAGE = register_page(DynamicsResult, title=title, subtitle=subtitle, sections=sections, figures=dynamics_figures)
