"""The comparison as one self-contained HTML file, and ``run_compare`` (what the CLI calls).

Like the scan report: plotly.js is inlined once, every string that comes from the user or the
environment (model ids, paths, prompt-set names, notes) goes through :func:`html.escape`.
"""
from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any, Sequence

from geoprobe.report.blocks import write_page
from geoprobe.compare.inputs import short_hash
from geoprobe.compare.table import PAPER, PAPER_TABLE2
from geoprobe.errors import OutputExistsError
from geoprobe.report.html import _CSS

COMPARISON_FILE = "comparison.json"
REPORT_FILE = "compare.html"
_NUMERIC = ("PC1", "|cos|", "%", "n prompts", "layers", "heads", "d_head", "share", "ρ", "D kept")


def table_html(rows: list[dict[str, str]], caption: str | None = None) -> str:
    """An HTML table of display rows (dicts with the same keys); every cell escaped."""
    if not rows:
        return '<p class="muted">(no rows)</p>'
    cols = list(rows[0])
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    num = {c for c in cols if any(k in c for k in _NUMERIC)}
    attr = {c: ' class="num"' if c in num else "" for c in cols}
    body = "".join("<tr>" + "".join(f"<td{attr[c]}>{escape(str(r.get(c, '')))}</td>" for c in cols) + "</tr>"
                   for r in rows)
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def paper_rows() -> list[dict[str, str]]:
    return [{"model": m, "mixed PC1 %": f"{a:.1f}", "mixed PC1+PC2 %": f"{b:.1f}", "restricted set": "math",
             "restricted PC1 %": f"{c:.1f}", "restricted PC1+PC2 %": f"{d:.1f}"} for m, a, b, c, d in PAPER_TABLE2]


def _side_by_side(comp: Any) -> list[dict[str, str]]:
    """Our value-manifold columns (point values) followed by the paper's reference rows."""
    from geoprobe.compare.table import pct

    ours = []
    for r in comp.rows:
        for e in r.restricted or (None,):
            ours.append({"source": "this comparison", "model": r.model,
                         "mixed PC1 %": pct(r.mixed.pc1, ci=False) if r.mixed else "n/a",
                         "mixed PC1+PC2 %": pct(r.mixed.pc12, ci=False) if r.mixed else "n/a",
                         "restricted set": e.label if e else "n/a",
                         "restricted PC1 %": pct(e.pc1, ci=False) if e else "n/a",
                         "restricted PC1+PC2 %": pct(e.pc12, ci=False) if e else "n/a"})
    return ours + [{"source": f"paper ({PAPER}, Table 2)", **r} for r in paper_rows()]


def _figure_html(fig: Any, anchor: str, caption: str) -> str:
    import plotly.io as pio

    div = pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=f"fig-{anchor}",
                      config={"displaylogo": False, "responsive": True})
    return f'<figure id="{escape(anchor)}">{div}<figcaption>{escape(caption)}</figcaption></figure>'


def _sources_rows(comp: Any) -> list[dict[str, str]]:
    return [{"results file": s.path, "model": s.model, "role": s.role, "prompt set": s.set_name,
             "kind": s.set_kind, "set hash": short_hash(s.set_hash), "prompts hash": short_hash(s.prompts_hash),
             "seed": "n/a" if s.seed is None else str(s.seed), "n prompts": str(s.n_prompts),
             "capture": s.capture_dir or "none"} for s in comp.sources]


def _provenance_html(prov: dict[str, Any]) -> str:
    prov = dict(prov)
    versions = prov.pop("versions", {}) or {}
    items = list(prov.items()) + [(f"version: {k}", v) for k, v in versions.items()]
    return "<table><tbody>" + "".join(f"<tr><th>{escape(str(k))}</th><td>{escape(str(v))}</td></tr>"
                                      for k, v in items) + "</tbody></table>"


_COMPARISON_CAPTION = ("Per model: value PC1 (mixed vs restricted, CIs), early-layer key |cos| with its baselines, "
                       "attention-focusing reduction (CI).")
_GLOBAL_CAPTION = ("Shared prompts on the global PC1/PC2 (colour: next-token entropy averaged over models) and each "
                   "model's share of the PC1/PC2 loading energy; dashed: equal shares.")


def compare_figures(comp: Any) -> list[tuple[str, str, Any]]:
    """(anchor, caption, figure) of the page's figures (the global PCA only where there is one)."""
    figs = [("comparison", _COMPARISON_CAPTION, comp.figure())]
    if comp.global_pca is not None:
        figs.append(("global-pca", _GLOBAL_CAPTION, comp.global_figure()))
    return figs


def render_compare_report(comp: Any) -> str:
    """The comparison report as one HTML string."""
    from plotly.offline import get_plotlyjs

    figs = {a: _figure_html(f, a, c) for a, c, f in compare_figures(comp)}

    models = ", ".join(escape(m) for m in comp.models)
    layer = comp.provenance.get("layer", -1)
    frac = comp.provenance.get("early_fraction", 1 / 3)
    notes = "".join(f"<li>{escape(n)}</li>" for n in comp.notes)
    notes_html = f'<h2>Notes and warnings</h2><ul class="notes">{notes}</ul>' if notes else ""
    gp = comp.global_pca
    if gp is None:
        global_html = ('<p class="muted">No global PCA (see the notes). It needs two or more models scanned with '
                       "saved captures on at least 10 shared prompts: scan every model with the same "
                       "<code>--prompts FILE</code>.</p>")
    else:
        ex = ", ".join(f"PC{i + 1} {100 * r:.1f} %" for i, r in enumerate(gp.explained[:5]))
        global_html = (f"<p>{gp.n} shared prompts (hash <code>{escape(short_hash(gp.prompts_hash))}</code>); "
                       f"explained variance {escape(ex)}; participation ratio {gp.participation_ratio:.2f}.</p>"
                       + table_html(gp.table()) + figs["global-pca"])
    created = escape(str(comp.provenance.get("created", "")))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>geoprobe compare: {models}</title><style>{_CSS}</style>
<script type="text/javascript">{get_plotlyjs()}</script></head>
<body>
<h1>Bayesian geometry of attention across models</h1>
<p class="muted">geoprobe compare · {len(comp.rows)} models · {len(comp.sources)} results · {created} ·
value manifold at {"the last layer" if layer == -1 else f"layer {escape(str(layer))}"} ·
early layers = first {100 * float(frac):.0f} % of each model's layers</p>
<h2>Table 2 analogue</h2>
{table_html(comp.table())}
<p class="muted">PC1 and PC1+PC2: % of the standardised final-token value variance (heads concatenated), with
bootstrap CIs; mixed = a multi-domain set (mixed, builtin or a file), restricted = a single-domain set. Early key
|cos| = mean over the analysed early layers of the mean off-diagonal |cos| between W_K columns (init: the same on
the architecture's random initialisation). Focusing = % reduction of the final token's attention entropy from the
first to the last analysed layer, with a paired bootstrap CI. Definitions: docs/compare.md.</p>
<h2>Value manifold beside the paper</h2>
{table_html(_side_by_side(comp))}
<p class="muted">The paper's numbers ({PAPER}, Table 2) are for its own models and prompt sets (final layer,
mixed-domain vs mathematics prompts); ours are for the results compared here.</p>
{notes_html}
<h2>Figures</h2>
{figs["comparison"]}
<h2>Global PCA basis</h2>
{global_html}
<h2>Sources</h2>
{table_html(_sources_rows(comp))}
<h2>Provenance</h2>
{_provenance_html(comp.provenance)}
</body></html>
"""


def write_compare_report(comparison: Any, path: str | os.PathLike, *, force: bool = False) -> Path:
    """Write the report atomically; an existing file is kept unless ``force``."""
    return write_page(path, lambda: render_compare_report(comparison), force=force)


def run_compare(paths: Sequence[str | os.PathLike], out_dir: str | os.PathLike, *, force: bool,
                layer: int = -1) -> tuple[Any, Path, Path]:
    """``geoprobe compare``: write ``out_dir/comparison.json`` and ``out_dir/compare.html``.

    Existing outputs are refused (before anything is computed) unless ``force``. Returns
    (ModelComparison, comparison.json path, compare.html path)."""
    from geoprobe.compare.result import compare_results

    out = Path(out_dir)
    targets = (out / COMPARISON_FILE, out / REPORT_FILE)
    existing = [t for t in targets if t.exists()]
    if existing and not force:
        raise OutputExistsError(f"{str(existing[0])!r} already exists; pass --force to replace it or choose another --out")
    comp = compare_results(paths, layer=layer)
    json_path = comp.save(targets[0])
    html_path = write_compare_report(comp, targets[1], force=True)  # existence was checked before any work
    return comp, json_path, html_path
