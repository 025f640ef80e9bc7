"""The ``geoprobe denoise`` report: one self-contained HTML file from a DenoiseResult."""
from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any

from geoprobe.report.blocks import html_figure, html_table, kv_table, write_page
from geoprobe.report.html import _CSS

_CAPTIONS = {
    "scores": "MSE per coordinate on held-out prompts, 95 % BCa bootstrap intervals over prompts (log scale).",
    "training": "Training loss (fresh prompts every step, so it estimates the test loss); dashed: the oracle MSE.",
    "lengths": "MSE vs context length L; the models were trained at the task's L and evaluated at each L; the "
               "finite-context estimator is rebuilt from each context; dashed: the oracle (Bayes) floor.",
    "transfer": "Dimension transfer: models trained at subspace dimension d, evaluated at d'; dashed: the oracle at d'.",
    "weights": "Learned key-query (W_KQ) and value (W_PV) matrices; the prediction is a multiple of the identity.",
    "energy": "One-step denoiser α·X softmax(β Xᵀx̃) over (α, β): log10 MSE, with the Bayes point (α = 1, β = 1/σZ²), "
              "the trained softmax model's (tr W_PV/n, tr W_KQ/n) and the numerical minimum.",
    "descent": "Gradient descent on the energy from the noisy query at the Bayes point: one step is the attention "
               "output; more steps move toward retrieval of a stored token.",
}


def _ci(e: Any) -> str:
    return f"{e.value:.4g} [{e.low:.4g}, {e.high:.4g}]"


def _sweep_table(blocks: Any, key: str) -> str:
    rows = []
    for b in blocks:
        row = {key: str(b.key)}
        for s in b.scores:
            row[s.method] = _ci(s.mse) + ("" if s.ratio is None else f" (×{s.ratio.value:.3f})")
        rows.append(row)
    return html_table(rows)


def denoise_figures(result: Any) -> list[tuple[str, str, Any]]:
    """(anchor, caption, figure) of the page's figures."""
    return [(a, _CAPTIONS.get(a, ""), f) for a, f in result.figures().items()]


def render_denoise_report(result: Any) -> str:
    from plotly.offline import get_plotlyjs

    from geoprobe.denoise.result import fits_table, scores_table

    name = escape(result.name)
    prov = dict(result.provenance)
    versions = prov.pop("versions", {}) or {}
    rows = [(k, v) for k, v in prov.items()] + [(f"task.{k}", v) for k, v in result.task.items()]
    rows += [(f"config.{k}", v) for k, v in result.config.items()]
    for m, log in result.training.items():
        rows.append((f"trained {m}", f"{log.get('steps')} steps × {log.get('batch_size')} prompts in "
                                     f"{log.get('seconds', 0):.1f} s, final loss {log.get('final_loss', 0):.4g}"))
    rows += [(f"version: {k}", v) for k, v in versions.items()]
    checks = html_table([{"check": c["check"], "target": c["target"], "measured": f"{c['measured']:.4f}",
                          "95% CI": c["ci"], "result": ("pass" if c["pass"] else "FAIL")
                          + ("" if c["required"] else " (not required)")} for c in result.checks()])
    parts = [f"<h2>MSE against the Bayes-optimal denoiser</h2>{html_table(scores_table(result.scores))}",
             "<p class='muted'>oracle: the posterior mean knowing the prompt's structure; finite-context: the paper's "
             "estimator built from the context tokens only. Ratios: paired bootstrap over the same prompts.</p>",
             f"<h3>Target</h3>{checks}",
             f"<h2>Learned weights against the predicted structure</h2>{html_table(fits_table(result.fits))}"]
    if result.lengths:
        parts.append(f"<h2>MSE vs context length</h2>{_sweep_table(result.lengths, 'L')}")
    if result.transfer:
        parts.append(f"<h2>Dimension transfer (trained at d = {escape(str(result.task['d']))})</h2>"
                     f"{_sweep_table(result.transfer, 'test d')}")
    if result.warp is not None:
        w = result.warp
        parts.append(f"<h2>Warped geometry (x → Ax, condition number {escape(str(w['condition']))}; noise added "
                     f"before warping)</h2>{html_table(scores_table(w['scores']))}{html_table(fits_table(w['fits']))}")
    if result.energy:
        e = result.energy
        land = e["landscape"]
        parts.append("<h2>Energy view</h2>" + kv_table([
            ("one step of descent == softmax attention (max |difference|)", f"{e['one_step_max_abs_diff']:.3g}"),
            ("Bayes point (α, β)", e["bayes_point"]), ("trained softmax (tr W_PV/n, tr W_KQ/n)", e["trained_point"]),
            ("numerical minimum (α*, β*)", (land.get("alpha_star"), land.get("beta_star"))),
            ("MSE at the numerical minimum", land.get("mse_star")),
            ("MSE after 0..T descent steps (Bayes point)", [round(v, 5) for v in e["descent"]["mse"]])]))
    figs = "".join(html_figure(f, a, c) for a, c, f in denoise_figures(result))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>geoprobe denoise: {name}</title><style>{_CSS}</style>
<script type="text/javascript">{get_plotlyjs()}</script></head>
<body>
<h1>In-context denoising: {name} task</h1>
<p class="muted">geoprobe denoise · arXiv 2502.05164 · {escape(str(result.provenance.get("created", "")))} · see docs/denoise.md</p>
{''.join(parts)}
<h2>Figures</h2>
{figs}
<h2>Provenance</h2>
{kv_table(rows)}
</body></html>
"""


def write_denoise_report(result: Any, path: str | os.PathLike, *, force: bool = False) -> Path:
    return write_page(path, lambda: render_denoise_report(result), force=force)
