"""The ``compare-domains`` page: what a DomainComparison shows (title, sections, figures), rendered
by :mod:`geoprobe.report.page`. Every string from the user or the environment is escaped there."""

from __future__ import annotations

from typing import Any

from geoprobe.report.blocks import html_table
from geoprobe.report.page import Figure, Section, figures_section, notes_section, paragraph, provenance_section

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


def title(cmp: Any) -> str:
    return f"Domain restriction and the value manifold: {cmp.model}"


def subtitle(cmp: Any) -> str:
    return (
        f"geoprobe compare-domains · layer {cmp.layer} · domains {', '.join(cmp.domains)} · "
        f"{cmp.provenance.get('created', '')}"
    )


def domains_figures(cmp: Any) -> list[Figure]:
    """The page's figures (also what ``--figures png|svg|pdf`` exports)."""
    return [
        Figure(
            "sets",
            "PC1, PC1+PC2 and participation ratio of every set with bootstrap CIs; grey bars: each "
            "set's Gaussian null band (same n and d); dashed: the mixed set.",
            cmp.figure(),
        ),
        Figure(
            "differences",
            "Differences with bootstrap CIs; hover for the Bonferroni-adjusted permutation p. "
            "Collapse from domain restriction shows as restricted − mixed > 0; if restricted − control is near 0 "
            "the collapse is explained by length and token frequency (lexical narrowness), not the domain.",
            cmp.difference_figure(),
        ),
    ]


def sections(cmp: Any) -> list[Section]:
    prov = dict(cmp.provenance)
    sets = prov.pop("sets", {}) or {}
    timings = prov.pop("timings", {}) or {}
    config = prov.pop("config", {}) or {}
    paper = html_table(
        [{"model (paper)": m, "mixed PC1 / PC1+PC2 %": a, "mathematics PC1 / PC1+PC2 %": b} for m, a, b in PAPER_TABLE1]
    )
    bal = html_table([{"domain": d, **{f"SMD {k}": f"{v:+.3f}" for k, v in b.items()}} for d, b in cmp.balance.items()])
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
