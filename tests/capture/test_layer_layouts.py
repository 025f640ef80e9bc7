"""Models whose attention layers differ in head count or width (Gemma 4's global layers, MiMo-V2-Flash's
key/value heads, dots.llm3's query heads and widths): every layer is captured with its own layout, its
arrays as wide as the widest layer and NaN beyond its own heads and widths (``Layout.layer_heads``,
``Capture.layer``). Checked against Hugging Face eager attention run on each prompt alone, and against
the raw k_proj weight."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
import torch

from geoprobe.capture import Capture, CaptureConfig, capture
from geoprobe.models.loading import load_model
from geoprobe.models.tiny import same_weights

PROMPTS = ["The cat sat on the mat and", "One two three", "In the beginning was the word, and the word was"]
TYPES = ["mimo_v2_flash", "gemma4_text", "dots3_note"]  # kv heads | widths | query heads, kv heads and widths


@functools.cache
def _captured(model_type: str) -> tuple:
    model = load_model(f"twin:{model_type}")
    config = CaptureConfig(queries=True, attn_out=True, attention="distribution", batch_size=2)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="no W_K saved")  # dots.llm3 is MLA: said, and tested below
        return model, capture(model, PROMPTS, config)


@pytest.mark.parametrize("model_type", TYPES)
def test_each_layer_has_its_own_heads_and_the_rest_is_nan(model_type):
    model, cap = _captured(model_type)
    lay = cap.layout
    assert not lay.uniform and len(set(lay.layer_heads)) > 1
    for i, layer in enumerate(cap.layers):
        h = lay.heads(layer)
        names = ("attn_entropy", "values", "keys", "queries") + (("w_k",) if cap.w_k is not None else ())
        shapes = {name: cap.layer(name, layer).shape for name in names}
        assert shapes == {
            "attn_entropy": (3, h.n_heads),
            "values": (3, h.n_kv_heads, h.d_head),
            "keys": (3, h.n_kv_heads, h.d_qk),
            "queries": (3, h.n_heads, h.d_qk),
            **({"w_k": (h.n_kv_heads, lay.d_model, h.d_qk)} if cap.w_k is not None else {}),
        }
        assert all(np.isfinite(cap.layer(name, layer)).all() for name in names)
        assert np.isnan(cap.values[i, :, h.n_kv_heads :]).all() and np.isnan(cap.values[i, :, :, h.d_head :]).all()
        assert np.isnan(cap.attn_entropy[i, :, h.n_heads :]).all()
        assert np.isnan(cap.queries[i, :, h.n_heads :]).all() and np.isnan(cap.keys[i, :, :, h.d_qk :]).all()
        if cap.w_k is not None:  # dots.llm3 compresses keys through a latent (MLA): no W_K
            assert np.isnan(cap.w_k[i, h.n_kv_heads :]).all() and np.isnan(cap.w_k[i, :, :, h.d_qk :]).all()


@pytest.mark.parametrize("model_type", TYPES)
def test_attention_of_every_layer_equals_eager_on_each_prompt_alone(model_type):
    """Entropy (1e-4 bits) and distribution (1e-5) of every head of every layer, from eager
    ``output_attentions`` on each prompt without padding."""
    model, cap = _captured(model_type)
    eager = same_weights(model.hf_model, "eager")
    for p, prompt in enumerate(PROMPTS):
        ids = torch.tensor([model.tokenizer(prompt)["input_ids"]])
        with torch.no_grad():
            maps = [a for a in eager(ids, output_attentions=True, use_cache=False).attentions if a is not None]
        assert len(maps) == cap.layout.n_layers
        for layer in cap.layers:
            row = maps[layer][0, :, -1].double()
            row = row / row.sum(-1, keepdim=True)
            want = -(torch.special.xlogy(row, row).sum(-1) / np.log(2)).numpy()
            np.testing.assert_allclose(cap.layer("attn_entropy", layer)[p], want, atol=1e-4)
            got = cap.layer("attn_pattern", layer)[p, :, : ids.shape[1]]
            np.testing.assert_allclose(got, row.numpy(), atol=1e-5)


def test_key_weights_are_each_layers_own_k_proj():
    """MiMo-V2-Flash: layer 0 has 2 key/value heads, the others 4; W_K of head h is k_proj's rows h·d..(h+1)·d."""
    model, cap = _captured("mimo_v2_flash")
    for layer in cap.layers:
        w = model.arch.modules[cap.layout.model_layers[layer]].k_proj.weight.detach().numpy()
        h = cap.layout.heads(layer)
        want = w.reshape(h.n_kv_heads, h.d_qk, -1).transpose(0, 2, 1)
        np.testing.assert_array_equal(cap.layer("w_k", layer), want)
    assert [cap.layout.heads(x).n_kv_heads for x in cap.layers] == [2, 4, 4]
    assert cap.layout.kv_groups(0) == (0, 0, 1, 1) and cap.layout.kv_groups(1) == (0, 1, 2, 3)


def test_save_and_load_keep_the_layouts_and_the_nan(tmp_path):
    _, cap = _captured("dots3_note")
    back = Capture.load(cap.save(tmp_path / "cap"))
    assert back.layout == cap.layout and back.layout.layer_heads == cap.layout.layer_heads
    for name in ("values", "keys", "queries", "attn_entropy"):
        np.testing.assert_array_equal(getattr(back, name), getattr(cap, name))  # NaN where NaN
    np.testing.assert_array_equal(back.values_flat(2), cap.layer("values", 2).reshape(3, -1))


def test_resumed_capture_equals_an_uninterrupted_one(tmp_path):
    model, cap = _captured("mimo_v2_flash")
    config = CaptureConfig(queries=True, attn_out=True, attention="distribution", batch_size=2)
    ckpt = tmp_path / "partial"
    capture(model, PROMPTS[:2] + PROMPTS[2:], config, checkpoint_dir=ckpt)  # writes both batches
    resumed = []
    again = capture(
        model, PROMPTS, config, checkpoint_dir=ckpt, on_resume=lambda done, total, _: resumed.append((done, total))
    )
    assert resumed == [(2, 2)]  # every batch read back, none recomputed
    for name in ("values", "keys", "attn_entropy", "attn_pattern"):
        np.testing.assert_array_equal(getattr(again, name), getattr(cap, name))
