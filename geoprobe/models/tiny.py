"""Tiny random-init twins of any transformers ``model_type``, for tests and checks.

``tiny_model("qwen2")`` is ``AutoConfig.for_model("qwen2", ...)`` with d_model 64, 3 layers,
4 query heads (2 KV heads where the type has GQA), a 512-token vocabulary and an
``initializer_range`` of 0.2 (so attention is far from uniform), built by
``AutoModelForCausalLM.from_config`` (:func:`causal_lm`: from the sub-config its class takes, where
it takes one). ``EXTRA`` holds only the keys a type's defaults need on top of that to build small
(its default head_dim or KV heads do not fit 4 heads of 16, or its layer pattern puts attention
beyond layer 3); it describes sizes, never mechanisms. Every other type is shrunk by rule from
its own defaults (``shrink.py``), with ``GENERIC``'s few keys on top. Norm weights are perturbed
so that q/k norms are not identities; a model with per-language adapters (X-MOD) gets its first
language as the default.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from geoprobe.models.language import build_causal_lm
from geoprobe.models.shrink import own_sizes, shrink

VOCAB = 512
COMMON: dict[str, Any] = {
    "vocab_size": VOCAB,
    "hidden_size": 64,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "max_position_embeddings": 1024,
    "initializer_range": 0.2,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
}
_GQA = {"num_key_value_heads": 2}
_MOE = {"num_experts": 4, "num_experts_per_tok": 2}

EXTRA: dict[str, dict[str, Any]] = {
    "gpt2": {"n_positions": 1024},
    "opt": {"ffn_dim": 128, "word_embed_proj_dim": 64},
    "gpt_neo": {
        "num_layers": 2,
        "num_heads": 4,
        "attention_types": [[["global", "local"], 1]],
        "window_size": 6,
        "num_hidden_layers": None,
    },
    "bloom": {"n_layer": 3, "n_head": 4},
    "gptj": {"n_positions": 1024, "rotary_dim": 8, "n_inner": 128},
    # 8 heads: CodeGen's qkv_proj holds 4 groups (its training shards) of several heads each, here 2
    "codegen": {"n_positions": 1024, "rotary_dim": 4, "n_inner": 128, "num_attention_heads": 8},
    "stablelm": {**_GQA, "partial_rotary_factor": 0.25, "use_qkv_bias": True, "qk_layernorm": True},
    "cohere": {**_GQA, "use_qk_norm": True},
    "gpt_bigcode": {"n_positions": 1024, "multi_query": True, "n_inner": 128},
    "falcon": {
        "new_decoder_architecture": True,
        "num_kv_heads": 2,
        "multi_query": False,
        "alibi": False,
        "bias": False,
    },
    "phi3": _GQA,
    "olmo2": _GQA,
    "qwen2": _GQA,
    "llama": _GQA,
    "qwen3": {**_GQA, "head_dim": 16},
    "gemma": {**_GQA, "head_dim": 16},
    "gemma2": {
        **_GQA,
        "head_dim": 16,
        "query_pre_attn_scalar": 24,
        "sliding_window": 6,
        "attn_logit_softcapping": 5.0,
        "final_logit_softcapping": 30.0,
    },
    "starcoder2": {**_GQA, "sliding_window": 6, "use_bias": True},
    "qwen3_moe": {**_GQA, **_MOE, "head_dim": 16, "moe_intermediate_size": 32},
    "olmoe": {**_GQA, **_MOE},
    "mistral": {**_GQA, "sliding_window": 6, "head_dim": 16},
    "mixtral": {**_GQA, "sliding_window": 6, "num_local_experts": 4, "head_dim": 16},
    "phi": {"partial_rotary_factor": 0.4, "qk_layernorm": False},
    "gpt_neox": {"rotary_pct": 0.25, "use_parallel_residual": True},
    "gemma3_text": {
        **_GQA,
        "head_dim": 16,
        "sliding_window": 6,
        "query_pre_attn_scalar": 24,
        "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
    },
    "deepseek_v3": {
        "num_key_value_heads": 4,
        "kv_lora_rank": 16,
        "q_lora_rank": 24,
        "qk_rope_head_dim": 8,
        "qk_nope_head_dim": 16,
        "v_head_dim": 16,
        "n_routed_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 32,
        "first_k_dense_replace": 1,
        "n_group": 1,
        "topk_group": 1,
    },
    "gpt_oss": {
        **_GQA,
        "head_dim": 16,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "sliding_window": 6,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
    },
    "jamba": {
        **_GQA,
        "num_hidden_layers": 4,
        "attn_layer_period": 2,
        "attn_layer_offset": 1,
        "expert_layer_period": 2,
        "expert_layer_offset": 1,
        "num_experts": 4,
        "use_mamba_kernels": False,
        "mamba_d_state": 8,
    },
    "mamba": {"state_size": 8, "num_attention_heads": None, "intermediate_size": None},
}


# Inkling: the sliding layers' heads as the full layers' (Inkling 2: the same; Inkling: more KV heads),
# 6-token windows, blocks of 2 layers (so that attention over earlier blocks has some), and for the
# loop variant 2 passes over the second block (its layers 2-3), as the real model loops its middle
_INKLING2 = {
    "swa_num_attention_heads": 4,
    "swa_num_key_value_heads": 2,
    "sliding_window_size": 6,
    "n_layers_per_attn_res_block": 2,
}

#: what a type shrunk by rule (``shrink.py``) needs on top, for types not in EXTRA: sizes only
#: what a type shrunk by rule (``shrink.py``) needs on top, for types not in EXTRA: sizes only, or a
#: value its default config lacks and transformers cannot build without (the reason is given). Also
#: applied to the default config before shrinking where that one does not validate.
GENERIC: dict[str, dict[str, Any]] = {
    # Mamba-2: its SSM heads are num_heads × head_dim = expand × hidden_size (the rule's heads are 4)
    "mamba2": {"num_heads": 8},
    # the default leaves the experts unset (None), which the MoE layers cannot run with
    "dots1": {"n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1},
    # transformers' DbrxAttention reads attn_config.rope_theta, which the default attn_config lacks, and
    # cannot clamp with clip_qkv None (the default); DBRX clips at 8
    "dbrx": {"attn_config": {"rope_theta": 10000.0, "clip_qkv": 8.0}},
    # the default has no layer pattern (None), which the model indexes: LFM2's short convolutions and attention
    "lfm2_moe": {"layer_types": ["conv", "conv", "full_attention", "conv"], "num_hidden_layers": 4},
    # the default has no RoPE parameters, which the rotary module indexes per layer type: none (NoPE), as given
    "cohere_compass_text": {"rope_parameters": {"full_attention": None}},
    # ReformerModelWithLMHead is a decoder only with is_decoder=True; its axial position embeddings'
    # widths sum to the width
    "reformer": {"is_decoder": True, "axial_pos_embds_dim": [16, 48]},
    # the default leaves Qwen4-Exp's QSA indexer unset (None), which every attention layer builds; a
    # budget of 4 tokens in blocks of 2 so that 13-token prompts are sparse
    **{
        t: {"text_config": qsa} if t == "qwen4_exp" else qsa
        for t, qsa in {
            t: {
                "indexer_n_heads": 2,
                "indexer_kv_heads": 1,
                "indexer_head_dim": 16,
                "indexer_budget": 4,
                "indexer_compress_ratio": 2,
            }
            for t in ("qwen4_exp", "qwen4_exp_text")
        }.items()
    },
    # the assistant reads the target model's KV (every layer shared) and has no per-layer inputs
    "gemma4_assistant": {"text_config": {"hidden_size_per_layer_input": 0, "vocab_size_per_layer_input": 0}},
    # sizes the rule does not know by name (i28-hybrids): linear-attention heads, experts routed per
    # token, the width of the attention input of Zamba's blocks (twice the hidden size)
    "kimi_linear": {"num_experts_per_token": 2, "linear_head_dim": 16, "linear_num_heads": 4},
    "bailing_hybrid": {"num_experts_per_token": 2, "num_expert_group": 1, "linear_num_heads": 4},
    "longcat_flash": {"zero_expert_num": 2, "expert_ffn_hidden_size": 32, "head_dim": 8},  # head_dim: the rotary width
    # Zamba derives these from the hidden size (the shrunk dict kept the full model's values)
    "zamba": {"attention_hidden_size": None, "attention_head_dim": None, "mamba_dt_rank": "auto"},
    "xlstm": {"embedding_dim": 64},
    "inkling2_text": _INKLING2,
    "inkling2_loop_text": {**_INKLING2, "loop_layer_index_start": 2, "loop_layer_index_end": 4, "loop_num_passes": 2},
    "inkling_text": {"swa_num_attention_heads": 4, "swa_num_key_value_heads": 4, "sliding_window_size": 6},
    # looped layers: Dory's 16 input, 40 recurrent and 16 output layers of 72 as 2, 4 and 2 of 8 (the
    # pattern's first 8 entries); HRM's stacks of 16 layers as stacks of 2
    "dory": {
        "num_hidden_layers": 8,
        "n_input_layers": 2,
        "n_recurrent_layers": 4,
        "n_output_layers": 2,
        "layer_types": ["sliding_attention", "mlp"] * 3 + ["full_attention", "mlp"],
    },
    "hrm_text": {"num_layers_per_stack": 2},
    # 13 layers: the prefix of Zamba 2's pattern that holds two hybrid layers, so that its attention
    # block, whose weights every hybrid layer shares, is there twice as in the real model
    "zamba2": {
        "attention_hidden_size": 128,  # 2 * hidden_size, as Zamba2Config derives it
        "attention_head_dim": 32,  # attention_hidden_size / heads
        "mamba_headdim": 16,  # mamba_expand * hidden_size / n_mamba_heads
        "num_hidden_layers": 13,
        "layers_block_type": ["linear_attention"] * 6 + ["hybrid"] + ["linear_attention"] * 5 + ["hybrid"],
    },
    # Llama 3.2 Vision: its first cross-attention layer (3, as in the model) and a self-attention layer after it
    "mllama": {"text_config": {"num_hidden_layers": 5, "cross_attention_layers": [3]}},
    # Phi-4-multimodal: its audio encoder's depth and convolution widths (11M parameters by the rule alone)
    "phi4_multimodal": {
        "audio_config": {
            "num_blocks": 2,
            "nemo_conv_channels": 64,
            "ext_pw_out_channel": 64,
            "depthwise_separable_out_channel": 64,
        }
    },
    # Gemma 4: the per-layer input embeddings' vocabulary and width (sizes the rule does not know yet)
    "gemma4": {"text_config": {"vocab_size_per_layer_input": 512, "hidden_size_per_layer_input": 16}},
}


#: other layouts of one model type, named ``type/variant``: Falcon's three QKV layouts
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    # BERT-style encoders trained as decoders (is_decoder: causal self-attention); RoBERTa's family numbers
    # its positions from padding_idx + 1
    "bert/decoder": ("bert", {"is_decoder": True}),
    "roberta/decoder": ("roberta", {"is_decoder": True}),
    "xlm-roberta/decoder": ("xlm-roberta", {"is_decoder": True}),
    "falcon/mq": ("falcon", {"new_decoder_architecture": False, "multi_query": True}),
    "falcon/alibi": (
        "falcon",
        {"new_decoder_architecture": False, "multi_query": False, "alibi": True, "bias": True, "num_kv_heads": 4},
    ),
}


def tiny_config(model_type: str, **overrides: Any) -> Any:
    """The tiny config of ``model_type`` or of a ``type/variant`` in ``VARIANTS`` (see module
    docstring); ``overrides`` win (a size only the ``text_config`` of a multimodal type has goes
    there). A type without an ``EXTRA`` entry is shrunk by rule (``shrink.py``) from its own
    defaults, sub-configs included."""
    from transformers import AutoConfig

    if model_type in VARIANTS:
        model_type, extra = VARIANTS[model_type]
        overrides = {**extra, **overrides}
    if model_type not in EXTRA:
        generic = GENERIC.get(model_type, {})
        try:
            default = AutoConfig.for_model(model_type)
        except Exception:  # noqa: BLE001 - a default config that does not validate: with GENERIC's values
            default = AutoConfig.for_model(model_type, **generic)
        base = shrink(own_sizes(default))
        for key in ("model_type", "transformers_version", "architectures", "_name_or_path"):
            base.pop(key, None)
        return AutoConfig.for_model(model_type, **merged(merged(base, generic), _routed(base, overrides)))
    kw = {**COMMON, **EXTRA.get(model_type, {}), **overrides}
    return AutoConfig.for_model(model_type, **{k: v for k, v in kw.items() if v is not None})


#: the sub-configs of a composite config that hold its language model
_LANGUAGE = ("text_config", "decoder", "language_config", "llm_config")


#: sizes a real config sets equal to its vocabulary (Gemma 4's and Gemma 3n's per-layer input embeddings):
#: a twin given a tokenizer's ``vocab_size`` gets them too, else its token ids overflow those tables
FOLLOW_VOCAB = ("vocab_size_per_layer_input",)


def _routed(base: dict, overrides: dict) -> dict:
    """``overrides`` with each key the language model's sub-config holds set there too (``vocab_size``
    for a tokenizer's vocabulary reaches the text model of a vision-language config, and the sizes of
    :data:`FOLLOW_VOCAB` follow it)."""
    out = dict(overrides)
    if "vocab_size" in overrides:
        held = set(base) | {k for sub in _LANGUAGE if isinstance(base.get(sub), dict) for k in base[sub]}
        out.update({k: overrides["vocab_size"] for k in FOLLOW_VOCAB if k in held and k not in overrides})
    for sub in _LANGUAGE:
        inner = {k: v for k, v in list(out.items()) if isinstance(base.get(sub), dict) and k in base[sub]}
        if inner:
            out[sub] = merged(inner, out.get(sub, {}))
    return out


def merged(base: dict, extra: dict) -> dict:
    """``base`` with ``extra`` on top; a sub-config dict of ``extra`` updates ``base``'s one key by key."""
    out = dict(base)
    for key, v in extra.items():
        out[key] = merged(out[key], v) if isinstance(v, dict) and isinstance(out.get(key), dict) else v
    return out


#: the causal LM of a config, also from the sub-config its class takes (``language.build_causal_lm``)
causal_lm = build_causal_lm


def tiny_model(
    model_type: str, seed: int = 0, attn_implementation: str | None = None, text_only: bool = False, **overrides: Any
) -> Any:
    """A tiny random-init causal LM of ``model_type`` in eval mode (float32, CPU); ``text_only``: of its text
    config alone (a multimodal type whose other towers need libraries that are not installed: Gemma 3n's
    vision tower needs PIL and timm)."""
    cfg = tiny_config(model_type, **overrides)
    if text_only:
        cfg = cfg.get_text_config()
    torch.manual_seed(seed)
    kw = {} if attn_implementation is None else {"attn_implementation": attn_implementation}
    model = causal_lm(copy.deepcopy(cfg), dtype=torch.float32, **kw).eval()
    if hasattr(model, "set_default_language"):  # X-MOD: one adapter per language; the first is the default
        model.set_default_language(next(iter(model.config.languages)))
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name.lower() and p.dim() == 1:
                p.add_(0.1 * torch.randn(p.shape, generator=g))
    return model


def same_weights(model: Any, attn_implementation: str) -> Any:
    """Another instance of ``model``'s architecture (its own class: the config it keeps may be a
    sub-config no auto class maps) with its weights and ``attn_implementation``."""
    other = (
        type(model)
        ._from_config(copy.deepcopy(model.config), dtype=torch.float32, attn_implementation=attn_implementation)
        .eval()
    )
    other.load_state_dict(model.state_dict())
    return other
