"""The ``compare-domains`` page: what a DomainComparison shows (title, sections, and its figures: every
set's value-manifold statistics and the differences between sets per domain), registered as its page
with :func:`geoprobe.report.page.register_page`. Every string from the user or the environment is
escaped by :mod:`geoprobe.report.blocks`."""

from __future__ import annotations

from typing import Any

from geoprobe.analysis.contrast import METRICS
from geoprobe.domains.config import CONTROL_SUFFIX, KINDS
from geoprobe.domains.result import DomainComparison, fmt_p
from geoprobe.report.blocks import html_table
from geoprobe.report.page import (
    Figure,
    Section,
    figures_section,
    notes_section,
    paragraph,
    provenance_section,
    register_page,
)
from geoprobe.report.series import Line, Panel, Reference, estimate_panels
from geoprobe.sampling import MIXED
from geoprobe.text import number

#: arXiv 2512.23752 Table 1: final-layer PC1 / PC1+PC2 (%) for mixed and mathematics prompts
PAPER_TABLE1 = (
    ("Pythia-410M", "79.6 / 99.7", "58.0 / 99.9"),
    ("Phi-2", "46.4 / 60.6", "52.2 / 63.5"),
    ("Llama-3.2-1B", "36.6 / 51.4", "52.5 / 73.6"),
)

_TABLE_NOTE = (
    "PC1 and PC1+PC2: explained-variance ratios of the PCA of z-scored final-token value vectors (KV heads "
    "concatenated); PR: participation ratio. Intervals: bootstrap over prompts; Δ: bootstrap CI of the "
    "difference and a permutation p-value, Bonferroni-adjusted across domains. Every set has the same number "
    "of prompts, because PC1 of standardised data depends on n. See docs/metrics/domain_restriction.md."
)


# -- figures ------------------------------------------------------------------------------------
def plot_title(cmp: DomainComparison, what: str) -> str:
    n = sorted({s.n for s in cmp.sets.values()})
    return f"{cmp.model or 'model'}, layer {cmp.layer}: {what} (n = {', '.join(map(str, n))} per set)"


def sets_figure(cmp: DomainComparison) -> Any:
    """PC1 %, PC1+PC2 % and PR per set with their intervals, one series per kind; the pale bar at each set
    is its Gaussian null band, the dotted line the mixed set's value. Drawn by
    :func:`geoprobe.report.series.estimate_panels` (a point per set, nothing joins two sets)."""
    names = cmp.order()
    conf = round(100 * cmp.sets[MIXED].pc1.confidence)
    panels = []
    for m, title, y_title in zip(
        METRICS,
        ("PC1 (%)", "PC1+PC2 (%)", "participation ratio"),
        ("% of standardised variance", "% of standardised variance", "effective dimensions"),
    ):
        scale = 1.0 if m == "pr" else 100.0
        lines = []
        for kind in KINDS:
            ks = [k for k in names if cmp.sets[k].kind == kind]
            if not ks:
                continue
            est = [getattr(cmp.sets[k], m) for k in ks]
            null = [getattr(cmp.sets[k].null, m) for k in ks]
            lines.append(
                Line(
                    kind,
                    ks,
                    [scale * e.value for e in est],
                    [scale * e.low for e in est],
                    [scale * e.high for e in est],
                    null_low=[scale * b.low for b in null],
                    null_high=[scale * b.high for b in null],
                    markers=True,
                    ci=f"{conf} % CI",
                )
            )
        mixed = Reference("mixed set", scale * getattr(cmp.sets[MIXED], m).value)
        panels.append(Panel(lines, y_title, title, include=(0.0,), references=[mixed]))
    return estimate_panels(
        panels,
        title=plot_title(cmp, "value manifold, mixed vs restricted vs matched control"),
        x_title="",
        null_name=f"Gaussian null ({conf} % band)",
        height=460,
    )


def difference_figure(cmp: DomainComparison) -> Any:
    """Per domain: Δ(restricted − mixed), Δ(control − mixed) and Δ(restricted − control) with intervals, for
    PC1, PC1+PC2 (percentage points) and PR, against 0 (hover: the Bonferroni-adjusted permutation p). Drawn by
    :func:`geoprobe.report.series.estimate_panels`: one point per domain and contrast, side by side."""
    conf = round(100 * cmp.sets[MIXED].pc1.confidence)
    series = (
        ("restricted − mixed", lambda d: (MIXED, d)),
        ("control − mixed", lambda d: (MIXED, d + CONTROL_SUFFIX)),
        ("restricted − control", lambda d: (d + CONTROL_SUFFIX, d)),
    )
    panels = []
    for m, title in zip(METRICS, ("ΔPC1 (pp)", "ΔPC1+PC2 (pp)", "ΔPR")):
        scale = 1.0 if m == "pr" else 100.0
        lines = []
        for label, pair in series:
            pts = [(d, c) for d in cmp.domains if (c := cmp.get(*pair(d))) is not None]
            if pts:
                lines.append(
                    Line(
                        label,
                        [d for d, _ in pts],
                        [scale * c.diff[m].value for _, c in pts],
                        [scale * c.diff[m].low for _, c in pts],
                        [scale * c.diff[m].high for _, c in pts],
                        text=[f"p = {fmt_p(c.p_adjusted[m])} (Bonferroni)" for _, c in pts],
                        markers=True,
                        ci=f"{conf} % CI",
                    )
                )
        panels.append(Panel(lines, title, title, references=[Reference("no difference", 0.0)]))
    return estimate_panels(panels, title=plot_title(cmp, "Δ value manifold by domain"), x_title="domain", height=420)


# -- the page ---------------------------------------------------------------------------------------
def title(cmp: DomainComparison) -> str:
    return f"Domain restriction and the value manifold: {cmp.model}"


def subtitle(cmp: DomainComparison) -> str:
    return (
        f"geoprobe compare-domains · layer {cmp.layer} · domains {', '.join(cmp.domains)} · "
        f"{cmp.provenance.get('created', '')}"
    )


def domains_figures(cmp: DomainComparison) -> list[Figure]:
    """The page's figures (also what ``--figures png|svg|pdf`` exports)."""
    return [
        Figure(
            "sets",
            "PC1, PC1+PC2 and participation ratio of every set with bootstrap CIs; pale bars: each "
            "set's Gaussian null band (same n and d); dotted: the mixed set.",
            sets_figure(cmp),
        ),
        Figure(
            "differences",
            "Differences with bootstrap CIs; hover for the Bonferroni-adjusted permutation p. "
            "Collapse from domain restriction shows as restricted − mixed > 0; if restricted − control is near 0 "
            "the collapse is explained by length and token frequency (lexical narrowness), not the domain.",
            difference_figure(cmp),
        ),
    ]


def sections(cmp: DomainComparison) -> list[Section]:
    prov = dict(cmp.provenance)
    sets = prov.pop("sets", {}) or {}
    timings = prov.pop("timings", {}) or {}
    config = prov.pop("config", {}) or {}
    paper = html_table(
        [{"model (paper)": m, "mixed PC1 / PC1+PC2 %": a, "mathematics PC1 / PC1+PC2 %": b} for m, a, b in PAPER_TABLE1]
    )
    bal = html_table(
        [{"domain": d, **{f"SMD {k}": f"{number(v, '+.3f')}" for k, v in b.items()}} for d, b in cmp.balance.items()]
    )
    set_rows = [
        {
            "set": k,
            "n": s.get("n"),
            "sha256": str(s.get("hash", ""))[:16],
            "pool": s.get("pool", ""),
            "domains": ", ".join(f"{d} {c}" for d, c in (s.get("domain_counts") or {}).items()),
            "matched to": s.get("matched_to", ""),
        }
        for k, s in sets.items()
    ]
    return [
        Section("Table 1 analogue", html_table(cmp.table()) + "\n" + paragraph(_TABLE_NOTE)),
        Section("The paper's numbers (arXiv 2512.23752, Table 1)", paper, level=3),
        *notes_section(cmp.notes),
        figures_section(cmp.figures()),
        Section(
            "Matched controls: balance",
            paragraph(
                "Standardised mean difference between each control and its restricted set, per matching "
                "feature (|SMD| < 0.1 is a good match)."
            )
            + "\n"
            + bal,
        ),
        Section("Prompt sets", html_table(set_rows)),
        provenance_section(prov, config=config, timings=timings),
    ]


PAGE = register_page(DomainComparison, title=title, subtitle=subtitle, sections=sections, figures=domains_figures)
