"""Measure a model the user already holds: a Hugging Face causal LM or a TransformerLens
TransformerBridge (TransformerLens users keep their way in).

``wrap(model, tokenizer)`` returns the :class:`~geoprobe.models.loaded.LoadedModel` every
geoprobe function takes. A bridge is unwrapped to the plain model underneath, sharing every
weight (``geoprobe.models.bridge``); the user's object is not modified. Provenance records the
model's ``name_or_path`` and, since nothing says which revision an in-memory model holds, a
SHA-256 of its parameters (names, shapes, dtypes and bytes).
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch

from geoprobe.errors import ArgumentError, GeoprobeError
from geoprobe.models.bridge import unwrap_bridge
from geoprobe.models.loaded import LoadedModel, boot
from geoprobe.provenance import Provenance


def parameters_sha256(model: torch.nn.Module) -> str:
    """SHA-256 over every parameter's name, shape, dtype and bytes, in ``named_parameters`` order."""
    h = hashlib.sha256()
    for name, p in model.named_parameters():
        t = p.detach().cpu().contiguous()
        h.update(f"{name}:{tuple(t.shape)}:{t.dtype}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def wrap(model: Any, tokenizer: Any = None, *, model_id: str | None = None, seed: int | None = None) -> LoadedModel:
    """A ``LoadedModel`` over ``model`` (Hugging Face causal LM or TransformerBridge), for
    :func:`geoprobe.capture`, :func:`geoprobe.scan.scan` and the other experiments.

    ``tokenizer`` defaults to the bridge's own; ``model_id`` to the config's ``name_or_path``."""
    if model is None or isinstance(model, (str, dict)):
        raise ArgumentError(
            f"wrap() takes a Hugging Face causal LM or a TransformerBridge as model, not {type(model).__name__} "
            f"({model!r:.40}); geoprobe.load_model loads a model by name"
        )
    tokenizer = tokenizer if tokenizer is not None else getattr(model, "tokenizer", None)
    if tokenizer is None:
        raise GeoprobeError("wrap() needs the model's tokenizer: pass wrap(model, tokenizer)")
    plain = unwrap_bridge(model)
    if not isinstance(plain, torch.nn.Module) or not hasattr(plain, "config"):
        raise GeoprobeError(f"wrap() takes a Hugging Face causal LM or a TransformerBridge, not {type(model).__name__}")
    name = model_id or getattr(plain.config, "name_or_path", "") or type(plain).__name__
    dtype = str(next(plain.parameters()).dtype).removeprefix("torch.")
    prov = Provenance(
        model_id=name,
        source="memory",
        weights=f"sha256:{parameters_sha256(plain)}",
        tokenizer=getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__,
        dtype=dtype,
        seed=seed,
    )
    return boot(plain, tokenizer, prov)
