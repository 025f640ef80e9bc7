"""The random-init W_K baseline of key orthogonality, for any architecture (issue 18, part 2)."""

import numpy as np
import pytest
import torch

from geoprobe.errors import GeoprobeError, UnsupportedArchitectureError
from geoprobe.models.init_weights import init_key_weights
from geoprobe.models.tiny import tiny_model


def _stacked(model):
    from geoprobe.models.architecture import inspect_model

    return np.stack([v.float().numpy() for v in inspect_model(model).key_weight_views()])


@pytest.mark.parametrize("model_type", ["qwen2", "gpt2", "gemma2"])
def test_scan_of_a_twin_has_the_random_init_baseline_equal_to_a_fresh_same_seed_model(model_type, tmp_path):
    """``scan`` on ``twin:MODEL_TYPE`` records the "architecture at random init" baseline (ScanResult
    orthogonality init_label / init_per_head, also in results.json): the first of the scorecard's random-init
    draws (issue 37: seeds 10,000 + 1,000·seed + j), whose W_K equals init_key_weights of that seed; and
    init_key_weights equals the W_K of a freshly built model of the same config and seed."""
    from geoprobe.analysis.orthogonality import head_orthogonality
    from geoprobe.models import load_model, twin
    from geoprobe.scan import ScanConfig, scan

    m = load_model(f"twin:{model_type}")
    prompts = [f"Prompt number {i} says that the weather is" for i in range(10)]
    res = scan(m, prompts, ScanConfig(analyses=("orthogonality",), seed=3, batch_size=5))
    o = res.orthogonality
    draws = "3 draws, seeds 13000…13002"
    assert o.init_label == res.init_null.label == f"twin:{model_type}:tiny architecture at random init ({draws})"
    np.testing.assert_array_equal(
        o.init_per_head, head_orthogonality(init_key_weights(m.hf_model.config, seed=13000, arch=m.arch))
    )
    np.testing.assert_array_equal(o.init_per_head, res.init_null.key_cos[0])  # the null's first draw
    w = init_key_weights(m.hf_model.config, seed=3, arch=m.arch)
    assert res.to_dict()["orthogonality"]["init_label"] == o.init_label
    fresh = twin(model_type, seed=3)  # the alias twin for gpt2, the model-type twin for qwen2 and gemma2
    np.testing.assert_array_equal(w, _stacked(fresh.hf_model))
    np.testing.assert_array_equal(init_key_weights(m.hf_model.config, seed=3), w)  # without arch: probed
    assert not np.array_equal(init_key_weights(m.hf_model.config, seed=4, arch=m.arch), w)


@pytest.mark.parametrize("alias", ["pythia-70m", "smollm2-135m"])
def test_full_size_configs_are_built_exactly(alias):
    """Full-size configs under the budget are built whole: W_K equals a same-seed from_config build,
    with the real shapes and the family's initializer_range; the global RNG is left as it was."""
    from transformers import AutoModelForCausalLM

    from geoprobe.models.registry import ALIASES, load_config_dict
    from geoprobe.models.twins import twin_config

    cfg = twin_config(alias, "full")
    state = torch.random.get_rng_state()
    w = init_key_weights(cfg, seed=0)
    assert torch.equal(torch.random.get_rng_state(), state)
    real = load_config_dict(ALIASES[alias].config)
    n_kv = real.get("num_key_value_heads") or real["num_attention_heads"]
    d_head = real.get("head_dim") or real["hidden_size"] // real["num_attention_heads"]
    assert w.shape == (real["num_hidden_layers"], n_kv, real["hidden_size"], d_head)
    assert abs(w.std() / cfg.initializer_range - 1) < 0.02 and abs(w.mean()) < 1e-3
    if alias == "pythia-70m":
        torch.manual_seed(0)
        fresh = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
        np.testing.assert_array_equal(w, _stacked(fresh))


def test_over_budget_configs_initialise_the_key_projections_alone():
    """Above max_bytes the model is built on meta and only W_K is materialised (the loaded model's
    arch says where it lives): same shapes and initialiser, seeded; without arch, one-line refusal."""
    m = tiny_model("qwen2")
    from geoprobe.models.architecture import inspect_model

    arch = inspect_model(m)
    w = init_key_weights(m.config, seed=0, arch=arch, max_bytes=0)
    assert w.shape == (3, 2, 64, 16)
    assert abs(w.std() / m.config.initializer_range - 1) < 0.1
    np.testing.assert_array_equal(w, init_key_weights(m.config, seed=0, arch=arch, max_bytes=0))
    with pytest.raises(GeoprobeError, match="pass the loaded model's architecture"):
        init_key_weights(m.config, seed=0, max_bytes=0)


def test_mla_has_no_baseline_and_says_why():
    m = tiny_model("deepseek_v3")
    with pytest.raises(UnsupportedArchitectureError, match="no W_K"):
        init_key_weights(m.config, seed=0)
