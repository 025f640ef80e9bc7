"""The scan's page: its figures, in order (drawn in :mod:`geoprobe.scan.report.figures`), and the
page's parts (scorecard table, by-layer table, provenance), registered as :class:`ScanResult`'s page
with :func:`geoprobe.report.page.register_page`, which renders it.

Every string that comes from the user or the environment (model id, paths, prompts in warnings,
provenance) is escaped here or by :mod:`geoprobe.report.blocks`; plotly's own JSON escapes ``<``
inside figures.
"""

from __future__ import annotations

from html import escape

from geoprobe.report.page import (
    Figure,
    Section,
    figures_section,
    notes_section,
    paragraph,
    provenance_section,
    register_page,
)
from geoprobe.scan.report.figures import (
    alignment_figure,
    entropy_scatter,
    focusing_figure,
    identifiability_figure,
    manifold_figure,
    manifold_scatter,
    orthogonality_figure,
)
from geoprobe.scan.result import ScanResult
from geoprobe.scan.scorecard import Scorecard
from geoprobe.text import number

DEFINITIONS = (
    "Definitions: value manifold = PCA of the z-scored final-token value vectors (heads concatenated); key "
    "orthogonality = mean off-diagonal |cos| between the d_head columns of each head's W_K; attention focusing = "
    "per-head entropy of the final token's attention, averaged over heads. Nulls are matched to this run's number "
    "of prompts and dimension. See docs/metrics/ for formulas and pitfalls."
)


def axis_note(result: ScanResult, layer: int) -> str:
    """ " PC1 not identifiable (split-half |cos| X ≤ null Y; …)." for a layer whose PC1 is no axis, else ""."""
    ident = result.identifiability
    note = "" if ident is None or layer not in ident.layers else ident.note(layer)
    return f" {note}: no entropy-axis claim is made for it." if note else ""


def scan_figures(result: ScanResult) -> list[Figure]:
    """Every figure the page shows (and ``--figures`` exports), in page order. The scorecard is a
    table on the page; its plotly version is :func:`~geoprobe.scan.report.figures.scorecard_figure`."""
    figs: list[Figure] = []
    m, a = result.manifold, result.alignment
    if m is not None:
        final = result.layers[-1]
        shown = [final] + [x for x in sorted(m.coords) if x != final]
        for layer in shown:
            figs.append(
                Figure(
                    f"manifold-scatter-{layer}",
                    f"Layer {layer}: final-token value vectors projected on PC1 and PC2 of the "
                    "standardised values, coloured by next-token entropy." + axis_note(result, layer),
                    manifold_scatter(m, layer),
                )
            )
        figs.append(
            Figure(
                "manifold-profile",
                f"PC1, PC1+PC2 and participation ratio by layer; shaded: the matched null "
                f"({m.null[0].kind} data of the same n × d, {m.null[0].draws} draws).",
                manifold_figure(m),
            )
        )
    if a is not None and m is not None:
        figs.append(
            Figure(
                "entropy-scatter",
                "Next-token entropy against the PC1 coordinate of the final layer."
                + axis_note(result, result.layers[-1]),
                entropy_scatter(m, a, result.layers[-1]),
            )
        )
        figs.append(
            Figure(
                "alignment-profile",
                "Spearman ρ between PC1 and next-token entropy by layer, with "
                "bootstrap CIs; filled markers: significant after Bonferroni across layers." + unidentified(result),
                alignment_figure(a),
            )
        )
    if result.identifiability is not None:
        figs.append(
            Figure(
                "pc1-identifiability",
                "Is PC1 an axis? Left: |cos| between PC1 fitted on one half of the prompts and on the other "
                "(median and central range over random halvings) against a null with every value coordinate "
                "permuted across prompts; right: the gap between the first two explained-variance ratios against "
                "North et al.'s (1982) sampling error. Filled: both above their nulls (docs/metrics/"
                "axis_identifiability.md).",
                identifiability_figure(result.identifiability),
            )
        )
    if result.orthogonality is not None:
        figs.append(
            Figure(
                "key-orthogonality",
                "Mean off-diagonal |cos| between W_K columns by layer: head bands, "
                "the Gaussian expectation and the architecture's own random initialisation.",
                orthogonality_figure(result.orthogonality),
            )
        )
    if result.focusing is not None:
        figs.append(
            Figure(
                "attention-focusing",
                "Final-token attention entropy by layer (per-head entropy averaged "
                "over heads), bootstrap CI over prompts; dashed: uniform attention.",
                focusing_figure(result.focusing),
            )
        )
    return figs


def unidentified(result: ScanResult) -> str:
    """ " PC1 is not identifiable at layers …" for the alignment caption (empty when every layer's is)."""
    ident = result.identifiability
    bad = [] if ident is None else [x for x, ok in zip(ident.layers, ident.identifiable) if not ok]
    if not bad:
        return ""
    return f" PC1 not identifiable at layer(s) {', '.join(map(str, bad))}: their ρ is no entropy-axis claim."


def _yes(flag: bool | None) -> str:
    if flag is None:
        return '<span class="muted">n/a</span>'
    return '<span class="pass">yes</span>' if flag else '<span class="fail">no</span>'


def scorecard_table(card: Scorecard) -> str:
    """The scorecard as an HTML table (every cell escaped), with how many criteria pass; the threshold and
    the contrast with the random-init null as columns of their own when the results hold them."""
    rows = []
    contrasts = all("threshold" in r for r in card.rows())
    for c, r in zip(card.criteria, card.rows()):
        extra = f'<td>{escape(r["threshold"])}</td><td class="num">{escape(r["vs_init"])}</td>' if contrasts else ""
        rows.append(
            "<tr>"
            + "".join(f"<td>{escape(r[k])}</td>" for k in ("criterion", "statement"))
            + f'<td class="num">{escape(r["value"])}</td><td class="num">{escape(r["ci"])}</td>'
            + extra
            + f"<td>{_yes(c.passes)}</td><td>{escape(r['null'])}</td><td>{_yes(c.beats_null)}</td>"
            + f'<td class="muted">{escape(r["detail"])}</td></tr>'
        )
    names = ["criterion", "paper's test (§4.4)", "value", "CI"]
    names += ["threshold", "Δ vs random init [CI]"] if contrasts else []
    names += ["passes", "null: random init", "beats null", "detail"]
    head = "".join(f"<th>{h}</th>" for h in names)
    rule = (
        "A criterion passes when its threshold is met <em>and</em> it beats its null, the same architecture at "
        "random initialisation on the same prompts (docs/metrics/scorecard.md). "
        if contrasts
        else ""
    )
    return (
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f'<p class="muted">{rule}{card.n_passed} of {len(card.criteria)} criteria pass for {escape(card.model)}.</p>'
    )


def _num(x: float | None, digits: int = 3, spec: str = "f") -> str:
    """A number of the by-layer table (n/a where undefined, never -0.000: geoprobe.text.number)."""
    return number(x, f".{digits}{spec}")


def layer_table(result: ScanResult) -> str:
    """Every analysis's numbers by layer, each value with its CI (``Estimate.__format__``)."""
    m, a, o, f = result.manifold, result.alignment, result.orthogonality, result.focusing
    ident = result.identifiability
    cols = ["layer"]
    if m is not None:
        cols += ["PC1 [CI]", "null PC1 (upper)", "PC1+PC2", "participation ratio"]
    if a is not None:
        cols += ["Spearman ρ [CI]", "p (Bonferroni)"]
    if o is not None:
        cols += ["key |cos|", "init |cos|"]
    if f is not None:
        cols += ["attention entropy, bits [CI]"]
    if ident is not None:
        cols += ["PC1 split-half |cos| [range]", "null (upper)", "r1 − r2", "North's error", "PC1 identifiable"]
    body = []
    for i, layer in enumerate(result.layers):
        cells = [str(layer)]
        if m is not None:
            cells += [f"{m.pc1[i]:.3f}", _num(m.null[i].pc1.high), _num(m.pc12[i].value), _num(m.pr[i].value, 2)]
        if a is not None:
            rho = f"{a.spearman[i]:.2f}"
            if ident is not None and not ident.of(layer):
                rho = f"PC1 not identifiable (ρ {_num(a.spearman[i].value, 2)})"
            cells += [rho, _num(a.p_bonferroni[i], 2, "g")]
        if o is not None:
            init = o.init_layer_mean
            cells += [_num(o.layer_mean[i]), "n/a" if init is None else _num(init[i])]
        if f is not None:
            cells += [f"{f.mean[i]:.2f}"]
        if ident is not None:
            half, gap = ident.split_half[i], ident.eigengap[i]
            cells += [_num(half.value, 2), _num(half.null_high, 2), _num(gap.gap), _num(gap.north_error)]
            cells += ["yes" if ident.identifiable[i] else "no"]
        body.append("<tr>" + "".join(f'<td class="num">{escape(c)}</td>' for c in cells) + "</tr>")
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def set_label(result: ScanResult) -> str:
    """'set mixed, sha256 0123456789ab' for the page's subtitle (plain text)."""
    ps = result.prompt_set or {}
    name = ps.get("name", result.config.prompts)
    digest = str(ps.get("hash") or result.provenance.get("prompts_hash", ""))[:12]
    return f"set {name}, sha256 {digest}"


def page_subtitle(result: ScanResult) -> str:
    """The line under the page's title (plain text)."""
    return (
        f"geoprobe scan · {result.n_prompts} prompts ({set_label(result)}) · {len(result.layers)} layers · "
        f"{result.provenance.get('created', '')} · rebuild with geoprobe report results.json"
    )


#: the provenance's line for a scan that loaded no model (a model passed in loaded, untimed: it has no load_s)
NO_LOAD = "none in this run: the model was passed in already loaded, so no load time is recorded"


def sections(result: ScanResult) -> list[Section]:
    """Scorecard, notes, figures, by-layer numbers and provenance, in page order."""
    prov = provenance_section(
        result.provenance,
        config=result.config.to_dict(),
        timings=result.timings,
        extra=[
            ("n prompts", result.n_prompts),
            ("layers", f"{len(result.layers)} of {result.n_layers}"),
            *((f"prompt set: {k}", v) for k, v in (result.prompt_set or {}).items()),
            *([("model load", NO_LOAD)] if result.timings and "load_s" not in result.timings else []),
        ],
    )
    return [
        Section("Scorecard", scorecard_table(result.scorecard) + "\n" + paragraph(DEFINITIONS)),
        *notes_section(result.notes),
        figures_section(result.figures()),
        Section("By layer", layer_table(result)),
        prov,
    ]


def title(result: ScanResult) -> str:
    return f"Bayesian geometry of attention: {result.model}"


def summary_html(result: ScanResult) -> str:
    """What Jupyter shows for a scan: the scorecard table."""
    return scorecard_table(result.scorecard)


PAGE = register_page(
    ScanResult,
    title=title,
    subtitle=page_subtitle,
    sections=sections,
    figures=scan_figures,
    summary_html=summary_html,
)
