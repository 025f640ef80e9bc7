"""SULA: in-context Bayesian updating with a known posterior (arXiv 2512.23752 §4.3, §4.5, §5.2).

See docs/sula.md. ``run_sula(model, SulaConfig())`` runs the main condition and the three
controls and returns a ``SulaResult``."""

from __future__ import annotations

from geoprobe.lazy import lazy_names

#: every public name -> where it lives (``module:attribute``, or a submodule); imported on first use
_LAZY: dict[str, str] = {
    "report": "geoprobe.sula.report",
    "CONDITIONS": "geoprobe.sula.config:CONDITIONS",
    "SulaConfig": "geoprobe.sula.config:SulaConfig",
    "SulaError": "geoprobe.sula.config:SulaError",
    "POSTERIOR": "geoprobe.sula.evaluate:POSTERIOR",
    "PREDICTIVE": "geoprobe.sula.evaluate:PREDICTIVE",
    "TARGETS": "geoprobe.sula.evaluate:TARGETS",
    "SulaMetrics": "geoprobe.sula.evaluate:SulaMetrics",
    "calibration_metrics": "geoprobe.sula.evaluate:calibration_metrics",
    "label_distribution": "geoprobe.sula.evaluate:label_distribution",
    "label_logprobs": "geoprobe.sula.evaluate:label_logprobs",
    "SulaGeometry": "geoprobe.sula.geometry:SulaGeometry",
    "fit_basis": "geoprobe.sula.geometry:fit_basis",
    "geometry_stats": "geoprobe.sula.geometry:geometry_stats",
    "SulaCondition": "geoprobe.sula.result:SulaCondition",
    "SulaResult": "geoprobe.sula.result:SulaResult",
    "run_sula": "geoprobe.sula.run:run_sula",
    "CARRIER_WORDS": "geoprobe.sula.task:CARRIER_WORDS",
    "LabelTokens": "geoprobe.sula.task:LabelTokens",
    "SulaPrompt": "geoprobe.sula.task:SulaPrompt",
    "binary_entropy_bits": "geoprobe.sula.task:binary_entropy_bits",
    "check_context": "geoprobe.sula.task:check_context",
    "choose_labels": "geoprobe.sula.task:choose_labels",
    "generate": "geoprobe.sula.task:generate",
    "generate_all": "geoprobe.sula.task:generate_all",
    "label_tokens": "geoprobe.sula.task:label_tokens",
    "posterior_l1": "geoprobe.sula.task:posterior_l1",
    "predictive_l1": "geoprobe.sula.task:predictive_l1",
    "KContrast": "geoprobe.sula.tracking:KContrast",
    "KTracking": "geoprobe.sula.tracking:KTracking",
    "track_k": "geoprobe.sula.tracking:track_k",
}

__all__ = [
    "POSTERIOR",
    "PREDICTIVE",
    "TARGETS",
    "CARRIER_WORDS",
    "CONDITIONS",
    "KContrast",
    "KTracking",
    "LabelTokens",
    "SulaCondition",
    "SulaConfig",
    "SulaError",
    "SulaGeometry",
    "SulaMetrics",
    "SulaPrompt",
    "SulaResult",
    "binary_entropy_bits",
    "calibration_metrics",
    "check_context",
    "choose_labels",
    "fit_basis",
    "generate",
    "generate_all",
    "label_tokens",
    "geometry_stats",
    "label_distribution",
    "label_logprobs",
    "posterior_l1",
    "predictive_l1",
    "run_sula",
    "track_k",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY)
