"""Batched forward passes that keep only final-token slices.

geoprobe's attention function (``geoprobe.models.attention``) slices every captured tensor at
each prompt's final real token inside the forward pass and copies that slice out; nothing of
size (batch × positions × width) outlives the layer that produced it, the final token's
attention is computed from its query row alone (O(T·d), never T×T), and the full-vocabulary
logits are computed for the final position only.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ClassVar, Iterator, Literal, Sequence

import numpy as np
import torch
from jaxtyping import Float

from geoprobe.capture.assemble import CaptureArrays, batches_of
from geoprobe.capture.defaults import DEFAULT_MAX_TOKENS
from geoprobe.capture.forward import check_finite_rows, check_recorded, final_hidden, run_batch
from geoprobe.capture.memory import check_capture_memory, check_memory, forward_peak_bytes, memory_budget
from geoprobe.capture.result import Capture
from geoprobe.capture.transfer import HostCopy
from geoprobe.checks import Limit, check_limits, check_no_bools, config_arg, model_arg, prompts_arg
from geoprobe.errors import CaptureError, PromptError
from geoprobe.models.architecture import probing
from geoprobe.models.attention import Probe, entropy_bits
from geoprobe.models.layout import Layout, SiteKind
from geoprobe.models.loading import LoadedModel
from geoprobe.models.verify import position_ids
from geoprobe.text import is_blank

TOP_K_MAX = 1000
TOKENIZE_CHUNK = 5000  # prompts tokenised per call, between progress reports


@dataclass(frozen=True)
class CaptureConfig:
    """What to keep. Every array is taken at each prompt's final real token."""

    layers: tuple[int, ...] | None = None  # None: all layers; negative indices count from the end
    values: bool = True
    keys: bool = True
    queries: bool = False
    attn_out: bool = False
    attention: Literal["entropy", "distribution"] = "entropy"
    key_weights: bool = True
    top_k: int = 10
    batch_size: int = 16
    padding_side: Literal["left", "right"] = "right"
    max_tokens: int | None = DEFAULT_MAX_TOKENS  # longer prompts keep their final tokens; None: the context window
    sort_by_length: bool = True  # batch prompts of similar length together (results keep input order)

    #: upper limits (docs/capture.md); memory is estimated too (:func:`check_arrays_memory`)
    LIMITS: ClassVar[dict[str, Limit]] = {
        "batch_size": Limit.batch("--batch-size"),
        "top_k": Limit(TOP_K_MAX, "100× the default 10 next tokens kept per prompt", "--top-k"),
    }

    def __post_init__(self) -> None:
        check_no_bools(self, "capture")
        check_limits(self, self.LIMITS)
        if self.batch_size < 1:
            raise CaptureError(f"batch size {self.batch_size} must be at least 1; pass --batch-size 1 or more")
        if self.top_k < 1:
            raise CaptureError(f"top-k {self.top_k} must be at least 1; pass --top-k 1 or more")
        if self.padding_side not in ("left", "right"):
            raise CaptureError(f"padding side {self.padding_side!r} is not left|right; pass --padding-side left|right")
        if self.attention not in ("entropy", "distribution"):
            raise CaptureError(f"attention {self.attention!r} is not entropy|distribution")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise CaptureError(f"max tokens {self.max_tokens} must be at least 1; pass --max-tokens 1 or more")

    def nbytes(self, layout: Layout, n_prompts: int, longest: int) -> int:
        """Bytes the saved arrays of ``n_prompts`` prompts (the longest ``longest`` tokens) will take."""
        L = layout.n_layers if self.layers is None else len(set(self.layers))
        per_prompt = layout.n_heads  # attention entropy
        per_prompt += layout.n_kv_heads * (layout.d_head * int(self.values) + layout.d_qk * int(self.keys))
        per_prompt += layout.n_heads * (layout.d_qk * int(self.queries) + layout.d_head * int(self.attn_out))
        per_prompt += layout.n_heads * longest if self.attention == "distribution" else 0
        w_k = layout.n_kv_heads * layout.d_model * layout.d_qk if self.key_weights else 0
        return 4 * (L * (n_prompts * per_prompt + w_k) + n_prompts * (3 + 2 * self.top_k))


def check_arrays_memory(
    model: LoadedModel,
    config: CaptureConfig,
    n_prompts: int,
    longest: int,
    *,
    work_factor: float = 0.0,
) -> None:
    """Refuse a capture whose arrays (:meth:`CaptureConfig.nbytes` for ``n_prompts`` prompts, the longest
    ``longest`` tokens; × (1 + ``work_factor``) for the caller's work on them) and the forward pass of one
    such prompt do not fit in memory: one line naming how many prompts would fit (geoprobe.capture.memory).
    The arrays are kept in host memory; the forward pass counts there only when the model runs on the CPU.
    Where even one prompt's forward pass does not fit, :func:`check_capture_memory` says so (it names
    --batch-size and --max-tokens), and a batch's forward pass is checked there as before."""
    on_cpu = torch.device(model.device).type == "cpu" and not getattr(model.hf_model, "hf_device_map", None)
    forward = forward_peak_bytes(model, 1, longest) if on_cpu else 0
    got = memory_budget(model.device if on_cpu else "cpu")
    if got is None or forward > got[0]:
        return
    L = model.layout.n_layers if config.layers is None else len(set(config.layers))
    check_memory(
        lambda k: int((1 + work_factor) * config.nbytes(model.layout, k, longest)) + forward,
        n_prompts,
        what=f"the capture's arrays of {n_prompts} prompts × {L} layers ("
        + ("and the analyses of them, " if work_factor else "")
        + "and a forward pass)",
        flag=lambda fit: f"capture at most {fit} prompts at a time (split the --prompts file), or fewer --layers",
        otherwise="not even one prompt fits: pass fewer --layers, a lower --max-tokens or --attention entropy",
    )


def resolve_layers(layers: Sequence[int] | None, n_layers: int, flag: str = "--layers") -> tuple[int, ...]:
    """``layers`` as sorted, distinct indices in 0..n_layers-1 (negative ones count from the end; None:
    every layer); one out of range is a CaptureError naming ``flag``, the setting that chose it."""
    if layers is None:
        return tuple(range(n_layers))
    out = []
    for layer in layers:
        idx = layer + n_layers if layer < 0 else layer
        if not 0 <= idx < n_layers:
            raise CaptureError(
                f"layer {layer} is out of range for a model with {n_layers} layers (0..{n_layers - 1}); fix {flag}"
            )
        out.append(idx)
    return tuple(sorted(set(out)))


def tokenize(
    model: LoadedModel,
    prompts: Sequence[str],
    max_tokens: int | None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[list[int]], np.ndarray]:
    """Token ids per prompt, cut to their final ``limit`` tokens; returns (ids, n_cut).
    ``progress(done, total)`` is called every :data:`TOKENIZE_CHUNK` prompts.

    ``limit`` is ``max_tokens`` (None: no cap) but never more than the model's context window.
    Cutting keeps the final tokens, the ones the final-token geometry is about; a warning says
    how many prompts were cut, how many tokens were dropped, and why (the cap or the window)."""
    if isinstance(prompts, str) or len(prompts) == 0:
        raise PromptError("no prompts given; pass a non-empty list or a --prompts file with one prompt per line")
    for i, p in enumerate(prompts):
        if not isinstance(p, str) or is_blank(p):
            raise PromptError(f"prompt #{i} is empty; remove it from the --prompts file")
    ctx = model.context_length
    limit = ctx if max_tokens is None else min(max_tokens, ctx)
    enc: list[list[int]] = []
    for start in range(0, len(prompts), TOKENIZE_CHUNK):  # each prompt alone: the same ids as in one call
        enc += model.tokenizer(list(prompts[start : start + TOKENIZE_CHUNK]), add_special_tokens=True)["input_ids"]
        if progress is not None:
            progress(len(enc), len(prompts))
    cut = np.zeros(len(enc), dtype=np.int64)
    ids = []
    for i, seq in enumerate(enc):
        if len(seq) == 0:
            raise PromptError(f"prompt #{i} has no tokens; remove it from the --prompts file")
        if len(seq) > limit:
            cut[i] = len(seq) - limit
            seq = seq[-limit:]
        ids.append(list(seq))
    if cut.any():
        why = (
            f"{ctx} tokens is the model's context window, the most it reads"
            if limit == ctx
            else f"the cap is --max-tokens {limit} (default {DEFAULT_MAX_TOKENS}); raise it, up to the model's context "
            f"window of {ctx} tokens, to keep more"
        )
        warnings.warn(
            f"{int((cut > 0).sum())} of {len(cut)} prompt(s) longer than {limit} tokens were cut to their "
            f"final {limit} "
            f"tokens ({int(cut.sum())} tokens dropped in all, up to {int(cut.max())} from one prompt); {why}",
            stacklevel=2,
        )
    return ids, cut


def pad_batch(batch: list[list[int]], pad_id: int, side: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids of ``batch`` padded with ``pad_id`` on ``side`` ("left" or "right") to the longest, and the
    attention mask (1 on tokens, 0 on padding)."""
    T = max(len(s) for s in batch)
    ids = torch.full((len(batch), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), T), dtype=torch.long)
    for b, s in enumerate(batch):
        if side == "right":
            ids[b, : len(s)] = torch.tensor(s)
            mask[b, : len(s)] = 1
        else:
            ids[b, T - len(s) :] = torch.tensor(s)
            mask[b, T - len(s) :] = 1
    return ids, mask


def final_position_logits(
    model: LoadedModel, ids: Sequence[Sequence[int]], batch_size: int = 32
) -> Iterator[tuple[np.ndarray, torch.Tensor]]:
    """``(rows, logits)`` per batch: the model's own next-token logits (float32, (B, vocab)) at the
    final position of token sequences ``ids[rows]``, in left-padded batches of similar length with
    ``logits_to_keep=1`` (only the final position reaches the head). Longest sequences first. A model whose
    output moves with left padding (``Architecture.padding_dependent``) gets batches of one length only."""
    one_length = "left" in getattr(model.arch, "padding_dependent", {})
    batches = batches_of(np.array([len(s) for s in ids]), batch_size, one_length=one_length)
    pad_id = model.tokenizer.pad_token_id
    if pad_id is None:
        pad_id = model.tokenizer.eos_token_id or 0
    with torch.inference_mode():
        for rows in batches:
            tok, mask = pad_batch([ids[r] for r in rows], pad_id, "left")
            positions = position_ids(model.arch.position_offset, mask, model.arch.name)
            logits = model.hf_model(
                tok.to(model.device),
                attention_mask=mask.to(model.device),
                **({} if positions is None else {"position_ids": positions.to(model.device)}),
                logits_to_keep=1,
                use_cache=False,
            ).logits
            yield rows, logits[:, -1].float()


_SITE_FIELD: dict[str, str] = {"v": "values", "k": "keys", "q": "queries", "z": "attn_out"}


def plan_capture(
    model: LoadedModel,
    prompts: Sequence[str],
    config: CaptureConfig,
    *,
    seed: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    checkpoint_dir: str | os.PathLike | None = None,
    on_resume: Callable[[int, int, Path], None] | None = None,
    tokenize_progress: Callable[[int, int], None] | None = None,
    work_factor: float = 0.0,
) -> tuple[list[list[int]], CaptureArrays]:
    """Everything :func:`capture` does before its first forward pass: check the arguments, tokenise, check
    that the arrays fit in memory (:func:`check_arrays_memory`), allocate them and cut the prompts into
    batches, loading the batches a checkpoint already holds; returns (token ids per prompt, the arrays).
    :mod:`geoprobe.capture.parallel` starts the same way and computes the batches on Ray workers."""
    model, prompts = model_arg(model), prompts_arg(prompts)
    config = config_arg(config, CaptureConfig)
    layers = resolve_layers(config.layers, model.layout.n_layers)
    if not isinstance(prompts, str):  # a str is refused by tokenize
        check_arrays_memory(model, config, len(prompts), 1, work_factor=work_factor)  # before tokenising
    ids, cut = tokenize(model, prompts, config.max_tokens, progress=tokenize_progress)
    lengths = np.array([len(s) for s in ids], dtype=np.int64)
    check_arrays_memory(model, config, len(ids), int(lengths.max()), work_factor=work_factor)
    plan = CaptureArrays(
        model,
        prompts,
        config,
        layers,
        lengths,
        cut,
        seed=seed,
        checkpoint_dir=checkpoint_dir,
        on_resume=on_resume,
        progress=progress,
    )
    if plan.padding_moves is not None:
        warnings.warn(
            f"{model.provenance.model_id}: its own output moves with {config.padding_side} padding (by "
            f"{plan.padding_moves:.2g} of its logits' scale, measured at load: its key selection is not "
            f"padding-aware), so prompts were batched by equal length, each computed as it is alone: "
            f"{len(plan.batches)} batches instead of {-(-len(ids) // config.batch_size)}",
            stacklevel=3,
        )
    return ids, plan


def capture_key_weights(model: LoadedModel, config: CaptureConfig, layers: Sequence[int]) -> np.ndarray | None:
    """The capture's W_K (:func:`key_weights`) when ``config.key_weights`` asks for it; None (with a
    warning) where keys are not x·W_K (MLA: the rest is captured)."""
    if config.key_weights and model.arch.key_weights_reason:
        warnings.warn(f"no W_K saved: {model.arch.NO_KEY_WEIGHTS}", stacklevel=3)
        return None
    return key_weights(model, layers) if config.key_weights else None


def capture(
    model: LoadedModel,
    prompts: Sequence[str],
    config: CaptureConfig = CaptureConfig(),
    *,
    seed: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    checkpoint_dir: str | os.PathLike | None = None,
    on_resume: Callable[[int, int, Path], None] | None = None,
    tokenize_progress: Callable[[int, int], None] | None = None,
    work_factor: float = 0.0,
) -> Capture:
    """Run ``prompts`` through ``model`` in padded batches and keep the final-token geometry.

    With ``checkpoint_dir`` every finished batch is written there (see
    :mod:`geoprobe.capture.checkpoint`); a later call with the same model, prompts, config and
    seed loads those batches instead of recomputing them (``on_resume(loaded, batches, dir)`` is
    called first) and returns the same numbers. The caller removes the directory when done.

    Before any array is allocated or any forward pass runs, the arrays of all the prompts together with
    the largest batch's forward pass must fit in memory (:func:`check_arrays_memory`); ``work_factor``
    adds that many times the arrays for what the caller does with them afterwards (a scan's analyses)."""
    ids, plan = plan_capture(
        model,
        prompts,
        config,
        seed=seed,
        progress=progress,
        checkpoint_dir=checkpoint_dir,
        on_resume=on_resume,
        tokenize_progress=tokenize_progress,
        work_factor=work_factor,
    )
    model, config, layers, lay = plan.model, plan.config, plan.layers, plan.model.layout
    kinds: list[SiteKind] = [k for k, name in _SITE_FIELD.items() if getattr(config, name)]
    model_layer = {layer: lay.model_layers[layer] for layer in layers}
    keep_pattern = config.attention == "distribution"
    probe = Probe(
        queries=config.queries,
        keys=config.keys,
        values=config.values,
        attn_out=config.attn_out,
        distribution=keep_pattern,
        only=frozenset(model_layer.values()),
        host=False,  # a batch's records leave the device in one copy (HostCopy), not layer by layer
    )
    pad_id = model.tokenizer.pad_token_id
    # before any forward pass: the largest batch must fit in memory (eager attention is O(T²))
    check_capture_memory(model, plan.shapes())
    order = {model_layer[layer]: layer for layer in layers}
    pending: tuple[int, torch.Tensor, HostCopy] | None = None
    with probing(model.hf_model, model.arch, probe), final_hidden(model, probe), torch.inference_mode():
        for b in plan.todo:
            batch = plan.batches[b]
            tok, mask = pad_batch([ids[i] for i in batch], pad_id, config.padding_side)
            logits = run_batch(model, probe, tok, mask)
            check_recorded(model, probe, order)
            copy = HostCopy(_batch_tensors(probe, layers, model_layer, kinds, keep_pattern, logits, plan.k_top))
            if pending is not None:  # the device computes batch b while the host stores batch b - 1
                _store(plan, pending, kinds, keep_pattern, layers)
            pending = (b, mask, copy)
        if pending is not None:
            _store(plan, pending, kinds, keep_pattern, layers)
    return plan.capture(capture_key_weights(model, config, layers))


def _batch_tensors(
    probe: Probe,
    layers: Sequence[int],
    model_layer: dict[int, int],
    kinds: Sequence[SiteKind],
    keep_pattern: bool,
    logits: torch.Tensor,
    k_top: int,
) -> dict[str, torch.Tensor]:
    """One batch's records and next-token statistics, named ``"{layer_pos}.{site}"`` and ``next_*``,
    where the forward pass left them (computed there: nothing is waited for)."""
    out: dict[str, torch.Tensor] = {}
    for layer_pos, layer in enumerate(layers):
        rec = probe.records[model_layer[layer]]
        for kind in kinds:
            out[f"{layer_pos}.{kind}"] = getattr(rec, kind)
        out[f"{layer_pos}.entropy"] = rec.entropy
        if keep_pattern:
            out[f"{layer_pos}.distribution"] = rec.distribution
    logp = torch.log_softmax(logits, dim=-1)
    tp, ti = logp.topk(k_top, dim=-1)
    out["next_entropy"] = entropy_bits(logp.exp()).float()
    out["next_top_probs"], out["next_top_ids"] = tp.exp(), ti
    return out


def _store(
    plan: CaptureArrays,
    pending: tuple[int, torch.Tensor, "HostCopy"],
    kinds: Sequence[SiteKind],
    keep_pattern: bool,
    layers: Sequence[int],
) -> None:
    """Wait for batch ``b``'s copy, refuse a non-finite value (naming the first layer and site in forward
    order, then the final layer norm), write its rows into the arrays and record it as finished."""
    b, mask, copy = pending
    got = copy.wait()
    batch = plan.batches[b]
    prompt_ids = [int(i) for i in batch]
    check_finite_rows(got, prompt_ids, layers)
    arrays, nxt, lengths = plan.arrays, plan.next, plan.lengths
    start = mask.argmax(1)
    for layer_pos in range(len(layers)):
        for kind in kinds:
            x = got[f"{layer_pos}.{kind}"]
            arrays[_SITE_FIELD[kind]][layer_pos, batch, : x.shape[1], : x.shape[2]] = x
        h = got[f"{layer_pos}.entropy"].shape[1]
        arrays["attn_entropy"][layer_pos, batch, :h] = got[f"{layer_pos}.entropy"]
        if keep_pattern:
            dist = got[f"{layer_pos}.distribution"]
            if dist.shape[-1] > mask.shape[1]:
                raise CaptureError(
                    f"layer {layers[layer_pos]} attends over {dist.shape[-1]} keys for {mask.shape[1]} positions "
                    f"(keys beside the positions, as DeepSeek-V4's compressed ones): a distribution over positions "
                    "would leave their mass out; pass --attention entropy (the entropy is over every key)"
                )
            for r, i in enumerate(batch):
                s = int(start[r])
                arrays["attn_pattern"][layer_pos, i, :h, : lengths[i]] = dist[r, :, s : s + lengths[i]]
    for name in ("next_entropy", "next_top_probs", "next_top_ids"):
        nxt[name][batch] = got[name]
    plan.finished(b)


def key_weights(model: LoadedModel, layers: Sequence[int] | None = None) -> Float[np.ndarray, "L Hkv D d"]:
    """Weight-derived key projections W_K (layer, kv_head, d_model, d_head), float32, k = x @ W_K + b.

    Read from the projection the architecture probe identified (``geoprobe.models.architecture``),
    layer by layer, so that only the result and one layer's slice exist at a time (a fused QKV
    weight's key rows are a copy). Refused in one line where keys are not x·W_K (MLA)."""
    model = model_arg(model)
    idx = resolve_layers(layers, model.layout.n_layers)
    lay, arch = model.layout, model.arch
    out = np.full((len(idx), lay.n_kv_heads, lay.d_model, lay.d_qk), np.nan, dtype=np.float32)
    for i, layer in enumerate(idx):  # a layer with fewer or narrower heads fills the first slots (Layout)
        w = arch.key_weight_view(lay.model_layers[layer]).float().cpu().numpy()
        out[i, : w.shape[0], :, : w.shape[2]] = w
    return out
