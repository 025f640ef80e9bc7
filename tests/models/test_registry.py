import pytest

from geoprobe.models.registry import (
    ALIASES,
    PYTHIA_REVISIONS,
    attention_kind,
    closest_aliases,
    load_config_dict,
    parameter_count,
)

ISSUE_ALIASES = [f"pythia-{s}{d}" for s in ("70m", "160m", "410m", "1b", "1.4b", "2.8b", "6.9b", "12b") for d in ("", "-deduped")] + [
    "phi-2", "llama-3.2-1b", "llama-3.2-3b", "llama-3-8b", "llama-3.1-8b", "mistral-7b", "mistral-7b-instruct",
    "mixtral-8x7b", "smollm2-135m", "gemma-3-270m",
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
