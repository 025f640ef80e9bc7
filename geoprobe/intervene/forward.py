"""Plain forward passes of ``model.hf_model`` that keep the final-position next-token
log-probabilities and, optionally, the final-token values of some layers as attention read
them, i.e. after any edit switched on by ``intervened`` (both go through the same probe, see
``geoprobe.models.attention``)."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch
from jaxtyping import Float

from geoprobe.capture.forward import final_hidden, run_batch
from geoprobe.capture.run import pad_batch, tokenize
from geoprobe.errors import GeoprobeError
from geoprobe.models.architecture import probing
from geoprobe.models.attention import Probe, current
from geoprobe.models.loading import LoadedModel
from geoprobe.models.verify import position_ids


@dataclass
class Batch:
    rows: list[int]
    ids: torch.Tensor
    mask: torch.Tensor
    position_ids: torch.Tensor | None
    last: torch.Tensor  # final real position per row


def batches(
    model: LoadedModel, prompts: Sequence[str], batch_size: int = 16, max_tokens: int | None = None
) -> list[Batch]:
    """Right-padded batches, longest prompts first (as ``capture`` builds them)."""
    ids, _ = tokenize(model, prompts, max_tokens)
    order = np.argsort(-np.array([len(s) for s in ids]), kind="stable")
    out = []
    for i in range(0, len(ids), batch_size):
        rows = [int(r) for r in order[i : i + batch_size]]
        tok, mask = pad_batch([ids[r] for r in rows], model.tokenizer.pad_token_id, "right")
        out.append(
            Batch(rows, tok, mask, position_ids(model.arch.position_offset, mask, model.arch.name), mask.sum(1) - 1)
        )
    return out


@contextmanager
def recording(model: LoadedModel, value_layers: Sequence[int] = ()) -> Iterator[Probe]:
    """A probe that keeps the final-token values of ``value_layers`` (layout indices): the active
    one (e.g. ``intervened``'s, so the values are the edited ones), else a new one."""
    only = frozenset(model.layout.model_layers[layer] for layer in value_layers)
    outer = current()
    if outer is None:
        probe = Probe(queries=False, keys=False, values=bool(only), attn_out=False, attention=False, only=only)
        with probing(model.hf_model, model.arch, probe) as p:
            yield p
        return
    before = (outer.values, outer.only, outer.last)
    if only:
        outer.values = True
        outer.only = None if outer.only is None else outer.only | only
    try:
        yield outer
    finally:  # final positions of these batches must not outlive them
        outer.values, outer.only, outer.last = before


def recorded_values(model: LoadedModel, probe: Probe, layer: int) -> Float[np.ndarray, "batch kv_head d_head"]:
    """The final-token values the probe recorded at layout layer ``layer`` in the last forward pass."""
    rec = probe.records.get(model.layout.model_layers[layer])
    if rec is None or rec.v is None:
        raise GeoprobeError(
            f"{model.arch.name}: layer {layer} recorded no values in the forward pass; its attention "
            "did not run through geoprobe's function (not supported)"
        )
    return rec.v.numpy()


def final_logprobs(
    model: LoadedModel, prompts: Sequence[str], batch_size: int = 16, value_layers: Sequence[int] = ()
) -> tuple[Float[torch.Tensor, "n vocab"], dict[int, np.ndarray]]:
    """(n, vocab) float32 next-token log-probs at each prompt's final token (the model's own
    logits, soft-capping or scaling included), and the final-token values (n, Hkv, d_head) of
    ``value_layers``. Call inside ``intervened`` to edit; the values are then the edited ones."""
    n = len(prompts)
    logp: torch.Tensor | None = None
    heads = {layer: model.layout.heads(layer) for layer in value_layers}
    values = {layer: np.zeros((n, heads[layer].n_kv_heads, heads[layer].d_head), np.float32) for layer in value_layers}
    with recording(model, value_layers) as probe, final_hidden(model, probe), torch.inference_mode():
        for b in batches(model, prompts, batch_size):
            lp = torch.log_softmax(run_batch(model, probe, b.ids, b.mask), dim=-1).cpu()
            if logp is None:
                logp = torch.zeros((n, lp.shape[1]), dtype=torch.float32)
            logp[b.rows] = lp
            for layer in value_layers:
                values[layer][b.rows] = recorded_values(model, probe, layer)
    assert logp is not None
    return logp, values


def text_nll(model: LoadedModel, texts: Sequence[str], batch_size: int = 4) -> np.ndarray:
    """Per-token next-token NLL (nats) at every position of every text (each position t predicts
    token t+1), concatenated over the texts, from the model's own logits at every position
    (``logits_to_keep=0``): whatever the model does after its head (Gemma's soft-capping,
    Cohere's ``logit_scale``, Granite's ``logits_scaling``) is the model's, not reproduced here.
    Costs batch × tokens × vocab floats per batch; lower ``batch_size`` for large vocabularies."""
    out: list[np.ndarray] = []
    device = model.device
    with torch.inference_mode():  # inside ``intervened`` its probe edits every forward pass
        for b in batches(model, texts, batch_size):
            logits = model.hf_model(
                b.ids.to(device),
                attention_mask=b.mask.to(device),
                **({} if b.position_ids is None else {"position_ids": b.position_ids.to(device)}),
                logits_to_keep=0,
                use_cache=False,
            ).logits
            for r in range(len(b.rows)):
                n = int(b.mask[r].sum())
                lp = torch.log_softmax(logits[r, : n - 1].float(), dim=-1)
                target = b.ids[r, 1:n].to(lp.device)
                out.append((-lp.gather(-1, target[:, None])[:, 0]).double().cpu().numpy())
            del logits
    return np.concatenate(out) if out else np.zeros(0)
