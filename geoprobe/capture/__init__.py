"""Batched final-token capture: values, keys, queries, attention, next-token distribution."""

from geoprobe.capture.result import Capture
from geoprobe.capture.run import CaptureConfig, capture, entropy_bits, key_weights

__all__ = ["Capture", "CaptureConfig", "capture", "entropy_bits", "key_weights"]
