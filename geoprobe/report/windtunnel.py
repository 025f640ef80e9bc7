"""The ``geoprobe windtunnel report``: one self-contained HTML file from a WindTunnelResult."""
from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any

from geoprobe.report.blocks import html_figure, html_table, kv_table, write_page
from geoprobe.report.html import _CSS

_CAPTIONS = {
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
}


def windtunnel_figures(result: Any) -> list[tuple[str, str, Any]]:
    """(anchor, caption, figure) of the page's figures."""
    return [(a, _CAPTIONS.get(a, ""), f) for a, f in result.figures().items()]


def render_windtunnel_report(result: Any) -> str:
    from plotly.offline import get_plotlyjs

    from geoprobe.windtunnel.result import PAPER, metrics_table

    name = escape(result.name)
    prov = dict(result.provenance)
    versions = prov.pop("versions", {}) or {}
    weights = prov.pop("weights", {}) or {}
    rows = [(k, v) for k, v in prov.items()] + [(f"weights: {k}", v) for k, v in weights.items()]
    rows += [(f"task.{k}", v) for k, v in result.task.items()]
    for arch, spec in result.specs.items():
        rows += [(f"{arch}: size", spec["size"]), (f"{arch}: parameters", result.n_params.get(arch, "?")),
                 (f"{arch}: training", spec["train"])]
        log = result.training.get(arch) or {}
        if log:
            rows.append((f"{arch}: trained", f"{log.get('steps')} steps in {log.get('seconds', 0):.0f} s, "
                                             f"{log.get('tokens_per_second', 0):,.0f} tokens/s"))
    notes = next(iter(result.specs.values())).get("notes", [])
    rows += [(f"version: {k}", v) for k, v in versions.items()]
    checks = html_table([{"check": c["check"], "target": c["target"], "measured": f"{c['measured']:.4g}",
                          "result": "pass" if c["pass"] else "FAIL"} for c in result.checks()])
    paper = html_table([{"K": K, "transformer MAE (bits)": f"{t:g}", "MLP MAE (bits)": f"{m:g}"}
                        for K, (t, m) in PAPER[result.name].items()])
    extra = ""
    if result.geometry is not None:
        g = result.geometry
        extra += (f"<p>Frame vs precision: the attention patterns reach 90 % of their change at step ≈ {g.t90_frame:.0f}, the "
                  f"entropy error at step ≈ {g.t90_precision:.0f} "
                  f"({'the frame stabilises first' if g.dissociation else 'no frame-first dissociation here'}).</p>")
    if result.ablations is not None:
        a = result.ablations
        extra += (f"<p>Hypothesis head: layer 0 head {a.hypothesis_head} (zeroing it gives a per-sample MAE of "
                  f"{a.head_mae_sample[0][a.hypothesis_head]:.3g} bits, intact {a.baseline_sample:.3g}); it is "
                  f"{'' if a.hypothesis_head_is_top else 'not '}the most damaging single head.</p>")
    figs = "".join(html_figure(f, a, c) for a, c, f in windtunnel_figures(result))
    notes_html = "".join(f"<li>{escape(str(n))}</li>" for n in notes)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>geoprobe windtunnel: {name}</title><style>{_CSS}</style>
<script type="text/javascript">{get_plotlyjs()}</script></head>
<body>
<h1>Bayesian wind tunnel: {name} ({escape(result.scale)} scale)</h1>
<p class="muted">geoprobe windtunnel · {escape(str(result.provenance.get("created", "")))}</p>
<h2>Entropy error against the analytic posterior</h2>
{html_table(metrics_table(result))}
<p class="muted">MAE paper definition: entropy curves averaged over sequences first, then the mean |difference|
over positions (arXiv 2512.22471). Per sample: mean |H_model − H_Bayes| over every prediction. KL(Bayes ‖ model)
in bits. Intervals: 95 % percentile bootstrap over sequences. See docs/windtunnel.md.</p>
<h3>Targets</h3>
{checks}
<h3>The paper's numbers (arXiv 2512.22471)</h3>
{paper}
{extra}
<h3>Where this run differs from the authors' settings</h3>
<ul>{notes_html}</ul>
<h2>Figures</h2>
{figs}
<h2>Provenance</h2>
{kv_table(rows)}
</body></html>
"""


def write_windtunnel_report(result: Any, path: str | os.PathLike, *, force: bool = False) -> Path:
    return write_page(path, lambda: render_windtunnel_report(result), force=force)
