"""Model registry, loading (Hub, local, GGUF), architecture inspection and twins.

The names below are imported on first use (PEP 562): ``geoprobe.models.options`` (LoadOptions) and
``geoprobe.models.registry`` (the aliases) are read without torch, which loading a model imports."""

from __future__ import annotations

from geoprobe.lazy import lazy_names

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


__getattr__, __dir__ = lazy_names(__name__, _LAZY)
