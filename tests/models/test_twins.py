import pytest

from geoprobe.errors import GeoprobeError
from geoprobe.models.twins import twin_config


@pytest.mark.parametrize(
    "alias", ["pythia-410m", "phi-2", "llama-3.2-1b", "mistral-7b", "mixtral-8x7b", "gemma-3-270m"]
)
def test_tiny_twins_keep_family_features(alias, twin_factory):
    m = twin_factory(alias)
    full = twin_config(alias, "full")
    lay = m.layout
    assert type(m.hf_model.config).__name__ == type(full).__name__
    assert lay.n_layers == 3 and lay.d_model == 64
    gqa = (
        full.num_key_value_heads if hasattr(full, "num_key_value_heads") else full.num_attention_heads
    ) != full.num_attention_heads
    assert (lay.n_kv_heads < lay.n_heads) == gqa
    assert m.provenance.source == "twin" and m.provenance.seed == 0


def test_full_pythia_410m_twin_config_is_the_real_architecture():
    cfg = twin_config("pythia-410m", "full")
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size) == (
        24,
        1024,
        16,
        4096,
    )
    assert cfg.use_parallel_residual


def test_twins_are_seeded(twin_factory):
    a, b, c = (
        twin_factory("llama-3.2-1b", "tiny", 0),
        twin_factory("llama-3.2-1b", "tiny", 0),
        twin_factory("llama-3.2-1b", "tiny", 1),
    )
    assert a is b  # cached fixture; compare weights of independently built twins below
    from geoprobe.models.twins import twin

    fresh = twin("llama-3.2-1b", "tiny", seed=0)
    wa = a.arch.key_weight_views()[0]
    assert (wa == fresh.arch.key_weight_views()[0]).all()
    assert not (wa == c.arch.key_weight_views()[0]).all()


def test_unknown_twin_and_scale():
    with pytest.raises(GeoprobeError, match="pythia-410m"):
        twin_config("pythia-41m")
    with pytest.raises(GeoprobeError, match="--scale"):
        twin_config("pythia-410m", "huge")  # type: ignore[arg-type]


# init_key_weights (the random-init baseline of key orthogonality): tests/models/test_init_weights.py


NEW_FAMILY_ALIASES = ("gpt2", "qwen2.5-0.5b", "qwen3-0.6b", "gemma-2-2b", "olmo-2-1b", "phi-3-mini")


@pytest.mark.parametrize("alias", NEW_FAMILY_ALIASES)
def test_tiny_twins_of_the_new_registry_families_capture(alias):
    """Each family added to the registry in issue 18 builds a tiny twin from its real config and
    captures through the AttentionInterface probe (entropy within [0, log2 T] and finite)."""
    import numpy as np

    from geoprobe.capture import CaptureConfig, capture
    from geoprobe.models.twins import twin

    m = twin(alias)
    assert m.hf_model.config.model_type == alias_family(alias)
    cap = capture(m, ["The capital of France is", "One two three four five six seven"], CaptureConfig(batch_size=2))
    T = cap.n_tokens.max()
    assert np.isfinite(cap.attn_entropy).all() and (cap.attn_entropy >= -1e-9).all()
    assert (cap.attn_entropy <= np.log2(T) + 1e-6).all() and cap.attn_entropy.max() > 0


def alias_family(alias: str) -> str:
    from geoprobe.models.registry import ALIASES

    return ALIASES[alias].family
