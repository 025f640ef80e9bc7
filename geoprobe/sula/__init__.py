"""SULA: in-context Bayesian updating with a known posterior (arXiv 2512.23752 §4.3, §4.5, §5.2).

See docs/sula.md. ``run_sula(model, SulaConfig())`` runs the main condition and the three
controls and returns a ``SulaResult``."""

from geoprobe.sula import report as report  # the page of SulaResult: registered on import
from geoprobe.sula.config import CONDITIONS, SulaConfig, SulaError
from geoprobe.sula.evaluate import (
    POSTERIOR,
    PREDICTIVE,
    TARGETS,
    SulaMetrics,
    calibration_metrics,
    label_distribution,
    label_logprobs,
)
from geoprobe.sula.geometry import SulaGeometry, fit_basis, geometry_stats
from geoprobe.sula.result import SulaCondition, SulaResult
from geoprobe.sula.run import run_sula
from geoprobe.sula.task import (
    CARRIER_WORDS,
    LabelTokens,
    SulaPrompt,
    binary_entropy_bits,
    check_context,
    choose_labels,
    generate,
    generate_all,
    label_tokens,
    posterior_l1,
    predictive_l1,
)
from geoprobe.sula.tracking import KContrast, KTracking, track_k

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
