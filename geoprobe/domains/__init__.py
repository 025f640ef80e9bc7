"""``geoprobe compare-domains``: mixed-domain vs domain-restricted value manifolds (arXiv 2512.23752
§5.1, Table 1) with matched controls. ``config`` (DomainsConfig), ``run`` (sample, capture and
compare with a model), ``compare`` (the comparison from value vectors), ``result``
(DomainComparison, ``domains.json``), ``report`` (its page). See docs/domains.md."""

from geoprobe.domains import report as report  # the page of DomainComparison: registered on import
from geoprobe.domains.compare import compare_domains
from geoprobe.domains.config import CONTROL_SUFFIX, KINDS, DomainsConfig
from geoprobe.domains.result import DomainComparison, SetSummary
from geoprobe.domains.run import DomainRun, compare_domains_run

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
