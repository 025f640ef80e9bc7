"""geoprobe: measure the Bayesian geometry of attention in pretrained language models."""
__version__ = "0.1.0"

from geoprobe.capture import Capture, CaptureConfig, capture, key_weights  # noqa: E402
from geoprobe.models import load_model, twin  # noqa: E402
from geoprobe.models.wrap import wrap  # noqa: E402

__all__ = ["Capture", "CaptureConfig", "capture", "key_weights", "load_model", "twin", "wrap", "__version__"]
