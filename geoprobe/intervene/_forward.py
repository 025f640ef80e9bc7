"""Plain forward passes through the bridge that keep the final-position next-token
log-probabilities (and, optionally, the final-token values of some layers as attention read
them, i.e. after any edit registered earlier on the same hook)."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np
import torch

from geoprobe.capture.run import _pad, attached_hooks, next_token_distribution, tokenize
from geoprobe.models.adapters import Site
from geoprobe.models.loading import LoadedModel


@dataclass
class Batch:
    rows: list[int]
    ids: torch.Tensor
    mask: torch.Tensor
    position_ids: torch.Tensor
    last: torch.Tensor  # final real position per row


def batches(model: LoadedModel, prompts: Sequence[str], batch_size: int = 16,
            max_tokens: int | None = None) -> list[Batch]:
    """Right-padded batches, longest prompts first (as ``capture`` builds them)."""
    ids, _ = tokenize(model, prompts, max_tokens)
    order = np.argsort(-np.array([len(s) for s in ids]), kind="stable")
    out = []
    for i in range(0, len(ids), batch_size):
        rows = [int(r) for r in order[i: i + batch_size]]
        tok, mask = _pad([ids[r] for r in rows], model.tokenizer.pad_token_id, "right")
        out.append(Batch(rows, tok, mask, (mask.cumsum(1) - 1).clamp(min=0), mask.sum(1) - 1))
    return out


@contextmanager
def _final_hooks(model: LoadedModel, state: dict, value_layers: Sequence[int]) -> Iterator[None]:

    def norm_hook(x: torch.Tensor, hook: Any) -> None:
        rows = torch.arange(x.shape[0], device=x.device)
        state["h"] = x.detach()[rows, state["last"].to(x.device)]

    hooks = {model.adapter.final_norm_hook: norm_hook, **value_hooks(model, state, value_layers)}
    with attached_hooks(model.bridge, hooks):
        yield


def value_hooks(model: LoadedModel, state: dict, value_layers: Sequence[int]) -> dict[str, Any]:
    """Hooks keeping the final-token values of ``value_layers`` in ``state[("v", layer)]``
    (positions from ``state["last"]``); registered after an edit hook, they see the edited values."""
    lay = model.layout

    def v_hook(layer: int) -> Any:
        def fn(x: torch.Tensor, hook: Any) -> None:
            state[("v", layer)] = model.adapter.at_positions("v", x.detach(), state["last"], lay.d_head).float().cpu()
        return fn

    return {model.adapter.hook_name(Site(layer, "v")): v_hook(layer) for layer in value_layers}


def final_logprobs(model: LoadedModel, prompts: Sequence[str], batch_size: int = 16,
                   value_layers: Sequence[int] = ()) -> tuple[torch.Tensor, dict[int, np.ndarray]]:
    """(n, vocab) float32 next-token log-probs at each prompt's final token, and the final-token
    values (n, Hkv, d_head) of ``value_layers``. Call inside ``intervened`` to edit; value hooks
    registered here run after the edit hooks, so they see the edited values."""
    state: dict = {}
    n = len(prompts)
    logp: torch.Tensor | None = None
    values = {layer: np.zeros((n, model.layout.n_kv_heads, model.layout.d_head), np.float32)
              for layer in value_layers}
    device = model.device
    with _final_hooks(model, state, value_layers), torch.inference_mode():
        try:
            for b in batches(model, prompts, batch_size):
                state["last"] = b.last
                model.bridge(b.ids.to(device), attention_mask=b.mask.to(device),
                             position_ids=b.position_ids.to(device), return_type="logits", logits_to_keep=1,
                             use_cache=False)
                lp = next_token_distribution(model, state["h"]).float().cpu()
                if logp is None:
                    logp = torch.zeros((n, lp.shape[1]), dtype=torch.float32)
                logp[b.rows] = lp
                for layer in value_layers:
                    values[layer][b.rows] = state[("v", layer)].numpy()
        finally:
            model.adapter.release_forward_state(model.bridge)
    assert logp is not None
    return logp, values


def text_nll(model: LoadedModel, texts: Sequence[str], batch_size: int = 4) -> np.ndarray:
    """Per-token next-token NLL (nats) at every position of every text (each position t predicts
    token t+1), concatenated over the texts. Logits come from the final-norm hook through the
    unembedding, as in ``capture`` (Gemma-3's final soft-capping included)."""
    out: list[np.ndarray] = []
    state: dict = {}

    def norm_hook(x: torch.Tensor, hook: Any) -> None:
        state["h"] = x.detach()

    device = model.device
    with attached_hooks(model.bridge, {model.adapter.final_norm_hook: norm_hook}), torch.inference_mode():
        try:
            for b in batches(model, texts, batch_size):
                # the hook keeps every position's normed state; the head runs below, once
                model.bridge(b.ids.to(device), attention_mask=b.mask.to(device),
                             position_ids=b.position_ids.to(device), return_type="logits", logits_to_keep=1,
                             use_cache=False)
                h = state["h"]
                for r in range(len(b.rows)):
                    n = int(b.mask[r].sum())
                    lp = next_token_distribution(model, h[r, : n - 1])
                    target = b.ids[r, 1:n].to(lp.device)
                    out.append((-lp.gather(-1, target[:, None])[:, 0]).double().cpu().numpy())
        finally:
            model.adapter.release_forward_state(model.bridge)
    return np.concatenate(out) if out else np.zeros(0)
