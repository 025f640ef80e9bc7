"""The ``geoprobe compare`` page: what a ModelComparison shows (title, sections, figures), rendered
by :mod:`geoprobe.report.page`. Every string that comes from the user or the environment (model ids,
paths, prompt-set names, notes) goes through :func:`html.escape`.
"""

from __future__ import annotations

from html import escape
from typing import Any

from geoprobe.compare.inputs import short_hash
from geoprobe.compare.table import PAPER, PAPER_TABLE2, pct
from geoprobe.report.blocks import html_figure
from geoprobe.report.page import Figure, Section, figures_section, notes_section, paragraph, provenance_section

_NUMERIC = ("PC1", "|cos|", "%", "n prompts", "layers", "heads", "d_head", "share", "ρ", "D kept")


def table_html(rows: list[dict[str, str]], caption: str | None = None) -> str:
    """An HTML table of display rows (dicts with the same keys); every cell escaped."""
    if not rows:
        return '<p class="muted">(no rows)</p>'
    cols = list(rows[0])
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    num = {c for c in cols if any(k in c for k in _NUMERIC)}
    attr = {c: ' class="num"' if c in num else "" for c in cols}
    body = "".join(
        "<tr>" + "".join(f"<td{attr[c]}>{escape(str(r.get(c, '')))}</td>" for c in cols) + "</tr>" for r in rows
    )
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def paper_rows() -> list[dict[str, str]]:
    return [
        {
            "model": m,
            "mixed PC1 %": f"{a:.1f}",
            "mixed PC1+PC2 %": f"{b:.1f}",
            "restricted set": "math",
            "restricted PC1 %": f"{c:.1f}",
            "restricted PC1+PC2 %": f"{d:.1f}",
        }
        for m, a, b, c, d in PAPER_TABLE2
    ]


def _side_by_side(comp: Any) -> list[dict[str, str]]:
    """Our value-manifold columns (point values) followed by the paper's reference rows."""
    ours = []
    for r in comp.rows:
        for e in r.restricted or (None,):
            ours.append(
                {
                    "source": "this comparison",
                    "model": r.model,
                    "mixed PC1 %": pct(r.mixed.pc1, ci=False) if r.mixed else "n/a",
                    "mixed PC1+PC2 %": pct(r.mixed.pc12, ci=False) if r.mixed else "n/a",
                    "restricted set": e.label if e else "n/a",
                    "restricted PC1 %": pct(e.pc1, ci=False) if e else "n/a",
                    "restricted PC1+PC2 %": pct(e.pc12, ci=False) if e else "n/a",
                }
            )
    return ours + [{"source": f"paper ({PAPER}, Table 2)", **r} for r in paper_rows()]


def _sources_rows(comp: Any) -> list[dict[str, str]]:
    return [
        {
            "results file": s.path,
            "model": s.model,
            "role": s.role,
            "prompt set": s.set_name,
            "kind": s.set_kind,
            "set hash": short_hash(s.set_hash),
            "prompts hash": short_hash(s.prompts_hash),
            "seed": "n/a" if s.seed is None else str(s.seed),
            "n prompts": str(s.n_prompts),
            "capture": s.capture_dir or "none",
        }
        for s in comp.sources
    ]


_COMPARISON_CAPTION = (
    "Per model: value PC1 (mixed vs restricted, CIs), early-layer key |cos| with its baselines, "
    "attention-focusing reduction (CI)."
)
_GLOBAL_CAPTION = (
    "Shared prompts on the global PC1/PC2 (colour: next-token entropy averaged over models) and each "
    "model's share of the PC1/PC2 loading energy; dashed: equal shares."
)


def compare_figures(comp: Any) -> list[Figure]:
    """The page's figures (the global PCA only where there is one); also what ``--figures`` exports."""
    figs = [Figure("comparison", _COMPARISON_CAPTION, comp.figure())]
    if comp.global_pca is not None:
        figs.append(Figure("global-pca", _GLOBAL_CAPTION, comp.global_figure()))
    return figs


def title(comp: Any) -> str:
    return "Bayesian geometry of attention across models"


def subtitle(comp: Any) -> str:
    layer = comp.provenance.get("layer", -1)
    frac = comp.provenance.get("early_fraction", 1 / 3)
    return (
        f"geoprobe compare · {', '.join(comp.models)} · {len(comp.rows)} models · {len(comp.sources)} results · "
        f"{comp.provenance.get('created', '')} · value manifold at "
        f"{'the last layer' if layer == -1 else f'layer {layer}'} · early layers = first "
        f"{100 * float(frac):.0f} % of each model's layers"
    )


_TABLE_NOTE = (
    "PC1 and PC1+PC2: % of the standardised final-token value variance (heads concatenated), with "
    "bootstrap CIs; mixed = a multi-domain set (mixed, builtin or a file), restricted = a single-domain "
    "set. Early key |cos| = mean over the analysed early layers of the mean off-diagonal |cos| between W_K "
    "columns (init: the same on the architecture's random initialisation). Focusing = % reduction of the "
    "final token's attention entropy from the first to the last analysed layer, with a paired bootstrap "
    "CI. Definitions: docs/compare.md."
)


def _global_html(comp: Any, figures: dict[str, Figure]) -> str:
    gp = comp.global_pca
    if gp is None:
        return (
            '<p class="muted">No global PCA (see the notes). It needs two or more models scanned with saved '
            "captures on at least 10 shared prompts: scan every model with the same <code>--prompts FILE</code>.</p>"
        )
    ex = ", ".join(f"PC{i + 1} {100 * r:.1f} %" for i, r in enumerate(gp.explained[:5]))
    f = figures["global-pca"]
    return (
        f"<p>{gp.n} shared prompts (hash <code>{escape(short_hash(gp.prompts_hash))}</code>); "
        f"explained variance {escape(ex)}; participation ratio {gp.participation_ratio:.2f}.</p>"
        + table_html(gp.table())
        + html_figure(f.fig, f.anchor, f.caption)
    )


def sections(comp: Any) -> list[Section]:
    figures = {f.anchor: f for f in comp.figures()}
    return [
        Section("Table 2 analogue", table_html(comp.table()) + "\n" + paragraph(_TABLE_NOTE)),
        Section(
            "Value manifold beside the paper",
            table_html(_side_by_side(comp))
            + "\n"
            + paragraph(
                f"The paper's numbers ({PAPER}, Table 2) are for its own models and prompt sets (final layer, "
                "mixed-domain vs mathematics prompts); ours are for the results compared here."
            ),
        ),
        *[Section("Notes and warnings", n.html) for n in notes_section(comp.notes)],
        figures_section([figures["comparison"]]),
        Section("Global PCA basis", _global_html(comp, figures)),
        Section("Sources", table_html(_sources_rows(comp))),
        provenance_section(comp.provenance),
    ]
