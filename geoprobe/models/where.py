"""Which model this is and where its inputs go: the two facts every load-time step needs first."""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["architecture_name", "input_device"]


def architecture_name(hf_model: Any) -> str:
    """The model's architecture as its config names it (its class name where the config names none)."""
    return (getattr(hf_model.config, "architectures", None) or [type(hf_model).__name__])[0]


def input_device(hf_model: Any) -> torch.device:
    """Where the token ids go: the input embedding's device or, where accelerate offloaded it
    (its weight on the meta device), the device its dispatch hook runs it on (cpu for disk)."""
    emb = hf_model.get_input_embeddings()
    weight = getattr(emb, "weight", None)
    if not isinstance(weight, torch.Tensor):  # MusicGen: one embedding per codebook
        weight = next(emb.parameters())
    if weight.device.type != "meta":
        return weight.device
    for m in (emb, hf_model):
        dev = getattr(getattr(m, "_hf_hook", None), "execution_device", None)
        if dev is not None and torch.device(dev).type != "meta":
            return torch.device(dev)
    return torch.device("cpu")
