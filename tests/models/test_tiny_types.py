"""Every causal-LM type of the installed transformers has a tiny twin (geoprobe/models/tiny.py), so that
the census (tests/models/census.py) can judge it; and the twin builder's generic steps.

The census runs each twin; this checks, cheaply (on the meta device), that each one builds and is
tiny, and that its windows and sparse top-k are crossed by the census's 13-token prompts.
"""

from __future__ import annotations

import re
import warnings

import pytest
import torch

from geoprobe.models.tiny import causal_lm, same_weights, tiny_config, tiny_model
from tests.models import census as C

#: types whose twin cannot be built here, and why (the error must say so)
CANNOT = {"gemma3n": ("PIL", "its vision tower is timm's TimmWrapperModel; PIL and timm are not installed")}
#: sizes a 13-token prompt must cross (windows, chunks, sparse top-k)
_CROSSED = re.compile(r"^(sliding_window|sliding_window_size|attention_chunk_size|index_topk|window_size|keep_window)")


def _crossing(d: dict, where: str = "") -> list[str]:
    bad = []
    for key, v in d.items():
        if isinstance(v, dict):
            bad += _crossing(v, f"{where}{key}.")
        elif _CROSSED.match(str(key)) and isinstance(v, int) and not isinstance(v, bool) and v >= 13:
            bad.append(f"{where}{key}={v}")
    return bad


@pytest.fixture(scope="module")
def built() -> dict[str, tuple[int | None, str, list[str]]]:
    """{type: (parameters on meta or None, the error, sizes a 13-token prompt does not cross)}."""
    from geoprobe.models.loaded import quiet_libraries

    quiet_libraries()
    out = {}
    for t in C.types():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                cfg = tiny_config(t)
                with torch.device("meta"):
                    n = sum(p.numel() for p in causal_lm(cfg).parameters())
                out[t] = (n, "", _crossing(cfg.to_dict()))
            except Exception as exc:  # noqa: BLE001 - what fails is the finding
                out[t] = (None, f"{type(exc).__name__}: {exc}", [])
    return out


def test_every_causal_lm_type_builds_a_tiny_twin(built):
    failed = {t: err for t, (n, err, _) in built.items() if n is None}
    unexpected = {t: err[:300] for t, err in failed.items() if t not in CANNOT}
    assert not unexpected, unexpected
    for t, err in failed.items():
        assert CANNOT[t][0] in err, (t, err[:300])
    big = {t: n for t, (n, _, _) in built.items() if n is not None and n > C.MAX_PARAMETERS}
    assert not big, f"twins that ignore the tiny sizes: {big}"


def test_every_twin_window_and_top_k_is_crossed_by_the_census_prompts(built):
    assert max(C.LENGTHS) == 13
    bad = {t: crossing for t, (_, _, crossing) in built.items() if crossing}
    assert not bad, bad


def test_a_config_s_derived_sizes_are_derived_again_from_the_tiny_ones():
    """Zamba2 derives its shared block's width (twice the width: it reads the embeddings beside the hidden
    state) and its mixer's head width; the twin must not keep the big ones (a shape mismatch)."""
    cfg = tiny_config("zamba2")
    assert cfg.attention_hidden_size == 2 * cfg.hidden_size
    assert cfg.mamba_headdim * cfg.n_mamba_heads == cfg.mamba_expand * cfg.hidden_size
    assert len(cfg.hybrid_layer_ids) == 2  # its one shared block is called at several layers, as in the model
    assert tiny_config("kimi_linear").num_experts == 4  # an attribute_map alias is no derived size


def test_a_twin_keeps_the_layers_that_make_its_mechanism():
    """Inkling2-Loop's looped layers and Mllama's cross-attention layers lie inside the twin's layers."""
    loop = tiny_config("inkling2_loop_text")
    assert 0 < loop.loop_layer_index_start < loop.loop_layer_index_end <= loop.num_hidden_layers
    text = tiny_config("mllama").text_config
    assert text.cross_attention_layers and max(text.cross_attention_layers) < text.num_hidden_layers


def test_a_default_config_that_does_not_validate_gets_generic_values():
    cfg = tiny_config("gemma4_assistant")
    assert cfg.text_config.num_kv_shared_layers == cfg.text_config.num_hidden_layers


def test_same_weights_builds_the_model_s_own_class():
    """Mllama's causal LM keeps its text sub-config, which no auto class maps."""
    model = tiny_model("mllama")
    eager = same_weights(model, "eager")
    assert type(eager) is type(model) and eager.config._attn_implementation == "eager"
    ids = torch.randint(3, 500, (1, 9))
    with torch.no_grad():
        torch.testing.assert_close(eager(ids).logits, model(ids).logits, atol=1e-5, rtol=1e-5)


def test_a_model_with_languages_gets_a_default_one():
    model = tiny_model("xmod")
    assert model.config.default_language in model.config.languages
    with torch.no_grad():
        assert torch.isfinite(model(torch.randint(3, 500, (1, 9))).logits).all()


def test_a_causal_lm_of_a_sub_config_is_built_from_it():
    """MusicgenForCausalLM is MusicGen's decoder: it takes the decoder's sub-config."""
    model = tiny_model("musicgen")
    assert type(model).__name__ == "MusicgenForCausalLM" and type(model.config).__name__ == "MusicgenDecoderConfig"


def test_a_tokenizer_vocabulary_reaches_the_language_model_of_a_composite_config():
    cfg = tiny_config("mllama", vocab_size=1000)
    assert cfg.text_config.vocab_size == 1000
