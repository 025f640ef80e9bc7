"""The ``compare-domains`` report: one self-contained HTML file from a DomainComparison.

Like the scan report, plotly.js is inlined once and every string from the user or the
environment is escaped."""
from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any

from geoprobe.report.blocks import html_figure as _figure, write_page
from geoprobe.report.blocks import html_table as _table
from geoprobe.report.blocks import kv_table
from geoprobe.report.html import _CSS

#: arXiv 2512.23752 Table 1: final-layer PC1 / PC1+PC2 (%) for mixed and mathematics prompts
PAPER_TABLE1 = (
    ("Pythia-410M", "79.6 / 99.7", "58.0 / 99.9"),
    ("Phi-2", "46.4 / 60.6", "52.2 / 63.5"),
    ("Llama-3.2-1B", "36.6 / 51.4", "52.5 / 73.6"),
)


def domains_figures(cmp: Any) -> list[tuple[str, str, Any]]:
    """(anchor, caption, figure) of the page's figures."""
    return [("sets", "PC1, PC1+PC2 and participation ratio of every set with bootstrap CIs; grey bars: each set's "
             "Gaussian null band (same n and d); dashed: the mixed set.", cmp.figure()),
            ("differences", "Differences with bootstrap CIs; hover for the Bonferroni-adjusted permutation p. Collapse "
             "from domain restriction shows as restricted − mixed > 0; if restricted − control is near 0 the collapse "
             "is explained by length and token frequency (lexical narrowness), not the domain.",
             cmp.difference_figure())]


def render_domains_report(cmp: Any) -> str:
    from plotly.offline import get_plotlyjs

    model = escape(cmp.model)
    prov = dict(cmp.provenance)
    sets = prov.pop("sets", {}) or {}
    versions = prov.pop("versions", {}) or {}
    timings = prov.pop("timings", {}) or {}
    config = prov.pop("config", {}) or {}
    paper = _table([{"model (paper)": m, "mixed PC1 / PC1+PC2 %": a, "mathematics PC1 / PC1+PC2 %": b}
                    for m, a, b in PAPER_TABLE1])
    bal = _table([{"domain": d, **{f"SMD {k}": f"{v:+.3f}" for k, v in b.items()}} for d, b in cmp.balance.items()])
    set_rows = [{"set": k, "n": s.get("n"), "sha256": str(s.get("hash", ""))[:16], "pool": s.get("pool", ""),
                 "domains": ", ".join(f"{d} {c}" for d, c in (s.get("domain_counts") or {}).items()),
                 "matched to": s.get("matched_to", "")} for k, s in sets.items()]
    notes = "".join(f"<li>{escape(n)}</li>" for n in cmp.notes)
    notes_html = f'<h2>Notes</h2><ul class="notes">{notes}</ul>' if notes else ""
    prov_rows = [(k, v) for k, v in prov.items()] + [(f"config.{k}", v) for k, v in config.items()]
    prov_rows += [(f"version: {k}", v) for k, v in versions.items()]
    prov_rows += [(f"time: {k}", f"{v:.2f} s") for k, v in timings.items()]
    prov_html = kv_table(prov_rows)
    figs = "".join(_figure(f, a, c) for a, c, f in domains_figures(cmp))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>geoprobe compare-domains: {model}</title><style>{_CSS}</style>
<script type="text/javascript">{get_plotlyjs()}</script></head>
<body>
<h1>Domain restriction and the value manifold: {model}</h1>
<p class="muted">geoprobe compare-domains · layer {cmp.layer} · domains {escape(", ".join(cmp.domains))} ·
{escape(str(cmp.provenance.get("created", "")))}</p>
<h2>Table 1 analogue</h2>
{_table(cmp.table())}
<p class="muted">PC1 and PC1+PC2: explained-variance ratios of the PCA of z-scored final-token value vectors (KV heads
concatenated); PR: participation ratio. Intervals: bootstrap over prompts; Δ: bootstrap CI of the difference and a
permutation p-value, Bonferroni-adjusted across domains. Every set has the same number of prompts, because PC1 of
standardised data depends on n. See docs/metrics/domain_restriction.md.</p>
<h3>The paper's numbers (arXiv 2512.23752, Table 1)</h3>
{paper}
{notes_html}
<h2>Figures</h2>
{figs}
<h2>Matched controls: balance</h2>
<p class="muted">Standardised mean difference between each control and its restricted set, per matching feature
(|SMD| &lt; 0.1 is a good match).</p>
{bal}
<h2>Prompt sets</h2>
{_table(set_rows)}
<h2>Provenance</h2>
{prov_html}
</body></html>
"""


def write_domains_report(cmp: Any, path: str | os.PathLike, *, force: bool = False) -> Path:
    return write_page(path, lambda: render_domains_report(cmp), force=force)
