"""Positional priors (BAM generalised-Gaussian fits per head) and long-context stability; docs/positional.md."""

from geoprobe.positional import (
    report as report,  # the page of PositionalResult and TunnelLengthCurve: registered on import
)
from geoprobe.positional.config import PositionalConfig
from geoprobe.positional.prior import (
    bam_bias,
    bam_logit_bias,
    bam_prior,
    fit_generalised_gaussian,
    gg_prior,
    rope_decay,
)
from geoprobe.positional.result import PositionalResult, TunnelLengthCurve
from geoprobe.positional.run import load_positional, run_positional
from geoprobe.positional.tunnel import tunnel_length_curve

__all__ = [
    "PositionalConfig",
    "PositionalResult",
    "TunnelLengthCurve",
    "bam_bias",
    "bam_logit_bias",
    "bam_prior",
    "fit_generalised_gaussian",
    "gg_prior",
    "load_positional",
    "rope_decay",
    "run_positional",
    "tunnel_length_curve",
]
