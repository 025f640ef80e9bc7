"""In-context denoising with one attention layer (arXiv 2502.05164).

``tasks`` (linear, sphere, mixture prompts) → ``bayes`` (the oracle and finite-context estimators) →
``attention`` / ``train`` (one-layer softmax and linear attention, trained here) → ``energy`` (the
energy whose one gradient step is attention) and ``landscape`` (its (α, β) map and descent) →
``result`` (DenoiseResult) and ``report`` (its page and figures); ``config`` (DenoiseConfig) and ``run``
(run_denoise) drive them.
"""

from __future__ import annotations

from geoprobe.lazy import lazy_names

#: every public name -> where it lives (``module:attribute``, or a submodule); imported on first use
_LAZY: dict[str, str] = {
    "report": "geoprobe.denoise.report",
    "DenoiseConfig": "geoprobe.denoise.config:DenoiseConfig",
    "tiny_config": "geoprobe.denoise.config:tiny_config",
    "DenoiseResult": "geoprobe.denoise.result:DenoiseResult",
    "run_denoise": "geoprobe.denoise.run:run_denoise",
}

__all__ = ["DenoiseConfig", "DenoiseResult", "run_denoise", "tiny_config"]


__getattr__, __dir__ = lazy_names(__name__, _LAZY)
