"""One batch through the plain model with geoprobe's attention probe: final-token slices only.

The attention layers are read by :mod:`geoprobe.models.attention` (through transformers'
AttentionInterface, or a hand-written exception); the final normed hidden state of each row's
final real token is taken by a pre-hook on the output embedding, which hands the head only
those rows, so the full-vocabulary logits are computed for one position per prompt, whatever
the padding side.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np
import torch

from geoprobe.errors import CaptureError
from geoprobe.models.attention import Probe
from geoprobe.models.loading import LoadedModel
from geoprobe.models.verify import position_ids

#: recorded field of the probe -> site name in error messages
SITES = (("v", "v"), ("k", "k"), ("q", "q"), ("z", "z"), ("entropy", "pattern"))


@contextmanager
def final_hidden(model: LoadedModel, probe: Probe) -> Iterator[dict[str, torch.Tensor]]:
    """Yields a dict whose ``"h"`` is, after each forward pass, the final normed hidden state of
    each row's final real token (batch, d_model); the head then runs on those rows only."""
    state: dict[str, torch.Tensor] = {}
    head = model.hf_model.get_output_embeddings()

    def pre(module: Any, args: tuple) -> tuple:
        h = args[0]
        B, T = h.shape[:2]
        last = probe.final_positions(B, T, h.device)
        sl = h[torch.arange(B, device=h.device), last]
        state["h"] = sl.detach()
        return (sl[:, None],)

    handle = head.register_forward_pre_hook(pre)
    try:
        yield state
    finally:
        handle.remove()


def run_batch(model: LoadedModel, probe: Probe, tok: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """One forward pass (inside ``probing`` and ``final_hidden``); returns the final-token logits (batch, vocab)."""
    device = model.device
    last = (mask.shape[1] - 1 - mask.flip(1).argmax(1)).to(device)
    probe.new_batch(last)
    positions = position_ids(model.arch.position_offset, mask, model.arch.name)
    out = model.hf_model(
        tok.to(device),
        attention_mask=mask.to(device),
        **({} if positions is None else {"position_ids": positions.to(device)}),
        logits_to_keep=0,
        use_cache=False,
    )
    return out.logits[:, -1].float()


def check_finite(model: LoadedModel, probe: Probe, prompt_ids: list[int], layer_pos: dict[int, int]) -> None:
    """Raise naming the first layer and site (in forward order) whose final-token slice is NaN/Inf,
    and a layer that recorded nothing."""
    for model_layer, pos in layer_pos.items():
        rec = probe.records.get(model_layer)
        if rec is None:
            raise CaptureError(
                f"{model.arch.name}: attention layer {pos} recorded nothing in the forward pass; its "
                "attention did not run through geoprobe's function (not supported)"
            )
        for name, site in SITES:
            x = getattr(rec, name)
            if x is None or bool(torch.isfinite(x).all()):
                continue
            bad = int((~torch.isfinite(x)).reshape(x.shape[0], -1).any(1).nonzero()[0, 0])
            raise CaptureError(
                f"non-finite value (NaN/Inf) at layer {pos} site {site} for prompt #{prompt_ids[bad]}; "
                "the forward pass overflowed: rerun with --dtype float32 or drop that prompt"
            )


def finite_logits(logits: torch.Tensor, prompt_ids: list[int]) -> torch.Tensor:
    bad = ~torch.isfinite(logits).all(-1)
    if bool(bad.any()):
        raise CaptureError(
            f"non-finite value (NaN/Inf) at final layer norm for prompt "
            f"#{prompt_ids[int(np.flatnonzero(bad.cpu())[0])]}; "
            "the forward pass overflowed: rerun with --dtype float32 or drop that prompt"
        )
    return logits
