"""`geoprobe scan`: capture every layer, run the geometry analysers, write results and a report."""
from geoprobe.scan.config import ANALYSES, MIN_PROMPTS, Probe, ProbeError, ScanConfig, load_probe
from geoprobe.scan.result import ScanResult
from geoprobe.scan.run import analyse, scan
from geoprobe.scan.scorecard import Criterion, Scorecard

__all__ = ["ANALYSES", "MIN_PROMPTS", "Criterion", "Probe", "ProbeError", "ScanConfig", "ScanResult", "Scorecard",
           "analyse", "load_probe", "scan"]
