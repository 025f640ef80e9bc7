"""Shared helpers for the intervention tests: prompts, axis fitting, full-tensor capture at one
attention layer (a probe that keeps what the attention function received)."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from geoprobe.capture.run import pad_batch
from geoprobe.intervene import fit_entropy_axis
from geoprobe.intervene.forward import final_logprobs
from geoprobe.intervene.metrics import entropy_bits_of
from geoprobe.intervene.resume import decoder_blocks
from geoprobe.models.architecture import probing
from geoprobe.models.attention import Probe
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


@dataclass
class FullProbe(Probe):
    """A probe that also keeps the full tensors one attention layer received (after any edit)."""

    full_layer: int = -1
    full: dict = field(default_factory=dict)

    def record(self, module, query, key, value, mask, out, scaling, softcap=None, sinks=None, bias=None, window=None):
        if self.layer(module) == self.full_layer:
            self.full.update(
                q=query.detach().clone(),
                k=key.detach().clone(),
                v=value.detach().clone(),
                z=out.detach().clone(),
                attn_mask=None if mask is None else mask.detach().clone(),
                scaling=scaling,
                softcap=softcap,
            )
        super().record(module, query, key, value, mask, out, scaling, softcap, sinks, bias, window)


def pattern(full: dict, kv_group) -> torch.Tensor:
    """The attention pattern (batch, head, q, k) from the full q, k, mask, scaling the layer got."""
    q, k = full["q"].double(), full["k"].double()[:, torch.tensor(kv_group)]
    s = torch.einsum("bhqd,bhkd->bhqk", q, k) * (full["scaling"] or q.shape[-1] ** -0.5)
    if full["softcap"]:
        s = torch.tanh(s / full["softcap"]) * full["softcap"]
    m = full["attn_mask"]
    T = s.shape[-1]
    if m is None:
        s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    elif m.dtype == torch.bool:
        s = s.masked_fill(~m[..., :T], float("-inf"))
    else:
        s = s + m[..., :T].double()
    return torch.softmax(s, -1).nan_to_num(0.0)


@contextmanager
def full_probe(model: Any, layer: int):
    """Probing ``model`` with a FullProbe keeping layout layer ``layer`` in full; ``intervened``
    inside joins it, so it records the edited values."""
    probe = FullProbe(full_layer=model.layout.model_layers[layer])
    with probing(model.hf_model, model.arch, probe):
        yield probe


def run_full(model: Any, probe: Any, prompts: list[str], layer: int) -> dict[str, Any]:
    """One right-padded forward of ``prompts`` inside ``full_probe``: the full q/k/v/z/pattern at
    ``layer``, every block output below it and the input of block ``layer``, and the logits."""
    ids = model.tokenizer(prompts)["input_ids"]
    tok, mask = pad_batch(ids, model.tokenizer.pad_token_id, "right")
    blocks = decoder_blocks(model)
    start = model.layout.model_layers[layer]
    below: list[torch.Tensor] = []

    def post(module, args, output):
        below.append((output[0] if isinstance(output, tuple) else output).detach().clone())

    def pre(module, args, kwargs):
        below.append((args[0] if args else kwargs["hidden_states"]).detach().clone())

    handles = [blocks[i].register_forward_hook(post) for i in range(start)]
    handles.append(blocks[start].register_forward_pre_hook(pre, with_kwargs=True))
    try:
        with torch.inference_mode():
            probe.new_batch(mask.shape[1] - 1 - mask.flip(1).argmax(1))
            logits = model.hf_model(
                tok, attention_mask=mask, position_ids=(mask.cumsum(1) - 1).clamp(min=0), use_cache=False
            ).logits
    finally:
        for h in handles:
            h.remove()
    full = dict(probe.full)
    out = {
        "below": below,
        "q": full["q"],
        "k": full["k"],
        "v": full["v"].transpose(1, 2),
        "z": full["z"],
        "pattern": pattern(full, model.layout.kv_group),
    }
    out["logits"] = logits.detach().clone()
    out["mask"] = mask
    return out


def heads(x: torch.Tensor, n_kv: int, d_head: int) -> torch.Tensor:
    """Values (batch, pos, Hkv, d_head) or flat (batch, pos, Hkv*d_head) as (batch, pos, Hkv, d_head) float64."""
    return x.reshape(x.shape[0], x.shape[1], n_kv, d_head).double()


def rel(a: torch.Tensor, scale: torch.Tensor) -> float:
    return float(a.abs().max() / scale.abs().max().clamp(min=1e-30))


def as_np(x: torch.Tensor) -> np.ndarray:
    return x.double().numpy()
