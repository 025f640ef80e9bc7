"""Shrink any transformers config to a tiny one by rule: the twin of a model type nobody wrote down.

:func:`shrink` walks a config's dict (and every sub-config: text, vision, audio) and replaces each
size it knows by name with a tiny one: widths 64, 4 heads of 16 (KV heads 2 where the type has
fewer KV heads than query heads, 1 where it has one), 4 experts of which 2 are routed, a
512-token vocabulary, 6-token sliding windows and sparse-attention top-k of 4, so that 13-token
prompts cross them. Layer counts are cut to the shortest prefix of the model's own layer
pattern (``layer_types`` and friends) that holds every kind of layer, at least 3; period-based
patterns (attention every k-th layer) keep one period past the offset. Only sizes change, never
a mechanism: a switch (a bool, a string, a rope type) is left as the type's default.
"""

from __future__ import annotations

from typing import Any

WIDTH = 64
HEADS = 4
HEAD_DIM = 16
LAYERS = 3
MAX_LAYERS = 12
VOCAB = 512

_WIDTHS = {"hidden_size", "d_model", "n_embd", "embed_dim", "word_embed_proj_dim", "hidden_dim", "projection_dim"}
_HEADS = {"num_attention_heads", "n_head", "num_heads", "n_heads", "encoder_attention_heads", "decoder_attention_heads"}
_KV = {"num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num", "num_kv_heads_swa"}
_LAYERS = {"num_hidden_layers", "n_layer", "num_layers", "n_layers", "decoder_layers", "encoder_layers"}
_FIXED = {
    # per-head widths
    "head_dim": HEAD_DIM,
    "global_head_dim": HEAD_DIM,
    "swa_head_dim": HEAD_DIM,
    "attention_head_dim": HEAD_DIM,
    "kv_channels": HEAD_DIM,
    "v_head_dim": HEAD_DIM,
    "qk_nope_head_dim": HEAD_DIM,
    "qk_rope_head_dim": 8,
    "qk_head_dim": 24,
    "kv_lora_rank": 16,
    "q_lora_rank": 24,
    # sparse attention and its indexer
    "index_topk": 4,
    "index_head_dim": HEAD_DIM,
    "index_n_heads": 2,
    # experts
    "num_experts": 4,
    "num_local_experts": 4,
    "n_routed_experts": 4,
    "moe_num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_topk": 2,
    "moe_k": 2,
    "n_shared_experts": 1,
    "num_shared_experts": 1,
    "n_group": 1,
    "topk_group": 1,
    "vocab_size": VOCAB,
    "sliding_window": 6,
    "attention_window_size": 6,
    "window_size": 6,
    "initializer_range": 0.2,
}
_SPECIAL = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
#: lists with one entry per layer
_PER_LAYER = ("layer_types", "attention_layers", "layers_block_type", "block_types", "hybrid_override_pattern")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _layer_count(d: dict) -> int | None:
    return next((d[k] for k in _LAYERS if _is_int(d.get(k))), None)


def _per_layer_lists(d: dict) -> list[str]:
    """Keys of lists with one entry per layer: the known names, and any list as long as the layer count."""
    L = _layer_count(d)
    return [k for k, v in d.items() if isinstance(v, (list, str)) and (k in _PER_LAYER or (L and len(v) == L > 1))]


def _n_layers(d: dict) -> int:
    """How many layers keep every kind the model has (the shortest prefix of each of its patterns that
    holds every kind, >= 3; a layer of ``per_layer_config`` included)."""
    need = LAYERS
    for key in _per_layer_lists(d):
        pattern = d[key]
        if len(pattern) == 0 or isinstance(d[key], str) and key not in _PER_LAYER:
            continue
        kinds = {str(x) for x in pattern}
        n = next(n for n in range(1, len(pattern) + 1) if {str(x) for x in pattern[:n]} == kinds)
        need = max(need, n)
    overrides = d.get("per_layer_config")
    if isinstance(overrides, dict) and overrides:
        need = max(need, min(int(k) for k in overrides) + 1)
    for period, offset in (("attn_layer_period", "attn_layer_offset"), ("full_attention_interval", None)):
        if _is_int(d.get(period)) and d[period] > 0:
            need = max(need, d[period] + int(d.get(offset or "", 0) or 0))
    return min(need, MAX_LAYERS)


def _cut(pattern: Any, n: int) -> Any:
    return pattern[:n] if isinstance(pattern, (list, str)) and len(pattern) >= n else pattern


def _per_layer_config(overrides: dict, base: dict, tiny: dict, n: int) -> dict:
    """Per-layer overrides of the layers kept: a size equal to the model's own stays equal to the tiny
    one, a different size becomes twice the tiny one (the layers still differ, as in the model)."""
    out = {}
    for k, sizes in overrides.items():
        if int(k) >= n:
            continue
        out[k] = {
            key: (tiny.get(key, v) if v == base.get(key) else 2 * tiny.get(key, v))
            if _is_int(v) and _is_int(tiny.get(key))
            else v
            for key, v in sizes.items()
        }
    return out


def shrink(d: dict) -> dict:
    """A tiny copy of the config dict ``d`` (sub-config dicts shrunk too); see the module docstring."""
    out: dict = {}
    special = iter(range(VOCAB - 1, VOCAB - 64, -1))  # other special ids (image, audio tokens) at the top
    heads = next((d[k] for k in _HEADS if _is_int(d.get(k))), None)
    n = _n_layers(d)
    per_layer = set(_per_layer_lists(d))
    for key, v in d.items():
        if key == "per_layer_config" and isinstance(v, dict):
            continue  # below, once the tiny sizes are known
        if isinstance(v, dict) and ("model_type" in v or key.endswith("_config")):
            out[key] = shrink(v)
        elif key in per_layer:
            out[key] = _cut(v, n)
        elif not _is_int(v) and not (key in _FIXED and v is None):
            out[key] = v
        elif key.endswith(("token_id", "token_index")) and _is_int(v) and v >= VOCAB:
            out[key] = _SPECIAL.get(key, None) or next(special)
        elif v is None:
            out[key] = v  # an optional size left unset (q_lora_rank None: no query compression) stays unset
        elif key in _WIDTHS:
            out[key] = WIDTH
        elif key in _HEADS:
            out[key] = HEADS
        elif key in _KV:
            out[key] = 1 if v == 1 else (HEADS if heads is None or v >= heads else 2)
        elif key in _LAYERS:
            out[key] = n
        elif key in _FIXED:
            out[key] = _FIXED[key]
        elif key.endswith("intermediate_size") or key.endswith("ffn_dim") or key in ("n_inner", "ffn_hidden_size"):
            out[key] = 32 if ("moe" in key or "expert" in key) else 2 * WIDTH
        elif key in ("attn_layer_period", "attn_layer_offset", "full_attention_interval"):
            out[key] = v  # the pattern is kept, layers are counted by _n_layers
        else:
            out[key] = v
    if isinstance(d.get("per_layer_config"), dict):
        out["per_layer_config"] = _per_layer_config(d["per_layer_config"], d, out, n)
    return out
