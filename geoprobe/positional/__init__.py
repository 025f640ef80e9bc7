"""Positional priors (BAM generalised-Gaussian fits per head) and long-context stability; docs/positional.md."""

from __future__ import annotations

import importlib
from typing import Any

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


def __getattr__(name: str) -> Any:  # each name imported on first use (PEP 562): importing a submodule stays cheap
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = importlib.import_module(module)
    value = getattr(value, attr) if attr else value
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
