"""Accept a TransformerLens TransformerBridge wherever geoprobe takes a model.

A bridge wraps the Hugging Face modules in place (each original module becomes the
``original_component`` of a bridge component) and switches attention to eager. geoprobe
reads attention through transformers' AttentionInterface, which needs the original modules,
so :func:`unwrap_bridge` rebuilds the plain model as a structural copy that shares every
parameter and buffer with the bridge (no weight is copied) and gives it back its default
attention implementation.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import torch


def is_bridge(model: Any) -> bool:
    return type(model).__name__ == "TransformerBridge" and hasattr(model, "original_model")


def _strip(module: torch.nn.Module) -> torch.nn.Module:
    inner = getattr(module, "original_component", None)
    if isinstance(inner, torch.nn.Module):
        module = inner
    for name, child in list(module.named_children()):
        plain = _strip(child)
        if plain is not child:
            setattr(module, name, plain)
    return module


def unwrap_bridge(model: Any) -> Any:
    """The plain Hugging Face model under a TransformerBridge (weights shared); anything else as is."""
    if not is_bridge(model):
        return model
    hf = model.original_model
    shared = {id(t): t for t in itertools.chain(hf.parameters(), hf.buffers())}
    plain = _strip(copy.deepcopy(hf, shared))
    plain.config._attn_implementation = None
    impl = "sdpa" if type(plain)._supports_sdpa else "eager"
    plain.set_attn_implementation(impl)
    return plain
