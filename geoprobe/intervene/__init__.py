"""Entropy-axis interventions on value vectors (arXiv 2512.23752 §6.2, §7.1); see docs/intervene.md."""

from __future__ import annotations

from geoprobe.lazy import lazy_names

#: every public name -> where it lives (``module:attribute``, or a submodule); imported on first use
_LAZY: dict[str, str] = {
    "report": "geoprobe.intervene.report",
    "Axis": "geoprobe.intervene.axis:Axis",
    "InterventionError": "geoprobe.intervene.axis:InterventionError",
    "fit_entropy_axis": "geoprobe.intervene.axis:fit_entropy_axis",
    "random_axes": "geoprobe.intervene.axis:random_axes",
    "InterventionConfig": "geoprobe.intervene.config:InterventionConfig",
    "paper_experiments": "geoprobe.intervene.config:paper_experiments",
    "Baseline": "geoprobe.intervene.metrics:Baseline",
    "ControlComparison": "geoprobe.intervene.metrics:ControlComparison",
    "Effects": "geoprobe.intervene.metrics:Effects",
    "axis_entropy_correlation": "geoprobe.intervene.metrics:axis_entropy_correlation",
    "baseline": "geoprobe.intervene.metrics:baseline",
    "compare_with_controls": "geoprobe.intervene.metrics:compare_with_controls",
    "evaluate": "geoprobe.intervene.metrics:evaluate",
    "OPS": "geoprobe.intervene.ops:OPS",
    "Edit": "geoprobe.intervene.ops:Edit",
    "intervened": "geoprobe.intervene.ops:intervened",
    "resolve_layer": "geoprobe.intervene.ops:resolve_layer",
    "InterventionResult": "geoprobe.intervene.result:InterventionResult",
    "InterventionRow": "geoprobe.intervene.result:InterventionRow",
    "RESUMABLE": "geoprobe.intervene.resume:RESUMABLE",
    "Resumable": "geoprobe.intervene.resume:Resumable",
    "SweepResult": "geoprobe.intervene.resume:SweepResult",
    "sweep": "geoprobe.intervene.resume:sweep",
    "run_interventions": "geoprobe.intervene.run:run_interventions",
    "MARGIN_BITS": "geoprobe.intervene.verdict:MARGIN_BITS",
    "CalibrationVerdict": "geoprobe.intervene.verdict:CalibrationVerdict",
    "TargetVerdict": "geoprobe.intervene.verdict:TargetVerdict",
    "calibration_verdict": "geoprobe.intervene.verdict:calibration_verdict",
}

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


__getattr__, __dir__ = lazy_names(__name__, _LAZY)
