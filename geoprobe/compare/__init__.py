"""`geoprobe compare`: several scans → the analogue of Table 2 of arXiv 2512.23752 and a global
PCA basis across models. ``run`` (compare_results, run_compare), ``result`` (ModelComparison,
``comparison.json``), ``report`` (its page and figures); ``table``, ``global_pca`` and ``inputs`` are
its parts. See docs/compare.md."""

from __future__ import annotations

import importlib
from typing import Any

# imported at once: the function global_pca is named like its module, which would otherwise shadow it here
from geoprobe.compare.global_pca import GlobalPCA, global_pca

#: every public name -> where it lives (``module:attribute``, or a submodule); imported on first use
_LAZY: dict[str, str] = {
    "report": "geoprobe.compare.report",
    "Architecture": "geoprobe.compare.inputs:Architecture",
    "Source": "geoprobe.compare.inputs:Source",
    "ModelComparison": "geoprobe.compare.result:ModelComparison",
    "compare_results": "geoprobe.compare.run:compare_results",
    "run_compare": "geoprobe.compare.run:run_compare",
    "PAPER_TABLE2": "geoprobe.compare.table:PAPER_TABLE2",
    "ComparisonRow": "geoprobe.compare.table:ComparisonRow",
    "SetEntry": "geoprobe.compare.table:SetEntry",
}

__all__ = [
    "Architecture",
    "ComparisonRow",
    "GlobalPCA",
    "ModelComparison",
    "PAPER_TABLE2",
    "SetEntry",
    "Source",
    "compare_results",
    "global_pca",
    "run_compare",
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
