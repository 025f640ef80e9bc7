"""`geoprobe compare`: several scans → the analogue of Table 2 of arXiv 2512.23752 and a global
PCA basis across models. ``run`` (compare_results, run_compare), ``result`` (ModelComparison,
``comparison.json``), ``report`` (its page and figures); ``table``, ``global_pca`` and ``inputs`` are
its parts. See docs/compare.md."""

from geoprobe.compare import report as report  # the page of ModelComparison: registered on import
from geoprobe.compare.global_pca import GlobalPCA, global_pca
from geoprobe.compare.inputs import Architecture, Source
from geoprobe.compare.result import ModelComparison
from geoprobe.compare.run import compare_results, run_compare
from geoprobe.compare.table import PAPER_TABLE2, ComparisonRow, SetEntry

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
