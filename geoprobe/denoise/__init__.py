"""In-context denoising with one attention layer (arXiv 2502.05164).

``tasks`` (linear, sphere, mixture prompts) → ``bayes`` (the oracle and finite-context estimators) →
``attention`` / ``train`` (one-layer softmax and linear attention, trained here) → ``energy`` (the
energy whose one gradient step is attention) and ``landscape`` (its (α, β) map and descent) →
``result`` (DenoiseResult) and ``report`` (its page and figures); ``config`` (DenoiseConfig) and ``run``
(run_denoise) drive them.
"""

from geoprobe.denoise import report as report  # the page of DenoiseResult: registered on import
from geoprobe.denoise.config import DenoiseConfig, tiny_config
from geoprobe.denoise.result import DenoiseResult
from geoprobe.denoise.run import run_denoise

__all__ = ["DenoiseConfig", "DenoiseResult", "run_denoise", "tiny_config"]
