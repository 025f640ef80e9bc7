"""Model registry, loading (Hub, local, GGUF), family adapters and architecture twins."""
from geoprobe.models.adapters import Layout, Site, adapter_for, supported_architectures
from geoprobe.models.loading import LoadedModel, load_model
from geoprobe.models.registry import ALIASES, DEFAULT_MODEL, ModelSpec
from geoprobe.models.twins import twin

__all__ = [
    "ALIASES",
    "DEFAULT_MODEL",
    "LoadedModel",
    "Layout",
    "ModelSpec",
    "Site",
    "adapter_for",
    "load_model",
    "supported_architectures",
    "twin",
]
