"""The ``geoprobe denoise`` page: what a DenoiseResult shows beyond its figures (scores against the
oracle, the target, weight structure, sweeps, the warped run, the energy view, provenance), as
:class:`~geoprobe.report.page.Section` objects."""

from __future__ import annotations

from typing import Any

from geoprobe.report.blocks import html_table, kv_table
from geoprobe.report.page import Section, figures_section, paragraph, provenance_section

CAPTIONS = {
    "scores": "MSE per coordinate on held-out prompts, 95 % BCa bootstrap intervals over prompts (log scale).",
    "training": "Training loss (fresh prompts every step, so it estimates the test loss); dashed: the oracle MSE.",
    "lengths": "MSE vs context length L; the models were trained at the task's L and evaluated at each L; the "
    "finite-context estimator is rebuilt from each context; dashed: the oracle (Bayes) floor.",
    "transfer": "Dimension transfer: models trained at subspace dimension d, evaluated at d'; dashed: the "
    "oracle at d'.",
    "weights": "Learned key-query (W_KQ) and value (W_PV) matrices; the prediction is a multiple of the identity.",
    "energy": "One-step denoiser α·X softmax(β Xᵀx̃) over (α, β): log10 MSE, with the Bayes point (α = 1, β = 1/σZ²), "
    "the trained softmax model's (tr W_PV/n, tr W_KQ/n) and the numerical minimum.",
    "descent": "Gradient descent on the energy from the noisy query at the Bayes point: one step is the attention "
    "output; more steps move toward retrieval of a stored token.",
}


def scores_table(scores: Any) -> list[dict[str, str]]:
    """One row per method: MSE [95 % CI], ratio to the oracle [95 % CI] (paired bootstrap)."""

    def ci(e: Any) -> str:
        return "—" if e is None else f"{e:.4g}"

    return [
        {"method": s.method, "MSE per coordinate [95% CI]": ci(s.mse), "ratio to Bayes [95% CI]": ci(s.ratio)}
        for s in scores
    ]


def fits_table(fits: Any) -> list[dict[str, str]]:
    return [
        {
            "model": f.model,
            "matrix": f.matrix,
            "structure S": f.structure,
            "fitted c (W ≈ cS)": f"{f.c:.4g}",
            "predicted c": "—" if f.predicted is None else f"{f.predicted:.4g}",
            "residual ‖W−cS‖/‖W‖": f"{f.residual:.3f}",
        }
        for f in fits
    ]


def sweep_table(blocks: Any, key: str) -> str:
    """One row per sweep setting: each method's MSE [CI] (× its ratio to the oracle)."""
    rows = []
    for b in blocks:
        row = {key: str(b.key)}
        for s in b.scores:
            row[s.method] = f"{s.mse:.4g}" + ("" if s.ratio is None else f" (×{s.ratio.value:.3f})")
        rows.append(row)
    return html_table(rows)


def subtitle(result: Any) -> str:
    return f"geoprobe denoise · arXiv 2502.05164 · {result.provenance.get('created', '')} · see docs/denoise.md"


def energy_rows(energy: dict[str, Any]) -> list[tuple[str, Any]]:
    land = energy["landscape"]
    return [
        ("one step of descent == softmax attention (max |difference|)", f"{energy['one_step_max_abs_diff']:.3g}"),
        ("Bayes point (α, β)", energy["bayes_point"]),
        ("trained softmax (tr W_PV/n, tr W_KQ/n)", energy["trained_point"]),
        ("numerical minimum (α*, β*)", (land.get("alpha_star"), land.get("beta_star"))),
        ("MSE at the numerical minimum", land.get("mse_star")),
        ("MSE after 0..T descent steps (Bayes point)", [round(v, 5) for v in energy["descent"]["mse"]]),
    ]


def provenance_rows(result: Any) -> list[tuple[str, Any]]:
    """The task, the config and each model's training (after the provenance, before the versions)."""
    rows: list[tuple[str, Any]] = [(f"task.{k}", v) for k, v in result.task.items()]
    rows += [(f"config.{k}", v) for k, v in result.config.items()]
    for m, log in result.training.items():
        rows.append(
            (
                f"trained {m}",
                f"{log.get('steps')} steps × {log.get('batch_size')} prompts in "
                f"{log.get('seconds', 0):.1f} s, final loss {log.get('final_loss', 0):.4g}",
            )
        )
    return rows


def _sphere_note(result: Any) -> list[Section]:
    """The sphere's dimension in both conventions (geoprobe's d is the subspace's; the paper's is the sphere's)."""
    if result.name != "sphere":
        return []
    d = result.task["d"]
    return [
        Section(
            "Which sphere",
            paragraph(
                f"S^{d - 1} in a random {d}-dim subspace: geoprobe's d = {d}, the paper's and the authors' d = {d - 1} "
                f"(convention of this run's --dim: {result.provenance.get('convention', 'geoprobe')}; "
                "dimension-transfer rows are keyed by geoprobe's d)."
            ),
            level=3,
        )
    ]


def sections(result: Any) -> list[Section]:
    """Scores, the target, weights, the sweeps, the warped run, the energy view, figures, provenance."""
    checks = html_table(
        [
            {
                "check": c["check"],
                "target": c["target"],
                "measured": f"{c['measured']:.4f}",
                "95% CI": c["ci"],
                "result": ("pass" if c["pass"] else "FAIL") + ("" if c["required"] else " (not required)"),
            }
            for c in result.checks()
        ]
    )
    out = [
        Section(
            "MSE against the Bayes-optimal denoiser",
            html_table(scores_table(result.scores))
            + paragraph(
                "oracle: the posterior mean knowing the prompt's structure; finite-context: the paper's estimator "
                "built from the context tokens only. Ratios: paired bootstrap over the same prompts."
            ),
        ),
        *_sphere_note(result),
        Section("Target", checks, level=3),
        Section("Learned weights against the predicted structure", html_table(fits_table(result.fits))),
    ]
    if result.lengths:
        out.append(Section("MSE vs context length", sweep_table(result.lengths, "L")))
    if result.transfer:
        out.append(
            Section(f"Dimension transfer (trained at d = {result.task['d']})", sweep_table(result.transfer, "test d"))
        )
    if result.warp is not None:
        w = result.warp
        out.append(
            Section(
                f"Warped geometry (x → Ax, condition number {w['condition']}; noise added before warping)",
                html_table(scores_table(w["scores"])) + html_table(fits_table(w["fits"])),
            )
        )
    if result.energy:
        out.append(Section("Energy view", kv_table(energy_rows(result.energy))))
    out += [figures_section(result.figures()), provenance_section(result.provenance, extra=provenance_rows(result))]
    return out
