"""Positional priors (BAM generalised-Gaussian fits per head) and long-context stability; docs/positional.md."""
from geoprobe.positional.prior import bam_bias, bam_logit_bias, bam_prior, fit_generalised_gaussian, gg_prior, rope_decay
from geoprobe.positional.run import PositionalConfig, load_positional, run_positional

__all__ = ["PositionalConfig", "bam_bias", "bam_logit_bias", "bam_prior", "fit_generalised_gaussian", "gg_prior",
           "load_positional", "rope_decay", "run_positional"]
