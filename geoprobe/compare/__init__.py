"""`geoprobe compare`: several scans → the analogue of Table 2 of arXiv 2512.23752 and a global
PCA basis across models. ``run`` (compare_results, run_compare), ``result`` (ModelComparison,
``comparison.json``), ``report`` (its page and figures); ``table``, ``global_pca`` and ``inputs`` are
its parts. See docs/compare.md."""

from __future__ import annotations

# imported at once: the function global_pca is named like its module, which would otherwise shadow it here
from geoprobe.compare.global_pca import GlobalPCA, global_pca
from geoprobe.lazy import lazy_names

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


__getattr__, __dir__ = lazy_names(__name__, _LAZY)
