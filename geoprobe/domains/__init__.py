"""``geoprobe compare-domains``: mixed-domain vs domain-restricted value manifolds (arXiv 2512.23752
§5.1, Table 1) with matched controls. ``config`` (DomainsConfig), ``run`` (sample, capture and
compare with a model), ``compare`` (the comparison from value vectors), ``result``
(DomainComparison, ``domains.json``), ``report`` (its page). See docs/domains.md."""

from __future__ import annotations

from geoprobe.lazy import lazy_names

#: every public name -> where it lives (``module:attribute``, or a submodule); imported on first use
_LAZY: dict[str, str] = {
    "report": "geoprobe.domains.report",
    "compare_domains": "geoprobe.domains.compare:compare_domains",
    "CONTROL_SUFFIX": "geoprobe.domains.config:CONTROL_SUFFIX",
    "KINDS": "geoprobe.domains.config:KINDS",
    "DomainsConfig": "geoprobe.domains.config:DomainsConfig",
    "DomainComparison": "geoprobe.domains.result:DomainComparison",
    "SetSummary": "geoprobe.domains.result:SetSummary",
    "DomainRun": "geoprobe.domains.run:DomainRun",
    "compare_domains_run": "geoprobe.domains.run:compare_domains_run",
}

__all__ = [
    "CONTROL_SUFFIX",
    "KINDS",
    "DomainComparison",
    "DomainRun",
    "DomainsConfig",
    "SetSummary",
    "compare_domains",
    "compare_domains_run",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY)
