"""Entropy-axis interventions on value vectors (arXiv 2512.23752 §6.2, §7.1); see docs/intervene.md."""

from geoprobe.intervene import report as report  # the page of InterventionResult: registered on import
from geoprobe.intervene.axis import Axis, InterventionError, fit_entropy_axis, random_axes
from geoprobe.intervene.config import InterventionConfig, paper_experiments
from geoprobe.intervene.metrics import (
    Baseline,
    ControlComparison,
    Effects,
    axis_entropy_correlation,
    baseline,
    compare_with_controls,
    evaluate,
)
from geoprobe.intervene.ops import OPS, Edit, intervened, resolve_layer
from geoprobe.intervene.result import InterventionResult, InterventionRow
from geoprobe.intervene.resume import RESUMABLE, Resumable, SweepResult, sweep
from geoprobe.intervene.run import run_interventions
from geoprobe.intervene.verdict import MARGIN_BITS, CalibrationVerdict, TargetVerdict, calibration_verdict

__all__ = [
    "Axis",
    "InterventionError",
    "fit_entropy_axis",
    "random_axes",
    "Edit",
    "OPS",
    "intervened",
    "resolve_layer",
    "Baseline",
    "Effects",
    "ControlComparison",
    "baseline",
    "evaluate",
    "compare_with_controls",
    "axis_entropy_correlation",
    "Resumable",
    "SweepResult",
    "sweep",
    "RESUMABLE",
    "InterventionConfig",
    "InterventionResult",
    "InterventionRow",
    "paper_experiments",
    "run_interventions",
    "MARGIN_BITS",
    "CalibrationVerdict",
    "TargetVerdict",
    "calibration_verdict",
]
