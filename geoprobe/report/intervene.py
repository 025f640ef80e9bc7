"""The ``geoprobe intervene`` report: one self-contained HTML file from an InterventionResult."""
from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any

from geoprobe.report.blocks import html_figure, html_table, kv_table, write_page
from geoprobe.report.html import _CSS

#: arXiv 2512.23752 on Pythia-410M
PAPER = (("axis–entropy correlation, unperturbed → multi-layer cut", "0.27 → 0.07"),
         ("calibration (SULA) change under the cut", "< 1 %"), ("SULA MAE (bits)", "0.44"))


def intervene_figures(result: Any) -> list[tuple[str, str, Any]]:
    """(anchor, caption, figure) of the page's figures."""
    return [("dose-response", "Each metric against the edit's strength: the entropy axis (solid, bootstrap CI) and the "
             "random axes orthogonal to it (dotted, mean ± sd over control seeds).", result.figure())]


def render_intervene_report(result: Any) -> str:
    from plotly.offline import get_plotlyjs

    model = escape(result.model)
    prov = dict(result.provenance)
    versions = prov.pop("versions", {}) or {}
    rows = [(k, v) for k, v in prov.items()] + [(f"config.{k}", v) for k, v in result.config.items()]
    rows += [(f"version: {k}", v) for k, v in versions.items()]
    rows += [(f"time: {k}", f"{v:.1f} s") for k, v in result.timings.items()]
    base = html_table([{"quantity (unperturbed)": k, "value [95 % CI]":
                        f"{e.value:.4g} [{e.low:.4g}, {e.high:.4g}]"} for k, e in result.baseline.items()])
    paper = html_table([{"Pythia-410M (paper)": q, "value": v} for q, v in PAPER])
    fig = "".join(html_figure(f, a, c) for a, c, f in intervene_figures(result))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>geoprobe intervene: {model}</title><style>{_CSS}</style>
<script type="text/javascript">{get_plotlyjs()}</script></head>
<body>
<h1>Entropy-axis interventions: {model}</h1>
<p class="muted">geoprobe intervene · operation {escape(result.op)} · experiments
{escape(str(result.config.get("experiments")))} · {escape(str(result.provenance.get("created", "")))}</p>
<h2>Effects: entropy axis vs random axes</h2>
{html_table(result.summary())}
<p class="muted">Effect sizes with bootstrap CIs over prompts; the random axes (orthogonal to the entropy axis, same
operation, strength and layers) are the matched null. The geometry is ρ between the entropy-axis coordinate of the
edited values at the highest edited layer and the model's next-token entropy. See docs/intervene.md.</p>
<h3>Unperturbed</h3>
{base}
<h3>The paper's numbers</h3>
{paper}
<h2>Dose–response</h2>
{fig}
<h2>Provenance</h2>
{kv_table(rows)}
</body></html>
"""


def write_intervene_report(result: Any, path: str | os.PathLike, *, force: bool = False) -> Path:
    return write_page(path, lambda: render_intervene_report(result), force=force)
