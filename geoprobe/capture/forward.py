"""One batch through the plain model with geoprobe's attention probe: final-token slices only.

The attention layers are read by :mod:`geoprobe.models.attention` (through transformers'
AttentionInterface, or a hand-written exception); the final normed hidden state of each row's
final real token is taken by a pre-hook on the output embedding, which hands the head only
those rows, so the full-vocabulary logits are computed for one position per prompt, whatever
the padding side.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import torch

from geoprobe.capture.transfer import to_device
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
    last = to_device(mask.shape[1] - 1 - mask.flip(1).argmax(1), device)
    probe.new_batch(last)
    positions = position_ids(model.arch.position_offset, mask, model.arch.name)
    out = model.hf_model(
        to_device(tok, device),
        attention_mask=to_device(mask, device),
        **({} if positions is None else {"position_ids": to_device(positions, device)}),
        logits_to_keep=0,
        use_cache=False,
    )
    return out.logits[:, -1].float()


def check_recorded(model: LoadedModel, probe: Probe, layer_pos: dict[int, int]) -> None:
    """Raise naming the first layer (model layer -> geoprobe layer ``layer_pos``) that recorded nothing."""
    for model_layer, pos in layer_pos.items():
        if probe.records.get(model_layer) is None:
            raise CaptureError(
                f"{model.arch.name}: attention layer {pos} recorded nothing in the forward pass; its "
                "attention did not run through geoprobe's function (not supported)"
            )


def check_finite_rows(got: Mapping[str, np.ndarray], prompt_ids: list[int], layers: Sequence[int]) -> None:
    """Raise naming the first layer and site (in forward order), then the final layer norm, whose
    final-token slice is NaN/Inf in one batch's host arrays (``"{layer_pos}.{site}"``, ``next_*``;
    :func:`geoprobe.capture.run.capture`), and the batch row's prompt."""
    for layer_pos, layer in enumerate(layers):
        for name, site in SITES:
            x = got.get(f"{layer_pos}.{name}")
            if x is None or bool(np.isfinite(x).all()):
                continue
            bad = int(np.flatnonzero(~np.isfinite(x).reshape(x.shape[0], -1).all(1))[0])
            raise CaptureError(
                f"non-finite value (NaN/Inf) at layer {layer} site {site} for prompt #{prompt_ids[bad]}; "
                "the forward pass overflowed: rerun with --dtype float32 or drop that prompt"
            )
    for name in ("next_entropy", "next_top_probs"):
        x = got[name]
        bad_rows = ~np.isfinite(x).reshape(x.shape[0], -1).all(1)
        if bad_rows.any():
            first = prompt_ids[int(np.flatnonzero(bad_rows)[0])]
            raise CaptureError(
                f"non-finite value (NaN/Inf) at final layer norm for prompt #{first}; "
                "the forward pass overflowed: rerun with --dtype float32 or drop that prompt"
            )
