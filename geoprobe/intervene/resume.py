"""Sweeps of interventions that resume from the residual stream instead of re-running the model.

``Resumable(model, prompts, layer)`` runs the unperturbed forward of ``model.hf_model`` once
and keeps, per padded batch, what the decoder block below ``layer`` returned: the residual
stream entering block ``layer`` at every position. ``logprobs(edits)`` then runs the model
again with every block below ``layer`` skipped (each returns that saved output instead of
computing), so only blocks ``layer..L-1`` run, with their own masks, rotary tables and
arguments as the model builds them, followed by the model's own final norm, head and logit
soft-capping; the edits are applied by the same probe as ``intervened``. The decoder blocks
are found from the model itself: the ``ModuleList`` entry holding each attention module (its
parent, or grandparent under a wrapper; :func:`decoder_blocks`). Cost of a sweep of n edits: about
1 + n·(L − layer)/L forward passes instead of 1 + n (plus the embedding lookups).

Coverage: architectures (``model_type``) whose resumed logits are tested equal to the full
intervened forward (``RESUMABLE``, tests/intervene/test_resume.py, atol 1e-4 on float32
log-probs). Any other architecture, or edits below ``layer``, fall back to full forwards
(``SweepResult.resumed`` is False).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import torch
from jaxtyping import Float

from geoprobe.capture.forward import final_hidden, run_batch
from geoprobe.intervene.forward import Batch, batches, final_logprobs, recorded_values, recording
from geoprobe.intervene.ops import Edit, check_edits, intervened, resolve_layer
from geoprobe.models.loading import LoadedModel

#: model types whose resumed sweep is tested against the full intervened forward (test_resume.py)
RESUMABLE: frozenset[str] = frozenset(
    {"llama", "mistral", "mixtral", "gemma3_text", "phi", "gpt_neox", "gpt2", "qwen2", "gemma2", "bloom", "gpt_neo"}
)


def decoder_blocks(model: LoadedModel) -> list[Any] | None:
    """The model's decoder blocks in order (a ``ModuleList``, one per model layer), found from its
    attention modules: each one's nearest ancestor that is an entry of a ``ModuleList`` (its
    parent, e.g. ``model.layers[i]``, or its grandparent where a wrapper holds it, as in
    GPT-Neo). None where they are not laid out that way (one list, attention of model layer
    ``i`` in entry ``i``)."""
    hf = model.hf_model
    names = {id(m): n for n, m in hf.named_modules()}
    where: dict[int, tuple[str, int]] = {}
    for layer, m in model.arch.modules.items():
        parts = names.get(id(m), "").split(".")
        for k in range(len(parts) - 2, 0, -1):
            if parts[k].isdigit() and isinstance(hf.get_submodule(".".join(parts[:k])), torch.nn.ModuleList):
                where[layer] = (".".join(parts[:k]), int(parts[k]))
                break
        else:
            return None
    if len({c for c, _ in where.values()}) != 1 or any(i != layer for layer, (_, i) in where.items()):
        return None
    return list(hf.get_submodule(next(iter(where.values()))[0]))


def _detached(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    if isinstance(x, tuple):
        return tuple(_detached(y) for y in x)
    return x


@contextmanager
def skipped(blocks: Sequence[Any], output: Any) -> Iterator[None]:
    """While the block runs, each of ``blocks`` returns ``output`` instead of computing."""
    kept = [(b, b.__dict__.get("forward")) for b in blocks]

    def forward(*args: Any, **kwargs: Any) -> Any:
        return output

    for b, _ in kept:
        b.forward = forward
    try:
        yield
    finally:
        for b, old in kept:
            if old is None:
                del b.forward
            else:
                b.forward = old


@dataclass
class _Saved:
    batch: Batch
    below: Any  # what the block below the resume layer returned (None when resuming at block 0)


class Resumable:
    """The unperturbed run of ``prompts``, kept at the entrance of block ``layer``."""

    resumed = True

    def __init__(self, model: LoadedModel, prompts: Sequence[str], layer: int, batch_size: int = 16) -> None:
        self.model = model
        self.layer = resolve_layer(layer, model.layout.n_layers)
        self.start = model.layout.model_layers[self.layer]
        blocks = decoder_blocks(model)
        if blocks is None:
            raise ValueError(
                f"{model.arch.name}: its decoder blocks are not one ModuleList of attention parents; cannot resume"
            )
        self.blocks = blocks
        self.n = len(prompts)
        self.saved: list[_Saved] = []
        kept: dict[str, Any] = {}

        def post(module: Any, args: tuple, output: Any) -> None:
            kept["out"] = _detached(output)

        handle = blocks[self.start - 1].register_forward_hook(post) if self.start > 0 else None
        base = None
        try:
            with recording(model) as probe, final_hidden(model, probe), torch.inference_mode():
                for b in batches(model, prompts, batch_size):
                    kept.clear()
                    lp = torch.log_softmax(run_batch(model, probe, b.ids, b.mask), dim=-1).cpu()
                    if base is None:
                        base = torch.zeros((self.n, lp.shape[1]), dtype=torch.float32)
                    base[b.rows] = lp
                    if self.start > 0 and "out" not in kept:
                        raise RuntimeError(
                            f"block {self.start - 1} was not called in the unperturbed run; cannot resume"
                        )
                    self.saved.append(_Saved(b, kept.get("out")))
        finally:
            if handle is not None:
                handle.remove()
        assert base is not None
        self.base = base

    def logprobs(self, edits: Mapping[int, Edit] | None = None) -> Float[torch.Tensor, "n vocab"]:
        """(n, vocab) next-token log-probs at the final tokens, resuming at ``layer``."""
        if not edits:
            return self.base.clone()
        return self.run(edits)[0]

    def run(
        self, edits: Mapping[int, Edit], value_layers: Sequence[int] = ()
    ) -> tuple[Float[torch.Tensor, "n vocab"], dict[int, np.ndarray]]:
        """Like :meth:`logprobs`, also returning the final-token values (n, Hkv, d_head) of
        ``value_layers`` (each ≥ the resume layer) as attention read them, i.e. after the edits."""
        resolved = check_edits(self.model, edits) if edits else {}
        below = [layer for layer in [*resolved, *value_layers] if layer < self.layer]
        if below:
            raise ValueError(f"edits or value layers {below} lie below the resume layer {self.layer}")
        out = torch.zeros_like(self.base)
        lay = self.model.layout
        values = {
            layer: np.zeros((out.shape[0], lay.heads(layer).n_kv_heads, lay.heads(layer).d_head), np.float32)
            for layer in value_layers
        }
        with (
            intervened(self.model, resolved),
            recording(self.model, value_layers) as probe,
            final_hidden(self.model, probe),
            torch.inference_mode(),
        ):
            for s in self.saved:
                with skipped(self.blocks[: self.start], s.below):
                    logits = run_batch(self.model, probe, s.batch.ids, s.batch.mask)
                out[s.batch.rows] = torch.log_softmax(logits, dim=-1).cpu()
                for layer in value_layers:
                    values[layer][s.batch.rows] = recorded_values(self.model, probe, layer)
        return out, values


@dataclass
class SweepResult:
    base: torch.Tensor  # (n, vocab) unperturbed log-probs
    logprobs: list[torch.Tensor]  # one (n, vocab) per edit set, in order
    resumed: bool  # False: every edit set re-ran the full model
    layer: int  # resume layer (the lowest edited layer)


def resumable(model: LoadedModel) -> bool:
    """Is a resumed sweep tested (and possible) for this model's architecture?"""
    return model.arch.model_type in RESUMABLE and decoder_blocks(model) is not None


class FullRuns:
    """The fallback with :class:`Resumable`'s interface: every call re-runs the full model."""

    resumed = False

    def __init__(self, model: LoadedModel, prompts: Sequence[str], batch_size: int = 16) -> None:
        self.model, self.prompts, self.batch_size = model, list(prompts), batch_size

    def run(
        self, edits: Mapping[int, Edit], value_layers: Sequence[int] = ()
    ) -> tuple[Float[torch.Tensor, "n vocab"], dict[int, np.ndarray]]:
        with intervened(self.model, edits):
            return final_logprobs(self.model, self.prompts, self.batch_size, value_layers)


def resumer(model: LoadedModel, prompts: Sequence[str], layer: int, batch_size: int = 16) -> Resumable | FullRuns:
    """A :class:`Resumable` at ``layer`` where the architecture is tested resumable, else :class:`FullRuns`."""
    return Resumable(model, prompts, layer, batch_size) if resumable(model) else FullRuns(model, prompts, batch_size)


def sweep(
    model: LoadedModel,
    prompts: Sequence[str],
    edit_sets: Sequence[Mapping[int, Edit]],
    batch_size: int = 16,
    resume: bool = True,
) -> SweepResult:
    """Next-token log-probs for each edit set, resuming from the residual stream where possible."""
    if not edit_sets:
        raise ValueError("no edit sets to sweep")
    resolved = [check_edits(model, e) for e in edit_sets]
    layer = min(min(e) for e in resolved)
    if resume and resumable(model):
        r = Resumable(model, prompts, layer, batch_size)
        return SweepResult(r.base, [r.logprobs(e) for e in resolved], True, layer)
    base, _ = final_logprobs(model, prompts, batch_size)
    out = []
    for e in resolved:
        with intervened(model, e):
            out.append(final_logprobs(model, prompts, batch_size)[0])
    return SweepResult(base, out, False, layer)
