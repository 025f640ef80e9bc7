"""`geoprobe scan`: capture every layer, run the geometry analysers, write results and a report."""

from __future__ import annotations

from geoprobe.lazy import lazy_names

#: every public name -> where it lives (``module:attribute``, or a submodule); imported on first use
_LAZY: dict[str, str] = {
    "report": "geoprobe.scan.report",
    "ANALYSES": "geoprobe.scan.config:ANALYSES",
    "MIN_PROMPTS": "geoprobe.scan.config:MIN_PROMPTS",
    "ScanConfig": "geoprobe.scan.config:ScanConfig",
    "ScanResult": "geoprobe.scan.result:ScanResult",
    "analyse": "geoprobe.scan.run:analyse",
    "scan": "geoprobe.scan.run:scan",
    "Criterion": "geoprobe.scan.scorecard:Criterion",
    "Scorecard": "geoprobe.scan.scorecard:Scorecard",
}

__all__ = [
    "ANALYSES",
    "MIN_PROMPTS",
    "Criterion",
    "ScanConfig",
    "ScanResult",
    "Scorecard",
    "analyse",
    "scan",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY)
