"""The ``geoprobe windtunnel`` pages. This module: what a WindTunnelResult shows (the metrics against the
analytic posterior, the targets, the paper's numbers, findings, its figures from
:mod:`geoprobe.windtunnel.report.figures`, provenance), registered as its page with
:func:`geoprobe.report.page.register_page`; :mod:`geoprobe.windtunnel.report.seeds` is the page of a
run over several seeds."""

from __future__ import annotations

import math
from html import escape
from typing import Any

from geoprobe.report.blocks import html_table
from geoprobe.report.page import Figure, Section, figures_section, paragraph, provenance_section, register_page
from geoprobe.text import number
from geoprobe.windtunnel.geometry import TrainingGeometry
from geoprobe.windtunnel.invariance import SemanticInvariance
from geoprobe.windtunnel.paper import PAPER, paper_value
from geoprobe.windtunnel.query import query_table
from geoprobe.windtunnel.report import seeds as seeds
from geoprobe.windtunnel.report.figures import (
    ablation_figure,
    calibration_figure,
    dynamics_figure,
    entropy_figure,
    focusing_figure,
    invariance_figure,
)
from geoprobe.windtunnel.result import WindTunnelResult

CAPTIONS = {
    "entropy": "Mean predictive entropy at each prediction position (averaged over held-out sequences): the "
    "analytic posterior, the transformer and the capacity-matched MLP. Panels beyond the first are "
    "lengths the models were not trained on.",
    "ablations": "Per-sample entropy MAE with one attention head zeroed (left; its slice of the input of W_O) "
    "and with a whole attention layer zeroed (right, log scale; dashed: intact model).",
    "dynamics": "Over training: the frame (attention patterns' total-variation distance to the final checkpoint) "
    "and the precision (per-sample entropy error, log scale) as fractions of their total change; the "
    "right panel shows the raw measures, with key orthogonality and |ρ(value PC1, analytic entropy)|.",
    "focusing": "Attention focusing: the final token's attention entropy per layer (mean over heads and probe "
    "prompts), one line per checkpoint from early (red) to final (blue).",
    "calibration": "Value vectors of the final transformer at the layer whose PC1 tracks the analytic entropy best "
    "(every layer's ρ is in windtunnel.json), one point per probe prompt: PC1 coordinate "
    "(standardised PCA) against the analytic predictive entropy; colour: the model's own entropy.",
    "invariance": "Semantic invariance (arXiv 2512.22471, Figure 8): each point one held-out HMM, its calibration "
    "error (mean over positions of |H_model − H_Bayes|, bits) on the original prompt (x) and after its hidden "
    "states were renamed by a random permutation (y); an equivariant learner lies on y = x.",
}

_MAE_NOTE = (
    "MAE paper definition: entropy curves averaged over sequences first, then the mean |difference| over "
    "positions (arXiv 2512.22471). Per sample: mean |H_model − H_Bayes| over every prediction. "
    "KL(Bayes ‖ model) in bits. Intervals: 95 % percentile bootstrap over sequences. See docs/windtunnel.md."
)


def metrics_table(result: WindTunnelResult) -> list[dict[str, str]]:
    """One row per (learner, K): both MAE definitions and KL with CIs, next to the paper's number."""
    rows = []
    for arch, ms in result.metrics.items():
        for m in ms:
            rows.append(
                {
                    "learner": arch,
                    "K": str(m.K),
                    "MAE paper def. (bits)": f"{m.mae_paper:.4g}",
                    "MAE per sample (bits)": f"{m.mae_sample:.4g}",
                    "KL(Bayes‖model) (bits)": f"{m.kl:.4g}",
                    "answer mass": f"{m.answer_mass:.4f}",
                    "paper MAE (bits)": paper_value(result.name, arch, m.K, result.convention, result.task["K"]),
                }
            )
    return rows


def subtitle(result: WindTunnelResult) -> str:
    task = "the authors' task, as their released code generates it" if result.convention == "authors" else "geoprobe's"
    return f"geoprobe windtunnel · convention: {result.convention} ({task}) · {result.provenance.get('created', '')}"


def findings(result: WindTunnelResult) -> str:
    """Frame vs precision and the hypothesis head, in words (empty without geometry and ablations)."""
    out = ""
    if result.geometry is not None:
        g = result.geometry
        out += paragraph(frame_text(g), muted=False)
    if result.ablations is not None:
        a = result.ablations
        out += paragraph(
            f"Hypothesis head: layer 0 head {a.hypothesis_head} (zeroing it gives a per-sample MAE of "
            f"{a.head_mae_sample[0][a.hypothesis_head]:.3g} bits, intact {a.baseline_sample:.3g}); it is "
            f"{'' if a.hypothesis_head_is_top else 'not '}the most damaging single head.",
            muted=False,
        )
    return out


def frame_text(g: TrainingGeometry) -> str:
    """Frame vs precision of this one run in words: the t90s, their prompt-level interval, and why one seed
    gives no verdict."""
    span = g.t90_interval
    if span is not None and math.isfinite(span.difference.low):
        within = (
            f"; d = log(t90 frame + 1) − log(t90 precision + 1) = {number(span.difference, '+.3f')} "
            f"(95 % bootstrap over {span.n_prompts} probe prompts and {span.n_sequences} held-out sequences)"
        )
    elif span is not None:
        within = f"; the prompt-level interval is undefined ({span.undefined} of {span.n_resamples} draws had no t90)"
    else:
        within = ""
    return (
        f"Frame vs precision: t90 (90 % of the change) of the attention patterns {step_text(g.t90_frame)}, "
        f"of the entropy error {step_text(g.t90_precision)}{within}. One training seed: not testable "
        "(which comes first is a claim about training runs; run --seeds 0,1,2,3,4 for the test over seeds)."
    )


def step_text(t: float) -> str:
    """A t90 in words ("undefined" when its measure did not move towards its final value)."""
    return f"step ≈ {t:,.0f}" if math.isfinite(t) else "undefined (no progress)"


def provenance_rows(result: WindTunnelResult) -> list[tuple[str, Any]]:
    """The weights' hashes, the task, and each learner's size, parameters and training (after the provenance)."""
    rows: list[tuple[str, Any]] = [(f"weights: {k}", v) for k, v in (result.provenance.get("weights") or {}).items()]
    rows += [(f"task.{k}", v) for k, v in result.task.items()]
    for arch, spec in result.specs.items():
        rows += [
            (f"{arch}: size", spec["size"]),
            (f"{arch}: parameters", result.n_params.get(arch, "?")),
            (f"{arch}: training", spec["train"]),
        ]
        log = result.training.get(arch) or {}
        if log:
            # None where a run stopped between a learner's last checkpoint and its log: that time was not recorded
            speed = log.get("tokens_per_second")
            rows.append(
                (
                    f"{arch}: trained",
                    f"{log.get('steps')} steps in {log.get('seconds') or 0:.0f} s, "
                    + (f"{speed:,.0f} tokens/s" if speed is not None else "tokens/s not recorded"),
                )
            )
    return rows


def invariance_text(inv: dict[str, SemanticInvariance] | None) -> str:
    """The page's paragraph on Figure 8 (empty without the measurement)."""
    if not inv:
        return ""
    parts = [
        f"{arch}: calibration error {m.mean_before:.4g} bits before, {m.mean_after:.4g} after (change "
        f"{number(m.change, '+.2g')}); equivariance TV {m.equivariance_tv:.3g}; KL(Bayes ‖ model) {m.kl_before:.4g} → "
        f"{m.kl_after:.4g} bits"
        for arch, m in inv.items()
    ]
    n = next(iter(inv.values())).n
    return paragraph(
        f"Semantic invariance (Figure 8; {n} held-out HMMs, each with its hidden states renamed by a random "
        f"non-identity permutation): {'; '.join(parts)}. The paper reports points on y = x. Entropy does not see "
        "labels, so the TV between the new predictive and the old one relabelled (0 for an equivariant learner) "
        "is the direct test.",
        muted=False,
    )


_QUERY_NOTE = (
    "In the authors' convention every scored key is new, so the scored posterior (uniform over the values not yet "
    "shown) needs no key matching. The final query repeats a context key: its posterior is a point mass, and a "
    "learner that does not match keys scores the chance KL log2 V. The authors train on the query but do not score "
    "it; geoprobe scores it here on its own (geoprobe.windtunnel.query)."
)


def sections(result: WindTunnelResult) -> list[Section]:
    """Metrics, targets, the paper's numbers, findings, differences from the authors, figures, provenance."""
    checks = html_table(
        [
            {
                "check": c["check"],
                "target": c["target"],
                "measured": f"{c['measured']:.4g}",
                "result": "pass" if c["pass"] else "FAIL",
            }
            for c in result.checks()
        ]
    )
    paper = html_table(
        [
            {"K": K, "transformer MAE (bits)": f"{t:g}", "MLP MAE (bits)": f"{m:g}"}
            for K, (t, m) in PAPER[result.name].items()
        ]
    )
    notes = next(iter(result.specs.values())).get("notes", [])
    prov = {k: v for k, v in result.provenance.items() if k != "weights"}
    out = [
        Section(
            "Entropy error against the analytic posterior",
            html_table(metrics_table(result)) + "\n" + paragraph(_MAE_NOTE),
        ),
        Section("Targets", checks, level=3),
        Section("The paper's numbers (arXiv 2512.22471)", paper, level=3),
    ]
    if result.query:
        out.append(
            Section(
                "The query: the one prediction that needs key matching (not in the authors' score)",
                html_table(query_table(result.query)) + "\n" + paragraph(_QUERY_NOTE),
                level=3,
            )
        )
    extra = findings(result) + invariance_text(result.invariance)
    if extra:
        out.append(Section("", extra))
    out += [
        Section(
            "Where this run differs from the authors' settings",
            "<ul>" + "".join(f"<li>{escape(str(n))}</li>" for n in notes) + "</ul>",
            level=3,
        ),
        figures_section(result.figures()),
        provenance_section(prov, extra=provenance_rows(result)),
    ]
    return out


def tunnel_figures(result: WindTunnelResult) -> list[Figure]:
    """The page's figures in order (the same list ``--figures`` exports)."""
    out = [Figure("entropy", CAPTIONS["entropy"], entropy_figure(result))]
    if result.ablations is not None:
        out.append(Figure("ablations", CAPTIONS["ablations"], ablation_figure(result)))
    if result.geometry is not None:
        out += [
            Figure("dynamics", CAPTIONS["dynamics"], dynamics_figure(result)),
            Figure("focusing", CAPTIONS["focusing"], focusing_figure(result)),
            Figure("calibration", CAPTIONS["calibration"], calibration_figure(result)),
        ]
    if result.invariance:
        out.append(Figure("invariance", CAPTIONS["invariance"], invariance_figure(result.invariance, result.name)))
    return out


def title(result: WindTunnelResult) -> str:
    return f"Bayesian wind tunnel: {result.name} ({result.scale} scale, {result.convention} convention)"


PAGE = register_page(WindTunnelResult, title=title, subtitle=subtitle, sections=sections, figures=tunnel_figures)
