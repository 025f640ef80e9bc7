"""Multimodal checkpoints on text prompts: geoprobe measures their language model's self-attention.

Which modules are the language model's is checked against the model's own decoder (its
``get_decoder().layers``, each layer's ``self_attn``), independently of how geoprobe finds them
(sub-models of other modalities left out, layers skipped on text prompts left out); sizes come
from the text config; the numbers themselves are checked against eager in test_attention.py
(ARCHS) and in the census.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from geoprobe.errors import UnsupportedArchitectureError
from geoprobe.models.architecture import inspect_model, probing
from geoprobe.models.attention import Probe
from geoprobe.models.tiny import tiny_model

#: type -> the class of each encoder of another modality the twin holds
TOWERS = {
    "gemma3": ["SiglipVisionModel"],
    "phi4_multimodal": ["Phi4MultimodalAudioModel", "Phi4MultimodalVisionModel"],
    "got_ocr2": ["GotOcr2VisionEncoder"],
    "moss_transcribe_diarize": ["MossTranscribeDiarizeAudioModel"],
    "fuyu": [],  # Fuyu feeds image patches through a linear layer: no encoder
    "mllama": [],  # MllamaForCausalLM is Llama 3.2 Vision's language model alone
    "emu3": [],  # Emu3ForCausalLM: the language model alone (images are VQ tokens)
}


@functools.lru_cache(maxsize=None)
def twin(model_type: str):
    model = tiny_model(model_type)
    return model, inspect_model(model)


def decoder_layers(model) -> torch.nn.ModuleList:
    """The model's own decoder layers (MllamaForCausalLM is its own decoder: they are under .model)."""
    decoder = model.get_decoder()
    return decoder.layers if hasattr(decoder, "layers") else decoder.model.layers


def decoder_self_attention(model) -> dict[int, torch.nn.Module]:
    """{layer: self-attention module} of the model's own decoder layers that have one."""
    layers = decoder_layers(model)
    return {i: layer.self_attn for i, layer in enumerate(layers) if hasattr(layer, "self_attn")}


@pytest.mark.parametrize("model_type", sorted(TOWERS))
def test_the_attention_layers_are_the_language_models_self_attention(model_type):
    model, arch = twin(model_type)
    own = decoder_self_attention(model)
    assert {layer: id(m) for layer, m in arch.modules.items()} == {layer: id(m) for layer, m in own.items()}
    text = model.config.get_text_config()
    lay = arch.layout
    assert (lay.d_model, lay.vocab_size) == (text.hidden_size, text.vocab_size)
    assert lay.model_layers == tuple(own)
    towers = TOWERS[model_type]
    assert all(any(t in note for note in arch.notes) for t in towers)
    assert bool(towers) == any("encoders of other modalities" in note for note in arch.notes)


def test_llama_3_2_vision_cross_attention_layers_are_not_attention_layers_on_text():
    """MllamaTextModel skips its cross-attention layers when there are no image features: geoprobe
    measures the self-attention layers and numbers them as the model does (layer_ids)."""
    model, arch = twin("mllama")
    layers = decoder_layers(model)
    cross = [i for i, layer in enumerate(layers) if not hasattr(layer, "self_attn")]
    assert cross == [3] and len(layers) == 5  # the twin keeps the model's first cross-attention layer
    assert arch.layout.layer_ids == (0, 1, 2, 4) and arch.layout.n_layers == 4
    assert any("layers [3]" in note and "MllamaTextCrossAttention" in note for note in arch.notes)
    probe = Probe()
    probe.new_batch(None)
    with probing(model, arch, probe), torch.no_grad():
        model(torch.randint(3, 500, (2, 9)), use_cache=False)
    assert sorted(probe.calls) == [0, 1, 2, 4]


def test_a_layer_that_runs_but_whose_attention_never_calls_the_function_is_still_refused(monkeypatch):
    """Only whole layers the model skips are left out: an attention module inside a layer that runs
    (BART's cross-attention without an encoder) keeps the refusal."""
    model = tiny_model("mllama", seed=2)
    attn = decoder_layers(model)[4].self_attn
    monkeypatch.setattr(attn, "forward", lambda hidden_states, *a, **k: (torch.zeros_like(hidden_states), None))
    with pytest.raises(UnsupportedArchitectureError, match="never called it") as e:
        inspect_model(model)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("model_type", ["gemma3", "got_ocr2"])
def test_every_attention_implementation_is_left_as_it_was(model_type):
    """GOT-OCR2's top-level class runs its vision encoder eagerly and cannot switch; its language model
    (Qwen2) runs SDPA: geoprobe wraps the language model's own implementation and puts it back."""
    model, arch = twin(model_type)
    configs = [model.config, *(getattr(model.config, k) for k in model.config.sub_configs)]
    before = [c._attn_implementation for c in configs]
    probe = Probe()
    probe.new_batch(None)
    with probing(model, arch, probe), torch.no_grad():
        model(torch.randint(3, 500, (1, 7)), use_cache=False)
    assert [c._attn_implementation for c in configs] == before
    assert len(probe.calls) == arch.layout.n_layers


@pytest.mark.parametrize("model_type", ["gemma3", "mllama"])
def test_the_random_init_baseline_reads_the_language_models_keys(model_type):
    """init_key_weights builds the same config at the same seed (the whole multimodal model for Gemma 3,
    MllamaForCausalLM from its text config) and reads W_K of the layers the loaded model measures."""
    from geoprobe.models.init_weights import init_key_weights
    from geoprobe.models.language import build_causal_lm

    model, arch = twin(model_type)
    w = init_key_weights(model.config, seed=3, arch=arch)
    torch.manual_seed(3)
    fresh = build_causal_lm(model.config, dtype=torch.float32)
    want = np.stack([v.detach().numpy() for v in inspect_model(fresh).key_weight_views()])
    np.testing.assert_array_equal(w, want)
    assert w.shape[0] == arch.layout.n_layers
    np.testing.assert_array_equal(init_key_weights(model.config, seed=3), w)  # without arch: probed


def test_sizes_the_loaded_model_reports_come_from_the_text_config():
    """Context window, rotary base and the memory estimate's MLP width: the language model's."""
    from types import SimpleNamespace

    from geoprobe.capture.memory import forward_peak_bytes
    from geoprobe.models.loaded import context_length
    from geoprobe.positional.run import rope_of

    model, arch = twin("fuyu")
    text = model.config.get_text_config()
    assert context_length(model.config) == text.max_position_embeddings
    loaded = SimpleNamespace(hf_model=model, layout=arch.layout, arch=arch)
    assert rope_of(loaded) == (float(text.rope_parameters["rope_theta"]), arch.layout.rotary_dim)
    text_only = SimpleNamespace(hf_model=SimpleNamespace(config=text), layout=arch.layout, arch=arch)
    assert forward_peak_bytes(loaded, 2, 64) == forward_peak_bytes(text_only, 2, 64, device_type="cpu")


def test_head_counts_of_the_text_config_are_checked():
    from geoprobe.models.heads import check_heads

    cfg = {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "text_config": {"hidden_size": 64, "num_attention_heads": 5},
    }
    with pytest.raises(UnsupportedArchitectureError, match="text_config: hidden_size 64 does not divide") as e:
        check_heads(cfg, "here")
    assert "Gemma3ForConditionalGeneration (here)" in str(e.value) and "\n" not in str(e.value)


def test_a_type_twin_of_a_multimodal_checkpoint_captures_with_the_tokenizers_vocabulary():
    """``twin:gemma3`` (``geoprobe capture --model twin:gemma3``): the SmolLM2 tokenizer's vocabulary
    goes to the language model's config (Gemma3Config keeps none of its own), so real prompts embed."""
    from geoprobe.capture import CaptureConfig, capture
    from geoprobe.models import load_model

    m = load_model("twin:gemma3")
    text = m.hf_model.config.get_text_config()
    assert text.vocab_size == len(m.tokenizer) == m.layout.vocab_size
    assert m.context_length == text.max_position_embeddings
    cap = capture(m, ["The cat sat on the", "A vision model reads text too"], CaptureConfig(batch_size=2))
    assert cap.layout.n_layers == text.num_hidden_layers
    assert np.isfinite(cap.attn_entropy).all() and np.isfinite(cap.next_entropy).all()
