"""The ``geoprobe denoise`` page: what a DenoiseResult shows (scores against the oracle, the target, weight
structure, sweeps, the warped run, the energy view, provenance) and its figures (scores, training, the
sweeps, the learned matrices, the energy landscape and the descent), registered as its page with
:func:`geoprobe.report.page.register_page`. The energy landscape's and the descent's figures are here
too, as functions of those results (:mod:`geoprobe.denoise.landscape` computes them)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from geoprobe.analysis.stats import Estimate
from geoprobe.denoise.landscape import DescentComparison, EnergyLandscape
from geoprobe.denoise.result import Block, DenoiseResult, Fit, Score
from geoprobe.errors import GeoprobeError
from geoprobe.report.blocks import html_table, kv_table
from geoprobe.report.page import Figure, Section, figures_section, paragraph, provenance_section, register_page
from geoprobe.report.series import Line, estimate_figure

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


def scores_table(scores: tuple[Score, ...]) -> list[dict[str, str]]:
    """One row per method: MSE [95 % CI], ratio to the oracle [95 % CI] (paired bootstrap)."""

    def ci(e: Estimate | None) -> str:
        return "—" if e is None else f"{e:.4g}"

    return [
        {"method": s.method, "MSE per coordinate [95% CI]": ci(s.mse), "ratio to Bayes [95% CI]": ci(s.ratio)}
        for s in scores
    ]


def fits_table(fits: tuple[Fit, ...]) -> list[dict[str, str]]:
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


def sweep_table(blocks: tuple[Block, ...], key: str) -> str:
    """One row per sweep setting: each method's MSE [CI] (× its ratio to the oracle)."""
    rows = []
    for b in blocks:
        row = {key: str(b.key)}
        for s in b.scores:
            row[s.method] = f"{s.mse:.4g}" + ("" if s.ratio is None else f" (×{s.ratio.value:.3f})")
        rows.append(row)
    return html_table(rows)


def subtitle(result: DenoiseResult) -> str:
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


def provenance_rows(result: DenoiseResult) -> list[tuple[str, Any]]:
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


def _sphere_note(result: DenoiseResult) -> list[Section]:
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


def sections(result: DenoiseResult) -> list[Section]:
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


# -- figures ------------------------------------------------------------------------------------
def scores_figure(result: DenoiseResult) -> Any:
    """MSE per method with its CI (error bars, log axis), drawn by :func:`geoprobe.report.series.estimate_figure`."""
    s = result.scores
    mse = Line(
        "MSE per coordinate (95 % CI)",
        [x.method for x in s],
        [x.mse.value for x in s],
        [x.mse.low for x in s],
        [x.mse.high for x in s],
        markers=True,
    )
    return estimate_figure(
        [mse],
        title=f"{result.name}: MSE per coordinate (95 % bootstrap CI)",
        x_title="method",
        y_title="MSE per coordinate",
        log_y=True,
    )


def sweep_figure(result: DenoiseResult, blocks: tuple[Block, ...], xlabel: str, title: str, log_x: bool) -> Any:
    """MSE of each method (its own CI band) against the swept setting; the oracle dashed. Drawn by
    :func:`geoprobe.report.series.estimate_figure`."""
    x = [b.key for b in blocks]
    lines = []
    for method in [s.method for s in blocks[0].scores]:
        ys = [b.get(method).mse for b in blocks]
        lines.append(
            Line(
                method,
                x,
                [e.value for e in ys],
                [e.low for e in ys],
                [e.high for e in ys],
                dash="dash" if method == "oracle" else None,
            )
        )
    return estimate_figure(
        lines, title=title, x_title=xlabel, y_title="MSE per coordinate", log_x=log_x, include=(0.0,)
    )


def lengths_figure(result: DenoiseResult) -> Any:
    return sweep_figure(
        result,
        result.lengths,
        "context length L",
        f"{result.name}: MSE vs context length "
        f"(models trained at L = {result.task['context_length']}; dashed: oracle Bayes)",
        True,
    )


def transfer_figure(result: DenoiseResult) -> Any:
    return sweep_figure(
        result,
        result.transfer,
        "test subspace dimension d'",
        f"{result.name}: dimension transfer (models trained at d = {result.task['d']}; dashed: oracle Bayes at d')",
        False,
    )


def weights_figure(result: DenoiseResult) -> Any:
    """Heatmaps of the learned W_KQ and W_PV of each model."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    panels = [(m, k) for m, mats in result.matrices.items() for k in ("W_KQ", "W_PV") if k in mats]
    fig = make_subplots(rows=1, cols=max(1, len(panels)), subplot_titles=[f"{m}: {k}" for m, k in panels])
    for i, (m, k) in enumerate(panels, start=1):
        W = result.matrices[m][k]
        vmax = max(abs(v) for row in W for v in row) or 1.0
        fig.add_trace(
            go.Heatmap(z=W, zmin=-vmax, zmax=vmax, colorscale="RdBu", reversescale=True, showscale=i == len(panels)),
            row=1,
            col=i,
        )
        fig.update_yaxes(autorange="reversed", row=1, col=i)
    fig.update_layout(title=f"{result.name}: learned matrices", template="plotly_white")
    return fig


def training_figure(result: DenoiseResult) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, log in result.training.items():
        curve = log.get("loss_curve") or []
        if curve:
            step = max(1, int(log["steps"]) // max(1, len(curve)))
            fig.add_trace(
                go.Scatter(x=[step * (i + 1) for i in range(len(curve))], y=curve, name=name, mode="lines+markers")
            )
    oracle = result.score("oracle").mse.value
    fig.add_hline(y=oracle, line_dash="dash", annotation_text="oracle (Bayes) MSE")
    fig.update_layout(
        title=f"{result.name}: training loss (mean over blocks of steps)",
        yaxis_type="log",
        xaxis_title="step",
        yaxis_title="MSE per coordinate",
        template="plotly_white",
    )
    return fig


def check_marks(marks: dict[str, tuple[float, float]] | None) -> dict[str, tuple[float, float]]:
    out = {}
    for name, point in (marks or {}).items():
        try:
            a, b = (float(v) for v in point)
        except (TypeError, ValueError):
            raise GeoprobeError(f"mark {name!r} is {point!r}, not an (alpha, beta) pair; pass two numbers") from None
        if not (math.isfinite(a) and math.isfinite(b) and a > 0 and b > 0):
            raise GeoprobeError(
                f"mark {name!r} at (α={a}, β={b}) is not on the positive log axes; pass alpha and beta greater than 0"
            )
        out[str(name)] = (a, b)
    return out


def landscape_figure(land: EnergyLandscape, marks: dict[str, tuple[float, float]] | None = None) -> Any:
    """log10 MSE over (α, β) on log axes, with the grid minimum, the numerical minimum and the
    named ``marks`` (e.g. ``{"Bayes-optimal (α=1, β=1/σZ²)": (1, 1/σ**2), "trained": (a, b)}``)
    drawn as one marker trace each."""
    import plotly.graph_objects as go

    points = {"grid min": land.grid_min[:2]}
    if land.alpha_star is not None and land.beta_star is not None:
        points[f"numerical min{'' if land.converged else ' (not converged)'}"] = (land.alpha_star, land.beta_star)
    points.update(check_marks(marks))
    z = np.log10(np.maximum(np.asarray(land.mse, dtype=np.float64).T, 1e-300))
    fig = go.Figure(
        go.Contour(
            x=list(land.alphas),
            y=list(land.betas),
            z=z.tolist(),
            colorscale="Viridis",
            colorbar=dict(title="log10 MSE"),
            name="log10 MSE per coordinate",
            contours=dict(coloring="heatmap"),
        )
    )
    symbols = ["x", "star", "diamond", "circle", "square", "triangle-up", "cross", "hexagon"]
    for k, (name, (a, b)) in enumerate(points.items()):
        fig.add_trace(
            go.Scatter(
                x=[a],
                y=[b],
                mode="markers+text",
                name=name,
                text=[name],
                textposition="top center",
                marker=dict(
                    symbol=symbols[k % len(symbols)], size=12, color="white", line=dict(color="black", width=1.5)
                ),
            )
        )
    fig.update_xaxes(type="log", title_text="α (value scale, W_PV = αI)")
    fig.update_yaxes(type="log", title_text="β (inverse temperature, W_KQ = βI)")
    fig.update_layout(
        title=f"one-step denoiser MSE over (α, β); noisy-query MSE {land.mse_noisy:.4g}", template="plotly_white"
    )
    return fig


def descent_figure(descent: DescentComparison) -> Any:
    """MSE and distance to the nearest context token (left) and mean energy (right) by step."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    x = list(range(descent.n_steps + 1))
    fig = make_subplots(rows=1, cols=2, subplot_titles=["denoising error vs retrieval", "energy E(s_t)"])
    fig.add_trace(
        go.Scatter(x=x, y=list(descent.mse), name="MSE per coordinate vs clean", mode="lines+markers"), row=1, col=1
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=list(descent.token_distance),
            name="RMS distance to nearest context token",
            mode="lines+markers",
            line=dict(dash="dash"),
        ),
        row=1,
        col=1,
    )
    fig.add_trace(go.Scatter(x=x, y=list(descent.energy), name="mean energy", mode="lines+markers"), row=1, col=2)
    if descent.n_steps >= 1:
        fig.add_vline(x=1, line_dash="dot", annotation_text="1 step = attention", row=1, col=1)
    fig.update_xaxes(title_text="gradient steps t")
    fig.update_yaxes(type="log", row=1, col=1)
    fig.update_layout(
        title=f"descent on E (α={descent.alpha:.4g}, β={descent.beta:.4g}, γ={descent.gamma:.4g}); "
        f"best step {descent.best_step}",
        template="plotly_white",
    )
    return fig


def denoise_figures(result: DenoiseResult) -> list[Figure]:
    """The page's figures in order (the same list ``--figures`` exports)."""
    out = [
        Figure("scores", CAPTIONS["scores"], scores_figure(result)),
        Figure("training", CAPTIONS["training"], training_figure(result)),
    ]
    if result.lengths:
        out.append(Figure("lengths", CAPTIONS["lengths"], lengths_figure(result)))
    if result.transfer:
        out.append(Figure("transfer", CAPTIONS["transfer"], transfer_figure(result)))
    if result.matrices:
        out.append(Figure("weights", CAPTIONS["weights"], weights_figure(result)))
    if result.energy:
        marks = {k: tuple(v) for k, v in result.energy.get("marks", {}).items()}
        out += [
            Figure(
                "energy",
                CAPTIONS["energy"],
                landscape_figure(EnergyLandscape.from_dict(result.energy["landscape"]), marks=marks),
            ),
            Figure(
                "descent", CAPTIONS["descent"], descent_figure(DescentComparison.from_dict(result.energy["descent"]))
            ),
        ]
    return out


def title(result: DenoiseResult) -> str:
    return f"In-context denoising: {result.name} task"


PAGE = register_page(DenoiseResult, title=title, subtitle=subtitle, sections=sections, figures=denoise_figures)
