"""Assemble a ScanResult into one self-contained HTML file.

plotly.js is embedded once (the file opens offline); every string that comes from the user or
the environment (model id, paths, prompts in warnings, provenance) goes through
:func:`html.escape`; plotly's own JSON escapes ``<`` inside figures.
"""
from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any

from geoprobe.report.blocks import write_page

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em} h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:1em 0;font-size:.92em} th,td{border:1px solid #ddd;padding:.35em .6em;
text-align:left;vertical-align:top} th{background:#f3f3f3} td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#0a6b2d;font-weight:600} .fail{color:#a31515;font-weight:600} .muted{color:#666;font-size:.9em}
figure{margin:1.5em 0} figcaption{color:#444;font-size:.92em;margin-top:.3em} code{background:#f5f5f5;padding:0 .2em}
.notes li{color:#7a4b00}
"""


def _yes(flag: Any) -> str:
    if flag is None:
        return '<span class="muted">n/a</span>'
    return '<span class="pass">yes</span>' if flag else '<span class="fail">no</span>'


def scorecard_table(card: Any) -> str:
    rows = []
    for c, r in zip(card.criteria, card.rows()):
        rows.append(
            "<tr>" + "".join(f"<td>{escape(r[k])}</td>" for k in ("criterion", "statement"))
            + f'<td class="num">{escape(r["value"])}</td><td class="num">{escape(r["ci"])}</td>'
            + f"<td>{_yes(c.passes)}</td><td>{escape(r['null'])}</td><td>{_yes(c.beats_null)}</td>"
            + f'<td class="muted">{escape(r["detail"])}</td></tr>')
    head = "".join(f"<th>{h}</th>" for h in ("criterion", "paper's test (§4.4)", "value", "CI", "passes",
                                              "matched null", "beats null", "detail"))
    return (f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f'<p class="muted">{card.n_passed} of {len(card.criteria)} criteria pass for {escape(card.model)}.</p>')


def _fmt(x: Any, digits: int = 3) -> str:
    try:
        return "n/a" if x is None or x != x else f"{x:.{digits}f}"
    except (TypeError, ValueError):
        return escape(str(x))


def layer_table(result: Any) -> str:
    m, a, o, f = result.manifold, result.alignment, result.orthogonality, result.focusing
    cols = ["layer"]
    if m is not None:
        cols += ["PC1 [CI]", "null PC1 (upper)", "PC1+PC2", "participation ratio"]
    if a is not None:
        cols += ["Spearman ρ [CI]", "p (Bonferroni)"]
    if o is not None:
        cols += ["key |cos|", "init |cos|"]
    if f is not None:
        cols += ["attention entropy, bits [CI]"]
    body = []
    for i, layer in enumerate(result.layers):
        cells = [str(layer)]
        if m is not None:
            e = m.pc1[i]
            cells += [f"{_fmt(e.value)} [{_fmt(e.low)}, {_fmt(e.high)}]", _fmt(m.null[i].pc1.high),
                      _fmt(m.pc12[i].value), _fmt(m.pr[i].value, 2)]
        if a is not None:
            e = a.spearman[i]
            cells += [f"{_fmt(e.value, 2)} [{_fmt(e.low, 2)}, {_fmt(e.high, 2)}]", f"{a.p_bonferroni[i]:.2g}"]
        if o is not None:
            cells += [_fmt(o.layer_mean[i]),
                      "n/a" if o.init_per_head is None else _fmt(float(sum(o.init_per_head[i]) / len(o.init_per_head[i])))]
        if f is not None:
            e = f.mean[i]
            cells += [f"{_fmt(e.value, 2)} [{_fmt(e.low, 2)}, {_fmt(e.high, 2)}]"]
        body.append("<tr>" + "".join(f'<td class="num">{escape(c)}</td>' for c in cells) + "</tr>")
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _provenance_table(result: Any) -> str:
    prov = dict(result.provenance)
    versions = prov.pop("versions", {}) or {}
    rows = [(k, v) for k, v in prov.items()] + [("n prompts", result.n_prompts),
                                                ("layers", f"{len(result.layers)} of {result.n_layers}")]
    rows += [(f"prompt set: {k}", v) for k, v in (result.prompt_set or {}).items()]
    rows += [(f"config.{k}", v) for k, v in result.config.to_dict().items()]
    rows += [(f"version: {k}", v) for k, v in versions.items()]
    rows += [(f"time: {k}", f"{v:.2f} s") for k, v in result.timings.items()]
    return "<table><tbody>" + "".join(f"<tr><th>{escape(str(k))}</th><td>{escape(str(v))}</td></tr>"
                                      for k, v in rows) + "</tbody></table>"


def _set_label(result: Any) -> str:
    """'set mixed, sha256 0123456789ab' for the report header (escaped)."""
    ps = result.prompt_set or {}
    name = ps.get("name", result.config.prompts)
    digest = str(ps.get("hash") or result.provenance.get("prompts_hash", ""))[:12]
    return escape(f"set {name}, sha256 {digest}")


def report_figures(result: Any) -> list[tuple[str, str, Any]]:
    """(anchor, caption, figure) of every figure on the page (the scorecard is a table there)."""
    return [x for x in result.figures() if x[0] != "scorecard"]


def render_report(result: Any) -> str:
    """The report as one HTML string."""
    from plotly.offline import get_plotlyjs

    from geoprobe.report.blocks import html_figure

    model = escape(result.model)
    sections = [html_figure(fig, anchor, caption) for anchor, caption, fig in report_figures(result)]
    notes = "".join(f"<li>{escape(n)}</li>" for n in result.notes)
    notes_html = f'<h2>Notes</h2><ul class="notes">{notes}</ul>' if notes else ""
    created = escape(str(result.provenance.get("created", "")))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>geoprobe scan: {model}</title><style>{_CSS}</style>
<script type="text/javascript">{get_plotlyjs()}</script></head>
<body>
<h1>Bayesian geometry of attention: {model}</h1>
<p class="muted">geoprobe scan · {result.n_prompts} prompts ({_set_label(result)}) · {len(result.layers)} layers · {created} ·
rebuild with <code>geoprobe report results.json</code></p>
<h2>Scorecard</h2>
{scorecard_table(result.scorecard)}
<p class="muted">Definitions: value manifold = PCA of the z-scored final-token value vectors (heads concatenated);
key orthogonality = mean off-diagonal |cos| between the d_head columns of each head's W_K; attention focusing =
per-head entropy of the final token's attention, averaged over heads. Nulls are matched to this run's number of
prompts and dimension. See docs/metrics/ for formulas and pitfalls.</p>
{notes_html}
<h2>Figures</h2>
{''.join(sections)}
<h2>By layer</h2>
{layer_table(result)}
<h2>Provenance</h2>
{_provenance_table(result)}
</body></html>
"""


def write_report(result: Any, path: str | os.PathLike, *, force: bool = False) -> Path:
    """Write the report atomically; an existing file is kept unless ``force``."""
    return write_page(path, lambda: render_report(result), force=force)
