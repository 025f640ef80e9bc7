"""`geoprobe compare`: several scans → the analogue of Table 2 of arXiv 2512.23752 and a global
PCA basis across models. See docs/compare.md."""
from geoprobe.compare.global_pca import GlobalPCA, global_pca
from geoprobe.compare.inputs import Architecture, Source
from geoprobe.compare.report import render_compare_report, run_compare, write_compare_report
from geoprobe.compare.result import ModelComparison, compare_results
from geoprobe.compare.table import PAPER_TABLE2, ComparisonRow, SetEntry

__all__ = ["Architecture", "ComparisonRow", "GlobalPCA", "ModelComparison", "PAPER_TABLE2", "SetEntry", "Source",
           "compare_results", "global_pca", "render_compare_report", "run_compare", "write_compare_report"]
