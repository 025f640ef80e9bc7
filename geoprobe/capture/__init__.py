"""Batched final-token capture: values, keys, queries, attention, next-token distribution.

The names below are imported on first use (PEP 562), so that ``geoprobe.capture.checkpoint`` and
``geoprobe.capture.defaults`` are read without torch."""

from __future__ import annotations

import importlib
from typing import Any

#: every name of the package -> ``module:attribute``; imported on first use
_LAZY: dict[str, str] = {
    "Capture": "geoprobe.capture.result:Capture",
    "CaptureConfig": "geoprobe.capture.run:CaptureConfig",
    "capture": "geoprobe.capture.run:capture",
    "entropy_bits": "geoprobe.capture.run:entropy_bits",
    "key_weights": "geoprobe.capture.run:key_weights",
}

__all__ = ["Capture", "CaptureConfig", "capture", "entropy_bits", "key_weights"]


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
