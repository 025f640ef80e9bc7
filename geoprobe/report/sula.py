"""The ``geoprobe sula`` report: one self-contained HTML file from a SulaResult."""
from __future__ import annotations

import math
import os
from html import escape
from pathlib import Path
from typing import Any

from geoprobe.report.blocks import html_figure, html_table, kv_table, write_page
from geoprobe.report.html import _CSS

#: arXiv 2512.23752 (Pythia-410M): SULA MAE and the k → PC1 correlation
PAPER = (("SULA MAE vs the analytic entropy (bits)", "0.44"), ("ρ(k, mean PC1)", "0.86"))


def _ci(e: Any, digits: int = 3) -> str:
    if not math.isfinite(e.value):
        return "n/a"
    if not (math.isfinite(e.low) and math.isfinite(e.high)):
        return f"{e.value:.{digits}f}"
    return f"{e.value:.{digits}f} [{e.low:.{digits}f}, {e.high:.{digits}f}]"


def summary_rows(result: Any) -> list[dict[str, str]]:
    rows = []
    for name, c in result.conditions.items():
        m, g = c.metrics, c.geometry
        rows.append({"condition": name, "n": str(m.n), "MAE (bits)": _ci(m.mae), "Spearman ρ(model H, Bayes H)":
                     _ci(m.spearman, 2), "label mass": _ci(m.label_mass, 3), "ρ(PC1, Bayes H)": _ci(g.rho_pc1_bayes, 2),
                     "ρ(k, mean PC1)": _ci(g.rho_k_pc1, 2)})
    return rows


_CAPTIONS = {
    "calibration": "The model's entropy over the two labels (renormalised) against the analytic posterior "
                   "predictive entropy, per prompt; the diagonal is perfect calibration.",
    "per_k": "Mean entropy by number of in-context examples k, model vs Bayes, per condition, with CIs.",
    "trajectory": "Mean PC1 coordinate of the final-token values (one PCA basis fitted on the main prompts, "
                  "oriented to grow with the model's entropy) by k, with CIs.",
}


def sula_figures(result: Any) -> list[tuple[str, str, Any]]:
    """(anchor, caption, figure) of the page's figures."""
    return [(a, _CAPTIONS.get(a, ""), f) for a, f in result.figures().items()]


def render_sula_report(result: Any) -> str:
    from plotly.offline import get_plotlyjs

    model = escape(result.model)
    prov = dict(result.provenance)
    versions = prov.pop("versions", {}) or {}
    rows = [(k, v) for k, v in prov.items()] + [(f"config.{k}", v) for k, v in result.config.to_dict().items()]
    rows += [(f"version: {k}", v) for k, v in versions.items()]
    rows += [(f"time: {k}", f"{v:.1f} s") for k, v in result.timings.items()]
    figs = "".join(html_figure(f, a, c) for a, c, f in sula_figures(result))
    paper = html_table([{"quantity (Pythia-410M, paper)": q, "value": v} for q, v in PAPER])
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>geoprobe sula: {model}</title><style>{_CSS}</style>
<script type="text/javascript">{get_plotlyjs()}</script></head>
<body>
<h1>SULA: in-context Bayesian updating, {model}</h1>
<p class="muted">geoprobe sula · layer {result.layer} · PC1 of the shared basis explains {100 * result.pc1_ratio:.1f} %
of the standardised variance · {escape(str(result.provenance.get("created", "")))}</p>
<h2>Summary</h2>
{html_table(summary_rows(result))}
<p class="muted">Main: k labelled examples whose labels agree with a latent class with probability
{result.config.agreement}; the analytic posterior predictive of the query label is known in closed form.
Controls: lexical remap (other labels), shuffled (labels carry no evidence: 1 bit), ablated (carrier words
masked). Intervals: bootstrap over prompts. See docs/sula.md.</p>
<h3>The paper's numbers</h3>
{paper}
<h2>Figures</h2>
{figs}
<h2>Provenance</h2>
{kv_table(rows)}
</body></html>
"""


def write_sula_report(result: Any, path: str | os.PathLike, *, force: bool = False) -> Path:
    return write_page(path, lambda: render_sula_report(result), force=force)
