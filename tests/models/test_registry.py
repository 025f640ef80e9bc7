import typing

import pytest

from geoprobe.models.registry import (
    ALIASES,
    PYTHIA_REVISIONS,
    SOURCE_KEY,
    Family,
    architecture,
    attention_kind,
    closest_aliases,
    config_source,
    find_spec_by_hf_id,
    load_config_dict,
    parameter_count,
)

ISSUE_ALIASES = [
    f"pythia-{s}{d}" for s in ("70m", "160m", "410m", "1b", "1.4b", "2.8b", "6.9b", "12b") for d in ("", "-deduped")
] + [
    "phi-2",
    "llama-3.2-1b",
    "llama-3.2-3b",
    "llama-3-8b",
    "llama-3.1-8b",
    "mistral-7b",
    "mistral-7b-instruct",
    "mixtral-8x7b",
    "smollm2-135m",
    "gemma-3-270m",
    "gpt2",
    "gpt2-medium",
    "gpt2-large",
    "gpt2-xl",
    "qwen2.5-0.5b",
    "qwen2.5-1.5b",
    "qwen2.5-7b",
    "qwen3-0.6b",
    "qwen3-1.7b",
    "qwen3-4b",
    "qwen3-8b",
    "gemma-2-2b",
    "gemma-2-9b",
    "olmo-2-1b",
    "olmo-2-7b",
    "phi-3-mini",
]


def test_every_alias_of_the_issue_is_registered():
    assert sorted(ISSUE_ALIASES) == sorted(ALIASES)


@pytest.mark.parametrize(
    "alias, expected",
    [
        # published parameter counts of the real checkpoints: an independent check of our configs
        ("pythia-70m", 70_426_624),
        ("pythia-410m", 405_334_016),
        ("pythia-1b", 1_011_781_632),
        ("phi-2", 2_779_683_840),
        ("llama-3.2-1b", 1_235_814_400),
        ("mistral-7b", 7_241_732_096),
    ],
)
def test_parameter_counts_match_the_real_models(alias, expected):
    assert parameter_count(ALIASES[alias].config) == expected


def test_architecture_facts_of_pythia_410m():
    cfg = load_config_dict("pythia-410m")
    assert (cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"]) == (24, 1024, 16)
    assert cfg["rotary_pct"] == 0.25 and cfg["use_parallel_residual"] is True


def test_attention_kinds():
    assert attention_kind(load_config_dict("pythia-410m")) == "MHA"
    assert attention_kind(load_config_dict("llama-3-8b")) == "GQA 32:8"
    assert attention_kind(load_config_dict("mistral-7b")) == "GQA 32:8, sliding window 4096"
    assert attention_kind(load_config_dict("mixtral-8x7b")) == "GQA 32:8, MoE 8x2"
    assert attention_kind(load_config_dict("smollm2-135m")) == "GQA 9:3"
    assert "sliding window 512" in attention_kind(load_config_dict("gemma-3-270m"))


def test_pythia_revisions_cover_the_public_checkpoints():
    assert PYTHIA_REVISIONS[0] == "step0" and PYTHIA_REVISIONS[-1] == "step143000"
    assert "step512" in PYTHIA_REVISIONS and "step1000" in PYTHIA_REVISIONS and "step1500" not in PYTHIA_REVISIONS
    assert len(PYTHIA_REVISIONS) == 154


def test_closest_aliases_for_a_typo():
    assert closest_aliases("pythia-41m")[0] == "pythia-410m"
    assert closest_aliases("zzzzzzzz") == []


# --- issue 18: the aliases people study -------------------------------------------------------

NEW_ALIASES = [
    "gpt2",
    "gpt2-medium",
    "gpt2-large",
    "gpt2-xl",
    "qwen2.5-0.5b",
    "qwen2.5-1.5b",
    "qwen2.5-7b",
    "qwen3-0.6b",
    "qwen3-1.7b",
    "qwen3-4b",
    "qwen3-8b",
    "gemma-2-2b",
    "gemma-2-9b",
    "olmo-2-1b",
    "olmo-2-7b",
    "phi-3-mini",
]

#: published parameter counts of the real checkpoints, each with its source: an independent check of
#: the packaged configs (within 2%: cards round, the Gemma 2 report counts a 256,128-token vocabulary)
PUBLISHED = {
    # OpenAI's released model names (openai/gpt-2 download_model.py: 124M, 355M, 774M, 1558M); the
    # Hub model cards agree (124M, 355M, 774M; "1.5B" for xl, too coarse to test against)
    "gpt2": 124e6,
    "gpt2-medium": 355e6,
    "gpt2-large": 774e6,
    "gpt2-xl": 1558e6,
    "qwen2.5-0.5b": 0.49e9,  # model card Qwen/Qwen2.5-0.5B: "Number of Parameters: 0.49B"
    "qwen2.5-1.5b": 1.54e9,  # model card Qwen/Qwen2.5-1.5B: "Number of Parameters: 1.54B"
    "qwen2.5-7b": 7.61e9,  # model card Qwen/Qwen2.5-7B: "Number of Parameters: 7.61B"
    "qwen3-0.6b": 0.6e9,  # model card Qwen/Qwen3-0.6B: "Number of Parameters: 0.6B"
    "qwen3-1.7b": 1.7e9,  # model card Qwen/Qwen3-1.7B: "Number of Parameters: 1.7B"
    "qwen3-4b": 4.0e9,  # model card Qwen/Qwen3-4B: "Number of Parameters: 4.0B"
    "qwen3-8b": 8.2e9,  # model card Qwen/Qwen3-8B: "Number of Parameters: 8.2B"
    "gemma-2-2b": 590_118_912 + 2_024_517_888,  # Gemma 2 report (arXiv:2408.00118) Table 2: embedding + non-embedding
    "gemma-2-9b": 917_962_752 + 8_324_201_984,  # Gemma 2 report Table 2
    "olmo-2-1b": 1.48e9,  # Hub page allenai/OLMo-2-0425-1B: "1.48B params" (safetensors)
    "olmo-2-7b": 7.3e9,  # Hub page allenai/OLMo-2-1124-7B: "7.3B params" (safetensors)
    "phi-3-mini": 3_821_079_552,  # keras-hub preset phi3_mini_4k_instruct_en "params"; model card: 3.8B
}


def test_every_new_alias_resolves_to_its_hub_id_and_family():
    for alias in NEW_ALIASES:
        spec = ALIASES[alias]
        cfg = load_config_dict(spec.config)
        assert spec.family == cfg["model_type"], alias
        assert find_spec_by_hf_id(spec.hf_id) is spec, alias
        assert config_source(spec.config), f"{alias}: its config does not say where it comes from"
    assert ALIASES["olmo-2-1b"].hf_id == "allenai/OLMo-2-0425-1B"
    assert ALIASES["phi-3-mini"].hf_id == "microsoft/Phi-3-mini-4k-instruct"
    assert ALIASES["qwen2.5-7b"].hf_id == "Qwen/Qwen2.5-7B"


def test_the_family_literal_lists_every_registered_family():
    assert {s.family for s in ALIASES.values()} <= set(typing.get_args(Family))


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_every_config_builds_with_autoconfig_and_head_sizes_divide(alias):
    from transformers import AutoConfig

    d = load_config_dict(ALIASES[alias].config)
    assert SOURCE_KEY not in d  # the provenance note never reaches transformers
    cfg = AutoConfig.for_model(**d)
    assert cfg.model_type == d["model_type"]
    arch = architecture(ALIASES[alias].config)
    assert arch.n_heads % arch.n_kv_heads == 0, alias
    if "head_dim" not in d:
        assert arch.d_model % arch.n_heads == 0, alias
    assert arch.d_head * arch.n_heads >= arch.n_heads and arch.n_layers == cfg.num_hidden_layers


@pytest.mark.parametrize("alias", sorted(PUBLISHED))
def test_parameter_counts_within_two_percent_of_the_published(alias):
    n = parameter_count(ALIASES[alias].config)
    assert abs(n / PUBLISHED[alias] - 1) < 0.02, f"{alias}: {n:,} vs published {PUBLISHED[alias]:,.0f}"


def test_attention_mechanisms_are_read_from_the_configs():
    feats = {a: architecture(ALIASES[a].config).features() for a in NEW_ALIASES}
    assert "learned positions" in feats["gpt2"] and "fused QKV" in feats["gpt2"]
    assert "q/k norm" in feats["qwen3-8b"] and "q/k norm" in feats["olmo-2-7b"]
    assert "q/k norm" not in feats["qwen2.5-7b"] and "QKV bias" in feats["qwen2.5-7b"]
    assert feats["gemma-2-9b"][:2] == ["GQA 16:8", "sliding window 4096 (21/42 layers)"]
    assert "attn softcap 50" in feats["gemma-2-2b"] and "logit softcap 30" in feats["gemma-2-2b"]
    assert "fused QKV" in feats["phi-3-mini"]
    # Qwen2 configs carry sliding_window but switch it off (use_sliding_window false)
    assert architecture("qwen2.5-0.5b").sliding_window is None
    assert attention_kind(load_config_dict("qwen2.5-0.5b")) == "GQA 14:2"
    assert attention_kind(load_config_dict("gpt2")) == "MHA"
