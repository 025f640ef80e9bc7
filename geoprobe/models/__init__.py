"""Model registry, loading (Hub, local, GGUF), architecture inspection and twins.

The names below are imported on first use (PEP 562): ``geoprobe.models.options`` (LoadOptions) and
``geoprobe.models.registry`` (the aliases) are read without torch, which loading a model imports."""

from __future__ import annotations

import importlib
from typing import Any

#: every name of the package -> ``module:attribute``; imported on first use
_LAZY: dict[str, str] = {
    "ALIASES": "geoprobe.models.registry:ALIASES",
    "DEFAULT_MODEL": "geoprobe.models.registry:DEFAULT_MODEL",
    "LoadedModel": "geoprobe.models.loaded:LoadedModel",
    "Layout": "geoprobe.models.layout:Layout",
    "ModelSpec": "geoprobe.models.registry:ModelSpec",
    "Site": "geoprobe.models.layout:Site",
    "load_model": "geoprobe.models.loading:load_model",
    "twin": "geoprobe.models.twins:twin",
}

__all__ = [
    "ALIASES",
    "DEFAULT_MODEL",
    "LoadedModel",
    "Layout",
    "ModelSpec",
    "Site",
    "load_model",
    "twin",
]


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
