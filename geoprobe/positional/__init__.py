"""Positional priors (BAM generalised-Gaussian fits per head) and long-context stability; docs/positional.md."""

from __future__ import annotations

from geoprobe.lazy import lazy_names

#: every public name -> where it lives (``module:attribute``, or a submodule); imported on first use
_LAZY: dict[str, str] = {
    "report": "geoprobe.positional.report",
    "PositionalConfig": "geoprobe.positional.config:PositionalConfig",
    "bam_bias": "geoprobe.positional.prior:bam_bias",
    "bam_logit_bias": "geoprobe.positional.prior:bam_logit_bias",
    "bam_prior": "geoprobe.positional.prior:bam_prior",
    "fit_generalised_gaussian": "geoprobe.positional.prior:fit_generalised_gaussian",
    "gg_prior": "geoprobe.positional.prior:gg_prior",
    "rope_decay": "geoprobe.positional.prior:rope_decay",
    "PositionalResult": "geoprobe.positional.result:PositionalResult",
    "TunnelLengthCurve": "geoprobe.positional.result:TunnelLengthCurve",
    "load_positional": "geoprobe.positional.run:load_positional",
    "run_positional": "geoprobe.positional.run:run_positional",
    "tunnel_length_curve": "geoprobe.positional.tunnel:tunnel_length_curve",
}

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


__getattr__, __dir__ = lazy_names(__name__, _LAZY)
