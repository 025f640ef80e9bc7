"""`geoprobe scan`: capture every layer, run the geometry analysers, write results and a report."""

from __future__ import annotations

import importlib
from typing import Any

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


def __getattr__(name: str) -> Any:  # each name imported on first use (PEP 562): importing a submodule stays cheap
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = importlib.import_module(module)
    value = getattr(value, attr) if attr else value
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
