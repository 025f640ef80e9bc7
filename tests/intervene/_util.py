"""Shared helpers for the intervention tests: prompts, axis fitting, full-tensor hook capture."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from geoprobe.capture.run import _pad, attached_hooks
from geoprobe.intervene import fit_entropy_axis
from geoprobe.intervene._forward import final_logprobs
from geoprobe.intervene.metrics import entropy_bits_of
from tests.conftest import PROMPTS

CALIBRATION = list(PROMPTS) + [
    "The weather today is cold, and the wind",
    "Two plus two equals",
    "Once upon a time there lived a king who",
    "import numpy as np\nx = np.",
    "The most important thing to remember is",
    "My favourite colour is",
]


def fit_axis(model: Any, layer: int):
    lp, values = final_logprobs(model, CALIBRATION, batch_size=4, value_layers=[layer])
    return fit_entropy_axis(values[layer], entropy_bits_of(lp), layer=layer)


_AXES: dict[tuple[int, int], Any] = {}


def axis_for(model: Any, layer: int):
    """fit_axis, cached per (model object, layer) for the session."""
    key = (id(model), layer)
    if key not in _AXES:
        _AXES[key] = (model, fit_axis(model, layer))  # keep the model alive so its id stays unique
    return _AXES[key][1]


def run_full(model: Any, prompts: list[str], names: list[str]) -> dict[str, torch.Tensor]:
    """One right-padded forward of ``prompts``; full tensors (all positions) at the named hooks,
    copied out by hooks registered now (after any edit hooks already attached); plus logits."""
    ids = model.tokenizer(prompts)["input_ids"]
    tok, mask = _pad(ids, model.tokenizer.pad_token_id, "right")
    out: dict[str, torch.Tensor] = {}

    def grab(name: str):
        def fn(x: torch.Tensor, hook: Any) -> None:
            out[name] = x.detach().clone()
        return fn

    with attached_hooks(model.bridge, {n: grab(n) for n in names}), torch.inference_mode():
        logits = model.bridge(tok, attention_mask=mask, position_ids=(mask.cumsum(1) - 1).clamp(min=0),
                              return_type="logits", use_cache=False)
    model.adapter.release_forward_state(model.bridge)
    out["logits"] = logits.detach().clone()
    out["mask"] = mask
    return out


def heads(x: torch.Tensor, n_kv: int, d_head: int) -> torch.Tensor:
    """A value hook tensor as (batch, pos, Hkv, d_head) float64."""
    return x.reshape(x.shape[0], x.shape[1], n_kv, d_head).double()


def rel(a: torch.Tensor, scale: torch.Tensor) -> float:
    return float(a.abs().max() / scale.abs().max().clamp(min=1e-30))


def as_np(x: torch.Tensor) -> np.ndarray:
    return x.double().numpy()
