"""The trajectory's model has Pythia's architecture (checked against geoprobe's bundled config of
pythia-70m) and GPT-NeoX's small_init / wang_init."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

import geoprobe
from geoprobe.trajectory.data import hf_tokenizer, train_tokenizer
from geoprobe.trajectory.model import build_model, init_std, n_params, neox_config
from tests.trajectory.conftest import planted_documents, tiny

PYTHIA_70M = Path(geoprobe.__file__).parent / "models" / "configs" / "pythia-70m.json"


@pytest.fixture(scope="module")
def tokenizer():
    return hf_tokenizer(train_tokenizer(planted_documents(), 300))


def test_architecture_settings_are_pythia_70m_s(tokenizer):
    """Every setting Pythia-70M's config.json holds that is not a size equals ours."""
    pythia = json.loads(PYTHIA_70M.read_text())
    ours = neox_config(tiny(), tokenizer).to_dict()
    assert ours["rope_parameters"]["partial_rotary_factor"] == pythia.get("rotary_pct", 0.25) == 0.25
    assert ours["rope_parameters"]["rope_theta"] == pythia.get("rotary_emb_base", 10000)
    for key in ("hidden_act", "use_parallel_residual", "tie_word_embeddings", "layer_norm_eps", "model_type"):
        assert ours[key] == pythia[key], key
    assert ours["architectures"] == pythia["architectures"] == ["GPTNeoXForCausalLM"]
    assert ours["intermediate_size"] == 4 * ours["hidden_size"]  # as every Pythia
    assert pythia["intermediate_size"] == 4 * pythia["hidden_size"]
    assert ours["bos_token_id"] == ours["eos_token_id"] == pythia["eos_token_id"] == 0


def test_initialisation_is_small_init_and_wang_init(tokenizer):
    c = tiny(hidden_size=64, heads=2, layers=3)
    model = build_model(c, tokenizer)
    small, wang = math.sqrt(2 / (5 * 64)), 2 / (3 * math.sqrt(64))
    seen = set()
    for name, p in model.state_dict().items():
        std = init_std(name, c)
        if std is None:
            expected = 1.0 if "norm" in name and name.endswith(".weight") else 0.0
            assert torch.all(p == expected), name
            continue
        expect = wang if name.endswith(("attention.dense.weight", "mlp.dense_4h_to_h.weight")) else small
        assert std == expect
        n = p.numel()  # the sample SD of n normals is within 5 / sqrt(2n) of σ (relative), almost surely
        assert abs(float(p.std()) / expect - 1) < 5 / math.sqrt(2 * n), name
        assert abs(float(p.mean())) < 5 * expect / math.sqrt(n), name
        seen.add("wang" if expect == wang else "small")
    assert seen == {"wang", "small"}
    assert model.get_input_embeddings().weight.data_ptr() != model.get_output_embeddings().weight.data_ptr()


def test_same_seed_same_init_other_seed_other_init(tokenizer):
    a, b, c = (build_model(tiny(seed=s), tokenizer).state_dict() for s in (0, 0, 1))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["lm_head.weight"], c["lm_head.weight"])


def test_parameter_count_formula_matches_the_model(tokenizer):
    c = tiny(vocab_size=len(tokenizer))
    total, emb = n_params(build_model(c, tokenizer))
    assert total == c.n_params()
    assert emb == 2 * len(tokenizer) * c.hidden_size
