"""Sweeps of interventions that resume from the residual stream instead of re-running the model.

``Resumable(model, prompts, layer)`` runs the unperturbed forward once through the bridge and,
with forward pre-hooks on the decoder blocks, keeps (per padded batch) the residual stream
entering block ``layer`` at every position plus the exact arguments every block ≥ ``layer``
was called with (attention mask, rotary cos/sin, position ids; for Gemma-3 each layer type's
own mask and rotary table). ``logprobs(edits)`` then runs only blocks ``layer..L-1`` on that
stream, the final norm at each prompt's final token and the unembedding, with the edits
applied by the same value hooks as ``intervened`` (the blocks are the bridge's blocks, so the
hooks fire exactly as in a full forward). Cost of a sweep of n edits: about
1 + n·(L − layer)/L forward passes instead of 1 + n.

Coverage: families whose resumed logits are tested equal to the full intervened forward
(``RESUMABLE``). Any other family, or edits below ``layer``, fall back to full forwards
(``SweepResult.resumed`` is False).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from geoprobe.capture.run import next_token_distribution
from geoprobe.capture.run import attached_hooks
from geoprobe.intervene._forward import Batch, batches, final_logprobs, value_hooks
from geoprobe.intervene.ops import Edit, check_edits, intervened, resolve_layer
from geoprobe.models.loading import LoadedModel

#: model families whose resumed sweep is tested against the full intervened forward
RESUMABLE: frozenset[str] = frozenset({"llama", "mistral", "mixtral", "gemma3", "phi", "gpt_neox"})


def _blocks(model: LoadedModel) -> list[Any]:
    return list(model.bridge.blocks)


@dataclass
class _Saved:
    batch: Batch
    hidden: torch.Tensor  # (batch, pos, d_model) entering block `layer`
    calls: list[tuple[tuple, dict]]  # per block >= layer: (args after hidden_states, kwargs)


class Resumable:
    """The unperturbed run of ``prompts``, kept at the entrance of block ``layer``."""

    def __init__(self, model: LoadedModel, prompts: Sequence[str], layer: int, batch_size: int = 16) -> None:
        self.model = model
        self.layer = resolve_layer(layer, model.layout.n_layers)
        self.n = len(prompts)
        self.saved: list[_Saved] = []
        blocks = _blocks(model)
        calls: dict[int, tuple[tuple, dict]] = {}

        def pre(i: int) -> Any:
            def fn(module: Any, args: tuple, kwargs: dict) -> None:
                calls[i] = (tuple(args), dict(kwargs))
            return fn

        handles = [blocks[i].register_forward_pre_hook(pre(i), with_kwargs=True)
                   for i in range(self.layer, len(blocks))]
        device = model.device
        base = None
        try:
            with torch.inference_mode():
                for b in batches(model, prompts, batch_size):
                    calls.clear()
                    lp, _ = _final_run(model, b, device)
                    if base is None:
                        base = torch.zeros((self.n, lp.shape[1]), dtype=torch.float32)
                    base[b.rows] = lp
                    hidden, call_list = self._split(calls)
                    self.saved.append(_Saved(b, hidden, call_list))
        finally:
            for h in handles:
                h.remove()
            model.adapter.release_forward_state(model.bridge)
        assert base is not None
        self.base = base

    def _split(self, calls: dict[int, tuple[tuple, dict]]) -> tuple[torch.Tensor, list[tuple[tuple, dict]]]:
        L = self.model.layout.n_layers
        missing = [i for i in range(self.layer, L) if i not in calls]
        if missing:
            raise RuntimeError(f"blocks {missing} were not called in the unperturbed run; cannot resume")
        out = []
        hidden = None
        for i in range(self.layer, L):
            args, kwargs = calls[i]
            if args:
                h, rest = args[0], args[1:]
            else:
                kwargs = dict(kwargs)
                h, rest = kwargs.pop("hidden_states"), ()
            if i == self.layer:
                hidden = h.detach().clone()
            out.append((rest, kwargs))
        assert hidden is not None
        return hidden, out

    def logprobs(self, edits: Mapping[int, Edit] | None = None) -> torch.Tensor:
        """(n, vocab) next-token log-probs at the final tokens, resuming at ``layer``."""
        if not edits:
            return self.base.clone()
        return self.run(edits)[0]

    def run(self, edits: Mapping[int, Edit], value_layers: Sequence[int] = ()) -> tuple[torch.Tensor, dict[int, np.ndarray]]:
        """Like :meth:`logprobs`, also returning the final-token values (n, Hkv, d_head) of
        ``value_layers`` (each ≥ the resume layer) as attention read them, i.e. after the edits."""
        resolved = check_edits(self.model, edits) if edits else {}
        below = [layer for layer in [*resolved, *value_layers] if layer < self.layer]
        if below:
            raise ValueError(f"edits or value layers {below} lie below the resume layer {self.layer}")
        blocks = _blocks(self.model)
        out = torch.zeros_like(self.base)
        lay = self.model.layout
        values = {layer: np.zeros((out.shape[0], lay.n_kv_heads, lay.d_head), np.float32) for layer in value_layers}
        state: dict = {}
        with intervened(self.model, resolved), attached_hooks(self.model.bridge, value_hooks(self.model, state, value_layers)), \
                torch.inference_mode():
            try:
                for s in self.saved:
                    state["last"] = s.batch.last
                    h = s.hidden
                    for i, (rest, kwargs) in zip(range(self.layer, len(blocks)), s.calls):
                        o = blocks[i](h, *rest, **kwargs)
                        h = o[0] if isinstance(o, tuple) else o
                    rows = torch.arange(h.shape[0], device=h.device)
                    final = self.model.bridge.ln_final(h[rows, s.batch.last.to(h.device)][:, None, :])[:, 0]
                    out[s.batch.rows] = next_token_distribution(self.model, final).float().cpu()
                    for layer in value_layers:
                        values[layer][s.batch.rows] = state[("v", layer)].numpy()
            finally:
                self.model.adapter.release_forward_state(self.model.bridge)
        return out, values


def _final_run(model: LoadedModel, b: Batch, device: torch.device) -> tuple[torch.Tensor, None]:
    state: dict = {}
    from geoprobe.capture.run import attached_hooks

    def norm_hook(x: torch.Tensor, hook: Any) -> None:
        rows = torch.arange(x.shape[0], device=x.device)
        state["h"] = x.detach()[rows, b.last.to(x.device)]

    with attached_hooks(model.bridge, {model.adapter.final_norm_hook: norm_hook}):
        model.bridge(b.ids.to(device), attention_mask=b.mask.to(device), position_ids=b.position_ids.to(device),
                     return_type="logits", logits_to_keep=1, use_cache=False)
    return next_token_distribution(model, state["h"]).float().cpu(), None


@dataclass
class SweepResult:
    base: torch.Tensor  # (n, vocab) unperturbed log-probs
    logprobs: list[torch.Tensor]  # one (n, vocab) per edit set, in order
    resumed: bool  # False: every edit set re-ran the full model
    layer: int  # resume layer (the lowest edited layer)


def sweep(model: LoadedModel, prompts: Sequence[str], edit_sets: Sequence[Mapping[int, Edit]],
          batch_size: int = 16, resume: bool = True) -> SweepResult:
    """Next-token log-probs for each edit set, resuming from the residual stream where possible."""
    if not edit_sets:
        raise ValueError("no edit sets to sweep")
    resolved = [check_edits(model, e) for e in edit_sets]
    layer = min(min(e) for e in resolved)
    if resume and model.adapter.family in RESUMABLE:
        r = Resumable(model, prompts, layer, batch_size)
        return SweepResult(r.base, [r.logprobs(e) for e in resolved], True, layer)
    base, _ = final_logprobs(model, prompts, batch_size)
    out = []
    for e in resolved:
        with intervened(model, e):
            out.append(final_logprobs(model, prompts, batch_size)[0])
    return SweepResult(base, out, False, layer)
