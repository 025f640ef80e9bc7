"""`geoprobe scan`: capture every layer, run the geometry analysers, write results and a report."""

from geoprobe.scan import report as report  # the page of ScanResult: registered on import
from geoprobe.scan.config import ANALYSES, MIN_PROMPTS, ScanConfig
from geoprobe.scan.result import ScanResult
from geoprobe.scan.run import analyse, scan
from geoprobe.scan.scorecard import Criterion, Scorecard

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
