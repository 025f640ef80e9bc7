"""Batched final-token capture: values, keys, queries, attention, next-token distribution.

The names below are imported on first use (PEP 562), so that ``geoprobe.capture.checkpoint`` and
``geoprobe.capture.defaults`` are read without torch."""

from __future__ import annotations

from geoprobe.lazy import lazy_names

#: every name of the package -> ``module:attribute``; imported on first use
_LAZY: dict[str, str] = {
    "Capture": "geoprobe.capture.result:Capture",
    "CaptureConfig": "geoprobe.capture.run:CaptureConfig",
    "capture": "geoprobe.capture.run:capture",
    "entropy_bits": "geoprobe.capture.run:entropy_bits",
    "key_weights": "geoprobe.capture.run:key_weights",
}

__all__ = ["Capture", "CaptureConfig", "capture", "entropy_bits", "key_weights"]


__getattr__, __dir__ = lazy_names(__name__, _LAZY)
