"""Model registry, loading (Hub, local, GGUF), architecture inspection and twins."""

from geoprobe.models.layout import Layout, Site
from geoprobe.models.loaded import LoadedModel
from geoprobe.models.loading import load_model
from geoprobe.models.registry import ALIASES, DEFAULT_MODEL, ModelSpec
from geoprobe.models.twins import twin

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
