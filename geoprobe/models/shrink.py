"""Shrink any transformers config to a tiny one by rule: the twin of a model type nobody wrote down.

:func:`shrink` walks a config's dict (and every sub-config: text, vision, audio) and replaces each
size it knows by name with a tiny one: widths 64, 4 heads of 16 (KV heads 2 where the type has
fewer KV heads than query heads, 1 where it has one), 4 experts of which 2 are routed, a
512-token vocabulary (every vocabulary, and every special token id inside it), 6-token sliding
windows and sparse-attention top-k of 4, so that 13-token prompts cross them. Layer counts are
cut to the shortest prefix of the model's own layer pattern (``layer_types`` and any other list
with one entry per layer) that holds every kind of layer, at least 3, rounded up to whole
periods of a periodic pattern; period-based patterns (attention every k-th layer) keep one
period past the offset. ``per_layer_config`` keeps the layers kept, their sizes still different
from the others'. Sizes that the model ties together stay tied (a state-space mixer's heads ×
head width = expand × width; an MLA layer's head width = its no-rope + rope widths).

Only sizes change, never a mechanism: a switch (a bool, a string, a rope type) is left as the
type's default, and an optional size left unset (``q_lora_rank`` None: no query compression;
``sliding_window`` None: no window) stays unset. An unset size the model cannot run without is
set: ``head_dim`` (the width over the heads), KV heads (as many as query heads) and the experts
per token where the experts are counted.

:func:`own_sizes` is the dict to shrink: a config's own values, without the sizes its class
derives from others (they are derived again from the tiny sizes).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

WIDTH = 64
HEADS = 4
HEAD_DIM = 16
LAYERS = 3
MAX_LAYERS = 12
VOCAB = 512
WINDOW = 6
TOPK = 4

_WIDTHS = (
    "hidden_size",
    "d_model",
    "n_embd",
    "embed_dim",
    "emb_dim",
    "word_embed_proj_dim",
    "hidden_dim",
    "projection_dim",
    "adapter_in_dim",
    "adapter_out_dim",
    "out_hidden_size",
)
_HEADS = ("num_attention_heads", "n_head", "num_heads", "n_heads", "encoder_attention_heads", "decoder_attention_heads")
_KV = ("num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num", "num_kv_heads_swa")
_LAYERS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "decoder_layers", "encoder_layers")
_EXPERTS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
_EXPERTS_PER_TOKEN = ("num_experts_per_tok", "moe_topk", "moe_k", "num_experts_per_token", "moe_top_k")
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
    "index_topk": TOPK,
    "index_head_dim": HEAD_DIM,
    "index_n_heads": 2,
    # linear attention beside softmax layers
    "linear_num_heads": HEADS,
    "linear_head_dim": HEAD_DIM,
    "linear_key_head_dim": HEAD_DIM,
    "linear_value_head_dim": HEAD_DIM,
    # experts
    **dict.fromkeys(_EXPERTS, 4),
    **dict.fromkeys(_EXPERTS_PER_TOKEN, 2),
    "n_shared_experts": 1,
    "num_shared_experts": 1,
    "zero_expert_num": 2,
    "n_group": 1,
    "num_expert_group": 1,
    "topk_group": 1,
    "vocab_size": VOCAB,
    "sliding_window": WINDOW,
    "attention_window_size": WINDOW,
    "window_size": WINDOW,
    "local_attention_window_len": WINDOW,
    "sliding_window_size": WINDOW,
    "attention_chunk_size": WINDOW,  # chunked attention (Llama 4)
    "local_attention": 2 * WINDOW,  # ModernBERT: the whole local window, half on each side
    "keep_window_size": TOPK,  # Doge's dynamic mask keeps the top keys
    "index_block_size": 2,  # block-sparse attention: 2 of the 7 blocks of a 13-token prompt
    "index_topk_blocks": 2,
    "initializer_range": 0.2,
}
#: counts of leading layers of one kind (dense before MoE): the twin keeps them and one layer more
_LEADING = ("first_k_dense_replace", "num_dense_layers", "moe_layer_start_index")
#: counts of trailing layers (that reuse earlier layers' KV): the twin keeps as many as the model's
#: layer pattern needs to hold every kind, after a prefix that holds every kind
_TRAILING = ("num_kv_shared_layers",)
_SPECIAL = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
#: lists with one entry per layer (strings too: "M-M*-" patterns)
_PER_LAYER = ("layer_types", "attention_layers", "layers_block_type", "block_types", "hybrid_override_pattern")
#: a state-space mixer's (heads, head width, expand): heads × head width = expand × the model's width
_SSM_HEADS = ("mamba_n_heads", "mamba_num_heads", "n_mamba_heads")
_SSM_HEAD_DIM = ("mamba_d_head", "mamba_head_dim", "mamba_headdim")
_SSM_EXPAND = ("mamba_expand", "expand")
_SSM_GROUPS = ("mamba_n_groups", "mamba_ngroups", "n_groups")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_token_key(key: str, v: Any) -> bool:
    """A token id, or a list of them (``eos_token_id``, ``image_token_index``, ``suppress_tokens``)."""
    return "token_id" in key or key.endswith("token_index") or (isinstance(v, list) and key.endswith("_tokens"))


def _layer_count(d: dict) -> int | None:
    return next((d[k] for k in _LAYERS if _is_int(d.get(k))), None)


def _per_layer_lists(d: dict) -> list[str]:
    """Keys of lists with one entry per layer: the known names, and any other list (not a string,
    not token ids) as long as the layer count."""
    L = _layer_count(d)
    return [
        k
        for k, v in d.items()
        if (isinstance(v, (list, str)) and k in _PER_LAYER)
        or (isinstance(v, list) and not _is_token_key(k, v) and L is not None and len(v) == L > 1)
    ]


def _index_lists(d: dict) -> list[str]:
    """Keys of lists of layer indices (``cross_attention_layers``: some layers, by index)."""
    L = _layer_count(d)
    return [
        k
        for k, v in d.items()
        if L is not None
        and isinstance(v, list)
        and 0 < len(v) < L
        and re.search(r"layers|idxs|indices|layer_ids", k)
        and all(_is_int(x) and 0 <= x < L for x in v)
        and v == sorted(set(v))
    ]


def _period(pattern: Any) -> int:
    """The pattern's period: the shortest p with pattern[i] == pattern[i % p] for every i."""
    s = [str(x) for x in pattern]
    return next(p for p in range(1, len(s) + 1) if all(s[i] == s[i % p] for i in range(len(s))))


def _kinds_prefix(pattern: Any) -> int:
    """The shortest prefix of ``pattern`` that holds every kind, rounded up to whole periods."""
    kinds = {str(x) for x in pattern}
    n = next(n for n in range(1, len(pattern) + 1) if {str(x) for x in pattern[:n]} == kinds)
    p = _period(pattern)
    return -(-n // p) * p if 2 * p <= len(pattern) else n  # periodic: it repeats at least twice


def _pattern_prefix(d: dict) -> int:
    """The layers that hold every kind of the model's layer pattern (``layer_types`` and friends)."""
    return max([LAYERS] + [_kinds_prefix(d[k]) for k in _PER_LAYER if isinstance(d.get(k), list) and d[k]])


def _trailing(d: dict, key: str) -> int | None:
    """The tiny count of trailing layers ``key`` (see ``_TRAILING``); None where it is no such count."""
    v, L = d.get(key), _layer_count(d)
    if key not in _TRAILING or not _is_int(v) or L is None or not 0 < v < L:
        return None
    return min(v, _pattern_prefix(d))


def _n_layers(d: dict) -> int:
    """How many layers keep every kind the model has: the shortest prefix of each of its patterns that
    holds every kind (rounded up to whole periods of a periodic pattern), >= 3; a layer of
    ``per_layer_config`` included."""
    need = LAYERS
    for key in _per_layer_lists(d):
        pattern = d[key]
        if len(pattern):
            need = max(need, _kinds_prefix(pattern))
    for key in _TRAILING:
        k = _trailing(d, key)
        if k is not None:
            need = max(need, _pattern_prefix(d) + k)
    for key in _LEADING:
        if _is_int(d.get(key)):
            need = max(need, d[key] + 1)
    for key in _index_lists(d):
        need = max(need, d[key][0] + 1)  # the first layer listed is kept
    overrides = d.get("per_layer_config")
    if isinstance(overrides, dict) and overrides:
        need = max(need, min(int(k) for k in overrides) + 1)
    for period, offset in (("attn_layer_period", "attn_layer_offset"), ("full_attention_interval", None)):
        if _is_int(d.get(period)) and d[period] > 0:
            need = max(need, d[period] + int(d.get(offset or "", 0) or 0))
    return min(need, MAX_LAYERS)


def _cut(pattern: Any, n: int) -> Any:
    return pattern[:n] if isinstance(pattern, (list, str)) and len(pattern) >= n else pattern


def _ties(sizes: dict) -> dict[str, tuple[str, ...]]:
    """Head widths an MLA layer ties to others: {width: the widths it is the sum of}. ``head_dim``
    is the rope width (the rotary module's width) or the no-rope + rope widths in some models."""
    out: dict[str, tuple[str, ...]] = {}
    for key in ("head_dim", "qk_head_dim"):
        v = sizes.get(key)
        parts = [sizes.get(k) for k in ("qk_nope_head_dim", "qk_rope_head_dim")]
        if not (_is_int(v) and all(_is_int(x) for x in parts)):
            continue
        if v == parts[1]:
            out[key] = ("qk_rope_head_dim",)
        elif v == parts[0] + parts[1]:
            out[key] = ("qk_nope_head_dim", "qk_rope_head_dim")
    return out


def _keep_ties(model: dict, tiny: dict) -> dict:
    """The head widths ``tiny`` must change to tie them as ``model`` does."""
    out = {}
    for key, parts in _ties(model).items():
        want = sum(tiny[p] for p in parts)
        if tiny.get(key) != want:
            out[key] = want
    return out


def _per_layer_config(overrides: dict, base: dict, tiny: dict, n: int) -> dict:
    """Per-layer overrides of the layers kept: a size equal to the model's own stays equal to the tiny
    one, a different size becomes twice the tiny one (the layers still differ, as in the model); a
    layer whose head width was its no-rope + rope widths keeps it so."""
    out = {}
    for k, sizes in overrides.items():
        if int(k) >= n:
            continue
        layer = {
            key: (tiny.get(key, v) if v == base.get(key) else 2 * tiny.get(key, v))
            if _is_int(v) and _is_int(tiny.get(key))
            else v
            for key, v in sizes.items()
        }
        layer.update(_keep_ties({**base, **sizes}, {**tiny, **layer}))
        out[k] = layer
    return out


def _state_space(d: dict, out: dict) -> None:
    """A state-space mixer's heads × head width = expand × width: heads of 16, as many as that takes."""
    heads = next((k for k in _SSM_HEADS if _is_int(d.get(k))), None)
    width = next((k for k in _SSM_HEAD_DIM if _is_int(d.get(k))), None)
    expand = next((d[k] for k in _SSM_EXPAND if _is_int(d.get(k))), None)
    if heads is None or width is None or expand is None:
        return
    out[width] = HEAD_DIM
    out[heads] = max(1, expand * WIDTH // HEAD_DIM)
    if _is_int(d.get("mamba_d_ssm")):
        out["mamba_d_ssm"] = out[heads] * HEAD_DIM
    for key in _SSM_GROUPS:
        if _is_int(d.get(key)) and d[key] > 0 and out[heads] % d[key]:
            out[key] = 1


def _token_ids(key: str, v: Any, special: Any) -> Any:
    """Special token ids inside the tiny vocabulary (lists of them too)."""
    if isinstance(v, list):
        return [next(special) if _is_int(x) and x >= VOCAB else x for x in v]
    return _SPECIAL.get(key, None) or next(special)


def _unset(key: str, d: dict, heads: Any) -> Any:
    """An unset size the model cannot run without; None where unset means 'off'."""
    has_width = any(_is_int(d.get(k)) for k in _WIDTHS)
    if key == "head_dim" and heads is not None and has_width:
        return WIDTH // HEADS  # the width over the heads, as the model derives it
    if key in _KV and heads is not None:
        return HEADS  # as many KV heads as query heads
    if key in _EXPERTS_PER_TOKEN and any(_is_int(d.get(k)) and d[k] > 0 for k in _EXPERTS):
        return _FIXED[key]
    return None


def _first(d: dict, keys: Any) -> int | None:
    return next((d[k] for k in keys if _is_int(d.get(k))), None)


def _size(key: str, v: int, d: dict, n: int) -> int:
    """The tiny value of the size ``key`` = ``v`` of the config dict ``d`` (``n`` layers kept)."""
    heads, width = _first(d, _HEADS), _first(d, _WIDTHS)
    if key.startswith("swa_") and _is_int(d.get(key[4:])):  # a sliding-window layer's own size (Inkling)
        base = d[key[4:]]
        tiny = _size(key[4:], base, d, n)
        return v if tiny == base else tiny if v == base else 2 * tiny
    if key in _WIDTHS or (key.startswith("hidden_size") and v > WIDTH):
        return WIDTH
    if key in _HEADS:
        return HEADS
    if key in _KV:
        return 1 if v == 1 else (HEADS if heads is None or v >= heads else 2)
    if _trailing(d, key) is not None:
        return _trailing(d, key)
    if key in _LAYERS or ("layers" in key and v == _layer_count(d)):
        return n  # a count of every layer (all layers share KV, none has a window) stays every layer
    if key in _EXPERTS_PER_TOKEN:
        return min(v, _FIXED[key])  # top-1 routing stays top-1
    if key in _FIXED:
        return _FIXED[key]
    if "vocab" in key and v > VOCAB:
        return VOCAB
    if key.endswith("intermediate_size") or key.endswith("ffn_dim") or key in ("n_inner", "ffn_hidden_size"):
        return 32 if ("moe" in key or "expert" in key) else 2 * WIDTH
    if key == "expert_ffn_hidden_size":
        return 32
    if v == width and v > WIDTH and not any(w in key for w in ("position", "vocab", "length")):
        return WIDTH  # a size the model ties to its width (an adapter's input) stays tied
    return v  # period-based patterns (attn_layer_period, ...) are kept: _n_layers counts them


def _per_layer_sizes(key: str, sizes: list, d: dict, n: int) -> list:
    """A per-layer list of sizes cut to ``n`` layers: the most common size becomes the tiny one, any
    other twice the tiny one (the layers still differ, as in the model)."""
    kept = sizes[:n]
    common = max(set(kept), key=kept.count)
    tiny = _size(key, common, d, n)
    return [x if tiny == common else tiny if x == common else 2 * tiny for x in kept]


def shrink(d: dict) -> dict:
    """A tiny copy of the config dict ``d`` (sub-config dicts shrunk too); see the module docstring."""
    out: dict = {}
    special = iter(range(VOCAB - 1, VOCAB - 64, -1))  # other special ids (image, audio tokens) at the top
    heads = _first(d, _HEADS)
    n = _n_layers(d)
    per_layer = set(_per_layer_lists(d))
    indices = set(_index_lists(d))
    for key, v in d.items():
        if key == "per_layer_config" and isinstance(v, dict):
            continue  # below, once the tiny sizes are known
        if isinstance(v, dict) and ("model_type" in v or key.endswith("_config")):
            out[key] = shrink(v)
        elif key == "compress_rates" and isinstance(v, dict):  # tokens per compressed key, some in a prompt
            out[key] = {k: min(r, 2 * TOPK) if _is_int(r) else r for k, r in v.items()}
        elif key in per_layer and all(_is_int(x) for x in v) and key not in _PER_LAYER:
            out[key] = _per_layer_sizes(key, v, d, n)
        elif key in per_layer:
            out[key] = _cut(v, n)
        elif key in indices:
            out[key] = [i for i in v if i < n]
        elif _is_token_key(key, v) and (_is_int(v) and v >= VOCAB or isinstance(v, list)):
            out[key] = _token_ids(key, v, special)
        elif v is None:
            out[key] = _unset(key, d, heads)
        else:
            out[key] = _size(key, v, d, n) if _is_int(v) else v
    _state_space(d, out)
    out.update(_keep_ties(d, out))
    if isinstance(d.get("per_layer_config"), dict):
        out["per_layer_config"] = _per_layer_config(d["per_layer_config"], d, out, n)
    return out


def _has_rule(key: str) -> bool:
    big = 1 << 20
    return _size(key, big, {}, LAYERS) != big or key in _SSM_HEADS + _SSM_HEAD_DIM


def own_sizes(config: Any) -> dict:
    """``config.to_dict()`` without the sizes its class derives from others in ``__post_init__`` (an
    attribute that is no field of the class, or a field declared None that no rule of :func:`shrink`
    sizes), sub-configs likewise: built again from the tiny dict, the config derives them from the
    tiny sizes instead of keeping the big ones. ``per_layer_config`` is kept (the layers' own sizes)."""
    d = config.to_dict()
    if not dataclasses.is_dataclass(config):
        return d
    fields = {f.name: f for f in dataclasses.fields(config)}
    aliases = getattr(config, "attribute_map", {}) or {}
    fields.update({alias: fields[name] for alias, name in aliases.items() if name in fields})
    fields.update({name: fields[alias] for alias, name in aliases.items() if alias in fields})
    out = {}
    for key, v in d.items():
        sub = getattr(config, key, None) if isinstance(v, dict) else None
        if sub is not None and hasattr(sub, "to_dict") and dataclasses.is_dataclass(sub):
            out[key] = own_sizes(sub)
            continue
        f = fields.get(key)
        if f is None:
            derived = key not in ("per_layer_config", "model_type", "transformers_version", "output_attentions")
        else:
            derived = f.default is None and _is_int(v) and not _has_rule(key)
        if not derived:
            out[key] = v
    return out
